#!/usr/bin/env bash
# test_docs_python.sh - every ```python block of README.md and docs/*.md runs with /usr/bin/python3
# and succeeds (blocks fenced as ```python norun are shown, not run).  The blocks run in a folder
# holding scripts/ and the results files they name, made here by `dkv run`:
# results/quickstart.h5 (experiments/quickstart.lua) and results/offload.h5
# (experiments/offload_thresholds.lua).  The README's notebook cell (the block that sets
# `path, metric = ...`) also runs on offload.h5 (5 swept parameters) and on a one-parameter
# sweep, and must write its PNG each time.
set -uo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
/usr/bin/python3 -c 'import h5py, pandas, matplotlib' 2>/dev/null \
    || { echo "SKIP: /usr/bin/python3 lacks h5py/pandas/matplotlib (scripts/deps.sh)"; exit 77; }
w="$T/w"
mkdir -p "$w/results"
ln -s "$ROOT/scripts" "$w/scripts"
# (tests/run_cached.sh: `dkv run E -o F`, shared with test_experiments.sh and test_claims.sh)
(cd "$ROOT" && bash tests/run_cached.sh "$w/results/quickstart.h5" experiments/quickstart.lua >/dev/null) || fail "quickstart.lua"
(cd "$ROOT" && bash tests/run_cached.sh "$w/results/offload.h5" experiments/offload_thresholds.lua >/dev/null) || fail "offload_thresholds.lua"
n=0
for doc in "$ROOT/README.md" "$ROOT"/docs/*.md; do
    k=$(awk -v dir="$T" -v tag="$(basename "$doc" .md)" '
        /^```python[ \t]*$/ { inb = 1; k++; f = sprintf("%s/%s_%02d.py", dir, tag, k); printf "" > f; next }
        /^```/ && inb       { inb = 0; close(f); next }
        inb                 { print > f }
        END                 { print k + 0 }' "$doc")
    n=$((n + k))
done
[ "$n" -gt 0 ] || fail "no python examples found"
for f in "$T"/*.py; do
    out=$(cd "$w" && /usr/bin/python3 "$f" 2>&1) || { cat "$f"; fail "example $(basename "$f"): $out"; }
    echo "== $(basename "$f")"; echo "$out" | tail -n 12
done
cat >"$T/rates.lua" <<'LUA'
local dkv = require "dkv"
for _, rate in ipairs{1, 2, 4, 8} do
  dkv.save(dkv.simulate{model = "llada-8b", gpu = "h200",
    workload = {kind = "poisson", n = 8, rate = rate, prompt = 128, gen = 32}}, "rate" .. rate)
end
LUA
(cd "$ROOT" && "$DKV" run "$T/rates.lua" -o "$w/results/rates.h5" >/dev/null) || fail "rates.lua"
nb=$(grep -l '^path, metric = "results/quickstart.h5"' "$T"/README_*.py) || fail "no notebook cell in README"
for f in quickstart offload rates; do
    rm -f "$w/results/metric.png"
    sed "s#results/quickstart.h5#results/$f.h5#" "$nb" >"$T/nb_$f.txt"
    [ "$(grep -cve '^\s*$' "$T/nb_$f.txt")" -le 10 ] || fail "the notebook cell is over 10 lines"
    out=$(cd "$w" && /usr/bin/python3 "$T/nb_$f.txt" 2>&1) || fail "notebook on $f.h5: $out"
    [ "$(stat -c %s "$w/results/metric.png" 2>/dev/null || echo 0)" -gt 10000 ] || fail "notebook on $f.h5: no PNG"
done
echo "$n python examples ran; the notebook cell ran on 3 files"
