#!/usr/bin/env bash
# test_timeline.sh - `dkv timeline` writes Chrome trace-event JSON that Perfetto opens: on a
# simulated run of 1,024 steps (kernel classes recorded, progressive offload so PCIe copies exist)
# and a two-instance run, the JSON is valid, every track's timestamps are non-decreasing, slices
# on a thread nest (kernel classes inside their step), async request slices balance and nest, and
# the counts match the file's tables.  The same on a faked executed run (backend "cuda", kernel
# times NaN for some steps and larger than their step for others, as CUDA events can give).
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c 'import h5py' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py"; exit 77; }

cat >"$T/tl.lua" <<'LUA'
local dkv = require "dkv"
local base = {model = "llada-8b", gpu = "h200", seed = 5,
  workload = {kind = "fixed", n = 16, interval_s = 5, prompt = 256, gen = 64},
  decode = {cache = "dual", block_len = 32}, record = {kernels = true},
  policies = {offload = {mode = "progressive"}}}
dkv.save(dkv.simulate(base), "solo")
base.instances = {n = 2}
base.policies = nil
base.workload = {kind = "poisson", n = 12, rate = 6, prompt = 256, gen = 64}
dkv.save(dkv.simulate(base), "two")
LUA
"$DKV" run "$T/tl.lua" -o "$T/tl.h5" >/dev/null
# a faked executed run: the solo run's tables with measured-looking kernel times
$PY - "$T/tl.h5" "$T/exec.h5" <<'PYEOF'
import sys, h5py, numpy as np
src, dst = sys.argv[1], sys.argv[2]
with h5py.File(src, "r") as f, h5py.File(dst, "w") as g:
    for k, v in f.attrs.items():
        g.attrs[k] = v
    g.create_group("runs")
    f.copy("runs/solo", g["runs"], name="real")
    r = g["runs/real"]
    r.attrs["backend"], r.attrs["device"] = "cuda", "NVIDIA H200, sm_90, 132 SMs, 60 MiB L2, 139.8 GiB"
    k = r["kernels"][()]
    k["time_s"][k["step_index"] % 7 == 0] *= 5.0          # more than the step: must be scaled in
    k["time_s"][k["step_index"] % 11 == 0] = np.nan        # class_timing = false
    r["kernels"][...] = k
PYEOF
for spec in "tl.h5 solo" "tl.h5 two" "exec.h5 real"; do
    set -- $spec
    out=$("$DKV" timeline "$T/$1" --run "$2" -o "$T/$2.json") || fail "timeline $spec"
    echo "$out"
    [ ! -e "$T/$2.json.tmp" ] || fail "tmp file left"
    $PY - "$T/$1" "$2" "$T/$2.json" "$out" <<'PYEOF' || fail "trace checks for $spec"
import json, math, sys, h5py
from collections import defaultdict
path, run, js, out = sys.argv[1:]
d = json.load(open(js))                                   # valid JSON
ev = d["traceEvents"]
with h5py.File(path, "r") as f:
    g = f["runs"][run]
    steps, reqs = g["steps"][()], g["requests"][()]
    nk = g["kernels"].shape[0] if "kernels" in g else 0
    nm = g["memory"].shape[0] if "memory" in g else 0
    backend = g.attrs["backend"]
X = [e for e in ev if e["ph"] == "X"]
assert sum(e["cat"] == "step" for e in X) == len(steps), "one slice per step"
assert sum(e["cat"] == "kernel" for e in X) == nk, "one slice per kernel record"
assert sum(e["cat"] == "pcie" for e in X) == int((steps["pcie_s"] > 0).sum())
assert sum(e["ph"] == "C" for e in ev) == 6 * nm
assert any(e["ph"] == "M" and e["name"] == "process_name" and backend in e["args"]["name"] for e in ev)
if run == "solo":
    assert len(steps) >= 1000 and nk > 0 and (steps["pcie_s"] > 0).sum() > 0, (len(steps), nk)
if run == "two":
    tids = {e["tid"] for e in X if e["cat"] == "step"}
    assert tids == {1, 2}, tids                           # one track per instance
# every track's timestamps are non-decreasing in file order
last = defaultdict(lambda: -1.0)
for e in ev:
    if e["ph"] == "M":
        continue
    key = (e["ph"] in "be", e.get("id"), e["pid"], e["tid"] if e["ph"] == "X" else e["name"] if e["ph"] == "C" else 0)
    assert e["ts"] >= last[key], ("not monotone", e, last[key])
    last[key] = e["ts"]
# slices on a thread nest: each one lies inside the enclosing open slice or after it
eps = 1e-6
stack = defaultdict(list)
for e in X:
    s, t = stack[e["tid"]], (e["ts"], e["ts"] + e["dur"])
    assert e["dur"] >= 0
    while s and t[0] >= s[-1][1] - eps:
        s.pop()
    if s:
        assert t[0] >= s[-1][0] - eps and t[1] <= s[-1][1] + eps, ("overlap", e, s[-1])
        assert e["cat"] == "kernel" and s[-1][2] == "step", e
    s.append((t[0], t[1], e["cat"]))
# async request slices: balanced and nested per id
opened = defaultdict(list)
for e in ev:
    if e["ph"] == "b":
        opened[e["id"]].append(e)
    elif e["ph"] == "e":
        b = opened[e["id"]].pop()
        assert b["name"] == e["name"] and e["ts"] >= b["ts"], (b, e)
assert all(not v for v in opened.values()) and len(opened) == len(reqs)
done = reqs[reqs["status"] == 0]
ends = {int(e["id"]): e["ts"] for e in ev if e["ph"] == "e" and e["name"].startswith("request ")}
for r in done:
    assert abs(ends[int(r["id"])] - r["finish_s"] * 1e6) <= 0.002, (r["id"], ends[int(r["id"])], r["finish_s"])
print("trace ok:", run, len(ev), "events")
PYEOF
done
rc=0; "$DKV" timeline "$T/tl.h5" -o "$T/x.json" 2>"$T/err" || rc=$?
[ $rc -eq 2 ] && grep -q "pick one with --run" "$T/err" || fail "two runs without --run: rc $rc"
rc=0; "$DKV" timeline "$T/tl.h5" --run nope -o "$T/x.json" 2>"$T/err" || rc=$?
[ $rc -eq 1 ] && grep -q "nope" "$T/err" && [ ! -e "$T/x.json" ] || fail "missing run: rc $rc $(cat "$T/err")"
echo "timeline ok"
