#!/usr/bin/env python3
"""l2_lines_compare.py - the L2 probes' GPU figures beside two models' (scripts/l2_lines_probe.c's CSV: the line-level
model of core/cost/cost_l2_lines.c and the shipped per-buffer replay): per quantity, each model's mean |error| in MB
and in how many rows it is within 0.5 MB of the GPU (docs/COST_MODEL.md "A line-level L2").

    /usr/bin/python3 scripts/l2_lines_compare.py PROBES.csv [--rmw TABLES.md]... [--order TABLES.md]...
        [--gemm TABLES.md]... [--after TABLES.md]... [--gout TABLES.md]... [--rows]

--rmw: a scripts/l2drain_gemm.py table file of `l2drain rmw` (device call 123: datasets/hw/2026-12-04/call123/
l2drain_rmw_tables.md); --order: a scripts/l2drain.py table file of `l2drain order` (calls 117 and 118:
datasets/hw/2026-12-04/call11{7,8}/l2drain_tables.md), each a machine; --gemm: a scripts/l2drain_gemm.py table file of
`l2drain gemm` (calls 121 and 122: datasets/hw/2026-12-04/call12{1,2}/l2drain_gemm_tables.md; its plain rows are the
rmw set's plain kind again, compared as the gemm set's); --after: the same script's tables of `l2drain after` (since
session 44); --gout: of `l2drain gout` (since session 46); at least one of them.  --rows also prints every
row.  Then the three families of quantities (write-back: m_wr and w_wr; gone: a_gone and b_gone; dirty), then all.
Quantities: m_wr (the stream's write-back), a_gone and b_gone (a half's bytes the stream pushed out: the re-read's
HBM reads; an order kind's b_gone is the other half's, read first), dirty (still dirty at the flush: the GPU's also
holds 0.1-0.8 MB that is not the probe's), w_wr (one writer's write-back, the bound kinds).  Exit status: 0, 1 on a file
it cannot read or a GPU row the CSV lacks, 2 on a usage error.
"""
import csv
import os
import re
import sys

NAME = "l2_lines_compare"
FAMILY = {"m_wr": "write-back", "w_wr": "write-back", "a_gone": "gone", "b_gone": "gone", "dirty": "dirty"}


def die(msg, code=1):
    print(f"{NAME}: {msg}", file=sys.stderr)
    sys.exit(code)


def nums(cell):
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", cell)]


def sections(path):
    """{section name: [(header cells, [row cells])]} of a markdown file of '### name' sections and tables."""
    try:
        with open(path) as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        die(f"{path}: {e.strerror if isinstance(e, OSError) else 'not text'}")
    out, name, head = {}, None, None
    for line in text.splitlines():
        if line.startswith("### "):
            name, head = line[4:].split()[0], None
            out[name] = []
        elif name and line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if head is None:
                head = cells
            else:
                out[name].append((head, cells))
    return out


def col(head, cells, key):
    for h, c in zip(head, cells):
        if h.startswith(key):
            return c
    return None


def gpu_rmw(path, st="rmw"):
    rows = {}
    for kind, tab in sections(path).items():
        for head, c in tab:
            if kind in ("bwrite", "brmw", "bre"):
                x = nums(c[0])[0]
                rows[("rmw", kind, x, "w_wr")] = nums(col(head, c, "writer"))[1]
                rows[("rmw", kind, x, "dirty")] = nums(col(head, c, "still dirty"))[0]
            else:
                x = nums(c[0])[0]
                rows[(st, kind, x, "m_wr")] = nums(col(head, c, "stream"))[1]
                rows[(st, kind, x, "a_gone")] = nums(col(head, c, "A gone"))[0]
                rows[(st, kind, x, "b_gone")] = nums(col(head, c, "B gone"))[0]
                rows[(st, kind, x, "dirty")] = nums(col(head, c, "still dirty"))[0]
    if not rows:
        die(f"{path}: no l2drain {st} tables (### plain ...)")
    return rows


def gpu_order(path):
    rows = {}
    for kind, tab in sections(path).items():
        for head, c in tab:
            x = nums(c[1])[0]
            rows[("order", kind, x, "m_wr")] = nums(c[2])[0]
            rows[("order", kind, x, "a_gone")] = nums(c[3])[0]
            rows[("order", kind, x, "b_gone")] = nums(c[4])[0]
            rows[("order", kind, x, "dirty")] = nums(c[5])[0]
    if not rows:
        die(f"{path}: no l2drain order tables (### rehit ...)")
    return rows


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if argv else 2)
    probes, gpus, show = argv[0], [], False
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("--rmw", "--order", "--gemm", "--after", "--gout") and i + 1 < len(argv):
            gpus.append((a[2:], argv[i + 1]))
            i += 2
        elif a == "--rows":
            show, i = True, i + 1
        else:
            die(f"unknown argument '{a}' (--help)", 2)
    if not gpus:
        die("give at least one --rmw, --order, --gemm, --after or --gout table file (--help)", 2)
    model = {}
    try:
        with open(probes, newline="") as f:
            for r in csv.DictReader(f):
                model[(r["set"], r["kind"], float(r["x"]), r["qty"])] = (float(r["lines"]), float(r["replay"]))
    except (OSError, UnicodeDecodeError, KeyError, ValueError, TypeError) as e:
        die(f"{probes}: not an l2_lines_probe CSV ({e})")
    by = {}
    lines = []
    for what, path in gpus:
        for key, g in (gpu_order(path) if what == "order" else gpu_rmw(path, what)).items():
            if key not in model:
                die(f"{probes}: no row for {key[0]} {key[1]} x {key[2]:g} {key[3]} (the GPU's in {path})")
            ln, rp = model[key]
            grp = (key[0], key[3])
            s = by.setdefault(grp, [0, 0.0, 0.0, 0, 0])
            s[0] += 1
            s[1] += abs(ln - g)
            s[2] += abs(rp - g)
            s[3] += abs(ln - g) <= 0.5
            s[4] += abs(rp - g) <= 0.5
            lines.append(f"| {os.path.basename(os.path.dirname(os.path.abspath(path)))} | {key[1]} | {key[2]:g} | {key[3]} | {g:.3f} | {ln:.3f} | {rp:.3f} |")
    print("| set | quantity | rows | lines: mean abs error MB | replay: mean abs error MB | lines: within 0.5 MB | "
          "replay: within 0.5 MB |")
    print("|---|---|---|---|---|---|---|")
    tot = [0, 0.0, 0.0, 0, 0]
    for (st, q), s in sorted(by.items()):
        print(f"| {st} | {q} | {s[0]} | {s[1] / s[0]:.3f} | {s[2] / s[0]:.3f} | {s[3]} | {s[4]} |")
        tot = [a + b for a, b in zip(tot, s)]
    fam = {}
    for (st, q), s in by.items():
        f = FAMILY[q]
        fam[f] = [a + b for a, b in zip(fam.get(f, [0, 0.0, 0.0, 0, 0]), s)]
    for f in ("write-back", "gone", "dirty"):
        if f in fam:
            s = fam[f]
            print(f"| every set | {f} ({', '.join(q for q in FAMILY if FAMILY[q] == f)}) | {s[0]} | {s[1] / s[0]:.3f} | "
                  f"{s[2] / s[0]:.3f} | {s[3]} | {s[4]} |")
    print(f"| all | all | {tot[0]} | {tot[1] / tot[0]:.3f} | {tot[2] / tot[0]:.3f} | {tot[3]} | {tot[4]} |")
    if show:
        print("\n| call | kind | x | quantity | GPU MB | lines MB | replay MB |\n|---|---|---|---|---|---|---|")
        print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])
