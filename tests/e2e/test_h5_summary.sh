#!/usr/bin/env bash
# test_h5_summary.sh - scripts/h5_summary.py (the summariser of check_no_behaviour_change.sh):
# two runs of one simulation give identical summaries (provenance, wall_s and the steps' measured
# host-time columns masked), while a changed result does show: the same run with another seed
# differs, and the steps' host_plan_s values do differ between the two runs (so the masking is
# what makes them equal, not a summary that hides everything).
set -uo pipefail
: "${DKV:?}" "${ROOT:?}" "${T:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$T/run.lua" <<'LUA'
local dkv = require "dkv"
local seed = dkv.param("seed", 1, "seed")
local r = dkv.simulate{model = "llada-8b", gpu = "h200", seed = seed,
                       workload = {kind = "poisson", n = 8, rate = 20, prompt = 128, gen = 64}}
dkv.save(r, "one")
LUA
for i in 1 2; do "$DKV" run "$T/run.lua" -o "$T/a$i.h5" >/dev/null || fail "run $i"; done
"$DKV" run "$T/run.lua" -D seed=2 -o "$T/b.h5" >/dev/null || fail "run seed=2"
for f in a1 a2 b; do $PY "$ROOT/scripts/h5_summary.py" "$T/$f.h5" >"$T/$f.sum" || fail "summary $f"; done
grep -q 'masked=host_enqueue_s,host_plan_s,host_wait_s' "$T/a1.sum" || fail "the steps' host columns are not masked: $(grep -m1 " steps (" "$T/a1.sum" | cut -c1-200)"
diff "$T/a1.sum" "$T/a2.sum" || fail "two runs of one simulation summarise differently"
diff -q "$T/a1.sum" "$T/b.sum" >/dev/null && fail "another seed gives the same summary: the summary hides results"
$PY - "$T/a1.h5" "$T/a2.h5" <<'PY' || fail "host_plan_s equal in both runs: the masking test shows nothing"
import sys, h5py
def plan(p):
    with h5py.File(p, 'r') as f:
        out = []
        f.visititems(lambda n, o: out.append(o['host_plan_s'][:].tolist())
                     if isinstance(o, h5py.Dataset) and o.dtype.names and 'host_plan_s' in o.dtype.names else None)
        return out
a, b = plan(sys.argv[1]), plan(sys.argv[2])
sys.exit(0 if a and a != b else 1)
PY
echo "h5_summary: two runs identical, another seed differs, host times masked: ok"
