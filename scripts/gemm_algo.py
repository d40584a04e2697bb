#!/usr/bin/python3
"""gemm_algo.py - the kernel configuration cuBLASLt's heuristic picks for the backend's GEMM shapes, from
cuda/bench/gemm_algo.cu: its algorithm attributes beside the kernels Nsight Compute recorded
(docs/COST_MODEL.md "GEMM configurations from cuBLASLt").

    /usr/bin/python3 scripts/gemm_algo.py MANIFEST.txt NCU.csv
    /usr/bin/python3 scripts/gemm_algo.py wb WB.txt WB.csv
    /usr/bin/python3 scripts/gemm_algo.py walks WALKS.txt WALKS.csv[.gz]
    /usr/bin/python3 scripts/gemm_algo.py clock BASE.txt BASE.csv[.gz] FREE.txt FREE.csv[.gz]

MANIFEST.txt: gemm_algo's stdout ("g <model> <class> <T> <N> <K> <bias> algo <id> tile <id> splitk <n>
reduction <s> swizzle <n> custom <n> stages <id> inner <id> cluster <id> ws <bytes> waves <x>", one line per
shape, in launch order); NCU.csv: `ncu --csv --metrics launch__grid_size,...` over the same program (one
GEMM kernel per shape, then cuBLASLt's splitKreduce_kernel where it splits K; the memsets before are
skipped).  Prints one row per shape: the attributes, the kernel's tile from its name
(nvjet_sm90_<kind>_<weight rows>x<token rows>_...), its grid and CTAs, the output tiles
(ceil(N / weight rows) x ceil(T / token rows)), and the K splits those imply (CTAs / tiles, where the
kernel is a split-K one); then whether the attributes' split-K count matches the kernels'.  Exits 1 with
file:line on input it cannot pair.

wb: `gemm_algo wb` under `ncu --cache-control none` (dram__bytes_read.sum, dram__bytes_write.sum): per trial
("w <model> <class> <T> <N> <K> <splitk> <partial bytes> <output bytes>", each run twice) the kernels
between two flush_kernel rows are its GEMM's; prints the GEMM kernel's and the reduction's DRAM writes and
the second flush's (the dirty lines the GEMM left), in MB, beside the fp32 partials and the output the
replay assumes stay dirty.

clock: `gemm_algo clock` under `ncu --clock-control base` (BASE) and `--clock-control none` (FREE), metrics
gpu__time_duration.sum and sm__cycles_elapsed.avg.per_second (each launch's clock); per shape ("c <model>
<class> <T> <N> <K> <bias> <reps>", then reps launches of its GEMM kernel and, where it splits K, its
splitKreduce_kernel) the median time and clock at each, and the sensitivity s = ln(t_base / t_free) /
ln(f_free / f_base): 1 for a time that scales with the clock, 0 for one that does not (the simulator's clock
model, docs/COST_MODEL.md "The step's clock"); then the medians by rows.  Both runs must list the same
shapes."""
import csv
import math
import os
import re
import sys
from statistics import median

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402

FIELDS = ("algo", "tile", "splitk", "reduction", "swizzle", "custom", "stages", "inner", "cluster", "ws", "waves")


def die(msg):
    sys.stderr.write("gemm_algo.py: %s\n" % msg)
    sys.exit(1)


def read_manifest(path):
    out = []
    lines = script_io.read_text(path, die).splitlines()
    for i, l in enumerate(lines, 1):
        if not l.startswith("g "):
            continue
        f = l.split()
        if len(f) != 7 + 2 * len(FIELDS) or [f[7 + 2 * j] for j in range(len(FIELDS))] != list(FIELDS):
            die("%s:%d: expected 'g model class T N K bias' and %d named fields, got %r" % (path, i, len(FIELDS), l))
        try:
            d = {"model": f[1], "cls": f[2], "T": int(f[3]), "N": int(f[4]), "K": int(f[5]), "bias": int(f[6]),
                 "line": i}
            for j, k in enumerate(FIELDS):
                d[k] = float(f[8 + 2 * j]) if k == "waves" else int(f[8 + 2 * j])
        except ValueError:
            die("%s:%d: a number field does not parse: %r" % (path, i, l))
        out.append(d)
    if not out:
        die("%s: no 'g ...' lines (gemm_algo's stdout?)" % path)
    return out


UNITS = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9,
         "ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3,
         "hz": 1.0, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9, "cycle/second": 1.0}
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second")


def read_kernels(path):
    """Nsight Compute's rows, one dict per kernel launch in launch order: name, grid (a tuple), line (the CSV
    line of its first row) and any of METRICS it has (DRAM bytes; its time in seconds; its SM clock in Hz).
    A path ending in .gz is read through gzip."""
    text = script_io.read_text(path, die, packed=True).splitlines()
    start = next((i for i, l in enumerate(text) if l.startswith('"ID"')), None)
    if start is None:
        die("%s: no CSV header (\"ID\",...): not an ncu --csv log" % path)
    ks = {}
    for n, row in enumerate(csv.DictReader(text[start:]), start + 2):
        try:
            k = int(row["ID"])
            d = ks.setdefault(k, {"name": row["Kernel Name"], "line": n,
                                  "grid": tuple(int(x) for x in row["Grid Size"].strip("()").split(","))})
            if row["Metric Name"] in METRICS:
                d[row["Metric Name"]] = float(row["Metric Value"].replace(",", "")) * UNITS[row["Metric Unit"]]
        except (KeyError, ValueError, TypeError, AttributeError):
            die("%s:%d: a row without a kernel ID, grid size, metric or known unit" % (path, n))
    return [ks[k] for k in sorted(ks)]


def tile_of(name):
    m = re.search(r"nvjet_sm90_[a-z]+_(\d+)x(\d+)_", name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def pair(shapes, kernels, kpath):
    ks = [(k["name"], k["grid"], k["line"]) for k in kernels
          if "memset" not in k["name"].lower() and "fill" not in k["name"].lower()]
    i = 0
    for s in shapes:
        if i >= len(ks):
            die("%s: %d kernels for %d shapes: ran out at %s %s T=%d (manifest line %d)"
                % (kpath, len(ks), len(shapes), s["model"], s["cls"], s["T"], s["line"]))
        name, grid, line = ks[i]
        if "splitKreduce" in name:
            die("%s:%d: a split-K reduction where %s %s T=%d's GEMM should be" % (kpath, line, s["model"], s["cls"], s["T"]))
        s["kernel"], s["grid"], s["kline"] = name, grid, line
        i += 1
        s["reduce"] = None
        if i < len(ks) and "splitKreduce" in ks[i][0]:
            s["reduce"] = ks[i][1]
            i += 1
    if i != len(ks):
        die("%s: %d kernels left over after the %d shapes (first at line %d)" % (kpath, len(ks) - i, len(shapes), ks[i][2]))


def flush_groups(path, n):
    """The kernels of NCU CSV path between flush_kernel pairs (memsets skipped): n groups, each {"kernels": [...],
    "after": the closing flush}; dies naming file:line on a kernel outside a pair or a count other than n."""
    ks = [k for k in read_kernels(path) if "memset" not in k["name"].lower()]
    groups, cur = [], None
    for k in ks:
        if k["name"].startswith("flush_kernel"):
            if cur is not None:
                cur["after"] = k
                groups.append(cur)
                cur = None
            else:
                cur = {"kernels": []}
            continue
        if cur is None:
            die("%s:%d: kernel %s outside a flush pair" % (path, k["line"], k["name"][:40]))
        cur["kernels"].append(k)
    if len(groups) != n:
        die("%s: %d flush pairs for %d trials" % (path, len(groups), n))
    return groups


def trial_lines(path, letter, fields, parse, mode):
    """The trials of a gemm_algo stdout at path: parse(fields) of each line starting with LETTER, which must have
    as many fields as the space-separated FIELDS (its format, for the message); dies naming file:line on a line
    that does not parse, and on none at all (MODE names the gemm_algo run)."""
    trials = []
    lines = script_io.read_text(path, die).splitlines()
    for i, l in enumerate(lines, 1):
        if l.startswith(letter + " "):
            f = l.split()
            if len(f) != len(fields.split()) + 1:
                die("%s:%d: expected '%s %s', got %r" % (path, i, letter, fields, l))
            try:
                trials.append(parse(f))
            except ValueError:
                die("%s:%d: a number field does not parse: %r" % (path, i, l))
    if not trials:
        die("%s: no '%s ...' lines (gemm_algo %s's stdout?)" % (path, letter, mode))
    return trials


def walks(argv):
    trials = trial_lines(argv[0], "k", "output_bytes ratio", lambda f: (float(f[1]), int(f[2])), "walks")
    groups = flush_groups(argv[1], len(trials))
    C, D = 31.5e6, 21.0e6
    print("| output MB | read / output | walk reads MB | walk writes MB | left dirty MB (the flush's writes) |"
          " replay keeps dirty MB |")
    print("|---|---|---|---|---|---|")
    for (F, ratio), g in zip(trials, groups):
        w = [k for k in g["kernels"] if k["name"].startswith("walk_kernel")]
        if len(w) != 1:
            die("%s:%d: %d walk_kernel rows in a trial, not 1" % (argv[1], g["after"]["line"], len(w)))
        keep = min(F, D, C / (ratio + 1))   # C F / (ratio F + F), at most F and the dirty bound
        print("| %.1f | %d | %.1f | %.1f | %.1f | %.1f |" % (
            F / 1e6, ratio, w[0].get("dram__bytes_read.sum", 0) / 1e6, w[0].get("dram__bytes_write.sum", 0) / 1e6,
            g["after"].get("dram__bytes_write.sum", 0) / 1e6, keep / 1e6))
    return 0


def write_back(argv):
    trials = trial_lines(argv[0], "w", "model class T N K splitk partial_bytes output_bytes",
                         lambda f: (f[1], f[2], int(f[3]), int(f[6]), float(f[7]), float(f[8])), "wb")
    groups = flush_groups(argv[1], len(trials))
    print("| model | class | rows | splits | fp32 partials MB | output MB | GEMM kernel writes MB | reduction writes MB |"
          " left dirty MB (the flush's writes) | left dirty / (partials + output) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (model, cl, T, sk, part, out), g in zip(trials, groups):
        gem = [k for k in g["kernels"] if "splitKreduce" not in k["name"]]
        red = [k for k in g["kernels"] if "splitKreduce" in k["name"]]
        w = lambda ks_: sum(k.get("dram__bytes_write.sum", 0) for k in ks_) / 1e6
        left = g["after"].get("dram__bytes_write.sum", 0) / 1e6
        print("| %s | %s | %d | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
            model, cl, T, sk, part / 1e6, out / 1e6, w(gem), w(red), left, left / ((part + out) / 1e6)))
    return 0

def clock_run(txt, csvp):
    """[(model, class, T, [(seconds, Hz) per launch])] of one clock run: each shape's reps launches, a GEMM kernel
    and the splitKreduce_kernel after it where there is one (their times summed, the clock time-weighted)"""
    trials = trial_lines(txt, "c", "model class T N K bias reps", lambda f: (f[1], f[2], int(f[3]), int(f[7])), "clock")
    ks = [k for k in read_kernels(csvp) if "memset" not in k["name"].lower()]
    out, i = [], 0
    for model, cl, T, reps in trials:
        runs = []
        for _ in range(reps):
            if i >= len(ks):
                die("%s: %d kernels: ran out at %s %s T=%d" % (csvp, len(ks), model, cl, T))
            grp = [ks[i]]
            if "splitKreduce" in ks[i]["name"]:
                die("%s:%d: a split-K reduction where %s %s T=%d's GEMM should be" % (csvp, ks[i]["line"], model, cl, T))
            i += 1
            if i < len(ks) and "splitKreduce" in ks[i]["name"]:
                grp.append(ks[i])
                i += 1
            for k in grp:
                if "gpu__time_duration.sum" not in k or "sm__cycles_elapsed.avg.per_second" not in k:
                    die("%s:%d: a kernel without gpu__time_duration.sum and sm__cycles_elapsed.avg.per_second"
                        % (csvp, k["line"]))
            t = sum(k["gpu__time_duration.sum"] for k in grp)
            runs.append((t, sum(k["gpu__time_duration.sum"] * k["sm__cycles_elapsed.avg.per_second"] for k in grp) / t))
        out.append((model, cl, T, runs))
    if i != len(ks):
        die("%s: %d kernels left over after the %d shapes (first at line %d)" % (csvp, len(ks) - i, len(trials), ks[i]["line"]))
    return out


CLOCK_BINS = ((0, 256), (257, 1024), (1025, 2048), (2049, 4096), (4097, 1 << 30))


def clock(argv):
    base, free = clock_run(argv[0], argv[1]), clock_run(argv[2], argv[3])
    if [b[:3] for b in base] != [f[:3] for f in free]:
        die("%s and %s: the two runs list different shapes" % (argv[0], argv[2]))
    print("| model | class | rows | base us | base MHz | free us | free MHz | sensitivity |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for (model, cl, T, rb), (_, _, _, rf) in zip(base, free):
        tb, fb = median([r[0] for r in rb]), median([r[1] for r in rb])
        tf, ff = median([r[0] for r in rf]), median([r[1] for r in rf])
        sens = math.log(tb / tf) / math.log(ff / fb) if ff > fb * 1.01 else float("nan")
        rows.append((model, cl, T, sens))
        print("| %s | %s | %d | %.1f | %.0f | %.1f | %.0f | %+.2f |" % (model, cl, T, tb * 1e6, fb / 1e6, tf * 1e6,
                                                                      ff / 1e6, sens))
    print("\nmedian sensitivity by rows (all classes of both models; quartiles):")
    for lo, hi in CLOCK_BINS:
        v = sorted(s for _, _, T, s in rows if lo <= T <= hi and s == s)
        if v:
            q = lambda f: v[min(len(v) - 1, int(f * (len(v) - 1) + 0.5))]
            print("  rows %5d-%-5s %+.2f (%+.2f .. %+.2f) %d shapes" % (lo, hi if hi < 1 << 30 else "", median(v),
                                                                    q(0.25), q(0.75), len(v)))
    # the profile clock block's gemm_sens form (sim/sim_clock.c: 0 up to lo_rows, sens from hi_rows, log-linear
    # between) fitted to every shape by least squares: lo_rows and hi_rows among the measured row counts
    pts = [(T, s) for _, _, T, s in rows if s == s]
    grid = sorted({T for T, _ in pts})
    def form(T, lo, hi, sv):
        return 0.0 if T <= lo else sv if T >= hi else sv * math.log(T / lo) / math.log(hi / lo)
    best = min((sum((form(T, lo, hi, sv / 100) - x) ** 2 for T, x in pts), lo, hi, sv / 100)
               for lo in grid for hi in grid if hi > lo for sv in range(50, 101))
    print("\ngemm_sens fitted (least squares over the %d shapes): lo_rows = %d, hi_rows = %d, sens = %.2f "
          "(rms residual %.3f)" % (len(pts), best[1], best[2], best[3], math.sqrt(best[0] / len(pts))))
    return 0


def main(argv):
    if argv[:1] == ["wb"] and len(argv) == 3:
        return write_back(argv[1:])
    if argv[:1] == ["walks"] and len(argv) == 3:
        return walks(argv[1:])
    if argv[:1] == ["clock"] and len(argv) == 5:
        return clock(argv[1:])
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stdout if argv[:1] in (["-h"], ["--help"]) else sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    shapes = read_manifest(argv[0])
    pair(shapes, read_kernels(argv[1]), argv[1])
    print("| model | class | rows | N | K | algo | tile id | splitk | reduction | kernel tile (w x t) | grid | CTAs |"
          " output tiles | K splits (kernels) | reduce grid |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    agree = total = 0
    for s in shapes:
        t = tile_of(s["kernel"])
        ctas = math.prod(s["grid"])
        tiles = math.ceil(s["N"] / t[0]) * math.ceil(s["T"] / t[1]) if t else None
        split_k = "splitK" in s["kernel"] or s["reduce"] is not None
        ksplits = round(ctas / tiles) if (t and split_k) else 1
        s["ksplits"] = ksplits
        total += 1
        agree += (s["splitk"] if s["splitk"] > 0 else 1) == ksplits
        print("| %s | %s | %d | %d | %d | %d | %d | %d | %d | %s | %s | %d | %s | %d | %s |" % (
            s["model"], s["cls"], s["T"], s["N"], s["K"], s["algo"], s["tile"], s["splitk"], s["reduction"],
            "%dx%d" % t if t else s["kernel"][:40], "x".join(map(str, s["grid"])), ctas,
            tiles if tiles is not None else "-", ksplits, "x".join(map(str, s["reduce"])) if s["reduce"] else "-"))
    print("\nsplit-K count: the heuristic's attribute (0 or 1: none) equals the kernels' (CTAs / output tiles) "
          "for %d of %d shapes" % (agree, total))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
