#!/usr/bin/env bash
# test_cli_plot.sh - scripts/plot.py renders a non-empty PNG from a results file, skips runs
# lacking tables with a note, and exits non-zero with a clear message for a bad file.  On 14
# simulated runs (12 arrival rates, two of them saved twice): the title names model, GPU and
# workload, identical curves are drawn once, more than 10 curves get colour/line-style pairs with
# the legend outside, --run picks the per-run panels, and the one-parameter sweep gets its figure.
set -uo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c 'import h5py, matplotlib' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py/matplotlib (apt-get install python3-h5py python3-matplotlib)"; exit 77; }

cat >"$T/p.lua" <<'LUA'
local dkv = require "dkv"
local GiB = 2^30
for _, name in ipairs({"a", "b"}) do
  local t, w, kv, alloc, res, lat, st = {}, {}, {}, {}, {}, {}, {}
  for i = 1, 200 do
    t[i] = i * 0.05; w[i] = 15 * GiB; kv[i] = math.floor((name == "a" and 2 or 3) * GiB * math.sin(i / 30) ^ 2)
    alloc[i] = w[i] + kv[i]; res[i] = alloc[i] + GiB
  end
  for i = 1, 50 do lat[i] = i * 0.1 * (name == "a" and 1 or 1.5); st[i] = 0 end
  lat[51] = 0 / 0; st[51] = 3                          -- an unfinished request: left out
  dkv.write_run(name, {tables = {
    memory = {columns = {time_s = t, weights = w, kv = kv, allocated = alloc, reserved = res}},
    requests = {columns = {latency_s = lat, status = st}}}})
end
dkv.write_run("no_tables", {summary = {x = 1}})
LUA
"$DKV" run "$T/p.lua" -o "$T/p.h5" >/dev/null || fail "dkv run"
# without -o: the default output name, next to the input (-o is given below)
$PY "$ROOT/scripts/plot.py" "$T/p.h5" 2>"$T/err.txt" || { cat "$T/err.txt"; fail "plot"; }
cat "$T/err.txt"
[ -s "$T/p.png" ] || fail "default output: no $T/p.png, or empty"
[ "$(head -c 8 "$T/p.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "not a PNG"
[ "$(stat -c %s "$T/p.png")" -gt 20000 ] || fail "suspiciously small PNG"
grep -q "run no_tables: no memory table" "$T/err.txt" || fail "note for a run without tables"
# --runs selects; a pattern matching only table-less runs has nothing to plot
$PY "$ROOT/scripts/plot.py" "$T/p.h5" -o "$T/a.png" --runs '^a$' 2>/dev/null && [ -s "$T/a.png" ] || fail "--runs"
# -o without an extension: matplotlib writes OUT.png, and that is the name printed (until session 60: "wrote OUT")
out=$($PY "$ROOT/scripts/plot.py" "$T/p.h5" -o "$T/noext" --runs '^a$' 2>/dev/null); rc=$?
[ $rc = 0 ] && [ -s "$T/noext.png" ] && [ ! -e "$T/noext" ] && grep -q "^plot: wrote $T/noext.png (" <<<"$out" ||
    fail "-o noext: rc $rc: $out"
# an option is taken whole, never by its prefix (--max-run is not --max-runs)
out=$($PY "$ROOT/scripts/plot.py" "$T/p.h5" -o "$T/ab.png" --max-run 3 2>&1); rc=$?
[ $rc = 2 ] && grep -q "unrecognized arguments: --max-run" <<<"$out" && [ ! -e "$T/ab.png" ] || fail "--max-run: rc $rc: $out"
out=$($PY "$ROOT/scripts/plot.py" "$T/p.h5" -o "$T/n.png" --runs no_tables 2>&1); rc=$?
[ $rc = 1 ] && grep -q "nothing to plot" <<<"$out" || fail "nothing to plot: rc $rc: $out"
# bad inputs
echo junk >"$T/junk.h5"
out=$($PY "$ROOT/scripts/plot.py" "$T/junk.h5" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "not an HDF5 file" <<<"$out" || fail "junk file: rc $rc: $out"
out=$($PY "$ROOT/scripts/plot.py" "$T/missing.h5" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "no such file" <<<"$out" || fail "missing file: rc $rc: $out"
out=$($PY "$ROOT/scripts/plot.py" "$T" 2>&1); rc=$?
[ $rc = 1 ] && [ "$out" = "plot: $T: a folder, not a file" ] || fail "a folder: rc $rc: $out"
$PY -c 'import h5py; h5py.File("'"$T"'/other.h5", "w").create_dataset("x", data=[1])'
out=$($PY "$ROOT/scripts/plot.py" "$T/other.h5" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "not a dkv results file" <<<"$out" || fail "foreign HDF5: rc $rc: $out"

cat >"$T/many.lua" <<'LUA'
local dkv = require "dkv"
for rate = 1, 12 do
  local r = dkv.simulate{model = "llada-8b", gpu = "h200", seed = 4,
    workload = {kind = "poisson", n = 6, rate = rate, prompt = 128, gen = 32}}
  dkv.save(r, "rate" .. rate)
  if rate <= 2 then dkv.save(r, "rate" .. rate .. "again") end
end
LUA
"$DKV" run "$T/many.lua" -o "$T/many.h5" >/dev/null || fail "dkv run many.lua"
out=$($PY "$ROOT/scripts/plot.py" "$T/many.h5" -o "$T/many.png" --run rate5 2>"$T/err.txt") || { cat "$T/err.txt"; fail "plot many"; }
echo "$out"
grep -qxF "plot: title: llada-8b on h200 (simulated): 6 poisson requests at 1-12/s, P=128 G=32" <<<"$out" \
    || fail "title: $(grep title <<<"$out")"
for p in memory latency; do
    grep -q "^plot: $p: drawn once: rate1 = rate1again (identical)$" <<<"$out" || fail "$p: rate1 merged"
    grep -q "^plot: $p: drawn once: rate2 = rate2again (identical)$" <<<"$out" || fail "$p: rate2 merged"
    grep -q "^plot: $p: 12 curves: colour and line-style pairs, legend outside the axes$" <<<"$out" || fail "$p: styles"
done
grep -q "^plot: per-run panels: memory by tag rate5, steps rate5$" <<<"$out" || fail "--run"
grep -q "^plot: wrote $T/many.sweep.png (sweep over workload.rate)$" <<<"$out" || fail "sweep figure"
[ "$(stat -c %s "$T/many.sweep.png")" -gt 20000 ] || fail "sweep PNG too small"
out=$($PY "$ROOT/scripts/plot.py" "$T/many.h5" -o "$T/x.png" --run nope 2>&1); rc=$?
[ $rc = 2 ] && grep -q "no such run" <<<"$out" || fail "--run nope: rc $rc: $out"
# bad arguments are refused in one line before any work (exit 2): an -o whose extension matplotlib does not write
# (a ValueError traceback after the whole figure was drawn) and a negative --max-runs (0 means no limit)
out=$($PY "$ROOT/scripts/plot.py" "$T/many.h5" -o "$T/x.xyz" 2>&1); rc=$?
[ $rc = 2 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q "^plot: -o $T/x.xyz: matplotlib writes no .xyz" <<<"$out" \
    || fail "-o x.xyz: rc $rc: $out"
out=$($PY "$ROOT/scripts/plot.py" "$T/many.h5" -o "$T/x.png" --max-runs -1 2>&1); rc=$?
[ $rc = 2 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q "^plot: --max-runs -1: a count of runs (0: no limit)" <<<"$out" \
    || fail "--max-runs -1: rc $rc: $out"
[ ! -e "$T/x.png" ] || fail "--max-runs -1 drew a figure"
echo "plot ok"
