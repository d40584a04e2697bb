#!/usr/bin/env bash
# test_ncu_model_bytes.sh - scripts/ncu_model_bytes.sh on device call 56's Nsight Compute profiles of three
# Dream-7B validation points (datasets/hw/2026-12-02/call56/ncu_dream.tgz): the table has every point and
# its criterion, and the classes' measured bytes are the CSVs' (w1:dual's qkv: 3.7027 GB read); a CSV
# without its profiled run, or an OUT_DIR that exists, is refused.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"
tar xzf datasets/hw/2026-12-02/call56/ncu_dream.tgz -C "$T"
DKV="$DKV" bash scripts/ncu_model_bytes.sh "$T/ncu_dream" dream-7b "$T/o" > "$T/out.txt" || fail "ncu_model_bytes.sh"
M=$T/o/ncu_bytes.md
head -n 1 "$M" | grep -q "^Criterion (issue 9)" || fail "no criterion first"
for p in w1:dual w2:sparse w3:dual; do
    grep -q "^val:$p: reads within 5 % in [0-7] of 7 classes, writes in [0-7] of 7$" "$M" || fail "no verdict for $p"
done
awk '/^### val:w1:dual/ {f = 1} f && /^\| qkv \|/ {print; exit}' "$M" | grep -q "| 3.7027 |" ||
    fail "w1:dual qkv's measured read is not the CSV's: $(grep '^| qkv' "$M" | head -1)"
if DKV="$DKV" bash scripts/ncu_model_bytes.sh "$T/ncu_dream" dream-7b "$T/o" 2> "$T/e1"; then fail "existing OUT_DIR"; fi
grep -q "exists: give a new OUT_DIR" "$T/e1" || fail "OUT_DIR message: $(cat "$T/e1")"
rm "$T/ncu_dream/prof_w3_dual.h5"
if DKV="$DKV" bash scripts/ncu_model_bytes.sh "$T/ncu_dream" dream-7b "$T/o2" 2> "$T/e2"; then fail "CSV without its run"; fi
grep -q "ncu_w3_dual.csv has no prof_w3_dual.h5 beside it" "$T/e2" || fail "missing run message: $(cat "$T/e2")"
echo ok
