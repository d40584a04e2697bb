#!/usr/bin/python3
"""ncu_sign.py - two replays' HBM-byte errors cell by cell: over the same Nsight Compute sets scored twice by
scripts/ncu_score.sh (the shipped replay into one OUT_DIR, a trial into another), in how many class cells the second
is closer to Nsight Compute than the first and in how many further, reads and writes apart, with a one-sided sign
test (docs/COST_MODEL.md "The soft edge": the twenty-fourth trial).

    /usr/bin/python3 scripts/ncu_sign.py BASE_OUT TRIAL_OUT [--tie PTS] [--flips]

BASE_OUT, TRIAL_OUT: ncu_score.sh's OUT_DIRs (the tables each one's tables.txt lists, paired by their path below
the folder, so both must hold the same sets).  A cell whose |error| (from its counted and measured bytes) moves by PTS
percentage points or less (default 0.1), or one where nothing was measured, is a tie and not counted.  p is the
chance of at least that many closer cells among the counted ones if closer and further were equally likely.  --flips
then lists every cell that crossed the 5 % band (ncu_cells.py's rule), the count's own view of a trial: a line per
direction, "flips: reads +I -O" (cells the trial brings within, cells it takes out), then one line per cell, its
table, point, class and both errors (session 43).  Exits 1 naming the file on a table it cannot read or a cell only
one side holds.
"""
import math
import os
import sys

import ncu_cells
import script_io


def die(msg):
    sys.stderr.write("ncu_sign.py: %s\n" % msg)
    sys.exit(1)


def cells(root):
    """{(table path below root, point, class): [counted read, measured read, counted write, measured write]}, from the
    tables root's tables.txt lists (each read by ncu_cells.rows, as ncu_score.sh's counts are)"""
    out, listing = {}, os.path.join(root, "tables.txt")
    tables = [t.strip() for t in script_io.read_text(listing, lambda m: die(
        m + " (an OUT_DIR of scripts/ncu_score.sh, since session 40?)")).splitlines() if t.strip()]
    if not tables:
        die("%s: no table listed" % listing)
    for rel in tables:
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            die("%s (listed in %s): no such file" % (path, listing))
        for point, cls, v in ncu_cells.rows(path, "ncu_sign.py"):
            out[(rel, point, cls)] = v
    return out


def abs_err(v, i, j):
    """|counted - measured| / measured in percent, None where nothing was measured"""
    return 100 * abs(v[i] - v[j]) / v[j] if v[j] > 0 else None


def pct(v, i, j):
    """the signed error of counted v[i] against measured v[j], as text"""
    return "%+.1f %%" % (100 * (v[i] - v[j]) / v[j]) if v[j] > 0 else "nothing measured"


def main(argv):
    if len(argv) >= 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    args, tie, flips = [], 0.1, False
    i = 1
    while i < len(argv):
        if argv[i] == "--flips":
            flips = True
            i += 1
            continue
        if argv[i] == "--tie":
            if i + 1 >= len(argv):
                die("--tie needs a value (percentage points)")
            try:
                tie = float(argv[i + 1])
            except ValueError:
                die("--tie: not a number: %s" % argv[i + 1])
            if not tie >= 0:
                die("--tie must be 0 or more, got %s" % argv[i + 1])
            i += 2
            continue
        if argv[i].startswith("-"):
            die("unknown option %s (--help)" % argv[i])
        args.append(argv[i])
        i += 1
    if len(args) != 2:
        die("give BASE_OUT and TRIAL_OUT (--help)")
    for a in args:
        if not os.path.isdir(a):
            die("%s: not a folder" % a)
    base, trial = cells(args[0]), cells(args[1])
    for a, b, name in ((base, trial, args[1]), (trial, base, args[0])):
        missing = sorted(set(a) - set(b))
        if missing:
            die("%s lacks %d cells the other holds, e.g. %s: %s, %s" % (name, len(missing), *missing[0]))
    for which, i, j in (("reads", 0, 1), ("writes", 2, 3)):
        closer = further = 0
        for key in base:
            x, y = abs_err(base[key], i, j), abs_err(trial[key], i, j)
            if x is None or y is None or abs(x - y) <= tie:
                continue
            closer += y < x
            further += y > x
        n = closer + further
        p = sum(math.comb(n, m) for m in range(closer, n + 1)) / 2 ** n if n else 1.0
        print("%s: %d cells; the trial closer in %d, further in %d (|error| moving %g points or less: %d); "
              "one-sided sign test p = %.4f" % (which, len(base), closer, further, tie, len(base) - n, p))
    if flips:
        for which, i, j in (("reads", 0, 1), ("writes", 2, 3)):
            moved = [(k, ncu_cells.ok(trial[k], i, j)) for k in sorted(base)
                     if ncu_cells.ok(base[k], i, j) != ncu_cells.ok(trial[k], i, j)]
            print("flips: %s +%d -%d" % (which, sum(1 for _, now in moved if now), sum(1 for _, now in moved if not now)))
            for (rel, point, cls), now in moved:
                print("  %s %-3s %s %s %s: %s -> %s" % (which, "in" if now else "out", rel, point, cls,
                                                       pct(base[(rel, point, cls)], i, j),
                                                       pct(trial[(rel, point, cls)], i, j)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
