#!/usr/bin/env bash
# test_dkvresults.sh - scripts/dkvresults.py on a real results file: a 2 x 2 sweep (scheduler x
# block size) written by `dkv run`.  runs() has one row per run whose columns equal the file's
# attributes (summary, flat config, origin), with units and stable types; swept() finds exactly
# the two swept parameters; steps/requests/memory/kernels match the summary's counts and the
# engine's kernel class names; missing runs/tables and foreign files raise named errors.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c 'import h5py, pandas' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py/pandas (scripts/deps.sh)"; exit 77; }

cat >"$T/sweep.lua" <<'LUA'
local dkv = require "dkv"
local names
for _, sched in ipairs{"fcfs", "phase"} do
  for _, bt in ipairs{16, 32} do
    local r = dkv.simulate{model = "llada-8b", gpu = "h200", seed = 7,
      workload = {kind = "poisson", n = 12, rate = 4, prompt = 256, gen = 64},
      decode = {cache = "dual", block_len = 32}, scheduler = {kind = sched},
      mem = {kind = "blockpool", block_tokens = bt}, record = {kernels = true}}
    dkv.save(r, string.format("s:%s,bt=%d", sched, bt))
    names = r:kernels().class_names
  end
end
local t = {}
for i = 0, #names do t[#t + 1] = names[i] end
print("classes " .. table.concat(t, " "))
LUA
out=$("$DKV" run "$T/sweep.lua" -o "$T/sweep.h5")
classes=$(grep '^classes ' <<<"$out" | cut -d' ' -f2-)
[ -n "$classes" ] || fail "no class names printed: $out"
echo "not hdf5" >"$T/bad.h5"

cd "$ROOT"
$PY - "$T/sweep.h5" "$classes" "$T/bad.h5" <<'PYEOF' || fail "dkvresults checks"
import os
import sys
sys.path.insert(0, "scripts")
import h5py, numpy as np
import dkvresults as dr

path, classes, bad = sys.argv[1], sys.argv[2].split(), sys.argv[3]
df = dr.runs(path)
assert list(df["run"]) == ["s:fcfs,bt=16", "s:fcfs,bt=32", "s:phase,bt=16", "s:phase,bt=32"], list(df["run"])
sw = dr.swept(df)
assert sorted(sw) == ["mem.block_tokens", "scheduler.kind"], sw
assert df["mem.block_tokens"].dtype == np.int64, df["mem.block_tokens"].dtype
assert df["policies.offload.t1"].dtype == np.float64
assert (df["decode.cache"] == "dual").all() and (df["backend"] == "sim").all()
assert (df["device"] == "h200").all() and (df["gpu_preset"] == "h200").all()
import re
shipped = re.search(r'profile\s*=\s*"([^"]+)"', open("datasets/presets/gpu/h200.lua").read()).group(1)
assert (df["cost_profile"] == "profile: " + shipped).all(), (shipped, df["cost_profile"])
assert (df["model_preset"] == "llada-8b").all() and (df["build"].isin(["release", "debug", "asan"])).all()
assert df.attrs["units"]["latency_p99_s"] == "s" and df.attrs["units"]["peak_kv_bytes"] == "bytes"
assert "latency_p99_s" in df.attrs["metrics"] and "mem.block_tokens" in df.attrs["parameters"]
with h5py.File(path, "r") as f:
    for _, row in df.iterrows():
        g = f["runs"][row["run"]]
        for k, v in g["summary"].attrs.items():
            if not k.startswith("units."):
                assert row[k] == v or (v != v and row[k] != row[k]), (row["run"], k, row[k], v)
        for k, v in g["config"].attrs.items():
            got = row[k] if k in df.columns else row["config." + k]   # seed, cost_per_hour: equal in summary
            v = v.decode() if isinstance(v, bytes) else v
            assert np.all(got == v), (row["run"], k, got, v)
        st = dr.steps(path, row["run"])
        assert len(st) == row["n_steps"] == g["steps"].shape[0], (len(st), row["n_steps"])
        assert st.attrs["units"]["time_s"] == "s"
        assert abs(st["time_s"].sum() - row["busy_s"]) <= 1e-9 * max(1.0, row["busy_s"])
        rq = dr.requests(path, row["run"])
        assert len(rq) == row["n_requests"] and (rq["status"] == 0).sum() == row["n_done"]
        mem = dr.memory(path, row["run"])
        assert mem["kv"].max() == row["peak_kv_bytes"], (mem["kv"].max(), row["peak_kv_bytes"])
        k = dr.kernels(path, row["run"])
        assert len(k) > 0 and set(k["class"]) <= set(classes), set(k["class"])
        assert all(dr.KERNEL_CLASSES[i] == classes[i] for i in range(len(classes))), classes
# a dataset that is not a table, and a /runs member that is not a group, raise the documented ValueError naming
# them (a TypeError from pandas before)
odd = path + ".odd.h5"
with h5py.File(odd, "w") as f:
    f.attrs["format"] = "dkv-results"
    f.create_dataset("runs/one/steps", data=np.arange(4))
    f.create_dataset("runs/two", data=np.arange(4))
for call, want, kind in ((lambda: dr.steps(path, "nope"), "no run 'nope'", KeyError),
                         (lambda: dr.table(path, "s:fcfs,bt=16", "nope"), "no table 'nope'", KeyError),
                         (lambda: dr.runs(bad), "not an HDF5 file", ValueError),
                         (lambda: dr.runs(path + ".missing"), "no such file", FileNotFoundError),
                         (lambda: dr.runs(os.path.dirname(path) or "."), "a folder, not a file", ValueError),
                         (lambda: dr.steps(odd, "one"), "run 'one': 'steps' is a dataset of int64, not a table",
                          ValueError),
                         (lambda: dr.steps(odd, "two"), "/runs/two is not a group", ValueError),
                         (lambda: dr.runs(odd), "/runs/two is not a group", ValueError)):
    try:
        call()
    except (KeyError, ValueError, FileNotFoundError) as e:
        assert want in str(e) and type(e) is kind, (want, kind, type(e), str(e))
    else:
        raise AssertionError("no error for " + want)
print("dkvresults ok:", len(df), "runs,", len(df.columns), "columns, swept", sw)
PYEOF
