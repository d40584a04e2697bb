#!/usr/bin/python3
"""long_steps.py - step times of a 32-step-per-block validation run (hw_validate.lua -D steps=32), real
against simulated, per step: the Reuse steps right after a Refresh against those later
(docs/COST_MODEL.md "After a Refresh: the clocks' hold").

    /usr/bin/python3 scripts/long_steps.py LONG.h5 [--hold 0.05] [--points w1:dual,w2:dual,...]

LONG.h5 holds val:<point>:real and :sim runs (device call 26: datasets/hw/2026-12-01/call26/x.tgz,
x/long.h5).  Per point: every step's real and simulated time and error, then the mean error of the
Reuse steps that start within --hold seconds of the end of the last Refresh step and of those after.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402


def main():
    ap = script_io.arg_parser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("h5")
    ap.add_argument("--hold", type=float, default=0.05, help="window after a Refresh step's end, s (0.05)")
    ap.add_argument("--points", default="w1:dual,w2:dual,w3:dual,w3:prefix,w3:sparse")
    a = ap.parse_args()
    die = lambda msg: sys.exit("long_steps: " + msg)
    f = script_io.open_h5(a.h5, die)
    for p in a.points.split(","):
        runs = [k for k in ("val:%s:real" % p, "val:%s:sim" % p) if k in f["runs"]]
        if len(runs) < 2:
            die("%s: no run%s %s" % (a.h5, "s" if not runs else "", " and ".join(
                k for k in ("val:%s:real" % p, "val:%s:sim" % p) if k not in runs)))
        r, s = (script_io.table(script_io.group(f["runs"], k, "%s: runs" % a.h5, die), "steps",
                                "%s: run %s" % (a.h5, k), die, ("time_s", "n_refresh", "start_s")) for k in runs)
        n = min(len(r), len(s))
        err = (s["time_s"][:n] / r["time_s"][:n] - 1) * 100
        print("%s: %d steps" % (p, n))
        print("  real ms " + " ".join("%.2f" % (x * 1e3) for x in r["time_s"][:n]))
        print("  sim  ms " + " ".join("%.2f" % (x * 1e3) for x in s["time_s"][:n]))
        print("  err %   " + " ".join("%+.1f" % x for x in err))
        end, near, far = -1e9, [], []
        for i in range(n):
            if r["n_refresh"][i] > 0:
                end = r["start_s"][i] + r["time_s"][i]
            else:
                (near if r["start_s"][i] - end < a.hold else far).append(err[i])
        fmt = lambda v: "%d steps, mean %+.1f %%" % (len(v), np.mean(v)) if v else "none"
        print("  Reuse within %.0f ms of a Refresh: %s; later: %s" % (a.hold * 1e3, fmt(near), fmt(far)))


if __name__ == "__main__":
    main()
