#!/usr/bin/python3
"""new_rows.py - the first step of each row count in a run set taken with class events, real against
simulated: the q|k|v and O projections' measured time less their simulated time at that step, on the
GEMM warm-up's row counts and off them (docs/COST_MODEL.md "Cold shapes", "Bucket algorithms").

    /usr/bin/python3 scripts/new_rows.py RES [--event-s 1.5e-6]

RES is a post result (scripts/hw_session.sh post) of a run set recorded with class events
(CLASS_TIMING=true: device calls 40 and 45, c.tgz): RES/h5/heldout.h5 holds the :real runs,
RES/sim/heldout.h5 their re-simulated :sim twins.  The points run one after another in one process, so
a row count is new only at its first step in the process (the points in experiments/hw_heldout_points.lua
order); steps whose plans differ between the halves are left out.  Each class's measured time is less
--event-s per launch (the class event's cost).  Prints, per point, every new row count (g: a row count
of the warm-up grid the backend had until session 16's grid of 8, by 8 to 32, 16 to 512, 64 to 2,048 and
256 to 8,192: the grid of calls 27-46) with the excess in ms, then the mean excess on and off that grid."""
import sys

import script_io
from machine_spread import same

CL = ["qkv", "attn", "o", "ffn", "lm_head", "kv_store", "kv_gather", "reorder", "elementwise", "compress"]
ORDER = ["ho:az:dual", "ho:az:prefix", "ho:az:sparse_head", "ho:az:sparse_shared", "ho:az:none",
         "ho:bg:dual+prog", "ho:vi:dual,b=1", "ho:mc:dual,long", "ho:dream:az:dual", "ho:dream:mc:prefix,long",
         "ho:dream:az:sparse_head"]


def warm_rows():
    """the warm-up grid of calls 27-46: 8 to 32 by 8, to 512 by 16, to 2,048 by 64, to 8,192 by 256"""
    out, t = set(), 8
    while t <= 8192:
        out.add(t)
        t += 8 if t < 32 else 16 if t < 512 else 64 if t < 2048 else 256
    return out


def main():
    ap = script_io.arg_parser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("res")
    ap.add_argument("--event-s", type=float, default=1.5e-6)
    a = ap.parse_args()
    die = lambda msg: sys.exit("new_rows: " + msg)
    rp, sp = "%s/h5/heldout.h5" % a.res, "%s/sim/heldout.h5" % a.res
    R, S = script_io.open_h5(rp, die), script_io.open_h5(sp, die)
    grid, seen, on, off = warm_rows(), {}, [], []
    kf, sf = ("kind", "step_index", "time_s"), ("n_refresh", "n_reuse", "q_tokens")
    n_points = 0
    for p in ORDER:
        if "runs/%s:real/kernels" % p not in R or "runs/%s:sim/kernels" % p not in S:
            continue
        n_points += 1
        rg, sg = R["runs/%s:real" % p], S["runs/%s:sim" % p]
        rk = script_io.table(rg, "kernels", "%s: run %s:real" % (rp, p), die, kf + ("n_launches",))
        sk = script_io.table(sg, "kernels", "%s: run %s:sim" % (sp, p), die, kf)
        rs = script_io.table(rg, "steps", "%s: run %s:real" % (rp, p), die, sf)
        ss = script_io.table(sg, "steps", "%s: run %s:sim" % (sp, p), die, sf)
        model = "dream" if ":dream:" in p else "llada"
        line = []
        for i, x in enumerate(rs):
            m = int(x["q_tokens"])
            new = (model, m) not in seen
            seen[(model, m)] = True
            if not new or i >= len(ss):
                continue
            y = ss[i]
            if not same(x, y):
                continue
            real = {CL[int(r["kind"])]: r["time_s"] - a.event_s * r["n_launches"] for r in rk[rk["step_index"] == i]}
            sim = {CL[int(r["kind"])]: r["time_s"] for r in sk[sk["step_index"] == i]}
            if any(k not in real or k not in sim for k in ("qkv", "o")):
                sys.exit("new_rows: %s step %d: no q|k|v / o kernel rows (recorded without class events?)" % (p, i))
            ex = (real["qkv"] - sim["qkv"] + real["o"] - sim["o"]) * 1e3
            (on if m in grid else off).append(ex)
            line.append("%d%s %+.1f" % (m, "g" if m in grid else "", ex))
        print("%-26s %s" % (p, ", ".join(line)))
    if not n_points:
        die("%s: no held-out point with class-event kernels in both h5/heldout.h5 and sim/heldout.h5 (of %s; recorded "
            "without CLASS_TIMING=true?)" % (a.res, ", ".join(ORDER)))
    mean = lambda v: sum(v) / len(v) if v else float("nan")
    print("new row counts on the warm-up grid: %d, mean excess %+.2f ms; off it: %d, mean %+.2f ms (max %+.1f)"
          % (len(on), mean(on), len(off), mean(off), max(off) if off else float("nan")))


if __name__ == "__main__":
    main()
