#!/usr/bin/env python3
"""ncu_table_cv.py - how far a table of measured layer bytes would carry issue 9's per-class cells, leaving one
set out at a time (docs/COST_MODEL.md "The soft edge", session 43): the question before a profile block that measures
each class's write-back instead of counting it.

    /usr/bin/python3 scripts/ncu_table_cv.py OUT [--bytes read|write]

OUT: a scripts/ncu_score.sh output folder holding at least two sets with their real.h5 and sim.h5 (the in-sample
LLaDA-8B set has none: named and left out).  Every step pairs with its replay as in scripts/ncu_layer_sets.py (the
replay's one layer beside Nsight Compute's mean layer).  For each set held out, the other sets' steps of the same
model, step kind and layer (class sequence) give, per layer row, a table over their rows (q_tokens) of Nsight
Compute's bytes (direct) and of their ratio to the replay's (ratio; a step whose replay counts under 10 kB left out),
averaged per row count, linear between row counts and the nearest end's value beyond them; a step with no such steps
keeps the replay's bytes.  Summed per point and class over the held-out set's steps (one layer each: the LM head and
the step's start are not in it), each is set against Nsight Compute's sum: cells within 5 % (both under 10 kB count as
within) for the replay, the direct table and the ratio table.  Then the spread: for each (model, step kind, layer,
rows) that steps of two or more points share, each layer row whose Nsight Compute bytes reach 0.1 MB: the largest over
the smallest, and how many are within 1.105 (one value within 5 % of both), the widest listed.  --bytes: the direction
(default write).  Exit status: 0, 1 on a file it cannot read or pair or fewer than two sets with steps, 2 on a usage
error."""
import bisect
import collections
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_layer as L  # noqa: E402  (die, NAMES)
import ncu_layer_sets as S  # noqa: E402  (collect, within, FLOOR)
import ncu_rows as R  # noqa: E402  (cli)

SPREAD_OK, SPREAD_FLOOR, WIDEST = 1.105, 1e5, 8


def usage(msg):
    sys.stderr.write("ncu_table_cv.py: %s\n%s\n" % (msg, __doc__.split("\n\n")[1]))
    sys.exit(2)


def parse(argv):
    pos, opts = R.cli(argv, __doc__, 1, ("--bytes",), usage)
    if opts.get("--bytes", "write") not in ("read", "write"):
        usage("--bytes must be read or write, got %r" % opts["--bytes"])
    return pos[0], opts


def interp(xs, ys, x):
    """ys at x, linear between the sorted xs, the nearest end's value beyond them"""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    k = bisect.bisect_left(xs, x)
    if xs[k] == x:
        return ys[k]
    return ys[k - 1] + (ys[k] - ys[k - 1]) * (x - xs[k - 1]) / (xs[k] - xs[k - 1])


def table(steps, i, ratio):
    """(rows, mean value per row count) of layer row i over steps: Nsight Compute's bytes, or their ratio to the
    replay's; None when no step gives a value"""
    pts = collections.defaultdict(list)
    for t in steps:
        rep, ncu = t["layer"][i][1], t["layer"][i][2]
        if not ratio:
            pts[t["rows"]].append(ncu)
        elif rep >= S.FLOOR:
            pts[t["rows"]].append(ncu / rep)
    if not pts:
        return None
    xs = sorted(pts)
    return xs, [sum(pts[x]) / len(pts[x]) for x in xs]


def cv(steps):
    """{replay, direct, ratio: cells within 5 %}, the cells' count: each set left out in turn"""
    ok, n = collections.Counter(), 0
    for hold in sorted(set(s["set"] for s in steps)):
        groups = collections.defaultdict(list)
        for t in steps:
            if t["set"] != hold:
                groups[(t["model"], t["kind"], t["sig"])].append(t)
        cells = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])   # replay, direct, ratio, Nsight Compute
        tables = {}   # (group, layer row): its two tables, built once for the held-out set
        for s in (s for s in steps if s["set"] == hold):
            key = (s["model"], s["kind"], s["sig"])
            g = groups.get(key, [])
            for i, (k, rep, ncu) in enumerate(s["layer"]):
                if (key, i) not in tables:
                    tables[(key, i)] = (table(g, i, False), table(g, i, True)) if g else (None, None)
                td, tr = tables[(key, i)]
                c = cells[(s["point"], k)]
                c[0] += rep
                c[1] += interp(td[0], td[1], s["rows"]) if td else rep
                c[2] += rep * interp(tr[0], tr[1], s["rows"]) if tr else rep
                c[3] += ncu
        for c in cells.values():
            n += 1
            for j, m in enumerate(("replay", "direct", "ratio")):
                ok[m] += S.within(c[j], c[3])
    return ok, n


def spread(steps):
    """(layer rows compared, how many within SPREAD_OK, the widest: (spread, model, kind, rows, #, class, steps))"""
    g = collections.defaultdict(list)
    for s in steps:
        g[(s["model"], s["kind"], s["sig"], s["rows"])].append(s)
    n, good, wide = 0, 0, []
    for (model, kind, sig, rows), ss in g.items():
        if len(set((s["set"], s["point"]) for s in ss)) < 2:
            continue
        for i in range(len(sig)):
            v = [s["layer"][i][2] for s in ss]
            if max(v) < SPREAD_FLOOR:
                continue
            sp = max(v) / min(v) if min(v) > 0 else float("inf")
            n, good = n + 1, good + (sp <= SPREAD_OK)
            wide.append((sp, model, kind, rows, i + 1, L.NAMES.get(sig[i], str(sig[i])), len(ss)))
    return n, good, sorted(wide, reverse=True)[:WIDEST]


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # quiet under head
    out, opts = parse(argv)
    what = opts.get("--bytes", "write")
    steps = S.collect(out, {"--bytes": what}, set())
    sets = sorted(set(s["set"] for s in steps))
    if len(sets) < 2:
        L.die("%s: %d set(s) with paired steps (%s); leaving one out needs at least two" % (
            out, len(sets), ", ".join(sets) or "none"))
    ok, n = cv(steps)
    print("%s bytes, %d sets, %d steps, each set left out in turn: %d point x class cells of the layer" % (
        what, len(sets), len(steps), n))
    for m, text in (("replay", "the replay"), ("direct", "a table of Nsight Compute's bytes by rows"),
                    ("ratio", "a table of Nsight Compute / replay by rows")):
        print("%-6s %d / %d within 5 %% (%s)" % (m, ok[m], n, text))
    cmp_n, good, wide = spread(steps)
    print("spread: %d layer rows of a (model, kind, layer, rows) two or more points share; Nsight Compute's bytes "
          "within %.3f of each other in %d" % (cmp_n, SPREAD_OK, good))
    for w in wide:
        print("  %.3f  %s %s, %d rows, #%d %s (%d steps)" % w)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
