#!/usr/bin/env bash
# test_l2_lines_probe.sh - scripts/l2_lines_probe.c (the L2 probes of cuda/bench/l2drain.cu through the line-level
# model, core/cost/cost_l2_lines.c, and the shipped per-buffer replay) builds against this tree and runs, and
# scripts/l2_lines_compare.py sets it beside the GPU's tables of device calls 117, 118 and 123 (and the GEMM probes of
# calls 121 and 122): every row found, and
# the finding docs/COST_MODEL.md "A line-level L2" states (at a 1 KB line, which gives the same figures as 128 bytes
# to 0.01 MB in the mean) still holds: the line model's mean |error| below the replay's overall and in each family.
# Then the two programs' refusals and --help.
set -uo pipefail
: "${ROOT:?}" "${T:?}" "${BUILD:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v gcc > /dev/null || { echo "SKIP: no gcc"; exit 77; }
cd "$ROOT"
san=(); [ "$(basename "$BUILD")" = asan ] && san=(-fsanitize=address,undefined -fno-omit-frame-pointer)
gcc "${san[@]}" -std=c11 -O2 -Werror=implicit-function-declaration -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Icore -I. \
    -I"$BUILD/gen" scripts/l2_lines_probe.c -L"$BUILD/lib" -ldkv_cost -ldkv_engine -ldkv_policy -ldkv_mem \
    -ldkv_workload -ldkv_trace -ldkv_model -ldkv_util -lm -o "$T/lp" 2> "$T/cc.txt" ||
    fail "l2_lines_probe.c no longer builds against this tree: $(head -n 20 "$T/cc.txt")"
"$T/lp" --line 1024 > "$T/p.csv" || fail "l2_lines_probe exited $?"
[ "$(grep -c '^rmw,' "$T/p.csv")" = 162 ] && [ "$(grep -c '^order,' "$T/p.csv")" = 112 ] &&
    [ "$(grep -c '^gemm,' "$T/p.csv")" = 168 ] && [ "$(grep -c '^after,' "$T/p.csv")" = 72 ] &&
    [ "$(grep -c '^gout,' "$T/p.csv")" = 140 ] ||
    fail "rows: rmw $(grep -c '^rmw,' "$T/p.csv") (162), order $(grep -c '^order,' "$T/p.csv") (112), gemm $(grep -c '^gemm,' "$T/p.csv") (168), after $(grep -c '^after,' "$T/p.csv") (72), gout $(grep -c '^gout,' "$T/p.csv") (140)"
# the halves written before a GEMM stay in the replay (until session 46 the driver's keys were the replay's weight-slice
# keys, which a GEMM's end renames streamed lines: every half gone, 4.0 MB, at any x)
for r in gemm,gemm64,16 gout,gout_gemm,16 gout,gout_gemmrmw,16; do
    grep -qxE "$r,a_gone,[0-9.]+,0\.0000" "$T/p.csv" && grep -qxE "$r,b_gone,[0-9.]+,0\.0000" "$T/p.csv" ||
        fail "the replay loses the halves written before a GEMM: $(grep "^$r,[ab]_gone" "$T/p.csv" | tr '\n' ' ')"
done
HW=datasets/hw/2026-12-04
py=/usr/bin/python3
# LABEL ROWS OUT TABLE_OPTIONS...: the comparison has ROWS rows, and in each family and overall the line model's mean
# |error| is below the replay's
holds() {
    local label=$1 n=$2 out=$3; shift 3
    $py scripts/l2_lines_compare.py "$T/p.csv" "$@" > "$out" || fail "$label: l2_lines_compare exited $?: $(cat "$out")"
    grep -q "^| all | all | $n |" "$out" || fail "$label: not $n rows: $(tail -n 1 "$out")"
    local f line
    for f in 'write-back' 'gone' 'dirty' 'all'; do
        line=$(grep -E "^\| (every set|all) \| $f[ |]" "$out") || fail "$label: no '$f' line: $(cat "$out")"
        awk -F'|' -v f="$label $f" '{ if (!($5 + 0 < $6 + 0)) { print "FAIL: " f ": the line model " $5 " not below the replay " $6; exit 1 } }' \
            <<< "$line" || exit 1
    done
}
holds probes 358 "$T/cmp.md" --rmw $HW/call123/l2drain_rmw_tables.md --order $HW/call117/l2drain_tables.md \
    --order $HW/call118/l2drain_tables.md
# the GEMM probes (calls 121 and 122), which no constant of the line model came from: the same holds
holds gemm 240 "$T/g.md" --gemm $HW/call121/l2drain_gemm_tables.md --gemm $HW/call122/l2drain_gemm_tables.md
# the clean_ways variant at K = 4 (session 45): below the default model overall on both sets of probes, and in the
# write-back and dirty families (its halves gone are above: docs/COST_MODEL.md "A line-level L2", session 45)
"$T/lp" --line 1024 --clean-ways 4 > "$T/pc.csv" || fail "l2_lines_probe --clean-ways 4 exited $?"
mean() { grep -E "^\| (every set|all) \| $2[ |]" "$1" | awk -F'|' '{ print $5 + 0 }'; }
below() {   # LABEL DEFAULT_OUT VARIANT_OUT FAMILY...
    local label=$1 d=$2 v=$3 f; shift 3
    for f in "$@"; do
        awk -v a="$(mean "$v" "$f")" -v b="$(mean "$d" "$f")" 'BEGIN { exit !(a + 0 < b + 0) }' ||
            fail "$label $f: clean_ways 4 gives $(mean "$v" "$f"), not below the default's $(mean "$d" "$f")"
    done
}
$py scripts/l2_lines_compare.py "$T/pc.csv" --rmw $HW/call123/l2drain_rmw_tables.md --order $HW/call117/l2drain_tables.md \
    --order $HW/call118/l2drain_tables.md > "$T/cmpc.md" || fail "compare --clean-ways 4: $(cat "$T/cmpc.md")"
below probes "$T/cmp.md" "$T/cmpc.md" all write-back dirty
$py scripts/l2_lines_compare.py "$T/pc.csv" --gemm $HW/call121/l2drain_gemm_tables.md \
    --gemm $HW/call122/l2drain_gemm_tables.md > "$T/gc.md" || fail "compare gemm --clean-ways 4: $(cat "$T/gc.md")"
below gemm "$T/g.md" "$T/gc.md" all write-back dirty
# a GPU row the CSV lacks is an error naming it (a CSV of the rmw set alone against the order tables)
grep -v '^order,' "$T/p.csv" > "$T/rmw_only.csv"
$py scripts/l2_lines_compare.py "$T/rmw_only.csv" --order $HW/call117/l2drain_tables.md > "$T/o" 2> "$T/e"
[ $? = 1 ] && grep -q 'no row for order rehit x 20 m_wr' "$T/e" || fail "a missing row: $(cat "$T/e")"
# pool (session 47, device call 130): the line model reads the attention's strided pool rows one reader a line, as any
# read, so it gives them a contiguous read's edge: pool_kv's halves gone within 0.1 MB of pool_plain's at every y
# (at the 128-byte line: a 1 KB line holds four heads' rows; the GPU's differ by up to 1.06 MB:
# datasets/hw/2026-12-05/call130/RESULT.md); the replay streams both alike (the same bytes but for the rows' rounding)
"$T/lp" --set pool > "$T/pp.csv" || fail "l2_lines_probe --set pool exited $?"
[ "$(grep -c '^pool,pool_kv,' "$T/pp.csv")" = 40 ] && [ "$(grep -c '^pool,pool_plain,' "$T/pp.csv")" = 40 ] ||
    fail "pool rows: $(grep -c '^pool,' "$T/pp.csv") (80)"
awk -F, '$4 ~ /_gone/ { v[$2 "," $3 "," $4] = $5; r[$2 "," $3 "," $4] = $6 }
    END { n = 0; for (k in v) { split(k, a, ","); if (a[1] != "pool_kv") continue; p = "pool_plain," a[2] "," a[3];
          if (!(p in v) || v[k] - v[p] > 0.1 || v[p] - v[k] > 0.1 || r[k] - r[p] > 0.1 || r[p] - r[k] > 0.1) { print "FAIL: pool " k ": " v[k] " " r[k] " against " v[p] " " r[p]; exit 1 }
          n++ } if (n != 20) { print "FAIL: pool pairs " n " (20)"; exit 1 } }' "$T/pp.csv" || exit 1
# keep_copy, the model's since session 48 (device call 129's clause on an H200's rows at probe sizes no model had seen,
# datasets/hw/2026-12-05/call129/h200/RESULT.md): at each D, on 1 KB lines, its mean |error| below --drop-copy's overall
# and in no family above it by more than 0.05 MB
H2=datasets/hw/2026-12-05/call129/h200
for D in 16 24; do
    "$T/lp" --line 1024 --probe-mb $D > "$T/k$D.csv" && "$T/lp" --line 1024 --probe-mb $D --drop-copy > "$T/d$D.csv" ||
        fail "l2_lines_probe --probe-mb $D exited $?"
    for v in k d; do
        $py scripts/l2_lines_compare.py "$T/$v$D.csv" --order $H2/order${D}_tables.md --rmw $H2/rmw${D}_tables.md \
            > "$T/c$v$D.md" || fail "compare D = $D ($v): $(cat "$T/c$v$D.md")"
    done
    for f in write-back gone dirty all; do
        awk -v k="$(mean "$T/ck$D.md" $f)" -v d="$(mean "$T/cd$D.md" $f)" -v f=$f \
            'BEGIN { exit !(k + 0 <= d + 0.05 && (f != "all" || k + 0 < d + 0)) }' ||
            fail "D = $D $f: keep-copy $(mean "$T/ck$D.md" $f) against drop-copy $(mean "$T/cd$D.md" $f)"
    done
done
# refusals (exit 2, one line naming the option) and --help (exit 0)
for a in "--line 100" "--ways 0" "--probe-mb 7" "--set foo" "--dirty-mb x" "--bogus" "--set gemm --probe-mb 16" "--set after --probe-mb 24" "--set gout --probe-mb 16" \
    "--set pool --probe-mb 16" "--clean-ways 64" "--clean-ways -1"; do
    # shellcheck disable=SC2086
    "$T/lp" $a > /dev/null 2> "$T/e"; rc=$?
    [ $rc = 2 ] && [ "$(wc -l < "$T/e")" = 1 ] || fail "l2_lines_probe $a: exit $rc, $(cat "$T/e")"
done
# (--help into a file: grep -q closing a pipe early would fail the writer, under pipefail, by timing)
"$T/lp" --help > "$T/h" && grep -q '^usage: l2_lines_probe' "$T/h" || fail "l2_lines_probe --help: $(cat "$T/h")"
$py scripts/l2_lines_compare.py "$T/p.csv" > /dev/null 2> "$T/e"; [ $? = 2 ] || fail "compare without tables: $(cat "$T/e")"
$py scripts/l2_lines_compare.py "$T/p.csv" --rmw > /dev/null 2> "$T/e"; [ $? = 2 ] || fail "compare --rmw without a file"
$py scripts/l2_lines_compare.py "$T/nothere.csv" --rmw $HW/call123/l2drain_rmw_tables.md > /dev/null 2> "$T/e"
[ $? = 1 ] && grep -q 'nothere.csv' "$T/e" || fail "compare on a missing CSV: $(cat "$T/e")"
$py scripts/l2_lines_compare.py --help > "$T/h" && grep -q 'l2_lines_compare.py' "$T/h" || fail "compare --help: $(cat "$T/h")"
echo "l2_lines_probe: ok"
