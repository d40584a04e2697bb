#!/usr/bin/python3
"""ncu_attainable.py - which HBM-bytes-per-class cells any deterministic count can hold within 5 % (issue 9's
per-class target, docs/BENCHMARKS.md "HBM bytes per kernel class"): two or more ncu_bytes.md tables
(scripts/ncu_bytes.py, scripts/ncu_model_bytes.sh, scripts/ncu_score.sh's OUT/<set>/out/ncu_bytes.md) of the same
points, counted by the same dkv, each measured by another Nsight Compute run (another machine, or the same again).

    /usr/bin/python3 scripts/ncu_attainable.py NCU_BYTES.md NCU_BYTES.md [NCU_BYTES.md...]

A cell (point, class, reads or writes) is attainable when one value lies within 5 % of every measurement:
max / min <= 1.05 / 0.95 (a cell measured 0 every time is attainable; one measured 0 and not 0 is not).  Prints,
reads and writes apart: the cells, the attainable ones, the counted value within 5 % of every measurement (met),
met among the attainable, and the largest spread (max / min) of a cell measured above 0; then every cell that is not attainable, with its measurements and spread (max / min).
Exits 1 naming the file when a table has no class rows, the tables' points or classes differ, or a cell's counted
bytes differ between tables (other plans or another dkv: the tables are not of the same counts)."""
import sys

import ncu_cells
import script_io

LIMIT = 1.05 / 0.95


def die(msg):
    sys.stderr.write("ncu_attainable.py: %s\n" % msg)
    sys.exit(1)


def cells(path):
    """{(point, class): (counted read, measured read, counted write, measured write)} of one table"""
    return {(pt, cl): tuple(v) for pt, cl, v in ncu_cells.rows(path, "ncu_attainable.py")}


def within(x, m):
    return (m == 0 and x == 0) or (m > 0 and abs(x - m) <= 0.05 * m)


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    script_io.unknown_options("ncu_attainable.py", argv)
    if len(argv) < 2:
        sys.stderr.write(__doc__.strip() + "\n")
        return 2
    tables = [cells(p) for p in argv]
    keys = sorted(tables[0])
    for p, t in zip(argv[1:], tables[1:]):
        if sorted(t) != keys:
            die("%s: its points and classes are not %s's" % (p, argv[0]))
        for k in keys:
            for i in (0, 2):
                a, b = tables[0][k][i], t[k][i]
                if abs(a - b) > 1e-9 * max(abs(a), abs(b), 1):
                    die("%s: %s %s: counted %s %g, %s has %g (not the same counts)" % (
                        p, k[0], k[1], "read" if i == 0 else "write", b, argv[0], a))
    bad = []
    for name, i in (("reads", 0), ("writes", 2)):
        n = att = met = met_att = 0
        top = (1.0, None)   # the largest spread of a cell measured above 0 every time, and its cell
        for k in keys:
            x, ms = tables[0][k][i], [t[k][i + 1] for t in tables]
            if min(ms) > 0 and max(ms) / min(ms) > top[0]:
                top = (max(ms) / min(ms), k)
            ok = all(m == 0 for m in ms) or (min(ms) > 0 and max(ms) / min(ms) <= LIMIT)
            hit = all(within(x, m) for m in ms)
            n, att, met, met_att = n + 1, att + ok, met + hit, met_att + (hit and ok)
            if not ok:
                bad.append((name, k, ms, max(ms) / min(ms) if min(ms) > 0 else float("inf")))
        print("%s: %d cells, %d attainable (one value within 5 %% of all %d measurements); met on every "
              "measurement %d; met of the attainable %d / %d; largest spread %.3f%s" % (
                  name, n, att, len(tables), met, met_att, att, top[0], " (%s %s)" % top[1] if top[1] else ""))
    if bad:
        print("\n| direction | point | class | measured GB | max / min |")
        print("|---|---|---|---|---|")
        for name, k, ms, sp in bad:
            print("| %s | %s | %s | %s | %s |" % (name, k[0], k[1], ", ".join("%.4f" % m for m in ms),
                                                "inf" if sp == float("inf") else "%.3f" % sp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
