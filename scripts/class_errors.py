#!/usr/bin/python3
"""class_errors.py - per kernel class, the measured time of a run taken with class events
(dkv.execute class_timing = true) against its simulated twin, over the paired steps, Refresh and
Reuse steps apart (docs/COST_MODEL.md "Attention of batched Reuse steps").

    /usr/bin/python3 scripts/class_errors.py RUNS.h5 POINT [POINT...] [--event-s 1.5e-6] [--sim SIM.h5]

RUNS.h5 holds POINT:real and POINT:sim runs with kernels tables (hw_validate.lua writes them; device
call 29: datasets/hw/2026-12-01/call29/hw_h5.tgz and x.tgz).  Each class's measured time is less
--event-s per launch (the class event's cost, docs/COMPARE.md "Instrumented and uninstrumented steps").
Steps pair by index when their Refresh / Reuse counts and query rows agree; others are left out.
--sim takes the :sim runs from SIM.h5 instead (a post's re-simulation, RES/sim/heldout.h5 of
`hw_session.sh post` on the class-event run's directory).  Prints, per point and step kind, measured / simulated ms and the error (simulated / measured - 1).

--steps N: also each of the first N paired steps apart (its rows, the measured probe clock where recorded, the
simulated clock, each class's measured / simulated ms and error): a run's first steps, which a sum over its steps
hides (docs/COST_MODEL.md "GEMM rows between the grid's": az:none's first step).

--clock (runs recorded with sm_clock as well): pooled over the POINTs, per class and query rows (up to 64, 256,
1,024, 2,048, more), the paired steps after the first, their mean measured step clock (NVML, MHz), the
time-weighted mean measured / simulated time, and the time-weighted least-squares slope of ln(measured / simulated)
on ln(1980 / measured clock): how far a class's time follows the step clock NVML reports (--probe: the clock
probe's, dkv.execute clock_probe, the SMs' own cycle counters) (docs/COST_MODEL.md "The
clock that follows the work"; a sensitivity measured at known clocks, call 77, is 0.94-0.98 for GEMMs above 256 rows).

--event-cost PLAIN.h5: instead, what the class events cost: per POINT, over its Reuse steps (query rows at most 32 a
item) that RUNS.h5 (with class events) and PLAIN.h5 (the same points without them, on the same machine: e.g. device
call 79's `c/` and `x/` run sets) ran with the same plan, (step time with events - without) / the step's launches:
median and interquartile range in microseconds (what --event-s assumes is one number).
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine_clocks import BINS  # noqa: E402  (the query-row bins of machine_clocks.py --kinds)
import script_io  # noqa: E402  (open_h5: a file refused in one line naming it)

CLASSES = ["qkv", "attn", "o", "ffn", "lm_head", "kv_store", "kv_gather", "reorder", "elementwise", "compress"]


def die(msg):
    sys.exit("class_errors: " + msg)


def event_cost(with_events, plain, points):
    """--event-cost: per point, (Reuse step time with class events - without) / its launches, same plans only."""
    c, x = script_io.open_h5(with_events, die), script_io.open_h5(plain, die)
    print("| point | Reuse step pairs | launches a step | event cost per launch, median (us) | interquartile range (us) |")
    print("|---|---|---|---|---|")
    for p in points:
        try:
            cs, ck = c["runs/%s:real/steps" % p][()], c["runs/%s:real/kernels" % p][()]
            xs = x["runs/%s:real/steps" % p][()]
        except KeyError:
            sys.exit("class_errors: %s: no %s:real run with steps and kernels in both files" % (p, p))
        launches = {}
        for k in ck:
            launches[int(k["step_index"])] = launches.get(int(k["step_index"]), 0) + int(k["n_launches"])
        plain_steps = {int(s["index"]): s for s in xs}
        per = []
        for s in cs:
            i, y = int(s["index"]), plain_steps.get(int(s["index"]))
            if (y is None or not launches.get(i) or s["q_tokens"] > 32 * s["n_items"] or
                    any(s[f] != y[f] for f in ("n_items", "q_tokens", "logit_rows"))):
                continue
            per.append((s["time_s"] - y["time_s"]) / launches[i])
        if not per:
            print("| %s | 0 | - | - | - |" % p)
            continue
        v = np.array(per) * 1e6
        n = [launches[int(s["index"])] for s in cs if int(s["index"]) in launches]
        print("| %s | %d | %d | %.2f | %.2f to %.2f |" % (p, len(v), int(np.median(n)), np.median(v),
                                                        np.percentile(v, 25), np.percentile(v, 75)))
    return 0


def main():
    ap = script_io.arg_parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("h5")
    ap.add_argument("points", nargs="+", help="run names without :real / :sim, e.g. val:w1:dual")
    ap.add_argument("--event-s", type=float, default=1.5e-6)
    ap.add_argument("--sim", help="the file to take the :sim runs from (default: RUNS.h5)")
    ap.add_argument("--clock", action="store_true", help="each class's time against the measured step clock")
    ap.add_argument("--probe", action="store_true", help="with --clock: the clock probe's sm_probe_mhz instead of NVML's sm_mhz")
    ap.add_argument("--steps", type=int, default=0, metavar="N", help="also the first N paired steps one by one")
    ap.add_argument("--event-cost", metavar="PLAIN.h5", help="the class events' cost per launch against a run set without them")
    a = ap.parse_args()
    if a.event_cost:
        return event_cost(a.h5, a.event_cost, a.points)
    if a.steps < 0:
        sys.exit("class_errors: --steps must be at least 0")
    f = script_io.open_h5(a.h5, die)
    g = script_io.open_h5(a.sim, die) if a.sim else f
    pooled = {}   # --clock: (class, rows bin) -> [(measured MHz, measured / simulated, measured s)]
    for p in a.points:
        try:
            rk, sk = f["runs/%s:real/kernels" % p][()], g["runs/%s:sim/kernels" % p][()]
            rs, ss = f["runs/%s:real/steps" % p][()], g["runs/%s:sim/steps" % p][()]
        except KeyError:
            sys.exit("class_errors: %s%s: no runs %s:real and %s:sim with kernels and steps"
                     % (a.h5, " / " + a.sim if a.sim else "", p, p))
        acc, shown, lines = {}, 0, []
        for i in range(1 if a.clock else 0, min(len(rs), len(ss))):
            x, y = rs[i], ss[i]
            if (x["n_refresh"], x["n_reuse"], x["q_tokens"]) != (y["n_refresh"], y["n_reuse"], y["q_tokens"]):
                continue
            kind = "Refresh" if x["n_reuse"] == 0 else "Reuse" if x["n_refresh"] == 0 else "mixed"
            show = shown < a.steps and not a.clock
            shown += show
            cells = []
            for c in range(len(CLASSES)):
                m = rk[(rk["step_index"] == x["index"]) & (rk["kind"] == c)]
                s = sk[(sk["step_index"] == y["index"]) & (sk["kind"] == c)]
                tm, ts = m["time_s"].sum() - a.event_s * m["n_launches"].sum(), s["time_s"].sum()
                if a.clock:
                    mhz = float(x["sm_probe_mhz"] if a.probe else x["sm_mhz"])
                    if mhz > 0 and tm > 0 and ts > 0:
                        rows = next(j for j, (top, _) in enumerate(BINS) if x["q_tokens"] <= top)
                        pooled.setdefault((c, rows), []).append((mhz, tm / ts, tm))
                    continue
                if show and tm > 0:
                    cells.append("%s %.3f / %.3f (%+.1f %%)" % (CLASSES[c], 1e3 * tm, 1e3 * ts, 100 * (ts / tm - 1)))
                t = acc.setdefault((kind, c), [0.0, 0.0])
                t[0] += tm
                t[1] += ts
            if show:
                probe = x["sm_probe_mhz"] if "sm_probe_mhz" in x.dtype.names else float("nan")
                lines.append("  step %d, %d rows, clock measured %.0f (probe) / simulated %.0f MHz: %s" % (
                    i, x["q_tokens"], probe, y["sm_mhz"], ", ".join(cells)))
        if a.clock:
            continue
        print(p)
        for line in lines:
            print(line)
        for kind in ("Refresh", "Reuse", "mixed"):
            cells = ["%s %.2f / %.2f (%+.0f %%)" % (CLASSES[c], 1e3 * m, 1e3 * s, 100 * (s / m - 1))
                     for (k, c), (m, s) in sorted(acc.items()) if k == kind and m > 0]
            if cells:
                print("  %-7s %s" % (kind, ", ".join(cells)))

    if a.clock:
        if not pooled:
            sys.exit("class_errors: %s: no paired step with a measured clock (recorded without sm_clock?)" % a.h5)
        print("class        rows     steps  MHz   meas/sim  slope")
        for (c, j), v in sorted(pooled.items()):
            v = np.array(v)
            if len(v) < 5:
                continue
            x, y, w = np.log(1980 / v[:, 0]), np.log(v[:, 1]), v[:, 2]
            sw = np.sqrt(w)
            slope = np.linalg.lstsq(np.vstack([x, np.ones_like(x)]).T * sw[:, None], y * sw, rcond=None)[0][0]
            print("%-12s %-8s %5d  %4.0f  %.3f     %+.2f" % (CLASSES[c], BINS[j][1], len(v), np.average(v[:, 0], weights=w),
                                                         math.exp(np.average(y, weights=w)), slope))


if __name__ == "__main__":
    sys.exit(main())
