#!/usr/bin/env bash
# test_ncu_model_bytes.sh - scripts/ncu_model_bytes.sh on device call 56's Nsight Compute profiles of three
# Dream-7B validation points (datasets/hw/2026-12-02/call56/ncu_dream.tgz): the table has every point and
# its criterion, and the classes' measured bytes are the CSVs' (w1:dual's qkv: 3.7027 GB read); a CSV
# without its profiled run, or an OUT_DIR that exists, is refused; scripts/ncu_gemm_reads.py and
# scripts/gemm_reads.py check read the runs it writes, scripts/ncu_layer.py pairs their kernels with the replay's;
# scripts/ncu_score.sh scores a recorded set, scripts/ncu_layer_sets.py sums its layers across the set's steps;
# scripts/ncu_attainable.py sets two measurements of one table side by side; scripts/ncu_table_cv.py leaves one set out.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"
tar xzf datasets/hw/2026-12-02/call56/ncu_dream.tgz -C "$T"
DKV="$DKV" bash scripts/ncu_model_bytes.sh "$T/ncu_dream" dream-7b "$T/o" > "$T/out.txt" || fail "ncu_model_bytes.sh"
M=$T/o/ncu_bytes.md
# SIM_ARGS (since session 48) reach the simulated points: with -D l2_mib=50 every simulated run's L2 is 50 MiB, and
# a bad value fails the script naming it
SIM_ARGS="-D l2_mib=50" DKV="$DKV" bash scripts/ncu_model_bytes.sh "$T/ncu_dream" dream-7b "$T/o50" > /dev/null ||
    fail "ncu_model_bytes.sh with SIM_ARGS"
for f in "$T"/o50/s/*.h5; do
    /usr/bin/python3 -c "import h5py, sys; r = h5py.File(sys.argv[1])['runs']; v = [r[k]['config'].attrs['gpu.l2_bytes'] for k in r]; sys.exit(0 if v and all(x == 50 * 2**20 for x in v) else 1)" "$f" ||
        fail "$f: the simulated L2 is not 50 MiB"
done
if SIM_ARGS="-D l2_mib=0" DKV="$DKV" bash scripts/ncu_model_bytes.sh "$T/ncu_dream" dream-7b "$T/o0" > "$T/e0" 2>&1; then
    fail "SIM_ARGS=-D l2_mib=0 accepted"
fi
grep -q "hw: -D l2_mib must be a number of MiB > 0, got '0'" "$T"/o0/s/*.log || fail "l2_mib=0: $(cat "$T"/o0/s/*.log | head -3)"
head -n 1 "$M" | grep -q "^Criterion (issue 9)" || fail "no criterion first"
for p in w1:dual w2:sparse w3:dual; do
    grep -q "^val:$p: reads within 5 % in [0-7] of 7 classes, writes in [0-7] of 7$" "$M" || fail "no verdict for $p"
done
awk '/^### val:w1:dual/ {f = 1} f && /^\| qkv \|/ {print; exit}' "$M" | grep -q "| 3.7027 |" ||
    fail "w1:dual qkv's measured read is not the CSV's: $(grep '^| qkv' "$M" | head -1)"
# scripts/ncu_cells.py scores the table; scripts/ncu_gemm_reads.py reads the same runs: the Refresh steps of
# w1:dual (288 rows), w2:sparse (2,112) and w3:dual (1,664), each class counted / measured over the weights
/usr/bin/python3 scripts/ncu_cells.py "$M" | grep -q "^reads [0-9]* / 21 within 5 %, mean [0-9.]* % | writes [0-9]* / 21 within 5 %.* | bytes off: reads [0-9.]* %, writes [0-9.]* % | point totals: reads [0-3] / 3 within 5 % (max [0-9.]* %), writes [0-3] / 3 within 5 % (max [0-9.]* %)$" ||
    fail "ncu_cells.py: $(/usr/bin/python3 scripts/ncu_cells.py "$M" 2>&1)"
# ... and its bytes off by hand: reads 110 and 20 counted against 100 and 20 (10 of 120: 8.3 %), writes 90 and 0
# against 100 and 10 (20 of 110: 18.2 %)
printf '%s\n' "### val:t:dual" "| class | a | b | c | d | e | f | g | h |" \
    "| qkv | 110 | 100 | +10% | MISS | 90 | 100 | -10% | MISS |" "| ffn | 20 | 20 | +0% | PASS | 0 | 10 | -100% | MISS |" > "$T/hand.md"
/usr/bin/python3 scripts/ncu_cells.py "$T/hand.md" | grep -q "| bytes off: reads 8.3 %, writes 18.2 % |" ||
    fail "ncu_cells.py's bytes off: $(/usr/bin/python3 scripts/ncu_cells.py "$T/hand.md" 2>&1)"
# ... and the points' totals (session 40): t:dual's sums are 130 / 120 read (+8.3 %) and 90 / 110 written (-18.2 %);
# a second point, u:dual, whose classes miss by -6 % and +6 % but whose sums are exact, is within on both
printf '%s\n' "### val:u:dual" "| class | a | b | c | d | e | f | g | h |" \
    "| qkv | 94 | 100 | -6% | MISS | 106 | 100 | +6% | MISS |" "| ffn | 106 | 100 | +6% | MISS | 94 | 100 | -6% | MISS |" > "$T/hand2.md"
/usr/bin/python3 scripts/ncu_cells.py "$T/hand.md" "$T/hand2.md" |
    grep -q "| point totals: reads 1 / 2 within 5 % (max 8.3 %), writes 1 / 2 within 5 % (max 18.2 %)$" ||
    fail "ncu_cells.py's point totals: $(/usr/bin/python3 scripts/ncu_cells.py "$T/hand.md" "$T/hand2.md" 2>&1)"
# ... and --by-class: qkv misses in both (+10 and -6 % read: median +2.0 %), ffn's read passes at t:dual (0 against 0
# written there: -100 %, median of -100 and -6: -53.0 %); the class's bytes over its cells: qkv read 204 of 200 (+2.0 %),
# written 196 of 200 (-2.0 %), ffn read 126 of 120 (+5.0 %), written 94 of 110 (-14.5 %)
/usr/bin/python3 scripts/ncu_cells.py --by-class "$T/hand.md" "$T/hand2.md" > "$T/bc.txt"
grep -qxF "| qkv | 0 / 2 | +2.0 % | +2.0 % | 0 / 2 | -2.0 % | -2.0 % |" "$T/bc.txt" &&
    grep -qxF "| ffn | 1 / 2 | +3.0 % | +5.0 % | 0 / 2 | -53.0 % | -14.5 % |" "$T/bc.txt" ||
    fail "ncu_cells.py --by-class: $(cat "$T/bc.txt")"
# scripts/ncu_attainable.py over two measurements of the same counts (session 37): the qkv write measured 100 and
# 120 (max / min 1.2 > 1.05 / 0.95) is the one cell no count can hold; ffn's write, 0 against 0 twice, is attainable
# and met; qkv's read (110 against 100 and 104) is attainable and missed
hand() { printf '%s\n' "### val:t:dual" "| class | a | b | c | d | e | f | g | h |" \
    "| qkv | 110 | $1 | x | MISS | $3 | $2 | x | MISS |" "| ffn | 20 | 20 | +0% | PASS | 0 | 0 | +0% | PASS |"; }
hand 100 100 90 > "$T/ha.md"; hand 104 120 90 > "$T/hb.md"; hand 104 120 91 > "$T/hc.md"
/usr/bin/python3 scripts/ncu_attainable.py "$T/ha.md" "$T/hb.md" > "$T/att.txt" || fail "ncu_attainable.py: $(cat "$T/att.txt")"
grep -q "^reads: 2 cells, 2 attainable .*; met on every measurement 1; met of the attainable 1 / 2; largest spread 1.040 (t:dual qkv)$" "$T/att.txt" &&
    grep -q "^writes: 2 cells, 1 attainable .*; met on every measurement 1; met of the attainable 1 / 1; largest spread 1.200 (t:dual qkv)$" "$T/att.txt" &&
    grep -qxF "| writes | t:dual | qkv | 100.0000, 120.0000 | 1.200 |" "$T/att.txt" || fail "ncu_attainable.py's counts: $(cat "$T/att.txt")"
if /usr/bin/python3 scripts/ncu_attainable.py "$T/ha.md" "$T/hc.md" 2> "$T/e"; then fail "ncu_attainable.py took other counts"; fi
grep -q "hc.md: t:dual qkv: counted write 91, .*ha.md has 90 (not the same counts)" "$T/e" || fail "ncu_attainable.py's error: $(cat "$T/e")"
if /usr/bin/python3 scripts/ncu_attainable.py "$T/ha.md" 2> /dev/null; then fail "ncu_attainable.py took one table"; fi
/usr/bin/python3 scripts/ncu_gemm_reads.py dream-7b "$T/o/real.h5" "$T/o/sim.h5" > "$T/gr.txt" || fail "ncu_gemm_reads.py"
for r in 288 1664 2112; do grep -q "rows:  qkv [0-9.]* / [0-9.]*   o_proj" <(grep " $r rows" "$T/gr.txt") || fail "no $r-row Refresh: $(cat "$T/gr.txt")"; done
if /usr/bin/python3 scripts/ncu_gemm_reads.py gpt-2 "$T/o/real.h5" "$T/o/sim.h5" 2> /dev/null; then fail "an unknown model was accepted"; fi
# scripts/gemm_reads.py check: device call 68's GEMMs measured alone beside the same runs' Refresh-step GEMMs
# (medians over the 28 layers): Dream-7B's gate|up at 1,664 rows 875.0 MB alone, 875.4 in the forward
/usr/bin/python3 scripts/gemm_reads.py check datasets/hw/2026-12-02/call68 dream-7b "$T/o/real.h5" > "$T/chk.md" ||
    fail "gemm_reads.py check"
grep -q "^| val:w3:dual | 0 | 1664 | gate_up | 875.0 | 875.4 | 1.001 |$" "$T/chk.md" || fail "gate_up 1664: $(grep gate_up "$T/chk.md")"
[ "$(grep -c '^| val:' "$T/chk.md")" = 16 ] || fail "16 GEMMs of four Refresh steps: $(cat "$T/chk.md")"
grep -q "^[0-9]* of 16 within 5 %$" "$T/chk.md" || fail "check's verdict: $(tail -n 1 "$T/chk.md")"
if /usr/bin/python3 scripts/gemm_reads.py check datasets/hw/2026-12-02/call68 gpt-2 "$T/o/real.h5" 2> "$T/e0"; then
    fail "check with an unknown model was accepted"; fi
grep -q "check needs DIR, MODEL (llada-8b or dream-7b)" "$T/e0" || fail "check's message: $(cat "$T/e0")"
if DKV="$DKV" bash scripts/ncu_model_bytes.sh "$T/ncu_dream" dream-7b "$T/o" 2> "$T/e1"; then fail "existing OUT_DIR"; fi
grep -q "exists: give a new OUT_DIR" "$T/e1" || fail "OUT_DIR message: $(cat "$T/e1")"
rm "$T/ncu_dream/prof_w3_dual.h5"
if DKV="$DKV" bash scripts/ncu_model_bytes.sh "$T/ncu_dream" dream-7b "$T/o2" 2> "$T/e2"; then fail "CSV without its run"; fi
grep -q "ncu_w3_dual.csv has no prof_w3_dual.h5 beside it" "$T/e2" || fail "missing run message: $(cat "$T/e2")"
# scripts/ncu_steps.py: the same runs step by step (w3:dual's Refresh of 1,664 rows and its Reuse steps), one class
# kept; an unknown class and a point without runs are refused
/usr/bin/python3 scripts/ncu_steps.py "$T/o/real.h5" "$T/o/sim.h5" --point w3:dual --class qkv > "$T/steps.txt" || fail "ncu_steps.py"
grep -q "^w3:dual 0 R 1664 | qkv [0-9]*/[0-9]* ([-+][0-9]*%) w [0-9]*/[0-9]* ([-+][0-9]*%)$" "$T/steps.txt" || fail "ncu_steps.py: $(cat "$T/steps.txt")"
[ "$(grep -c '^w3:dual [0-9] U 128 | qkv ' "$T/steps.txt")" = 3 ] || fail "three Reuse steps: $(cat "$T/steps.txt")"
if /usr/bin/python3 scripts/ncu_steps.py "$T/o/real.h5" "$T/o/sim.h5" --class mlp 2> "$T/e5"; then fail "an unknown class was accepted"; fi
grep -q "unknown class 'mlp'" "$T/e5" || fail "unknown class message: $(cat "$T/e5")"
if /usr/bin/python3 scripts/ncu_steps.py "$T/o/real.h5" "$T/o/sim.h5" --point w9:dual 2> "$T/e6"; then fail "an absent point was accepted"; fi
grep -q "no run with Nsight Compute's kernels at point w9:dual" "$T/e6" || fail "absent point: $(cat "$T/e6")"
# scripts/ncu_layer.py: the replay's kernels of w3:dual's Refresh (record.l2_kernels, which ncu_model_bytes.sh sets)
# beside Nsight Compute's layers: nine kernel rows (norm, q|k|v, store, attention, O, norm, gate|up, SwiGLU, down),
# the step's start and end; a step that is not a number and a simulation without the replay's kernels are refused
/usr/bin/python3 scripts/ncu_layer.py "$T/o/real.h5" "$T/o/sim.h5" --point w3:dual --step 0 > "$T/layer.txt" ||
    fail "ncu_layer.py: $(cat "$T/layer.txt")"
grep -q "^### w3:dual step 0: 28 layers" "$T/layer.txt" || fail "ncu_layer.py header: $(cat "$T/layer.txt")"
[ "$(grep -c '^| [0-9] | ' "$T/layer.txt")" = 9 ] || fail "ncu_layer.py: nine kernel rows: $(cat "$T/layer.txt")"
grep -q "^| 4 | attn | [0-9.]* | [0-9.]* ([0-9.]*-[0-9.]*) | [-+][0-9]*% | " "$T/layer.txt" || fail "attention row: $(cat "$T/layer.txt")"
grep -q "^step's end (replay/ncu MB): lm_head read [0-9.]*/[0-9.]* write " "$T/layer.txt" || fail "end line: $(cat "$T/layer.txt")"
# ... its kernels of a step leave the setup kernels out (an l2_flush run's flush_kernel among a layer's)
( cd scripts && /usr/bin/python3 -c 'import ncu_layer as L
nk = {"kind": [8, 0, 11, 5, 1], "read_bytes": [1, 2, 3, 4, 5], "write_bytes": [6, 7, 8, 9, 10]}
assert L.step_kernels(nk, 0, 5) == [(8, 1.0, 6.0), (0, 2.0, 7.0), (5, 4.0, 9.0), (1, 5.0, 10.0)], L.step_kernels(nk, 0, 5)
assert L.step_kernels(nk, 1, 3) == [(0, 2.0, 7.0)]' ) || fail "ncu_layer.py: setup kernels kept"
# ... --kernels L (session 40): layer 3 of the same step kernel by kernel, named (nine of Nsight Compute's, the
# replay's nine); past the last layer, or without --point and --step, an error
/usr/bin/python3 scripts/ncu_layer.py "$T/o/real.h5" "$T/o/sim.h5" --point w3:dual --step 0 --kernels 3 > "$T/lk.txt" ||
    fail "ncu_layer.py --kernels: $(cat "$T/lk.txt")"
grep -q "^### step 0, layer 3 of 28: Nsight Compute's kernels" "$T/lk.txt" &&
    grep -q "^| 2 | nvjet_[a-z0-9_]* | qkv | [0-9.]* | [0-9.]* | [0-9.]* |$" "$T/lk.txt" &&
    grep -q "^| 8 | swiglu_kernel | elementwise | " "$T/lk.txt" && grep -q "^| 9 | nvjet_[a-z0-9_]* | ffn | " "$T/lk.txt" &&
    ! grep -q "^| 10 | " "$T/lk.txt" && grep -q "^| 9 | ffn | [0-9.]* | [0-9.]* |$" "$T/lk.txt" ||
    fail "ncu_layer.py --kernels rows: $(cat "$T/lk.txt")"
if /usr/bin/python3 scripts/ncu_layer.py "$T/o/real.h5" "$T/o/sim.h5" --point w3:dual --step 0 --kernels 28 2> "$T/e12"
then fail "--kernels 28 of 28 layers accepted"; fi
grep -q "has 28 layers, no layer 28" "$T/e12" || fail "--kernels range message: $(cat "$T/e12")"
if /usr/bin/python3 scripts/ncu_layer.py "$T/o/real.h5" "$T/o/sim.h5" --kernels 3 2> "$T/e13"; then fail "--kernels alone accepted"; fi
grep -q "needs --point and --step" "$T/e13" || fail "--kernels alone message: $(cat "$T/e13")"
if /usr/bin/python3 scripts/ncu_layer.py "$T/o/real.h5" "$T/o/sim.h5" --step one 2> "$T/e7"; then fail "--step one accepted"; fi
grep -q "wants a step index" "$T/e7" || fail "--step message: $(cat "$T/e7")"
# a step past the runs' steps names the range (until session 60: "no step to show (no :real run with ncu_kernels)")
if /usr/bin/python3 scripts/ncu_layer.py "$T/o/real.h5" "$T/o/sim.h5" --point w3:dual --step 99 2> "$T/e7b"; then
    fail "--step 99 accepted"; fi
grep -q "^ncu_layer.py: .*real.h5: --step 99: out of range: its :real run has steps 0\.\.[0-9]" "$T/e7b" ||
    fail "--step 99 message: $(cat "$T/e7b")"
"$DKV" run experiments/hw_validate.lua -D backend=sim -D model=dream-7b -D point=w3:dual -o "$T/nol2.h5" > /dev/null 2>&1 ||
    fail "simulating without l2_kernels"
if /usr/bin/python3 scripts/ncu_layer.py "$T/o/real.h5" "$T/nol2.h5" --point w3:dual 2> "$T/e8"; then fail "no l2_kernels accepted"; fi
grep -q "has no l2_kernels table (simulate it with record.l2_kernels = true" "$T/e8" || fail "no-l2 message: $(cat "$T/e8")"
# scripts/ncu_flush.py (the l2_flush diagnostic): a stand-in Nsight Compute log of w3:dual's 4 steps with two flushes
# each (3:attn then 9:o: 5 + step and 1 MB written back) and (since session 48) a read of q|k|v at 3:attn between
# them (0.5 MB read from DRAM) among other kernels, against the simulated twin: 8 rows in order, the GPU's MB as
# written, the replay's dirty bytes after its attention and O, then 4 read rows (the step's rows x Dream-7B's 9,216-byte
# q|k|v row, less 0.5 MB); a count that is not a multiple of the points, and a point or buffer that is none, are refused
{ echo '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"'; id=0
  kern() { echo "\"$id\",\"$1\",\"dram__bytes_write.sum\",\"$2\",\"$3\""
           echo "\"$id\",\"$1\",\"dram__bytes_read.sum\",\"$2\",\"$4\""; id=$((id + 1)); }
  fl="void flush_kernel(const uint4 *, unsigned long, uint4 *)"
  for j in 0 1 2 3; do
      kern "rmsnorm_kernel(int)" byte 7 7; kern "$fl" Mbyte "$((5 + j))" 128
      kern "$fl" Mbyte 0 0.5
      kern "rmsnorm_kernel(int)" byte 7 7; kern "$fl" Mbyte 1 128; done; } > "$T/flush.csv"
"$DKV" run experiments/hw_validate.lua -D backend=sim -D l2_kernels=true -D model=dream-7b -D point=w3:dual \
    -o "$T/flsim.h5" > /dev/null 2>&1 || fail "simulating w3:dual with l2_kernels"
/usr/bin/python3 scripts/ncu_flush.py "$T/flush.csv" "$T/flsim.h5" --point w3:dual --flush 9:o,3:attn,3:attn:qkv \
    > "$T/fl.txt" || fail "ncu_flush.py: $(cat "$T/fl.txt")"
[ "$(grep -c '^| [0-3] | [0-9]*:[a-z_]* | [0-9.]* | ' "$T/fl.txt")" = 8 ] || fail "ncu_flush.py: 8 rows: $(cat "$T/fl.txt")"
# (and, since the replay records what it holds, its q|k|v after the attention and the difference)
grep -q "^| 0 | 3:attn | qkv | 1664 | 15.335 | 14.835 | [0-9.]* | [-+][0-9.]* |$" "$T/fl.txt" &&
    grep -q "^| 2 | 3:attn | qkv | 128 | 1.180 | 0.680 | [0-9.]* | [-+][0-9.]* |$" "$T/fl.txt" &&
    [ "$(grep -c '| qkv |' "$T/fl.txt")" = 4 ] || fail "ncu_flush.py: the read rows: $(cat "$T/fl.txt")"
# scripts/ncu_flush_summary.py: one line a probe, step 0 and the later steps' mean (the stand-in's q|k|v held 14.835 MB at
# step 0 and 0.680 at each 128-row step; 3:attn's dirty 5 MB at step 0 and 7 on average after)
cp "$T/fl.txt" "$T/flush_w3.md"
/usr/bin/python3 scripts/ncu_flush_summary.py "$T/flush_w3.md" > "$T/fs.txt" || fail "ncu_flush_summary.py: $(cat "$T/fs.txt")"
grep -q "^### w3: step 0 1664 rows, steps 1,2,3: 128/128/128 rows$" "$T/fs.txt" &&
    grep -q "^| 3:attn:qkv | 14.8[34] / 15.34 ([0-9.]*) | 0.68 / 1.18; [0-9.]* |$" "$T/fs.txt" &&
    grep -q "^| 3:attn dirty (GPU; replay) | 5.00; [0-9.]* | 7.00; [0-9.]* |$" "$T/fs.txt" ||
    fail "ncu_flush_summary.py: $(cat "$T/fs.txt")"
if /usr/bin/python3 scripts/ncu_flush_summary.py "$T/none.md" 2> "$T/e12"; then fail "ncu_flush_summary.py: a missing file accepted"; fi
grep -q "none.md" "$T/e12" || fail "ncu_flush_summary.py on a missing file: $(cat "$T/e12")"
grep -q "^| 2 | 3:attn | 7.000 | [0-9.]* | [-+][0-9.]* |$" "$T/fl.txt" || fail "ncu_flush.py: step 2's attn: $(cat "$T/fl.txt")"
grep -q "^| 3 | 9:o | 1.000 | [0-9.]* | [-+][0-9.]* |$" "$T/fl.txt" || fail "ncu_flush.py: step 3's O: $(cat "$T/fl.txt")"
if /usr/bin/python3 scripts/ncu_flush.py "$T/flush.csv" "$T/flsim.h5" --point w3:dual --flush 3:attn,9:o,12:o,13:o,14:o \
    2> "$T/e9"; then fail "ncu_flush.py: 12 flushes for 5 points accepted"; fi
grep -q "12 flush_kernel rows, not a multiple of the 5 points" "$T/e9" || fail "count message: $(cat "$T/e9")"
if /usr/bin/python3 scripts/ncu_flush.py "$T/flush.csv" "$T/flsim.h5" --point w3:dual --flush 9:o,3:attn,3:attn:qkvv \
    2> "$T/e11"; then fail "ncu_flush.py: buffer qkvv accepted"; fi
grep -q "'3:attn:qkvv' is not LAYER:POINT\[:READ\]" "$T/e11" || fail "buffer message: $(cat "$T/e11")"
if /usr/bin/python3 scripts/ncu_flush.py "$T/flush.csv" "$T/flsim.h5" --point w3:dual --flush 3:atn 2> "$T/e10"
then fail "ncu_flush.py: point atn accepted"; fi
grep -q "'3:atn' is not LAYER:POINT\[:READ\]" "$T/e10" || fail "point message: $(cat "$T/e10")"
# scripts/ncu_score.sh: one line per model of device call 73's held-out set, each scored over its 4 x 7 cells
DKV="$DKV" bash scripts/ncu_score.sh "$T/sc" c73 > "$T/sc.txt" || fail "ncu_score.sh c73"
for m in llada-8b dream-7b; do
    grep -q "^call 73 $m *reads [0-9]* / 28 within 5 %, mean [0-9.]* % | writes [0-9]* / 28 within 5 %" "$T/sc.txt" ||
        fail "ncu_score.sh: no $m line: $(cat "$T/sc.txt")"
done
grep -q "^all sets *reads [0-9]* / 56 within 5 %, mean [0-9.]* % | writes [0-9]* / 56 within 5 %" "$T/sc.txt" ||
    fail "ncu_score.sh: no total line over the set's 56 cells: $(cat "$T/sc.txt")"
# scripts/ncu_layer_sets.py (session 41): the layer across the set's steps; Dream-7B's Refresh steps of the prefix points
# (w7 and w8: 2,400 and 3,072 rows) sum ncu_layer.py's rows of the same steps (row 4, the attention: replay and
# Nsight Compute write MB), the running difference's mean is the rows' differences so far over the steps, one line
# per step in the order of its rows; a folder without tables.txt, a model the sets
# do not hold (named, with those they do), a kind or direction it does not know, a row 0 are refused
/usr/bin/python3 scripts/ncu_layer_sets.py "$T/sc" --model dream-7b --kind refresh --points 2,4 > "$T/ls.txt" ||
    fail "ncu_layer_sets.py: $(cat "$T/ls.txt")"
grep -q "^### dream-7b, refresh steps: 2 (write MB" "$T/ls.txt" || fail "ncu_layer_sets.py header: $(cat "$T/ls.txt")"
D=$T/sc/c73_dream/out
for p in w7:prefix w8:prefix; do
    /usr/bin/python3 scripts/ncu_layer.py "$D/real.h5" "$D/sim.h5" --point $p --step 0 | grep "^| 4 | attn | " || fail "ncu_layer.py $p"
done > "$T/lsrows.txt"
/usr/bin/python3 - "$T/ls.txt" "$T/lsrows.txt" << 'PY' || fail "ncu_layer_sets.py against ncu_layer.py: $(cat "$T/ls.txt")"
import sys
rows = [l.split("|") for l in open(sys.argv[2])]
rep, ncu = sum(float(r[6]) for r in rows), sum(float(r[7].split()[0]) for r in rows)
t = open(sys.argv[1]).read().split("\n\n")
a = [l.split("|") for l in t[1].splitlines() if l.startswith("| 4 | attn |")][0]
assert abs(float(a[3]) - rep) <= 0.051 and abs(float(a[4]) - ncu) <= 0.051, (a, rep, ncu)
rows = [l.split("|") for l in t[1].splitlines() if l[:4] in ("| 1 ", "| 2 ", "| 3 ")]   # the running difference
for i in range(3):   # its mean over the 2 steps: the rows' differences so far over 2, within the rounding
    want = sum(float(r[5]) for r in rows[:i + 1]) / 2
    got = float(rows[i][7].split("(")[0])
    assert abs(got - want) <= 0.026 * (i + 1), (i, got, want, rows[i])
pts = [l.split("|") for l in t[2].splitlines() if l.startswith("| c73_dream |")]
assert [p[2].strip() for p in pts] == ["w7:prefix", "w8:prefix"] and [p[4].strip() for p in pts] == ["2400", "3072"], pts
assert all(len(p[6].split("/")) == 2 for p in pts), pts
PY
mkdir -p "$T/nosets"
if /usr/bin/python3 scripts/ncu_layer_sets.py "$T/nosets" 2> "$T/e14"; then fail "ncu_layer_sets.py: no tables.txt accepted"; fi
grep -q "tables.txt: .*give a scripts/ncu_score.sh output folder" "$T/e14" || fail "no-tables message: $(cat "$T/e14")"
if /usr/bin/python3 scripts/ncu_layer_sets.py "$T/sc" --model gpt2 2> "$T/e16"; then fail "ncu_layer_sets.py: model gpt2 accepted"; fi
grep -q "^ncu_layer_sets.py: no step to show in .* --model gpt2 (its sets hold: dream-7b, llada-8b)" "$T/e16" ||
    fail "ncu_layer_sets.py's unknown-model message: $(cat "$T/e16")"
# a row no table has is refused before any table is printed (until session 60: tables without it, exit 0), and a
# tables.txt that is not text is named (until then a UnicodeDecodeError traceback)
if /usr/bin/python3 scripts/ncu_layer_sets.py "$T/sc" --model dream-7b --points 2,99 > "$T/ls99.txt" 2> "$T/e17"; then
    fail "ncu_layer_sets.py --points 99 accepted"; fi
grep -q "^ncu_layer_sets.py: --points 2,99: no table has row #99 (the longest layer has [0-9]* rows)$" "$T/e17" &&
    [ ! -s "$T/ls99.txt" ] || fail "ncu_layer_sets.py --points 99: $(cat "$T/e17" "$T/ls99.txt" | head -n 3)"
mkdir -p "$T/binsets" && printf '\xff\xfe\n' > "$T/binsets/tables.txt"
if /usr/bin/python3 scripts/ncu_layer_sets.py "$T/binsets" 2> "$T/e18"; then fail "ncu_layer_sets.py: binary tables.txt"; fi
grep -q "^ncu_layer_sets.py: $T/binsets/tables.txt: not a text file" "$T/e18" && ! grep -q Traceback "$T/e18" ||
    fail "binary tables.txt: $(cat "$T/e18")"
for bad in "--kind prefill" "--bytes both" "--points 0,2"; do
    # shellcheck disable=SC2086
    /usr/bin/python3 scripts/ncu_layer_sets.py "$T/sc" $bad 2> "$T/e15" && fail "ncu_layer_sets.py $bad accepted"
    [ $? = 2 ] && grep -q "ncu_layer_sets.py: ${bad%% *}" "$T/e15" || fail "ncu_layer_sets.py $bad: $(cat "$T/e15")"
done
# scripts/ncu_table_cv.py (session 43): leaving one set out.  On c73 alone its two tables are one model each, so no
# step has a twin of its model elsewhere and both tables keep the replay's bytes (the three counts equal); on hand-made
# steps the tables' interpolation and ratio give the counts worked out by hand; one set, a bad --bytes are refused
/usr/bin/python3 scripts/ncu_table_cv.py "$T/sc" > "$T/cv.txt" 2> "$T/cv.err" || fail "ncu_table_cv.py: $(cat "$T/cv.err")"
r=$(sed -n 's/^replay \([0-9]* \/ [1-9][0-9]*\) within.*/\1/p' "$T/cv.txt")
[ -n "$r" ] && grep -q "^direct $r within" "$T/cv.txt" && grep -q "^ratio  $r within" "$T/cv.txt" ||
    fail "ncu_table_cv.py on one set per model: $(cat "$T/cv.txt")"
grep -q "^spread: [0-9]* layer rows" "$T/cv.txt" || fail "ncu_table_cv.py's spread line: $(cat "$T/cv.txt")"
/usr/bin/python3 - "$ROOT/scripts" << 'PY' || fail "ncu_table_cv.py on hand-made steps"
import sys
sys.path.insert(0, sys.argv[1])
import ncu_table_cv as C
def st(set_, point, rows, rep, ncu):
    return {"set": set_, "point": point, "model": "m", "kind": "refresh", "sig": (1,), "rows": rows,
            "layer": [(1, rep * 1e6, ncu * 1e6)]}
steps = [st("a", "p", 100, 8, 10), st("b", "q", 100, 9, 10), st("b", "q", 300, 20, 30), st("c", "r", 200, 10, 20)]
# a out: direct 10 at 100 rows (within), ratio 8 x 10 / 9 (-11 %); b out: its point 30 + beyond 200 rows 20 = 30,
# ratio 9 x 1.25 + 20 x 2.0 = 51.25, both against 40; c out: direct 20 between 10 and 30 (within), ratio
# 10 x (1.1806 + 1.5) / 2 = 13.4 against 20.  The replay misses all three.
ok, n = C.cv(steps)
assert n == 3 and (ok["replay"], ok["direct"], ok["ratio"]) == (0, 2, 0), (ok, n)
assert C.interp([100, 200], [1.0, 3.0], 150) == 2.0 and C.interp([100, 200], [1.0, 3.0], 50) == 1.0
cmp_n, good, wide = C.spread(steps)   # 100 rows shared by p and q: 10 and 10 MB
assert (cmp_n, good) == (1, 1) and wide[0][0] == 1.0, (cmp_n, good, wide)
steps[1] = st("b", "q", 100, 9, 12)   # now 10 and 12: 1.2 apart, over 1.105
cmp_n, good, wide = C.spread(steps)
assert (cmp_n, good) == (1, 0) and abs(wide[0][0] - 1.2) < 1e-12, (cmp_n, good, wide)
PY
head -n 1 "$T/sc/tables.txt" > "$T/one_tables.txt"
mkdir -p "$T/one" && cp "$T/one_tables.txt" "$T/one/tables.txt" && ln -s "$T/sc/$(dirname "$(head -n 1 "$T/sc/tables.txt")" | cut -d/ -f1)" "$T/one/"
/usr/bin/python3 scripts/ncu_table_cv.py "$T/one" > /dev/null 2> "$T/e17" && fail "ncu_table_cv.py: one set accepted"
[ $? = 1 ] && grep -q "^ncu_table_cv.py: .*: 1 set(s) with paired steps (c73_.*); leaving one out needs at least two" "$T/e17" ||
    fail "ncu_table_cv.py on one set: $(cat "$T/e17")"
/usr/bin/python3 scripts/ncu_table_cv.py "$T/sc" --bytes both 2> "$T/e18" && fail "ncu_table_cv.py --bytes both accepted"
[ $? = 2 ] && grep -q "^ncu_table_cv.py: --bytes must be read or write" "$T/e18" || fail "ncu_table_cv.py --bytes both: $(cat "$T/e18")"
/usr/bin/python3 scripts/ncu_table_cv.py --help > "$T/cvh" && grep -q "^    /usr/bin/python3 scripts/ncu_table_cv.py OUT" "$T/cvh" ||
    fail "ncu_table_cv.py --help: $(cat "$T/cvh")"
# scripts/ncu_sign.py (session 40): two OUT_DIRs cell by cell, through each one's tables.txt; the set against itself
# moves no cell; a copy with one cell's counted write made 999 GB is further in exactly that cell; a table missing is
# an error
[ "$(wc -l < "$T/sc/tables.txt")" = 2 ] || fail "ncu_score.sh's tables.txt: $(cat "$T/sc/tables.txt")"
/usr/bin/python3 scripts/ncu_sign.py "$T/sc" "$T/sc" > "$T/sg.txt" || fail "ncu_sign.py: $(cat "$T/sg.txt")"
grep -q "^writes: 56 cells; the trial closer in 0, further in 0 " "$T/sg.txt" || fail "ncu_sign.py, a set against itself: $(cat "$T/sg.txt")"
cp -r "$T/sc" "$T/sd"
t1=$(head -n 1 "$T/sd/tables.txt")
awk -F'|' 'BEGIN { OFS = "|" } !done && NF > 10 && $2 ~ /qkv/ { $7 = " 999.0000 "; done = 1 } { print }' "$T/sd/$t1" > "$T/t1" &&
    mv "$T/t1" "$T/sd/$t1"
/usr/bin/python3 scripts/ncu_sign.py "$T/sc" "$T/sd" > "$T/sg.txt" || fail "ncu_sign.py: $(cat "$T/sg.txt")"
grep -q "^writes: 56 cells; the trial closer in 0, further in 1 " "$T/sg.txt" &&
    grep -q "^reads: 56 cells; the trial closer in 0, further in 0 " "$T/sg.txt" ||
    fail "ncu_sign.py, one write cell moved: $(cat "$T/sg.txt")"
# ... --flips (session 43): a write cell out of the band brought to its measured bytes and one inside it made 999 GB
# cross it, one each way, and nothing else does
cp -r "$T/sc" "$T/sflip"
awk -F'|' 'BEGIN { OFS = "|" } NF > 10 && $10 ~ /MISS/ && !i { $7 = $8; i = 1 } NF > 10 && $10 ~ /PASS/ && !o { $7 = " 999.0000 "; o = 1 }
           { print }' "$T/sflip/$t1" > "$T/t1" && mv "$T/t1" "$T/sflip/$t1"
/usr/bin/python3 scripts/ncu_sign.py "$T/sc" "$T/sflip" --flips > "$T/fl.txt" || fail "ncu_sign.py --flips: $(cat "$T/fl.txt")"
grep -q "^flips: writes +1 -1$" "$T/fl.txt" && grep -q "^flips: reads +0 -0$" "$T/fl.txt" &&
    [ "$(grep -c "^  writes in  " "$T/fl.txt")" = 1 ] && [ "$(grep -c "^  writes out " "$T/fl.txt")" = 1 ] &&
    grep -q "^  writes in  $t1 .*: [-+][0-9.]* % -> +0.0 %$" "$T/fl.txt" || fail "ncu_sign.py --flips: $(cat "$T/fl.txt")"
rm "$T/sd/$t1"
if /usr/bin/python3 scripts/ncu_sign.py "$T/sc" "$T/sd" 2> "$T/e11"; then fail "ncu_sign.py: a missing table accepted"; fi
grep -q "listed in .*tables.txt" "$T/e11" || fail "ncu_sign.py's missing-table message: $(cat "$T/e11")"
if DKV="$DKV" bash scripts/ncu_score.sh "$T/sc2" c99 2> "$T/e3"; then fail "an unknown set was accepted"; fi
grep -q "unknown set 'c99'" "$T/e3" || fail "unknown set message: $(cat "$T/e3")"
# an H100 set (since session 49): counted under the h100 preset (the runs' config says gpu h100), two model lines and a
# total over its 42 cells a direction
DKV="$DKV" bash scripts/ncu_score.sh "$T/sh" h141 > "$T/sh.txt" || fail "ncu_score.sh h141"
[ "$(cut -c1-18 "$T/sh.txt" | sed 's/ *$//' | tr '\n' ',')" = "H100 141 llada-8b,H100 141 dream-7b,all sets," ] &&
    grep -q "^all sets .*reads [0-9]* / 42 within" "$T/sh.txt" || fail "ncu_score.sh h141: $(cat "$T/sh.txt")"
/usr/bin/python3 - "$T/sh/h141_llada/out/sim.h5" <<'PYEOF' || fail "h141 not counted under the h100 preset"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
names = {r.attrs["gpu_preset"] for r in f["runs"].values()}
assert names == {"h100"}, names
PYEOF
# ... (session 41) the sets run JOBS at a time, their lines in the order asked (c73, then c67: the larger first) with
# c73's the same as when it ran alone; a set whose counting fails is named and fails the run; JOBS must be a whole
# number
JOBS=2 DKV="$DKV" bash scripts/ncu_score.sh "$T/s2" c73 c67 > "$T/s2.txt" || fail "ncu_score.sh c73 c67"
[ "$(cut -c1-18 "$T/s2.txt" | sed 's/ *$//' | tr '\n' ',')" = "call 73 llada-8b,call 73 dream-7b,call 67 llada-8b,call 67 dream-7b,all sets," ] ||
    fail "ncu_score.sh's order with two jobs: $(cat "$T/s2.txt")"
[ "$(head -n 2 "$T/s2.txt")" = "$(head -n 2 "$T/sc.txt")" ] || fail "c73 beside c67 differs from c73 alone: $(cat "$T/s2.txt")"
# scripts/ncu_layer_sets.py --against: c73 alone against c73 scored beside c67 (the same counts): the other replay's
# MB and steps within 5 % equal its own, row by row; the other way round c67's steps have no twin, an error
/usr/bin/python3 scripts/ncu_layer_sets.py "$T/sc" --model llada-8b --against "$T/s2" > "$T/la.txt" ||
    fail "ncu_layer_sets.py --against: $(cat "$T/la.txt")"
awk -F'|' '/^\| [0-9]+ \|/ { n++; gsub(/ /, ""); if ($4 != $9 || $7 != $10) bad++ } END { exit !(n >= 9 && !bad) }' "$T/la.txt" ||
    fail "ncu_layer_sets.py --against columns: $(cat "$T/la.txt")"
if /usr/bin/python3 scripts/ncu_layer_sets.py "$T/s2" --against "$T/sc" 2> "$T/e19"; then fail "--against without twins accepted"; fi
# ... and a twin whose replay writes back twice the bytes (c73 LLaDA-8B's sim.h5, every l2_kernels record's
# write_bytes doubled in a copy) shows twice the shipped MB in every row that writes back, not the shipped column
cp -r "$T/s2" "$T/s3"
/usr/bin/python3 -c '
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    n = 0
    for name in f["runs"]:
        if "l2_kernels" in f["runs"][name]:
            d = f["runs"][name]["l2_kernels"]; a = d[()]; a["write_bytes"] *= 2; d[...] = a; n += 1
    sys.exit(0 if n else 1)' "$T/s3/c73_llada/out/sim.h5" || fail "doubling the twin's write bytes"
/usr/bin/python3 scripts/ncu_layer_sets.py "$T/sc" --model llada-8b --against "$T/s3" > "$T/lb.txt" ||
    fail "ncu_layer_sets.py --against a doubled twin: $(cat "$T/lb.txt")"
awk -F'|' '/^\| [0-9]+ \|/ { gsub(/ /, ""); if ($4 + 0 < 1) next; n++; r = $9 / $4; if (r < 1.99 || r > 2.01) bad++ }
    END { exit !(n >= 9 && !bad) }' "$T/lb.txt" || fail "ncu_layer_sets.py --against a doubled twin's column: $(cat "$T/lb.txt")"
grep -q "steps have no twin with the same layer (first: set c67" "$T/e19" || fail "--against message: $(cat "$T/e19")"
if DKV=/bin/false bash scripts/ncu_score.sh "$T/sf" c73 2> "$T/e17"; then fail "ncu_score.sh: a failing dkv passed"; fi
grep -q "^ncu_score: c73_llada: scripts/ncu_model_bytes.sh failed" "$T/e17" && grep -q "^ncu_score: set c73 failed" "$T/e17" ||
    fail "ncu_score.sh's failed-set message: $(cat "$T/e17")"
if JOBS=two DKV="$DKV" bash scripts/ncu_score.sh "$T/sj" c73 2> "$T/e18"; then fail "ncu_score.sh: JOBS=two accepted"; fi
grep -q "JOBS 'two' is not a whole number" "$T/e18" || fail "ncu_score.sh's JOBS message: $(cat "$T/e18")"
if DKV="$DKV" bash scripts/ncu_score.sh "$T/sc" dream 2> "$T/e4"; then fail "ncu_score.sh: existing OUT_DIR"; fi
grep -q "exists: give a new OUT_DIR" "$T/e4" || fail "ncu_score.sh OUT_DIR message: $(cat "$T/e4")"
echo ok
