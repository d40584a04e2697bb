#!/usr/bin/python3
"""machine_clocks.py - why H200 machines differ on the same run: each run set's measured SM clocks against
the simulated ones (docs/COST_MODEL.md "Machine calibration").

    /usr/bin/python3 scripts/machine_clocks.py [--point NAME] RES [RES...]
    /usr/bin/python3 scripts/machine_clocks.py --kinds RES [RES...]

Each RES is a post result (scripts/hw_session.sh post datasets/hw/<date>/callN): RES/h5/heldout.h5 (the real
runs, with dkv.execute's per-step sm_mhz) and RES/sim/heldout.h5 (their re-simulations).  Steps are paired by
index where both plans agree (refresh and reuse item counts, query rows), the first step left out.  Prints
per RES: over the held-out points, the mean of (measured - simulated) step clock (MHz) and the mean signed
step error (sim - real) / real (points weighted equally); and for --point (default az:none) its Refresh
steps of more than 2,048 query rows: their number, mean measured clock and mean measured step time.

--kinds: over all the RES together, per held-out point and kind of step (R: Refresh items only, U: Reuse
only, M: both) and query rows (up to 64, 256, 1,024, 2,048, more): the paired steps, their mean measured
and simulated clock (MHz), the mean signed step error (sim - real) / real and its mean per RES in the order
given (docs/COST_MODEL.md "The GEMMs' sensitivity measured at two clocks": where the simulator is short,
and whether the clock it assumes is the one measured)."""
import os
import sys

import numpy as np

import script_io
from machine_spread import STEP_FIELDS, same, steps


def die(msg):
    print("machine_clocks.py: %s" % msg, file=sys.stderr)
    sys.exit(2)


def paired(r, s):
    """Indices of the steps after the first whose plans agree (machine_spread.py's same())."""
    return np.array([i for i in range(1, min(len(r), len(s))) if same(r[i], s[i])], dtype=int)

def heldout(res):
    """The real and simulated held-out runs' steps of post result RES (machine_spread.py's steps()), or None after
    naming the missing file"""
    rp, sp = os.path.join(res, "h5", "heldout.h5"), os.path.join(res, "sim", "heldout.h5")
    for p in (rp, sp):
        if not os.path.exists(p):
            print("machine_clocks.py: %s: no such file (a hw_session.sh post result with held-out points?)" % p,
                  file=sys.stderr)
            return None
    return steps(rp, die, STEP_FIELDS + ("sm_mhz",)), steps(sp, die, STEP_FIELDS + ("sm_mhz",))


BINS = ((64, "<=64"), (256, "<=256"), (1024, "<=1024"), (2048, "<=2048"), (float("inf"), ">2048"))


def kinds(argv):
    """--kinds: the table by point, kind of step and rows over every RES"""
    acc = {}
    for ri, res in enumerate(argv):
        pair = heldout(res)
        if pair is None:
            return 2
        R, S = pair
        for k in sorted(R):
            if not k.endswith(":real") or k[:-5] + ":sim" not in S:
                continue
            r, s = R[k], S[k[:-5] + ":sim"]
            for i in paired(r, s):
                kind = "M" if r["n_refresh"][i] and r["n_reuse"][i] else "R" if r["n_refresh"][i] else "U"
                rows = next(name for top, name in BINS if r["q_tokens"][i] <= top)
                acc.setdefault((k[3:-5], kind, rows), []).append(
                    (ri, float(r["sm_mhz"][i]), float(s["sm_mhz"][i]), float(s["time_s"][i] / r["time_s"][i] - 1)))
    if not acc:
        print("machine_clocks.py: no held-out point with paired steps", file=sys.stderr)
        return 2
    order = {name: j for j, (_, name) in enumerate(BINS)}
    print("| point | kind | rows | steps | measured MHz | simulated MHz | step error | per RES |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(acc, key=lambda k: (k[0], k[1], order[k[2]])):
        v = np.array(acc[key])
        per = " ".join("%+.1f" % (100 * np.mean(v[v[:, 0] == ri, 3])) for ri in range(len(argv)) if (v[:, 0] == ri).any())
        print("| %s | %s | %s | %d | %.0f | %.0f | %+.1f %% | %s |" % (key[0], key[1], key[2], len(v), v[:, 1].mean(),
                                                                    v[:, 2].mean(), 100 * v[:, 3].mean(), per))
    return 0


def main(argv):
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if argv[:1] == ["--kinds"] and len(argv) > 1:
        return kinds(argv[1:])
    script_io.unknown_options("machine_clocks.py", argv, known=("--kinds",), takes=("--point",))
    point = "az:none"
    if argv[:1] == ["--point"] and len(argv) > 1:
        point, argv = argv[1], argv[2:]
    if not argv or any(a.startswith("-") for a in argv):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for res in argv:
        pair = heldout(res)
        if pair is None:
            return 2
        R, S = pair
        dclk, bias, big = [], [], None
        for k in sorted(R):
            if not k.endswith(":real") or k[:-5] + ":sim" not in S:
                continue
            r, s = R[k], S[k[:-5] + ":sim"]
            m = paired(r, s)
            if len(m) == 0:
                continue
            dclk.append(float(np.mean(r["sm_mhz"][m] - s["sm_mhz"][m])))
            bias.append(float(np.mean((s["time_s"][m] - r["time_s"][m]) / r["time_s"][m])))
            if k == "ho:%s:real" % point:
                sel = m[(r["n_refresh"][m] > 0) & (r["q_tokens"][m] > 2048)]
                big = (len(sel), float(np.mean(r["sm_mhz"][sel])) if len(sel) else 0,
                       float(np.mean(r["time_s"][sel])) if len(sel) else 0)
        if not dclk:
            print("machine_clocks.py: %s: no held-out point with paired steps" % res, file=sys.stderr)
            return 2
        line = "%s: %d held-out points, measured - simulated clock %+.0f MHz, step bias %+.2f %%" % (
            res, len(dclk), np.mean(dclk), 100 * np.mean(bias))
        if big:
            line += "; %s Refresh > 2,048 rows: %d steps, %.0f MHz, %.1f ms" % (point, big[0], big[1], 1e3 * big[2])
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
