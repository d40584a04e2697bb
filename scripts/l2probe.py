#!/usr/bin/python3
"""l2probe.py - what the GPU's L2 keeps between kernels, from cuda/bench/l2probe.cu under Nsight Compute
(docs/COST_MODEL.md "What the L2 keeps between kernels").

    /usr/bin/python3 scripts/l2probe.py MANIFEST.txt NCU.csv [-o TABLE.md]
    /usr/bin/python3 scripts/l2probe.py standin MANIFEST.txt NCU.csv --cap MB [--assoc A]

MANIFEST.txt: l2probe's stdout (one "k <n> <role> <trial> <kind> <probe MB> <stream MB> <copies>" line per
launch, in launch order); NCU.csv: `ncu --csv --cache-control none` over the same run (dram__bytes_read.sum,
dram__bytes_write.sum per kernel).  Kernels are paired in launch order; a count or name mismatch is an error.

Prints (markdown):
  - survival: for a probe of D MB written (dirty) or read (clean), then a stream of S MB read by 1 or 2 CTAs
    per line, the fraction of the probe still in L2: dirty, the flush's DRAM writes / D (and the stream's
    own writes / D beside it); clean, 1 - the re-read's DRAM reads / D;
  - per curve, the L2 model that fits it best: one LRU of capacity C (assoc inf), or sets of A ways over which
    lines fall at random (a line survives while fewer than A of the stream's lines fell into its set:
    Poisson with mean A S / C), A in 1..64, C in 8..100 MB; the RMS error of the fit;
  - bound: D MB written, the write kernel's own DRAM writes (what the L2 would not keep dirty);
  - rows: D MB of x written, then a kernel reading x and writing y row by row: its DRAM writes;
  - inplace: D MB of x written, then a kernel rewriting x in place row by row (as the RoPE): its DRAM writes.

`standin` writes MANIFEST and NCU.csv from a model L2 (one LRU, or A ways) instead of a GPU, to test this
script (tests/e2e/test_hw_scripts.sh): the fit must recover the model it was made with.
"""
import csv
import math
import sys

import ncu_rows
import script_io

MB = 1e6
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
KERNEL_OF = {"flush": "read_kernel", "w": None, "r": "read_kernel", "h": "read_kernel", "t": "tiny_kernel",
             "rw": "rows_kernel", "ip": "inplace_kernel"}
STREAMS = [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 56, 64, 80, 100, 128]


def die(msg):
    sys.stderr.write("l2probe.py: %s\n" % msg)
    sys.exit(1)


def read_manifest(path):
    return ncu_rows.read_manifest(path, (("role", str), ("trial", int), ("kind", str), ("d", float), ("s", float), ("copies", int)), die, "l2probe")


def read_ncu(path):
    return ncu_rows.read_ncu(path, METRICS, die)


def pair(man, ncu, mpath, npath):
    kern = [k for k in ncu if ncu_rows.bare_name(k["name"]) in
            ("read_kernel", "write_kernel", "rows_kernel", "tiny_kernel", "inplace_kernel")]
    if len(kern) != len(man):
        die("%s has %d l2probe kernels, %s lists %d launches" % (npath, len(kern), mpath, len(man)))
    for m, k in zip(man, kern):
        want = KERNEL_OF[m["role"]] or ("read_kernel" if m["kind"] == "clean" else "write_kernel")
        name = ncu_rows.bare_name(k["name"])
        if name != want:
            die("%s:%d: launch %d is %s, ncu's row (%s:%d) is %s" % (mpath, m["line"], m["n"], want, npath,
                                                                       k["line"], name))
        m["rd"], m["wr"] = k[METRICS[0]] / MB, k[METRICS[1]] / MB
    return man


def survival_of(man):
    """{(kind, copies, D): {S: (survived fraction, the stream's writes / D)}}"""
    by = {}
    for m in man:
        by.setdefault(m["trial"], []).append(m)
    out = {}
    for t, ks in by.items():
        kinds = {k["kind"] for k in ks}
        kind = "dirty" if "dirty" in kinds else "clean" if "clean" in kinds else None
        if kind is None:
            continue
        w = next(k for k in ks if k["role"] == "w")
        d, s, c = w["d"], w["s"], ks[0]["copies"]   # the trial's first line carries the stream's copies
        r = next((k for k in ks if k["role"] == "r"), None)
        if kind == "dirty":
            h = next((k for k in ks if k["role"] == "flush" and k["kind"] == "dirty_h"), None)
            if h is None:
                continue
            surv, pushed = h["wr"] / d, (r["wr"] / d if r else 0.0)
        else:
            h = next((k for k in ks if k["role"] == "h"), None)
            if h is None:
                continue
            surv, pushed = 1 - h["rd"] / d, 0.0
        out.setdefault((kind, c, d), {})[s] = (surv, pushed)
    return out


def mean_min_gamma(a, L):
    """E[min(G, L)], G ~ Gamma(a, 1), a integer: L Q(a, L) + a (1 - Q(a + 1, L))"""
    if L <= 0:
        return 0.0
    t, q = math.exp(-L), 0.0
    for k in range(a):
        q += t
        t *= L / (k + 1)
    return L * q + a * (1 - q - t)


def model_survival(s, d, cap, assoc):
    """Fraction of a probe of d MB (its lines at stack distance s..s+d after a stream of s MB) resident."""
    if assoc is None:
        return max(0.0, min(s + d, cap) - min(s, cap)) / d
    k = assoc / cap
    return (mean_min_gamma(assoc, k * (s + d)) - mean_min_gamma(assoc, k * s)) / k / d


def fit(curve, d):
    best = None
    caps = [8 + 0.5 * i for i in range(185)]
    for assoc in (None, 1, 2, 4, 8, 16, 32, 64):
        for cap in caps:
            e = [model_survival(s, d, cap, assoc) - v[0] for s, v in curve.items()]
            rms = math.sqrt(sum(x * x for x in e) / len(e))
            if best is None or rms < best[0]:
                best = (rms, assoc, cap)
    return best


def report(man):
    L = []
    sv = survival_of(man)
    L.append("Criterion: none (a measurement).  Survival = the share of the probe's lines still in L2 after the stream "
             "(dirty: the flush's DRAM writes / D; clean: 1 - the re-read's DRAM reads / D).\n")
    keys = sorted(sv, key=lambda k: (k[0], k[1], k[2]))
    L.append("| stream MB | " + " | ".join("%s, %d CTA%s, %g MB" % (k[0], k[1], "s" if k[1] > 1 else "", k[2])
                                         for k in keys) + " |")
    L.append("|---|" + "---|" * len(keys))
    streams = sorted({s for k in keys for s in sv[k]})
    for s in streams:
        cells = []
        for k in keys:
            v = sv[k].get(s)
            if v is None:
                cells.append("")
            elif k[0] == "dirty":
                cells.append("%.3f (%.3f)" % v)
            else:
                cells.append("%.3f" % v[0])
        L.append("| %g | %s |" % (s, " | ".join(cells)))
    L.append("\n(dirty cells: survived (the stream's own DRAM writes / D).)\n")
    L.append("| curve | best model | C MB | RMS of survival |")
    L.append("|---|---|---|---|")
    for k in keys:
        rms, assoc, cap = fit(sv[k], k[2])
        L.append("| %s, %d CTA(s), %g MB | %s | %.1f | %.3f |" % (k[0], k[1], k[2], "one LRU" if assoc is None else
                                                              "%d ways" % assoc, cap, rms))
    for kind, title, cols in (("bound", "bound: write D MB, then a one-block kernel, then flush",
                               ("w", "t", "flush")),
                              ("rows", "rows: write D MB of x, read x and write y row by row, flush",
                               ("w", "rw", "flush")),
                              ("inplace", "inplace: write D MB of x, rewrite x in place row by row, flush",
                               ("w", "ip", "flush"))):
        tr = {}
        for m in man:
            if m["kind"] in (kind, kind + "_h") and not (m["kind"] == kind and m["role"] == "flush"):
                tr.setdefault(m["trial"], {})[m["role"]] = m
        if not tr:
            continue
        L.append("\n%s (DRAM writes, MB)\n" % title)
        L.append("| D MB | " + " | ".join("%s writes" % c for c in cols) + " |")
        L.append("|---|" + "---|" * len(cols))
        for t in sorted(tr):
            row = tr[t]
            L.append("| %g | %s |" % (row["w"]["d"], " | ".join("%.2f" % row[c]["wr"] if c in row else ""
                                                              for c in cols)))
    return "\n".join(L) + "\n"


def standin(mpath, npath, cap, assoc):
    """Manifest and ncu CSV of l2probe's trials (the loops of cuda/bench/l2probe.cu) from a model L2."""
    man, rows = [], []

    def launch(role, trial, kind, d, s, c, rd, wr):
        man.append("k %d %s %d %s %.3f %.3f %d" % (len(man), role, trial, kind, d, s, c))
        name = KERNEL_OF[role] or ("read_kernel" if kind == "clean" else "write_kernel")
        rows.append((name, rd * MB, wr * MB))

    trial = 0
    for kind in ("dirty", "clean"):
        for c in (1, 2):
            for d in (2, 8):
                for s in STREAMS:
                    surv = model_survival(s, d, cap, assoc)
                    launch("flush", trial, kind, d, s, c, 256, 0)
                    launch("w", trial, kind, d, s, c, d if kind == "clean" else 0, 0)
                    if s > 0:
                        launch("r", trial, kind, d, s, c, s, (1 - surv) * d if kind == "dirty" else 0)
                    if kind == "clean":
                        launch("h", trial, kind, d, s, c, (1 - surv) * d, 0)
                    else:
                        launch("flush", trial, "dirty_h", d, s, c, 256, surv * d)
                    trial += 1
    with open(mpath, "w") as f:
        f.write("# l2probe stand-in: model L2, C %g MB, %s\n" % (cap, "one LRU" if assoc is None else
                                                                  "%d ways" % assoc))
        f.write("\n".join(man) + "\n")
    with open(npath, "w") as f:
        f.write("==PROF== stand-in\n")
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        w.writerow(["ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"])
        for i, (name, rd, wr) in enumerate(rows):
            w.writerow([i, name + "(const uint4 *)", METRICS[0], "byte", "%.0f" % rd])
            w.writerow([i, name + "(const uint4 *)", METRICS[1], "byte", "%.0f" % wr])


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if len(argv) > 1 else 2
    if argv[1] == "standin":
        a = argv[2:]
        if len(a) < 4 or "--cap" not in a:
            die("usage: l2probe.py standin MANIFEST.txt NCU.csv --cap MB [--assoc A]")
        opts = dict(zip(a[2::2], a[3::2]))
        for k in a[2::2]:
            if k not in ("--cap", "--assoc"):
                die("standin: unknown option %s" % k)
        if len(a) % 2:
            die("standin: %s needs a value" % a[-1])
        try:
            cap, assoc = float(opts["--cap"]), int(opts["--assoc"]) if "--assoc" in opts else None
        except ValueError:
            die("standin: --cap takes MB, --assoc a whole number of ways")
        script_io.new_files("l2probe.py", a[:2])
        standin(a[0], a[1], cap, assoc)
        return 0
    a = argv[1:]
    out = None
    if "-o" in a:
        i = a.index("-o")
        if i + 1 >= len(a):
            die("-o needs a file")
        out = a[i + 1]
        del a[i:i + 2]
    script_io.unknown_options("l2probe.py", a)
    if len(a) != 2:
        die("usage: l2probe.py MANIFEST.txt NCU.csv [-o TABLE.md]")
    if out:
        script_io.out_dir(out, die)
    man = pair(read_manifest(a[0]), read_ncu(a[1]), a[0], a[1])
    text = report(man)
    sys.stdout.write(text)
    if out:
        try:
            script_io.write_text(out, text, inputs=a)
        except OSError as e:
            die("%s: cannot write: %s" % (out, e.strerror or e))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
