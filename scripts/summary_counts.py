#!/usr/bin/python3
"""summary_counts.py - the held-out and in-sample targets of several hw_session.sh post results, summed per simulated
variant (issue 9: step latency mean |error| <= 5 %, p50 and p99 <= 8 %, tokens/s <= 5 %, memory <= 2 %).

    /usr/bin/python3 scripts/summary_counts.py RES [RES...]

Each RES is a post result (scripts/hw_session.sh post, with PROFILE=FILE.lua for a "profile" variant): its
summary.md's per-point rows ("| point | variant | steps | step | PASS/MISS | p50 | ... |", held-out points and
val:* alike).  Prints, per variant, the passes of each target over every point row of every RES, then per point
the mean step |error| of each variant and its step passes (how docs/COST_MODEL.md compares a profile variant
against the shipped preset over the ten fresh machines).  Exits 2 naming the file where a RES has no such rows."""
import os
import re
import sys

ROW = re.compile(r"^\| ([^|]+) \| ([a-z][a-z0-9 -]*) \| (\d+) \| ([-0-9.]+)% \| (PASS|MISS) \| ([-+0-9.]+)% \| (PASS|MISS) \| "
                 r"([-+0-9.]+)% \| (PASS|MISS) \| ([-+0-9.]+)% \| (PASS|MISS) \| ([-+0-9.]+)% \| (PASS|MISS)")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    rows = {}   # variant -> point -> [(step |e|, passes of 5)]
    for res in argv:
        path = os.path.join(res, "summary.md")
        try:
            text = open(path).read().splitlines()
        except OSError as e:
            print("summary_counts.py: %s: %s" % (path, e.strerror), file=sys.stderr)
            return 2
        n = 0
        for l in text:
            m = ROW.match(l)
            if m:
                rows.setdefault(m.group(2), {}).setdefault(m.group(1), []).append(
                    (float(m.group(4)), [m.group(i) == "PASS" for i in (5, 7, 9, 11, 13)]))
                n += 1
        if n == 0:
            print("summary_counts.py: %s: no per-point target rows (a hw_session.sh post summary?)" % path,
                  file=sys.stderr)
            return 2
    names = ("step", "p50", "p99", "tok/s", "mem")
    for v in sorted(rows):
        allr = [x for p in rows[v].values() for x in p]
        print("%-26s %s (of %d point rows)" % (v, ", ".join("%s %d" % (names[i], sum(x[1][i] for x in allr))
                                                            for i in range(5)), len(allr)))
    vs = sorted(rows)
    print("\n| point | " + " | ".join("%s: step |e|, step passes" % v for v in vs) + " |")
    print("|---|" + "---|" * len(vs))
    for p in sorted({p for v in vs for p in rows[v]}):
        cells = []
        for v in vs:
            x = rows[v].get(p, [])
            cells.append("%.2f %%, %d / %d" % (sum(e for e, _ in x) / len(x), sum(ok[0] for _, ok in x), len(x)) if x else "-")
        print("| %s | %s |" % (p, " | ".join(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
