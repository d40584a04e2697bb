#!/usr/bin/env bash
# test_scripts_errors.sh - the analysis scripts (scripts/*.py) refuse bad input the project's way: one line on stderr
# that starts with the script's name and names the file, their documented exit status, and no Python traceback.
# Each script that reads a file gets a missing file, a text file and an empty HDF5 file (an HDF5 reader) or the
# other kind of file (a text reader); each answers --help with its usage on stdout and exit status 0.  Also the
# refusals of scripts whose own tests are slow or not this test's to change: claims_pins.py's pins file and
# --only, ncu_bytes.py's -o, h5_summary.py without a file, hw_multi_table.py's RES (scripts/fit_host.py,
# torch_snapshot_to_trace.py, plot.py, l2probe.py, l2drain.py and dkvresults.py have their cases in their own
# tests).  Every case is a python start-up (0.05-0.5 s): they run a few at a time, and every failing case is
# listed before the test fails.
set -uo pipefail
: "${ROOT:?}" "${T:?}" "${DKV:?}"
PY=/usr/bin/python3
S=$ROOT/scripts
$PY -c 'import h5py, numpy, matplotlib' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py/numpy/matplotlib (scripts/deps.sh)"; exit 77; }

# the inputs: a missing file, a text file, an empty HDF5 file, and folders holding them where a script reads one
M=$T/missing.h5 TX=$T/text.txt E=$T/empty.h5
echo "not an HDF5 file, nor a log" >"$TX"
R=$T/runs.h5   # a results file with no run, where a script reads a second file after it
$PY -c 'import sys, h5py; h5py.File(sys.argv[1], "w").close(); h5py.File(sys.argv[2], "w").create_group("runs")' "$E" "$R" ||
    { echo "FAIL: empty HDF5 files"; exit 1; }
for k in text empty; do
    src=$TX; [ $k = empty ] && src=$E
    mkdir -p "$T/cal_$k/cmp" "$T/multi_$k/h5" "$T/card_$k"
    cp "$src" "$T/cal_$k/cmp/001.h5"; cp "$src" "$T/multi_$k/h5/hw_multi_1.h5"; cp "$src" "$T/card_$k/metrics.json"
done
: >"$T/nopins.txt"
printf '# a comment\n\n' >>"$T/nopins.txt"
printf '1a\texperiments/quickstart.lua\tno group here\t57.71\n' >"$T/nogroup.txt"
printf '1a\texperiments/quickstart.lua\t^(\\w+)\t57.71\n' >"$T/word.txt"
printf '2026/12/01 10:00:00.000 a_start\n2026/12/01 10:00:01.000 a_end\n' >"$T/marks.txt"

# (session 60) a file that is not UTF-8 for every text reader; post results (RES) and results files that lack a table,
# a field or a held-out point; a comparison whose bias gives no scale; a model card's run with a value not a number
B=$T/bin.txt
printf '\xff\xfe\x00 not UTF-8 text\n' >"$B"
mkdir -p "$T/sc_bin" "$T/sc_nocmp/cmp" "$T/sc_noplan/cmp" "$T/res_text/h5" "$T/res_text/sim" "$T/res_noho/h5" \
         "$T/res_noho/sim" "$T/mcal/cmp" "$T/card_bad" "$T/card_binloss" "$T/sign_bin" "$T/layer_bin" "$T/nodir_parent"
cp "$B" "$T/sc_bin/summary.md"; cp "$B" "$T/sign_bin/tables.txt"; cp "$B" "$T/layer_bin/tables.txt"
for f in h5/heldout.h5 sim/heldout.h5; do cp "$TX" "$T/res_text/$f"; done
row='| az:none | shipped h200 | 10 | 3.00% | PASS | +1.00% | PASS | +2.00% | PASS | -1.00% | PASS | +0.50% | PASS |'
for r in sc_nocmp sc_noplan; do
    echo "$row" >"$T/$r/summary.md"; echo "x/heldout.h5 ho:az:none" >"$T/$r/pairs.txt"
done
printf '{"steps": 10, "heldout": {"masked_bytes": "many", "windows": 2, "window_len": 64, "accuracy": 0.5,
 "nll_bits_per_byte": 2.0}, "unigram_baseline": {"accuracy": 0.1, "most_frequent_byte": 32,
 "heldout_cross_entropy_bits": 4.0, "entropy_bits": 4.1}}\n' >"$T/card_bad/metrics.json"
echo '{"seed": 1}' >"$T/card_bad/config.json"
printf 'step,train_loss,heldout_nll_bits,heldout_acc\n1,2.0,3.0,0.4\n' >"$T/card_bad/loss.csv"
sed 's/"many"/128/' "$T/card_bad/metrics.json" >"$T/card_binloss/metrics.json"
cp "$T/card_bad/config.json" "$T/card_binloss/"; cp "$B" "$T/card_binloss/loss.csv"
$PY - "$T" <<'PYEOF' || { echo "FAIL: the session 60 HDF5 inputs"; exit 1; }
import sys, h5py, numpy as np
T = sys.argv[1]
def tab(g, tname, cols):
    dt = [(k, np.asarray(v).dtype if np.asarray(v).dtype.kind != "U" else "S32") for k, v in cols.items()]
    a = np.zeros(len(next(iter(cols.values()))), dtype=dt)
    for k, v in cols.items():
        a[k] = v
    g.create_dataset(tname, data=a)
def results(path, runs):   # {run: {table: {field: values}}}
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "dkv-results"
        R = f.create_group("runs")
        for run, tables in runs.items():
            g = R.create_group(run)
            for t, cols in tables.items():
                tab(g, t, cols)
steps = {"n_refresh": [1], "n_reuse": [0], "q_tokens": [64], "time_s": [0.01], "n_items": [1], "start_s": [0.0]}
# summary_counts.py --by-plans / --attainable: a comparison without compare_steps, one without its same_plan
results(T + "/sc_nocmp/cmp/001.h5", {"compare:ho:az:none:real": {}})
results(T + "/sc_noplan/cmp/001.h5", {"compare:ho:az:none:real": {"compare_steps": {"sim_time_s": [1.0],
                                                                                    "real_time_s": [1.0]}}})
# new_rows.py, machine_spread.py: held-out files whose runs are no held-out point's
for f in ("h5", "sim"):
    results("%s/res_noho/%s/heldout.h5" % (T, f), {"val:a:sim": {"steps": steps}})
# long_steps.py: the runs, without their steps
results(T + "/nosteps.h5", {"val:w1:dual:real": {}, "val:w1:dual:sim": {}})
# attn_items.py: the runs, without kernels
results(T + "/nokern.h5", {"p:real": {"steps": steps}, "p:sim": {"steps": steps}})
# ncu_layer.py: ncu_kernels without 'kind'; the twin with its l2_kernels
results(T + "/nokind_real.h5", {"val:p:real": {"steps": steps, "ncu_kernels": {"name": [b"reset_kernel"]}}})
results(T + "/nokind_sim.h5", {"val:p:sim": {"l2_kernels": {k: [0] for k in ("step_index", "l2_seq", "l2_part", "kind",
                                                                             "read_bytes", "write_bytes")}}})
# plot_quality_frontier.py: one point of a quality run
results(T + "/frontier.h5", {"quality": {"points": {"point": [b"none"], "group": [b"cache"], "peak_kv_bytes": [2 ** 20],
                                                    "peak_host_bytes": [0], "bits_per_byte": [2.0], "agreement": [1.0]}}})
with h5py.File(T + "/frontier.h5", "a") as f:
    f["runs/quality"].create_group("params").attrs["backend"] = "cpu"
# machine_calibrate.py: an in-sample comparison whose step.time_s bias is -100 %
with h5py.File(T + "/mcal/cmp/001.h5", "w") as f:
    g = f.create_group("runs").create_group("compare:val:a:real")
    g.create_group("params").attrs["real_run"] = "val:a:real"
    tab(g, "compare_quantities", {"quantity": [b"step.time_s"], "n": [3], "bias": [-1.0]})
PYEOF

n=0
c_kind=() c_want=() c_name=() c_file=() c_cmd=()
err() {   # status prefix file command... : exit STATUS, one stderr line "PREFIX: ...FILE...", no traceback
    c_kind[n]=err c_want[n]=$1 c_name[n]=$2 c_file[n]=$3; shift 3
    c_cmd[n]=$(printf '%q ' "$@"); n=$((n + 1))
}
helps() {   # command... : --help prints the usage on stdout, nothing on stderr, exit 0
    c_kind[n]=help c_want[n]=0 c_name[n]="" c_file[n]=""; c_cmd[n]=$(printf '%q ' "$@"); n=$((n + 1))
}
matrix() {   # status prefix script [args before] -- [args after]: the script on $M, $TX and $E, and --help
    local st=$1 pre=$2 sc=$3 before=() after=() f; shift 3
    while [ $# -gt 0 ] && [ "$1" != -- ]; do before+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    after=("$@")
    for f in "$M" "$TX" "$E"; do err "$st" "$pre" "$f" $PY "$S/$sc" "${before[@]}" "$f" "${after[@]}"; done
    helps $PY "$S/$sc" --help
}

# HDF5 readers
matrix 1 h5_summary h5_summary.py
matrix 1 ncu_bytes ncu_bytes.py -- "$E"
err 1 ncu_bytes "$M" $PY "$S/ncu_bytes.py" "$R" "$M"                     # the second file too
matrix 1 ncu_gemm_reads.py ncu_gemm_reads.py llada-8b -- "$E"
matrix 1 ncu_steps.py ncu_steps.py -- "$E"
matrix 1 ncu_layer.py ncu_layer.py -- "$E"
matrix 1 class_errors class_errors.py -- az:none
err 1 class_errors "$TX" $PY "$S/class_errors.py" "$R" az:none --event-cost "$TX"
matrix 1 quality_compare quality_compare.py -- "$E"
matrix 1 plot_quality_frontier plot_quality_frontier.py -- "$T/out.png"
matrix 1 fit_host fit_host.py
# folders of HDF5 files: a post result's cmp/NNN.h5, a multi-instance post's h5/hw_multi_*.h5
err 2 machine_calibrate.py "$M" $PY "$S/machine_calibrate.py" "$M"
err 2 machine_calibrate.py "$T/cal_text/cmp/001.h5" $PY "$S/machine_calibrate.py" "$T/cal_text"
err 2 machine_calibrate.py "$T/cal_empty/cmp/001.h5" $PY "$S/machine_calibrate.py" "$T/cal_empty"
helps $PY "$S/machine_calibrate.py" --help
err 1 hw_multi_table "$M" $PY "$S/hw_multi_table.py" "$M"
err 1 hw_multi_table "$TX" $PY "$S/hw_multi_table.py" "$TX"
err 1 hw_multi_table "$T/cal_text" $PY "$S/hw_multi_table.py" "$T/cal_text"      # a folder without h5/hw_multi_*.h5
err 1 hw_multi_table "$T/multi_text/h5/hw_multi_1.h5" $PY "$S/hw_multi_table.py" "$T/multi_text"
err 1 hw_multi_table "$T/multi_empty/h5/hw_multi_1.h5" $PY "$S/hw_multi_table.py" "$T/multi_empty"
helps $PY "$S/hw_multi_table.py" --help
# hw_gpu_check.py (scripts/hw_session.sh post's check of the runs' GPU): a folder that is none, an h5 it cannot read,
# a preset that does not exist
err 1 hw_gpu_check "$M" $PY "$S/hw_gpu_check.py" --preset h200 "$M"
err 1 hw_gpu_check "$T/multi_text/h5/hw_multi_1.h5" $PY "$S/hw_gpu_check.py" --preset h200 "$T/multi_text"
err 1 hw_gpu_check "datasets/presets/gpu/nosuch.lua" $PY "$S/hw_gpu_check.py" --preset nosuch "$T/multi_empty"
helps $PY "$S/hw_gpu_check.py" --help
helps $PY "$S/profile_block.py" --help
# text readers (an empty HDF5 file is the other kind of file for them)
matrix 1 attn_bench attn_bench.py
matrix 1 profile_ratio profile_ratio.py -- "$ROOT/datasets/profiles/h200-20261201k.lua"
matrix 1 smi_segments smi_segments.py -- "$T/marks.txt"
err 1 smi_segments "$E" $PY "$S/smi_segments.py" "$TX" "$E"               # the marks file
matrix 2 sel_align_ncu sel_align_ncu.py
matrix 1 attn_geom_loo attn_geom_loo.py                                     # not attn_waves_check's prefix
err 1 tiny_dllm_card "$M" $PY "$S/tiny_dllm_card.py" "$M" --png "$T/card.png"
err 1 tiny_dllm_card "$T/card_text/metrics.json" $PY "$S/tiny_dllm_card.py" "$T/card_text" --png "$T/card.png"
err 1 tiny_dllm_card "$T/card_empty/metrics.json" $PY "$S/tiny_dllm_card.py" "$T/card_empty" --png "$T/card.png"
helps $PY "$S/tiny_dllm_card.py" --help
# claims_pins.py: a pins file or ledger it cannot use, and an --only that names no pin, exit 2 (usage)
err 2 claims_pins.py "$M" $PY "$S/claims_pins.py" "$DKV" --pins "$M"
err 2 claims_pins.py "$TX" $PY "$S/claims_pins.py" "$DKV" --pins "$TX"
err 2 claims_pins.py "$E" $PY "$S/claims_pins.py" "$DKV" --pins "$E"
err 2 claims_pins.py "$T/nopins.txt" $PY "$S/claims_pins.py" "$DKV" --pins "$T/nopins.txt"
err 2 claims_pins.py "$T/nogroup.txt:1: regex 'no group here' has no group" $PY "$S/claims_pins.py" "$DKV" --pins "$T/nogroup.txt"
err 2 claims_pins.py "--only 9z: no pin of row 9z" $PY "$S/claims_pins.py" "$DKV" --pins "$ROOT/tests/claims_pins.txt" --only 9z
err 2 claims_pins.py "$M" $PY "$S/claims_pins.py" "$DKV" --pins "$ROOT/tests/claims_pins.txt" --claims "$M"
helps $PY "$S/claims_pins.py" --help
# other usage: an option without its value, no file at all
err 2 ncu_bytes "-o needs a file" $PY "$S/ncu_bytes.py" "$E" "$E" -o
err 2 "usage" "h5_summary.py FILE.h5" $PY "$S/h5_summary.py"
# --help alone (the file-reading cases of these are in their own tests, or they read no file)
for sc in check_layering.py long_functions.py attn_items.py machine_clocks.py tiny_dllm_numpy.py train_tiny_dllm.py \
          attn_waves_check.py; do
    helps $PY "$S/$sc" --help
done

# (session 60) a text reader given a file that is not UTF-8 names it (until then a UnicodeDecodeError traceback)
err 2 summary_counts.py "$T/sc_bin/summary.md: not a text file" $PY "$S/summary_counts.py" "$T/sc_bin"
err 1 ncu_cells.py "$B: not a text file" $PY "$S/ncu_cells.py" "$B"
err 1 ncu_attainable.py "$B: not a text file" $PY "$S/ncu_attainable.py" "$B" "$B"
err 1 ncu_layer_sets.py "$T/layer_bin/tables.txt: not a text file" $PY "$S/ncu_layer_sets.py" "$T/layer_bin"
err 1 ncu_sign.py "$T/sign_bin/tables.txt: not a text file" $PY "$S/ncu_sign.py" "$T/sign_bin" "$T/sign_bin"
err 1 l2probe.py "$B: not a text file" $PY "$S/l2probe.py" "$B" "$B"
err 1 l2drain.py "$B: not a text file" $PY "$S/l2drain.py" "$B" "$B"
err 1 l2drain_gemm.py "$B: not a text file" $PY "$S/l2drain_gemm.py" "$B" "$B"
err 1 gemm_algo.py "$B: not a text file" $PY "$S/gemm_algo.py" "$B" "$B"
err 1 gemm_algo.py "$B: not a text file" $PY "$S/gemm_algo.py" walks "$B" "$B"
err 1 gemm_splitk.py "$B: not a text file" $PY "$S/gemm_splitk.py" "$B"
err 1 gemm_steps "$B: not a text file" $PY "$S/gemm_steps.py" lookup "$B" --profile "$B"
err 1 ncu_flush_summary.py "$B: not a text file" $PY "$S/ncu_flush_summary.py" "$B"
err 1 clock_model "$B: not a text file" $PY "$S/clock_model.py" rows "$B"
err 1 clock_model "$M: no such file" $PY "$S/clock_model.py" rows "$M"
err 1 clock_model "$T/sc_bin: a folder, not a file" $PY "$S/clock_model.py" rows "$T/sc_bin"
err 1 gemm_interp_loo.py "$B: not a text file" $PY "$S/gemm_interp_loo.py" --profile "$B"
err 1 gemm_interp_loo.py "$TX: no table 'gemm'" $PY "$S/gemm_interp_loo.py" --profile "$TX"
err 1 tiny_dllm_card "$T/card_binloss/loss.csv: not a text file" $PY "$S/tiny_dllm_card.py" "$T/card_binloss" \
    --png "$T/card_binloss.png"
# HDF5 readers that opened with a bare h5py.File (until then a traceback on a file that is not HDF5)
err 1 offload_steps "$T/res_text/h5/heldout.h5: not an HDF5 file" $PY "$S/offload_steps.py" "$T/res_text"
err 2 machine_clocks.py "$T/res_text/h5/heldout.h5: not an HDF5 file" $PY "$S/machine_clocks.py" "$T/res_text"
err 1 machine_spread "$T/res_text/h5/heldout.h5: not an HDF5 file" $PY "$S/machine_spread.py" "$T/res_text"
err 1 plot "$T/sc_bin: a folder, not a file" $PY "$S/plot.py" "$T/sc_bin"
# a table, field or value that is missing or wrong: named, before anything is written
err 2 summary_counts.py "$T/sc_nocmp/cmp/001.h5: run compare:ho:az:none:real: no table 'compare_steps'" \
    $PY "$S/summary_counts.py" --by-plans "$T/sc_nocmp"
err 2 summary_counts.py "$T/sc_noplan/cmp/001.h5: run compare:ho:az:none:real: table 'compare_steps' has no field 'same_plan'" \
    $PY "$S/summary_counts.py" --by-plans "$T/sc_noplan"
err 2 summary_counts.py "$T/sc_noplan/cmp/001.h5: run compare:ho:az:none:real: table 'compare_steps' has no field 'same_plan'" \
    $PY "$S/summary_counts.py" --attainable "$T/sc_noplan"
err 1 ncu_layer.py "$T/nokind_real.h5: val:p:real: table 'ncu_kernels' has no field 'kind'" \
    $PY "$S/ncu_layer.py" "$T/nokind_real.h5" "$T/nokind_sim.h5"
err 2 attn_items.py "$T/nokern.h5: run p:real: no table 'kernels'" $PY "$S/attn_items.py" "$T/nokern.h5" "$T/nokern.h5" --point p
err 2 attn_items.py "$M: no such file" $PY "$S/attn_items.py" "$M" "$M"
err 2 attn_items.py "$E: no group 'runs'" $PY "$S/attn_items.py" "$E" "$E"
err 1 tiny_dllm_card "$T/card_bad/metrics.json: field 'heldout.masked_bytes' is not a number" \
    $PY "$S/tiny_dllm_card.py" "$T/card_bad" --png "$T/card_bad.png"
err 2 machine_calibrate.py "$T/mcal/cmp: mean step.time_s bias -100.00 %" $PY "$S/machine_calibrate.py" "$T/mcal"
err 1 long_steps "$T/nosteps.h5: run val:w1:dual:real: no table 'steps'" $PY "$S/long_steps.py" "$T/nosteps.h5" \
    --points w1:dual
err 1 new_rows "$T/res_noho: no held-out point" $PY "$S/new_rows.py" "$T/res_noho"
err 1 machine_spread "$T/res_noho: no held-out point" $PY "$S/machine_spread.py" "$T/res_noho"
# an output folder that is not there: refused before any work (until then a traceback after it)
err 1 l2probe.py "$T/nodir/x.md: cannot write: no folder $T/nodir" $PY "$S/l2probe.py" "$M" "$M" -o "$T/nodir/x.md"
err 2 conditioning.py "$T/nodir/c.md: cannot write: no folder $T/nodir" $PY "$S/conditioning.py" --dkv "$DKV" \
    -o "$T/nodir/c.md"
# a stand-in writer does not replace a file (it may be a measurement)
err 2 l2probe.py "$TX exists: not overwritten" $PY "$S/l2probe.py" standin "$TX" "$T/new_ncu.csv" --cap 40
err 2 l2drain.py "$TX exists: not overwritten" $PY "$S/l2drain.py" standin "$T/new_m.txt" "$TX" --rate 0.1
err 2 l2drain_gemm.py "$TX exists: not overwritten" $PY "$S/l2drain_gemm.py" standin "$TX" "$T/new_n.csv"
# a misspelled option is named, exit 2 (until then taken for a file name, or the usage printed without naming it)
err 2 summary_counts.py "unknown option '--per-sets'" $PY "$S/summary_counts.py" --per-sets "$T/sc_bin"
err 2 summary_counts.py "--attainable and --per-set: give one of them" $PY "$S/summary_counts.py" --attainable --per-set "$T/sc_bin"
err 2 ncu_cells.py "unknown option '--by-clas'" $PY "$S/ncu_cells.py" --by-clas "$B"
err 2 ncu_attainable.py "unknown option '--hlep'" $PY "$S/ncu_attainable.py" --hlep
err 2 machine_calibrate.py "unknown option '--scal'" $PY "$S/machine_calibrate.py" "$T/mcal" --scal
err 2 ncu_bytes.py "unknown option '--out'" $PY "$S/ncu_bytes.py" "$R" "$R" --out "$T/x.md"
err 2 attn_items.py "unknown option '--piont'" $PY "$S/attn_items.py" "$R" "$R" --piont val:w19:dual
err 2 machine_clocks.py "unknown option '--kind'" $PY "$S/machine_clocks.py" --kind "$T/res_text"
err 2 ncu_flush_summary.py "unknown option '--all'" $PY "$S/ncu_flush_summary.py" --all "$B"
err 2 l2probe.py "unknown option '--out'" $PY "$S/l2probe.py" "$B" "$B" --out "$T/x.md"
err 2 hw_multi_proc "START_DELAY must be a whole number of seconds, got 'x'" env START_DELAY=x DKV="$DKV" \
    bash "$S/hw_multi_proc.sh" 1 "$T/mp.h5"
err 2 hw_multi_proc "LIMIT must be a duration" env LIMIT=soon DKV="$DKV" bash "$S/hw_multi_proc.sh" 1 "$T/mp.h5"
helps $PY "$S/machine_calibrate.py" -h

# run the cases, CASE_JOBS at a time (default: the CPUs, at most 4)
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}   # numpy's import, once per case (tests/run.sh sets it too)
jobs_max=${CASE_JOBS:-$(c=$(nproc 2>/dev/null || echo 2); echo $((c > 4 ? 4 : c)))}
for ((i = 0; i < n; i++)); do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
    (cd "$ROOT" && eval "${c_cmd[$i]}" >"$T/c$i.out" 2>"$T/c$i.err" </dev/null; echo $? >"$T/c$i.rc") &
done
wait

bad=0
failed() { echo "FAIL: $1: ${c_cmd[$i]}"; sed 's/^/      | /' "$T/c$i.err" "$T/c$i.out" | head -n 6; bad=$((bad + 1)); }
for ((i = 0; i < n; i++)); do
    rc=$(cat "$T/c$i.rc")
    if grep -q Traceback "$T/c$i.err" "$T/c$i.out"; then failed "a traceback (exit $rc)"; continue; fi
    [ "$rc" = "${c_want[$i]}" ] || { failed "exit $rc, not ${c_want[$i]}"; continue; }
    if [ "${c_kind[$i]}" = help ]; then
        [ -s "$T/c$i.out" ] && [ ! -s "$T/c$i.err" ] || failed "--help: no usage on stdout, or something on stderr"
        continue
    fi
    lines=$(grep -c . "$T/c$i.err")
    [ "$lines" = 1 ] || { failed "$lines lines on stderr, not one"; continue; }
    line=$(cat "$T/c$i.err")
    [[ "$line" == "${c_name[$i]}: "* ]] || { failed "the line does not start with '${c_name[$i]}: '"; continue; }
    [[ "$line" == *"${c_file[$i]}"* ]] || { failed "the line does not name '${c_file[$i]}'"; continue; }
done
# a pin whose group captures a word fails that pin, named (exit 1), without a traceback (it raised ValueError)
out=$(cd "$ROOT" && $PY "$S/claims_pins.py" "$DKV" --pins "$T/word.txt" 2>&1); rc=$?
if [ $rc != 1 ] || grep -q Traceback <<<"$out" || ! grep -qF "FAIL 1a (pins line 1): /^(\w+)/ matched" <<<"$out"; then
    echo "FAIL: a pin whose group is a word: exit $rc: $(head -n 3 <<<"$out")"; bad=$((bad + 1))
fi
# every argparse script's usage error is one line, "SCRIPT: MESSAGE (try --help)", exit 2 (script_io.arg_parser; until
# session 51 argparse's usage line plus its message)
for sc in $(grep -l "script_io.arg_parser(" "$S"/*.py); do
    [ "$(basename "$sc")" = script_io.py ] && continue
    out=$(cd "$ROOT" && $PY "$sc" --no-such-option 2>&1 >/dev/null); rc=$?
    if [ $rc != 2 ] || [ "$(grep -c . <<<"$out")" != 1 ] || ! grep -qE "^$(basename "$sc"): .*--no-such-option.*\(try --help\)$" <<<"$out" &&
       ! grep -qE "^$(basename "$sc"): the following arguments are required: .*\(try --help\)$" <<<"$out"; then
        echo "FAIL: $(basename "$sc") --no-such-option: exit $rc: $out"; bad=$((bad + 1))
    fi
done
# script_io.replacing, behind every script's -o: an output that is one of the command's inputs, and a PATH.tmp that
# exists, are refused before anything is written (until session 51 ncu_bytes.py -o REAL.h5 replaced its own input,
# and a user's PATH.tmp was overwritten, then removed)
out=$(cd "$T" && printf 'in\n' >io_in.txt && printf 'mine\n' >io_out.txt.tmp && printf 'old\n' >io_out.txt &&
      $PY - "$S" <<'PYEOF' 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import script_io
for path, inputs in (("io_in.txt", ("io_in.txt",)), ("io_out.txt", ())):
    try:
        script_io.write_text(path, "new\n", inputs=inputs)
        print("written", path)
    except OSError as e:
        print("refused", path, e.strerror)
script_io.write_text("io_new.txt", "new\n", inputs=("io_in.txt",))
PYEOF
)
if ! grep -q "refused io_in.txt it is also this command's input io_in.txt" <<<"$out" ||
   ! grep -q "refused io_out.txt .*io_out.txt.tmp exists" <<<"$out" || [ "$(cat "$T/io_in.txt" "$T/io_out.txt.tmp" \
   "$T/io_out.txt" "$T/io_new.txt")" != "$(printf 'in\nmine\nold\nnew')" ]; then
    echo "FAIL: script_io.replacing's refusals: $out"; bad=$((bad + 1))
fi
# (session 60) what the cases above cannot say: nothing written, the real name printed, options whole
k=0
more() { echo "FAIL: $1"; bad=$((bad + 1)); }
[ ! -e "$T/card_bad.png" ] || more "tiny_dllm_card.py wrote its PNG before refusing a value"
[ "$(cat "$TX")" = "not an HDF5 file, nor a log" ] || more "a stand-in writer replaced $TX"
# summary_counts.py: a comparison it cannot read is refused before the main table is printed; --per-set after RES
out=$(cd "$ROOT" && $PY "$S/summary_counts.py" --by-plans "$T/sc_nocmp" 2>/dev/null)
[ -z "$out" ] || more "summary_counts.py --by-plans printed before refusing a comparison: $(head -n 2 <<<"$out")"
out=$(cd "$ROOT" && $PY "$S/summary_counts.py" "$T/sc_nocmp" --per-set 2>&1); rc=$?
[ $rc = 0 ] && grep -q "^Per RES, mean step |error|" <<<"$out" || more "summary_counts.py RES --per-set: exit $rc: $(head -n 3 <<<"$out")"
# hw_multi_proc.sh leaves no temporary folder behind on a usage error
mkdir -p "$T/mp_tmp"
TMPDIR=$T/mp_tmp START_DELAY=x DKV="$DKV" bash "$S/hw_multi_proc.sh" 1 "$T/mp2.h5" 2>/dev/null
[ -z "$(ls -A "$T/mp_tmp")" ] || more "hw_multi_proc.sh left $(ls "$T/mp_tmp") in TMPDIR"
# hw_gpu_check.py finds its presets from its own place, not the current folder
out=$(cd "$T" && $PY "$S/hw_gpu_check.py" --preset h200 "$T/multi_empty" 2>&1); rc=$?
[ $rc = 0 ] && grep -q "^hw_gpu_check: nothing to compare" <<<"$out" || more "hw_gpu_check.py outside the root: exit $rc: $out"
# plot_quality_frontier.py OUT without an extension: matplotlib writes OUT.png, the name printed (until session 60: OUT)
out=$(cd "$ROOT" && $PY "$S/plot_quality_frontier.py" "$T/frontier.h5" "$T/frontier_noext" 2>&1); rc=$?
[ $rc = 0 ] && [ -s "$T/frontier_noext.png" ] && [ "$out" = "plot_quality_frontier: wrote $T/frontier_noext.png (1 points)" ] ||
    more "plot_quality_frontier.py OUT without an extension: exit $rc: $out"
# argparse scripts take no abbreviation of an option (plot.py's --max-runs, fit_host.py's --runs)
for c in "plot.py $R --max-run 3" "fit_host.py --run x" "new_rows.py $T/res_noho --event 1e-6"; do
    # shellcheck disable=SC2086
    out=$(cd "$ROOT" && $PY "$S"/$c 2>&1); rc=$?
    [ $rc = 2 ] && grep -q "unrecognized arguments: --" <<<"$out" || more "$c: an abbreviation taken: exit $rc: $(tail -n 1 <<<"$out")"
done
if [ $bad -gt 0 ]; then
    echo "FAIL: $bad of $((n + 1)) cases"
    exit 1
fi
echo "ok: $((n + 1)) cases: one line naming the file, the documented status, no traceback; --help exits 0"
