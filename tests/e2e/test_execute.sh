#!/usr/bin/env bash
# test_execute.sh - `dkv run` of a script calling dkv.execute on a machine without a GPU: exit
# status 1, one error line naming the script position and the cause ("dkv.execute: no CUDA
# device (<reason>)"), no output file left behind.  Where a GPU is usable it checks instead that
# the executed run records backend "cuda", the device, the driver and the presets, and that
# `dkv timeline` reads it.
set -uo pipefail
: "${DKV:?}" "${T:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$T/ex.lua" <<'LUA'
local dkv = require "dkv"
local r = dkv.execute{model = {base = "tiny", name = "tiny-d64", hidden = 128, n_heads = 2, n_kv_heads = 1, head_dim = 64},
  gpu = "h200", workload = {kind = "fixed", n = 2, prompt = 64, gen = 32}, decode = {cache = "sparse", block_len = 16}}
dkv.save(r, "execute")
print("executed")
LUA
out=$("$DKV" run "$T/ex.lua" -o "$T/ex.h5" 2>"$T/err")
rc=$?
if [ $rc -eq 0 ] && grep -q "^executed" <<<"$out"; then
    # on a GPU: the run records where it ran, and its timeline has the same tracks as a simulated one
    /usr/bin/python3 - "$T/ex.h5" <<'PYEOF' || fail "origin of an executed run"
import re, sys, h5py
a = h5py.File(sys.argv[1], "r")["runs/execute"].attrs
s = lambda k: a[k].decode() if isinstance(a[k], bytes) else a[k]
assert s("backend") == "cuda" and s("cost_profile") == "measured", (s("backend"), s("cost_profile"))
assert re.search(r", sm_\d+, \d+ SMs", s("device")), s("device")
assert re.fullmatch(r"driver \d+\.\d+, runtime \d+\.\d+", s("driver")), s("driver")
assert s("gpu_preset") == "h200" and s("model_preset") == "tiny", (s("gpu_preset"), s("model_preset"))
print("executed run: backend cuda on", s("device"), "(" + s("driver") + ")")
PYEOF
    "$DKV" timeline "$T/ex.h5" --run execute -o "$T/ex.json" || fail "timeline of an executed run"
    /usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert any(e.get("cat") == "step" for e in d["traceEvents"])' "$T/ex.json" \
        || fail "executed timeline has no steps"
    echo "PASS (a CUDA device is usable here: dkv.execute ran and recorded its origin)"
    exit 0
fi
cat "$T/err"
[ $rc -eq 1 ] || fail "exit status $rc, expected 1"
grep -q "ex.lua:[0-9]*: dkv.execute: no CUDA device (" "$T/err" || fail "message must name the position and the cause"
grep -q "executed" <<<"$out" && fail "the script went on after the error"
[ -e "$T/ex.h5" ] && fail "an output file was left behind"
echo "PASS"
