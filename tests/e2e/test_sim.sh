#!/usr/bin/env bash
# test_sim.sh - `dkv run` of a dkv.simulate script end to end: the HDF5 run it writes (tables,
# summary, provenance with the resolved config), a bad config reported with file:line and the
# field, and a run that exhausts memory reported in the results instead of crashing.
set -euo pipefail
: "${DKV:?}" "${T:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$T/ok.lua" <<'LUA'
local dkv = require "dkv"
local r = dkv.simulate{model = "tiny", gpu = "h200",
  workload = {kind = "poisson", n = 20, rate = 50, prompt = 100, gen = {kind = "uniform", lo = 16, hi = 64}},
  decode = {block_len = 16}, mem = {kind = "caching"}}
print(string.format("done %d p99 %.4f", r.summary.n_done, r.summary.latency_p99_s))
dkv.save(r, "caching")
LUA
out=$("$DKV" run "$T/ok.lua" -o "$T/ok.h5")
echo "$out"
grep -q "^done 20 p99" <<<"$out" || fail "summary line"
$PY - "$T/ok.h5" <<'PYEOF' || fail "hdf5 contents"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1])
r = f["runs/caching"]
req, st, mem = r["requests"][:], r["steps"][:], r["memory"][:]
assert len(req) == 20 and (req["status"] == 0).all()
assert (req["gen_tokens"] % 16 == 0).all(), "drawn generations rounded up to whole blocks"
assert st["n_items"].sum() == req["steps"].sum()
assert r["summary"].attrs["n_done"] == 20
assert r["summary"].attrs["units.latency_p99_s"] == "s"
assert r["params"].attrs["mem.kind"] == "caching"
assert 'kind = "caching"' in r.attrs["config"], r.attrs["config"][:200]
assert r.attrs["status"] == "complete"
assert mem["kv"][-1] == 0 and mem["weights"][-1] > 0
assert r["steps"].attrs["units.time_s"] == "s"
print("hdf5 ok")
PYEOF

# a mistyped key: exit 1, message with the script position and the nearest valid key
cat >"$T/bad.lua" <<'LUA'
local dkv = require "dkv"
dkv.simulate{model = "tiny", gpu = "h200", workload = {kind = "poisson", n = 2},
  scheduler = {kind = "phase", max_num_batched_token = 10}}
LUA
set +e
err=$("$DKV" run "$T/bad.lua" 2>&1); rc=$?
set -e
echo "$err"
[ $rc -eq 1 ] || fail "bad config exit status $rc"
grep -q "bad.lua:2:" <<<"$err" || fail "position of the call"
grep -q "unknown field 'max_num_batched_token' (did you mean 'max_num_batched_tokens'?)" <<<"$err" || fail "nearest key"

# memory exhausted: reported, not a crash
cat >"$T/oom.lua" <<'LUA'
local dkv = require "dkv"
local r = dkv.simulate{model = "tiny", gpu = "h200", mem = {capacity_bytes = 65536},
  workload = {kind = "fixed", n = 3, prompt = 480, gen = 32}, decode = {block_len = 16}}
print("oom", r.summary.n_oom, "done", r.summary.n_done)
LUA
out=$("$DKV" run "$T/oom.lua")
grep -q "^oom	3	done	0" <<<"$out" || fail "oom reported: $out"

# a simulated run's trace (record.trace) replays through another memory manager
cat >"$T/tr.lua" <<'LUA'
local dkv = require "dkv"
local r = dkv.simulate{model = "tiny", gpu = "h200", decode = {block_len = 16},
  workload = {kind = "poisson", n = 10, rate = 100, prompt = 64, gen = 32}, record = {trace = dkv.params.out}}
print("request_steps", r.summary.request_steps)
LUA
out=$("$DKV" run "$T/tr.lua" -D out="$T/sim.csv")
grep -q "^request_steps	320" <<<"$out" || fail "traced run: $out"
[ "$(grep -c ',phase,' "$T/sim.csv")" = 320 ] || fail "one phase event per request-step"
[ "$(grep -c ',request,.*,admit,' "$T/sim.csv")" = 10 ] || fail "admit events"
out=$("$DKV" replay "$T/sim.csv" --mem blockpool)
head -3 <<<"$out"
grep -q "free of unknown id 0, id allocated twice 0, live at end 1" <<<"$out" || fail "replay: every allocation but the weights freed"
echo "ok"
