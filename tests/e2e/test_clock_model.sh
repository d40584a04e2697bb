#!/usr/bin/env bash
# test_clock_model.sh - scripts/clock_model.py's follow and block --into (docs/COST_MODEL.md "The clock that follows
# the work"): the shipped profile h200-20261202q is p with the block --into writes, byte for byte; follow finds the
# time constants that generated a run set's clocks (a synthetic post result whose measured clocks are the follow
# form's own, computed here independently from the closed form); mistakes are refused naming what is wrong.
set -euo pipefail
: "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"
PY=/usr/bin/python3
C39=datasets/hw/2026-12-01/call39/profile.lua.xz

# block --into: q regenerates from p
$PY scripts/clock_model.py block $C39 --follow 0.1 1.2 --into datasets/profiles/h200-20261202p.lua \
    --name h200-20261202q -o "$T/q.lua"
cmp -s "$T/q.lua" datasets/profiles/h200-20261202q.lua || fail "h200-20261202q.lua is not p with block --follow 0.1 1.2"
[ ! -e "$T/q.lua.tmp" ] || fail "block --into left its temporary file"
# without --name / -o, or into a profile without a clock block: refused, nothing written
if $PY scripts/clock_model.py block $C39 --follow 0.1 1.2 --into datasets/profiles/h200-20261202p.lua -o "$T/x.lua" 2> "$T/e"; then
    fail "block --into without --name was accepted"; fi
grep -q "block --into needs --name and -o" "$T/e" || fail "block --into's error: $(cat "$T/e")"
if $PY scripts/clock_model.py block $C39 --into datasets/profiles/h200-standin.lua --name x -o "$T/x.lua" 2> "$T/e"; then
    fail "block --into a profile without a clock block was accepted"; fi
grep -q "h200-standin.lua: no clock block to replace" "$T/e" || fail "block --into's error: $(cat "$T/e")"
[ ! -e "$T/x.lua" ] || fail "a refused block --into wrote its output"

# follow: a synthetic post result.  Steps of 8,192 query rows (q|k|v's row clock in call 39: 1,215 MHz) and of 32
# (1,980), with idle gaps; the measured clock of each step is the follow form's mean at down 0.06 s, up 0.6 s
$PY - "$T/res" <<'PYEOF'
import math, os, sys
import h5py, numpy as np
res = sys.argv[1]
os.makedirs(res + "/h5"); os.makedirs(res + "/sim")
D, U, TOP = 0.06, 0.6, 1980.0
plan = [(8192, 0.08), (8192, 0.08), (32, 0.01), (32, 0.01), (8192, 0.05), (32, 0.01), (32, 0.01), (32, 0.01)] * 3
def go(x, u, dt):
    tau = D if u < x else U
    e = math.exp(-dt / tau)
    return u + (x - u) * e, u + (x - u) * tau / dt * (1 - e)
sdt = np.dtype([("index", "u8"), ("start_s", "f8"), ("time_s", "f8"), ("n_refresh", "u4"), ("n_reuse", "u4"),
                ("q_tokens", "u8"), ("logit_rows", "u8"), ("sm_mhz", "f8")])
kdt = np.dtype([("step_index", "u8"), ("kind", "u4"), ("time_s", "f8")])
real, sim, kern = [], [], []
x, t = TOP, 0.0
for i, (q, d) in enumerate(plan):
    if i:
        x, _ = go(x, TOP, 0.02)          # 20 ms idle before each step
        t += 0.02
    settle = 1215.0 if q == 8192 else TOP
    x_end, mean = go(x, settle, d)
    real.append((i, t, d, 1, 0, q, 32, mean)); sim.append((i, t, d, 1, 0, q, 32, 0))
    kern.append((i, 0, d))               # all of the step's time in q|k|v
    x, t = x_end, t + d
with h5py.File(res + "/h5/val.h5", "w") as f:
    f.create_dataset("runs/val:syn:real/steps", data=np.array(real, dtype=sdt))
with h5py.File(res + "/sim/val.h5", "w") as f:
    f.create_dataset("runs/val:syn:sim/steps", data=np.array(sim, dtype=sdt))
    f.create_dataset("runs/val:syn:sim/kernels", data=np.array(kern, dtype=kdt))
PYEOF
$PY scripts/clock_model.py follow $C39 "$T/res" > "$T/f.txt" || { cat "$T/f.txt"; fail "follow on the synthetic run set"; }
grep -Eq "^follow down 0.06 up 0.60 +0 +0 +[-+]0 " "$T/f.txt" || fail "follow at the generating constants is not exact: $(cat "$T/f.txt")"
grep -q "^best (time-weighted |e|): down_s 0.06, up_s 0.6$" "$T/f.txt" || fail "follow's best: $(grep best "$T/f.txt")"
grep -Eq "^window lag 0.05 window 0.1 +[1-9][0-9]* " "$T/f.txt" || fail "the window form fits the follow form's clocks exactly?"
# a run set without per-step clocks is refused
mkdir -p "$T/none"
if $PY scripts/clock_model.py follow $C39 "$T/none" 2> "$T/e"; then fail "follow without runs was accepted"; fi
grep -q "$T/none: no real run with per-step clocks in sm_mhz" "$T/e" || fail "follow's error: $(cat "$T/e")"
echo "ok: q regenerates from p, follow recovers its generating time constants, mistakes are refused"
