#!/usr/bin/python3
"""attn_geom_loo.py - leave-one-out of the launch-geometry rule on a profile's own attention rows
(docs/COST_MODEL.md "Reuse launches of many short items"):

    /usr/bin/python3 scripts/attn_geom_loo.py datasets/profiles/h200-20261201k.lua

Every Reuse-like row (mode 0, q_rows < kv_tokens, whole 32-query items) is predicted by another measured
item count of the same head configuration and key count whose launch has the same key splits S and waves
W (W = ceil(heads x items / attn_waves[S])), the one whose cluster count is nearest, as sim/sim_profile.c
does for a Reuse launch the profile cannot hold.  Prints how many rows had such a neighbour, the mean
|error| and bias of the prediction, and the largest misses.  Needs the profile's attn_waves (head_dim 128,
group 0).  Exit 1, naming the file, on a profile that cannot be read or lacks those tables; 2 on usage.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attn_waves_check import load, splits  # noqa: E402  (the profile reader and the kernel's split rule)


def main():
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    table, waves = load(sys.argv[1], lambda sec, warm, stream: sec, prog="attn_geom_loo")
    if (128, 0) not in waves:
        sys.exit("attn_geom_loo: %s: needs attn_waves for head_dim 128, group 0" % sys.argv[1])
    cl = waves[(128, 0)]
    rows = {(h, hk, int(q // 32), a): t for (h, hk, d, md, q, a), t in table.items()
            if md == 0 and q < a and q % 32 == 0}   # heads, kv_heads, items, keys -> seconds

    def geom(h, n, a):
        s = splits(h * n, a)
        return s, math.ceil(h * n / cl[s - 1])

    errs = []
    for (h, hk, n, a), t in rows.items():
        g = geom(h, n, a)
        cands = [(abs(n2 - n), n2) for (h2, hk2, n2, a2) in rows
                 if (h2, hk2, a2) == (h, hk, a) and n2 != n and geom(h, n2, a) == g]
        if cands:
            n2 = min(cands)[1]
            errs.append((rows[(h, hk, n2, a)] / t - 1, h, hk, n, n2, a, g))
    if not errs:
        sys.exit("attn_geom_loo: no row has a neighbour with the same splits and waves")
    e = [x[0] for x in errs]
    print("rows predicted %d of %d; mean |error| %.1f %%, bias %+.1f %%, within 5 %%: %d" % (
        len(e), len(rows), 100 * sum(map(abs, e)) / len(e), 100 * sum(e) / len(e), sum(abs(x) <= 0.05 for x in e)))
    for x in sorted(errs, key=lambda x: -abs(x[0]))[:6]:
        print("  %g/%g heads: %d items from %d at %g keys (S %d, W %d): %+.1f %%" % (x[1], x[2], x[3], x[4], x[5],
                                                                                   x[6][0], x[6][1], 100 * x[0]))


if __name__ == "__main__":
    main()
