#!/usr/bin/python3
"""sel_align_ncu.py CSV - the kernels of `bench_sel_align --ncu` under Nsight Compute (issue 9, session 13;
docs/COST_MODEL.md "Unaligned key counts"): per head configuration and key count, the score GEMM's
kernels as the backend calls it (ldc = keys) and with ldc padded to 8 floats, their times, and the
row statistics' and column sums' times.  The bench launches, per point and in this order: dkv_bk_scores
(GEMM kernels, row_stats_kernel, col_sum_kernel), the GEMM alone (ldc = keys), the GEMM with ldc padded,
topk_kernel; the points are CFGS x KEYS below (tests/gpu/bench_sel_align.c).

  ncu --csv --metrics gpu__time_duration.sum --log-file ncu_sel.csv .hwbin/bench_sel_align --ncu
  /usr/bin/python3 scripts/sel_align_ncu.py ncu_sel.csv

Exit 2, with one line naming the file (and line), on a log that cannot be read or is not of that form.
"""
import csv
import sys

CFGS = ("32/32", "28/4")
KEYS = (832, 833, 834, 836, 840, 848, 1264, 1280, 1281)


def die(msg):
    sys.stderr.write("sel_align_ncu: %s\n" % msg)
    sys.exit(2)


def kernels(path):
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        die("%s: no CSV header (a line starting with \"ID\")" % path)
    out = []
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = (row.get("Metric Unit") or "ns").strip()
        scale = {"ns": 1e-3, "nsecond": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}.get(unit)
        if scale is None:
            die("%s: unknown unit '%s' of gpu__time_duration.sum" % (path, unit))
        try:
            out.append((row["Kernel Name"] or "", float((row["Metric Value"] or "").replace(",", "")) * scale))
        except ValueError:
            die("%s: gpu__time_duration.sum value %r does not parse" % (path, row["Metric Value"]))
    if not out:
        die("%s: no gpu__time_duration.sum rows" % path)
    return out


def short(name):
    return name.split("(")[0][:64]


def main():
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if len(sys.argv) != 2:
        die("usage: sel_align_ncu.py NCU.csv")
    ks = [k for k in kernels(sys.argv[1]) if "fill" not in k[0]]
    segs, cur = [], []
    for k in ks:
        cur.append(k)
        if "topk_kernel" in k[0]:
            segs.append(cur)
            cur = []
    if len(segs) != len(CFGS) * len(KEYS):
        die("%d points (topk_kernel launches), want %d: not bench_sel_align --ncu's order" % (
            len(segs), len(CFGS) * len(KEYS)))
    print("per point (us, Nsight Compute gpu__time_duration): the score GEMM's kernels in dkv_bk_scores "
          "(ldc = keys), alone, with ldc padded to 8 floats; row statistics; column sums")
    for i, seg in enumerate(segs):
        cfg, keys = CFGS[i // len(KEYS)], KEYS[i % len(KEYS)]
        names = [n for n, _ in seg]
        try:
            rs, cs = names.index(next(n for n in names if "row_stats" in n)), \
                names.index(next(n for n in names if "col_sum" in n))
        except StopIteration:
            die("point %s:%d: no row_stats_kernel / col_sum_kernel" % (cfg, keys))
        # the GEMM alone is the same cuBLAS call as dkv_bk_scores' (as many kernels); the padded one the rest
        g_sc, rest = seg[:rs], seg[cs + 1:-1]
        g_al, g_pad = rest[:len(g_sc)], rest[len(g_sc):]
        if not g_sc or len(g_pad) == 0 or [short(n) for n, _ in g_al] != [short(n) for n, _ in g_sc]:
            die("point %s:%d: the GEMM alone does not repeat dkv_bk_scores' GEMM kernels (%s / %s)" % (
                cfg, keys, ", ".join(short(n) for n, _ in g_sc), ", ".join(short(n) for n, _ in rest)))
        print("%-5s %4d  scores-GEMM %7.2f  alone %7.2f  pad8 %7.2f  row_stats %6.2f  col_sum %6.2f" % (
            cfg, keys, sum(t for _, t in g_sc), sum(t for _, t in g_al), sum(t for _, t in g_pad), seg[rs][1],
            seg[cs][1]))
        print("      kernels: %s | pad8: %s" % (", ".join(sorted(set(short(n) for n, _ in g_al))),
                                               ", ".join(sorted(set(short(n) for n, _ in g_pad)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
