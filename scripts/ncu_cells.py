#!/usr/bin/python3
"""ncu_cells.py - the HBM-bytes-per-class score of one or more ncu_bytes.md tables (scripts/ncu_bytes.py,
scripts/ncu_model_bytes.sh): over every point's class rows (the "all" rows left out), the cells whose
counted bytes are within 5 % of Nsight Compute's (a cell of 0 against 0 counts as within), reads and writes
apart, and the mean |error| over the cells of more than 10 MB measured, each capped at 50 %
(docs/COST_MODEL.md "HBM bytes with an L2"; the score of datasets/hw/2026-12-02/call56/l2_variants.sh); then
the bytes off: the sum of |counted - measured| over the cells against the sum measured, reads and writes apart
(the share of the bytes a class holds that belong to another class, or to none; since session 32); then the points'
totals: the points (a table's "### val:<point>" sections) whose counted bytes over all classes are within 5 % of
Nsight Compute's, reads and writes apart, and the largest |error| (since session 40: the split between classes is
what the cells judge, the totals whether the count has the bytes at all).

    /usr/bin/python3 scripts/ncu_cells.py [--by-class] NCU_BYTES.md [NCU_BYTES.md...]

--by-class (since session 40): instead, a table of the classes, each with its cells within 5 % and its median error,
reads and writes apart: which classes' counts can be taken per class and which only in the points' totals; and
(since session 50) the class's bytes over all its cells, (sum counted - sum measured) / sum measured: the bias a sum
over many runs of one class carries, which the cells' scatter around it does not show.

Exits 1 naming the file when a table has no class rows."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402


def rows(path, prog="ncu_cells.py"):
    """every class row of a table: (point, class, [counted read, measured read, counted write, measured write]);
    exits naming prog and the file when it cannot be read or has no class rows"""
    out, pt = [], None
    lines = script_io.read_text(path, lambda m: sys.exit("%s: %s" % (prog, m))).splitlines()
    for n, l in enumerate(lines, 1):
        m = re.match(r"#+ val:(\S+)", l)
        if m:
            pt = m.group(1)
            continue
        c = [x.strip() for x in l.strip().strip("|").split("|")]
        if pt and l.startswith("| ") and not c[0].startswith("**") and len(c) >= 9 and c[4] in ("PASS", "MISS"):
            try:
                out.append((pt, c[0], [float(c[i]) for i in (1, 2, 5, 6)]))
            except ValueError:
                sys.exit("%s: %s:%d: a class row whose bytes are not numbers: %s" % (prog, path, n, l))
    if not out:
        sys.exit("%s: %s: no class rows under a '### val:<point>' heading (an ncu_bytes.md?)" % (prog, path))
    return out


def totals(tables):
    """every point's sums over its classes, [counted read, measured read, counted write, measured write]; TABLES:
    {path: rows(path)}"""
    pts = {}
    for p, rs in tables.items():
        for pt, _, v in rs:
            t = pts.setdefault((p, pt), [0.0] * 4)
            for i in range(4):
                t[i] += v[i]
    return list(pts.values())


def ok(x, i, j):
    """cell X's count (x[i]) within 5 % of the measurement (x[j]); 0 against 0 is within"""
    return (x[j] > 0 and abs(x[i] - x[j]) / x[j] <= 0.05) or (x[j] == 0 and x[i] == 0)


def within(ts, i, j):
    e = [abs(x[i] - x[j]) / x[j] for x in ts if x[j] > 0]
    n = sum(1 for x in e if x <= 0.05)
    return "%d / %d within 5 %% (max %.1f %%)" % (n, len(ts), 100 * max(e) if e else 0)


def stat(cs, i, j):
    e = [min(0.5, abs(x[i] - x[j]) / x[j]) for x in cs if x[j] > 0.01]
    n = sum(1 for x in cs if ok(x, i, j))
    return "%d / %d within 5 %%, mean %.1f %%" % (n, len(cs), 100 * sum(e) / len(e) if e else 0)


def off(cs, i, j):
    m = sum(x[j] for x in cs)
    return "%.1f %%" % (100 * sum(abs(x[i] - x[j]) for x in cs) / m) if m > 0 else "-"


def by_class(paths):
    """the per-class table: cells within 5 %, the median signed error and the error of the class's bytes over all its
    cells, reads and writes apart"""
    per = {}
    for p in paths:
        for _, cls, v in rows(p):
            per.setdefault(cls, []).append(v)

    def col(vs, i, j):
        n = sum(1 for x in vs if ok(x, i, j))
        e = sorted((x[i] - x[j]) / x[j] for x in vs if x[j] > 0)
        med = "%+.1f %%" % (100 * (e[len(e) // 2] if len(e) % 2 else (e[len(e) // 2 - 1] + e[len(e) // 2]) / 2)) if e else "-"
        m = sum(x[j] for x in vs)
        tot = "%+.1f %%" % (100 * (sum(x[i] for x in vs) - m) / m) if m > 0 else "-"
        return "%d / %d | %s | %s" % (n, len(vs), med, tot)

    print("| class | reads within 5 % | median read error | read bytes, all cells | writes within 5 % | median write error "
          "| written bytes, all cells |")
    print("|---|---|---|---|---|---|---|")
    for cls in sorted(per, key=lambda c: -len(per[c])):
        print("| %s | %s | %s |" % (cls, col(per[cls], 0, 1), col(per[cls], 2, 3)))


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    script_io.unknown_options("ncu_cells.py", argv, known=("--by-class",))
    if argv[0] == "--by-class":
        if len(argv) < 2:
            sys.exit("ncu_cells.py: --by-class needs at least one NCU_BYTES.md")
        by_class(argv[1:])
        return 0
    tables = {p: rows(p) for p in argv}
    cs = [r[2] for rs in tables.values() for r in rs]
    ts = totals(tables)
    print("reads %s | writes %s | bytes off: reads %s, writes %s | point totals: reads %s, writes %s"
          % (stat(cs, 0, 1), stat(cs, 2, 3), off(cs, 0, 1), off(cs, 2, 3), within(ts, 0, 1), within(ts, 2, 3)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
