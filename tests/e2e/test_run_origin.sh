#!/usr/bin/env bash
# test_run_origin.sh - every run records what produced it (docs/HDF5_SCHEMA.md): a CPU-backend run
# says backend "cpu" (not "cuda"), a simulated run on a profiled preset names its profile.
set -uo pipefail
: "${DKV:?}" "${T:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
/usr/bin/python3 -c 'import h5py' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py"; exit 77; }
cat >"$T/o.lua" <<'LUA'
local dkv = require "dkv"
local cfg = {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = "tests/data/prompts_cpu.jsonl"}},
  decode = {cache = "dual", block_len = 32}, mem = {capacity_bytes = 64 * 2^20}}
dkv.save(dkv.execute(cfg, {backend = "cpu", weights = "datasets/models/tiny-dllm/model.safetensors"}), "cpu")
dkv.save(dkv.simulate(cfg), "sim")
dkv.save(dkv.simulate{model = "llada-8b", gpu = "a100-80g", workload = {kind = "fixed", n = 1, prompt = 64, gen = 32}}, "roof")
LUA
out=$("$DKV" run "$T/o.lua" -q -o "$T/o.h5" 2>&1) || fail "run: $out"
/usr/bin/python3 - "$T/o.h5" <<'PY' || fail "origins"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
a = lambda r, k: f["runs"][r].attrs[k]
assert a("cpu", "backend") == "cpu" and a("cpu", "cost_profile") == "measured", (a("cpu", "backend"), a("cpu", "cost_profile"))
assert a("sim", "backend") == "sim" and a("sim", "cost_profile").startswith("profile: h200-"), a("sim", "cost_profile")
assert a("roof", "cost_profile") == "roofline", a("roof", "cost_profile")
PY
echo "run origins: ok"
