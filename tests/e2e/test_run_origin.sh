#!/usr/bin/env bash
# test_run_origin.sh - every run records what produced it (docs/HDF5_SCHEMA.md): a CPU-backend run
# says backend "cpu" (not "cuda"), a simulated run on a profiled preset names its profile.
set -uo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
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
# the simulated preset's expected_error travels with each simulated run; a measured run has none (since session 49)
assert a("roof", "gpu_expected_error").startswith("roofline only, no hardware behind this preset"), a("roof", "gpu_expected_error")
assert a("sim", "gpu_expected_error").startswith("measured on H200s"), a("sim", "gpu_expected_error")
assert a("cpu", "gpu_expected_error") == "", a("cpu", "gpu_expected_error")
# an executed run's saved config has no simulator options (until session 51 it carried their defaults, as if they
# had applied; dkv.execute refuses cfg.sim); a simulated run's has them
cfg = lambda r: f["runs"][r]["config"].attrs.keys()
assert not [k for k in cfg("cpu") if k.startswith("sim.")], [k for k in cfg("cpu") if k.startswith("sim.")]
assert "sim.kernel_scale" in cfg("sim") and "sim = {" not in str(f["runs"]["cpu"].attrs["config"])
PY
# an expected_error that cannot be carried whole is refused, naming the field
cat >"$T/long.lua" <<'LUA'
local dkv = require "dkv"
dkv.simulate{model = "llada-8b", gpu = {base = "h200", expected_error = string.rep("x", 1024)},
  workload = {kind = "fixed", n = 1, prompt = 64, gen = 32}}
LUA
out=$("$DKV" run "$T/long.lua" -q -o "$T/long.h5" 2>&1) && fail "an expected_error of 1,024 characters accepted"
grep -q "expected_error: longer than 1023 characters" <<<"$out" || fail "long expected_error message: $out"
cat >"$T/pre.lua" <<'LUA'
local dkv = require "dkv"
assert(dkv.preset.gpu("h200").expected_error:find("^measured on H200s"))
assert(dkv.preset.gpu({base = "h200", expected_error = "x"}).expected_error == "x")
assert(dkv.preset.gpu({base = "h200", expected_error = ""}).expected_error == "")   -- none stated: carried as ""
LUA
out=$("$DKV" run "$T/pre.lua" -q -o "$T/pre.h5" 2>&1) || fail "dkv.preset.gpu's expected_error: $out"
# a workload file given relative (a trace, a prompts file) is found from the current folder, else under the project
# root (session 42: the shipped experiments run from any folder); a file in neither is an error naming it
cat >"$T/rel.lua" <<'LUA'
local dkv = require "dkv"
local t = dkv.simulate{model = "llada-8b", gpu = "h200", workload = {file = "datasets/workloads/azure_sample.csv",
  first_n = 2}}
assert(t.summary.n_done == 2, t.summary.n_done)
print("source " .. t.config.workload.source)
local p = dkv.simulate{model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = "tests/data/prompts_cpu.jsonl"}},
  decode = {cache = "dual", block_len = 32}, mem = {capacity_bytes = 64 * 2^20}}
assert(p.summary.n_done == 2, p.summary.n_done)
LUA
out=$(cd "$T" && "$DKV" run rel.lua -q -o "$T/rel.h5" 2>&1) || fail "relative workload files from another folder: $out"
grep -q "^source $ROOT/datasets/workloads/azure_sample.csv$" <<<"$out" || fail "the trace found under the root: $out"
sed 's#datasets/workloads/azure_sample.csv#datasets/workloads/nosuch.csv#' "$T/rel.lua" > "$T/rel2.lua"
out=$(cd "$T" && "$DKV" run rel2.lua -q -o "$T/rel2.h5" 2>&1) && fail "a missing trace accepted"
grep -q "datasets/workloads/nosuch.csv: cannot open" <<<"$out" || fail "missing trace message: $out"
# plot.py's title says how a run was obtained: a CPU-backend run is "measured on the CPU" (until session 51 the
# title had the preset's GPU and no word of how, as if an H200 result)
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    out=$(/usr/bin/python3 "$ROOT/scripts/plot.py" "$T/o.h5" -o "$T/p" 2>&1) || fail "plot of the cpu run: $out"
    grep -qE "^plot: title: 2 models on 2 GPUs \(measured on the CPU and simulated\)" <<<"$out" || fail "plot title: $out"
else
    echo "SKIP: the plot title (/usr/bin/python3 lacks matplotlib)"
fi
echo "run origins: ok"
