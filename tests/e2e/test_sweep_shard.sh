#!/usr/bin/env bash
# test_sweep_shard.sh - dkv.sweep (scripts/sweep.lua) over a simulate grid honours --shard i/N:
# three shards together run every grid point exactly once, each shard only its own, and
# `dkv merge` joins them into one file with all points.  A mistaken spec is an error naming it, at the
# script's line, before any point runs, with no file written: an unknown key (sav = false), an empty
# grid entry, a key twice in order, a name in order that is not in grid, and two grid values with one
# run name ("a b" and "a_b").
set -uo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
export DKV_ROOT=$ROOT   # require "sweep" loads this tree's scripts/sweep.lua, not the dkv binary's tree's
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c 'import h5py' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py (apt-get install python3-h5py)"; exit 77; }

cat >"$T/grid.lua" <<'LUA'
local dkv = require "dkv"
local sweep = require "sweep"
local rows = dkv.sweep{
  name = "grid",
  grid = {cache = {"dual", "prefix"}, rate = {1, 2, 4}},
  run = function(p)
    return dkv.simulate{model = "tiny", gpu = "h200", seed = 3,
      workload = {kind = "poisson", rate = p.rate, n = 6, prompt = 64, gen = 32},
      decode = {cache = p.cache, block_len = 16}}
  end,
}
for _, r in ipairs(rows) do
  assert(r.summary.n_done == 6, r.name .. ": all requests done")
  print(r.index, r.name)
end
LUA
cd "$ROOT" || exit 1
for i in 0 1 2; do
    "$DKV" run "$T/grid.lua" --shard $i/3 -o "$T/s$i.h5" >"$T/s$i.txt" 2>"$T/s$i.err" || { cat "$T/s$i.err"; fail "shard $i/3 failed"; }
done
"$DKV" run "$T/grid.lua" -o "$T/all.h5" >"$T/all.txt" 2>&1 || fail "unsharded run failed"
"$DKV" merge "$T/merged.h5" "$T/s0.h5" "$T/s1.h5" "$T/s2.h5" >/dev/null 2>"$T/merge.err" || { cat "$T/merge.err"; fail "merge failed"; }

$PY - "$T" <<'PY' || exit 1
import sys, h5py
t = sys.argv[1]
def runs(p):
    with h5py.File(p, "r") as f:
        return sorted(f["runs"].keys())
allr = runs(t + "/all.h5")
assert len(allr) == 6, allr
per = [runs("%s/s%d.h5" % (t, i)) for i in range(3)]
for i, r in enumerate(per):
    assert len(r) == 2, ("shard %d ran %d points" % (i, len(r)), r)
flat = sorted(n for r in per for n in r)
assert flat == allr, (flat, allr)                 # every point exactly once across shards
assert runs(t + "/merged.h5") == allr
with h5py.File(t + "/all.h5", "r") as a, h5py.File(t + "/merged.h5", "r") as m:
    for n in allr:                                 # same seed, same simulated numbers
        sa, sm = a["runs"][n]["summary"].attrs, m["runs"][n]["summary"].attrs
        for k in ("throughput_rps", "latency_p99_s", "n_done"):
            assert sa[k] == sm[k], (n, k, sa[k], sm[k])
print("ok: 6 points, 2 per shard, merged equals unsharded")
PY

# mistaken specs: an error naming the mistake, raised before any point runs ("ran" is printed by each run)
bad() {   # name spec-fields expected-message
    cat >"$T/bad_$1.lua" <<LUA
local dkv = require "dkv"
local sweep = require "sweep"
dkv.sweep{name = "b", $2,
  run = function(p)
    print("ran")
    return dkv.simulate{model = "tiny", gpu = "h200", seed = 3,
      workload = {kind = "poisson", rate = 1, n = 2, prompt = 64, gen = 32}, decode = {cache = "dual", block_len = 16}}
  end}
LUA
    if "$DKV" run "$T/bad_$1.lua" -o "$T/bad_$1.h5" >"$T/bad_$1.txt" 2>"$T/bad_$1.err"; then fail "$1: accepted"; fi
    grep -qF "$3" "$T/bad_$1.err" || fail "$1: message: $(cat "$T/bad_$1.err")"
    grep -q "bad_$1.lua:3:" "$T/bad_$1.err" || fail "$1: the error does not name the script's line: $(cat "$T/bad_$1.err")"
    ! grep -q ran "$T/bad_$1.txt" || fail "$1: a point ran before the error"
    [ ! -e "$T/bad_$1.h5" ] || fail "$1: a results file was written"
}
bad unknown 'grid = {rate = {1}}, sav = false' "sweep: unknown key 'sav' in the spec (known: grid, name, order, run, save)"
bad order 'grid = {rate = {1, 2}}, order = {"rate", "rate"}' "sweep: order names 'rate' twice (entries 1 and 2)"
bad names 'grid = {v = {"a b", "a_b"}}' \
    "sweep: points 1 (v=\"a b\") and 2 (v=\"a_b\") have one run name, 'b:v=a_b'"
bad savetype 'grid = {rate = {1}}, save = 0' "sweep: save must be a boolean, got number"
# grid and order mistakes name the script's line too (they named scripts/sweep.lua's), and say what is wrong
bad emptygrid 'grid = {x = {}}' "sweep: grid.x must be a non-empty array of values, got an empty table"
bad gridvalue 'grid = {x = 3}' "sweep: grid.x must be a non-empty array of values, got number"
bad gridmap 'grid = {x = {a = 1}}' "sweep: grid.x must be a non-empty array of values, got a table with no array part"
bad gridkey 'grid = {{1, 2}}' "sweep: grid keys must be names (strings), got number 1"
bad ordernokey 'grid = {rate = {1}}, order = {"rate", "y"}' "sweep: order names 'y' (entry 2), which is not a key of grid"
bad orderleaves 'grid = {rate = {1}, x = {2}}, order = {"rate"}' "sweep: grid key 'x' is missing from order"
echo "ok: mistaken specs refused before any point runs"
