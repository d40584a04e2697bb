#!/usr/bin/python3
"""gemm_reads.py - a profile's gemm_reads block (docs/PROFILE_FORMAT.md "gemm_reads"; docs/COST_MODEL.md
"Large-M GEMM reads, measured") from cuda/bench/gemm_algo's reads mode under Nsight Compute.

    /usr/bin/python3 scripts/gemm_reads.py DIR                                   # the table
    /usr/bin/python3 scripts/gemm_reads.py DIR --block                           # the block alone
    /usr/bin/python3 scripts/gemm_reads.py DIR --profile IN.lua --name NAME -o OUT.lua
    /usr/bin/python3 scripts/gemm_reads.py pre PRE.txt PRE.csv[.gz]              # preparations of the input
    /usr/bin/python3 scripts/gemm_reads.py check DIR MODEL REAL.h5 [REAL.h5 ...]  # alone against the forward
    /usr/bin/python3 scripts/gemm_reads.py left DIR [--block | --profile IN.lua --name NAME -o OUT.lua]
    /usr/bin/python3 scripts/gemm_reads.py store DIR [--block | --profile IN.lua --name NAME -o OUT.lua]

DIR holds reads_C.txt (`gemm_algo reads C`'s stdout: "r <model> <class> <T> <N> <K> <bias> <beta> <splitk>
<tile id> <input bytes> <weight bytes> <output bytes>" before each trial, T = 8, 16, ..., 8,192) and
reads_C.csv[.gz] (in DIR, or packed in DIR/reads.tgz; `ncu --csv --clock-control base --cache-control none
--kernel-name regex:"nvjet|splitKreduce" --metrics
dram__bytes_read.sum,dram__bytes_write.sum` over the same program) for C = 0..7.  Each trial is one nvjet
kernel, then cuBLASLt's splitKreduce_kernel where it splits K; a trial's HBM reads are its kernels' sum.
A class whose run was cut keeps the trials that completed; a class missing is left out.

The table: per class, at a few row counts, the measured reads over the weight bytes and the tile id.
--block prints the profile block: per GEMM shape, its row counts and measured read bytes (rounded to 4 KB).
With --profile, OUT.lua is IN.lua with its name line set to NAME, the block added before its last closing
brace and a provenance line on top; an IN.lua that already has a gemm_reads block is refused.  Exits 1
naming file:line on a line it cannot read, kernels that do not pair with trials, or row counts out of order.

pre: `gemm_algo pre` under the same ncu command ("p <model> <class> <T> <prep> <rep> <splitk> <tile id>"
before each trial): per shape, the HBM reads of each trial by the preparation of its input rows (0 written
alone, as the block's measurements; 1 by a walk reading twice their bytes, as the SwiGLU; 2 reading three
times, as the attention), three trials each.

left: the same from `gemm_algo left C STEP` (left_C.txt, "l ..." lines as above, T = STEP, 2 STEP, ...;
left_C.csv[.gz], or DIR/left.tgz; kernel regex "nvjet|splitKreduce|readout_kernel"): each trial is the GEMM's
kernels, then readout_kernel; what the GEMM left of its output in L2 is the output bytes less readout_kernel's
HBM reads (at least 0).  The table, the profile's gemm_left block (docs/PROFILE_FORMAT.md "gemm_left"), or
IN.lua with the block added.

store: from `gemm_algo store C STEP` (store_C.txt, "t ..." lines, C a q|k|v class, T = STEP, ... 4,096;
store_C.csv[.gz], or DIR/store.tgz; kernel regex "nvjet|splitKreduce|store_walk_kernel"): each trial is the q|k|v
GEMM's kernels, then store_walk_kernel, the fused RoPE-store's memory walk; what the store finds of the GEMM's output
in L2 is the output less the walk's HBM reads (at least 0).  The table, the profile's gemm_store block
(docs/PROFILE_FORMAT.md "gemm_store"; docs/COST_MODEL.md "The walk after a GEMM"), or IN.lua with the block added.

check: per Refresh step of each val:<point>:real run in REAL.h5 (runs with Nsight Compute's kernels imported,
as scripts/ncu_gemm_reads.py reads them) of MODEL (llada-8b, dream-7b), each GEMM's reads in the forward (the
median over the layers of its cuBLAS kernel's dram__bytes_read.sum: q|k|v, O, then the FFN's gate|up and down
in turn) beside DIR's measurement alone at the step's warm-up bucket, and how many agree within 5 %."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_algo  # noqa: E402  (read_kernels: Nsight Compute's CSV)
import profile_graft  # noqa: E402

SHOW = (288, 1024, 1440, 1664, 1728, 2112, 3072, 4096, 8192)


def die(msg):
    sys.stderr.write("gemm_reads.py: %s\n" % msg)
    sys.exit(1)


def trials(path, letter="r"):
    out = []
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    for i, l in enumerate(lines, 1):
        if not l.startswith(letter + " "):
            continue
        f = l.split()
        if len(f) != 13:
            die("%s:%d: expected '%s model class T N K bias beta splitk tile in_bytes w_bytes out_bytes', got %r" % (
                path, i, letter, l))
        try:
            d = {"model": f[1], "class": f[2], "T": int(f[3]), "N": int(f[4]), "K": int(f[5]), "bias": int(f[6]),
                 "beta": int(f[7]), "splitk": int(f[8]), "tile": int(f[9]), "in": float(f[10]), "w": float(f[11]),
                 "out": float(f[12]), "line": i}
        except ValueError:
            die("%s:%d: a number field does not parse: %r" % (path, i, l))
        if out and (d["T"] <= out[-1]["T"] or (d["N"], d["K"]) != (out[-1]["N"], out[-1]["K"])):
            die("%s:%d: row count %d after %d, or another shape, in one class's run" % (path, i, d["T"], out[-1]["T"]))
        if not out and (d["T"] != 8 if letter == "r" else d["T"] % 8 != 0):
            die("%s:%d: the first row count is %d, not %s" % (path, i, d["T"], "8" if letter == "r" else "a multiple of 8"))
        out.append(d)
    return out


def take_gemm(ks, i):
    """One trial's kernels from ks[i] on: its cuBLAS GEMM (nvjet) and any splitKreduce_kernel after it, and the
    index after them; (None, i) when ks[i] is not a GEMM (or there is none)."""
    if i >= len(ks) or not ks[i]["name"].startswith("nvjet"):
        return None, i
    j = i + 1
    while j < len(ks) and "splitKreduce" in ks[j]["name"]:
        j += 1
    return ks[i:j], j


def measure(d, kind="reads"):
    """Every class of DIR: its trials with 'rd' and 'wr' (HBM bytes of its kernels), those ncu completed, and for
    kind "left" 'ro' (the readout kernel's HBM reads; for "store", the store walk's).  A class's files (KIND_C.txt, KIND_C.csv[.gz]) are read
    from DIR, else from DIR/KIND.tgz (the packed output of a run)."""
    import tarfile
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        tgz = os.path.join(d, kind + ".tgz")
        if os.path.exists(tgz):
            try:
                with tarfile.open(tgz) as t:
                    for m in t.getmembers():
                        if m.isfile() and re.fullmatch(kind + r"_\d\.(txt|csv|csv\.gz|err)", m.name):
                            t.extract(m, tmp)
            except (OSError, tarfile.TarError) as e:
                die("%s: %s" % (tgz, e))
        return measure_dirs(d, tmp, kind)


def measure_dirs(d, packed, kind):
    classes = []
    for c in range(8):
        tp = os.path.join(d, "%s_%d.txt" % (kind, c))
        if not os.path.exists(tp):
            tp = os.path.join(packed, "%s_%d.txt" % (kind, c))
        cp = next((p for p in (tp[:-4] + ".csv.gz", tp[:-4] + ".csv") if os.path.exists(p)), None)
        if not os.path.exists(tp) or cp is None:
            continue
        ts, ks = trials(tp, {"left": "l", "store": "t"}.get(kind, "r")), gemm_algo.read_kernels(cp)
        after = {"left": "readout_kernel", "store": "store_walk_kernel"}.get(kind)
        i = 0
        for t in ts:
            if i >= len(ks):
                break
            group, i = take_gemm(ks, i)
            if group is None:
                die("%s:%d: kernel %s where trial %s %s T=%d's GEMM (nvjet) should be" % (
                    cp, ks[i]["line"], ks[i]["name"][:40], t["model"], t["class"], t["T"]))
            if any("dram__bytes_read.sum" not in k for k in group):
                die("%s:%d: a kernel without dram__bytes_read.sum" % (cp, group[0]["line"]))
            t["rd"] = sum(k["dram__bytes_read.sum"] for k in group)
            t["wr"] = sum(k.get("dram__bytes_write.sum", 0) for k in group)
            t["kernel"] = group[0]["name"]
            if after:
                if i >= len(ks):
                    del t["rd"]   # cut before its readout: not a trial
                    break
                if not ks[i]["name"].startswith(after) or "dram__bytes_read.sum" not in ks[i]:
                    die("%s:%d: kernel %s where trial %s %s T=%d's %s should be" % (
                        cp, ks[i]["line"], ks[i]["name"][:40], t["model"], t["class"], t["T"], after))
                t["ro"] = ks[i]["dram__bytes_read.sum"]
                i += 1
        if i != len(ks):
            die("%s: %d kernels left over after %d trials (first at line %d)" % (cp, len(ks) - i, len(ts), ks[i]["line"]))
        done = [t for t in ts if "rd" in t]
        if done:
            classes.append(done)
    if not classes:
        die("%s: no %s_C.txt with its %s_C.csv[.gz] (gemm_algo %s under ncu)" % (d, kind, kind, kind))
    return classes


def pre(argv):
    if len(argv) != 2:
        die("pre needs PRE.txt and PRE.csv[.gz] (see --help)")
    ts = []
    try:
        lines = open(argv[0]).read().splitlines()
    except OSError as e:
        die("%s: %s" % (argv[0], e.strerror))
    for i, l in enumerate(lines, 1):
        if not l.startswith("p "):
            continue
        f = l.split()
        if len(f) != 8:
            die("%s:%d: expected 'p model class T prep rep splitk tile', got %r" % (argv[0], i, l))
        try:
            ts.append({"model": f[1], "class": f[2], "T": int(f[3]), "prep": int(f[4]), "rep": int(f[5]), "line": i})
        except ValueError:
            die("%s:%d: a number field does not parse: %r" % (argv[0], i, l))
    if not ts:
        die("%s: no 'p ...' lines (gemm_algo pre's stdout?)" % argv[0])
    ks, i = gemm_algo.read_kernels(argv[1]), 0
    for t in ts:
        group, i = take_gemm(ks, i)
        if group is None:
            die("%s: no GEMM kernel (nvjet) for trial %s %s T=%d (%s:%d)" % (argv[1], t["model"], t["class"], t["T"],
                                                                            argv[0], t["line"]))
        t["rd"] = sum(k.get("dram__bytes_read.sum", 0) for k in group)
    if i != len(ks):
        die("%s: %d kernels left over after %d trials" % (argv[1], len(ks) - i, len(ts)))
    shapes = {}
    for t in ts:
        shapes.setdefault((t["model"], t["class"], t["T"]), {}).setdefault(t["prep"], []).append(t["rd"] / 1e6)
    print("| model | class | rows | input written alone, MB | by a 2x read walk (SwiGLU), MB | by a 3x read walk, MB |")
    print("|---|---|---|---|---|---|")
    for (m, c, T), by in shapes.items():
        print("| %s | %s | %d | %s |" % (m, c, T, " | ".join(" / ".join("%.1f" % x for x in by.get(p, [])) or "-"
                                                            for p in range(3))))
    return 0


def check(argv):
    if len(argv) < 3 or argv[1] not in ("llada-8b", "dream-7b"):
        die("check needs DIR, MODEL (llada-8b or dream-7b) and REAL.h5 (see --help)")
    import statistics
    import h5py
    import ncu_gemm_reads
    alone = {(t["class"], t["T"]): t["rd"] for ts in measure(argv[0].rstrip("/")) if ts[0]["model"] == argv[1] for t in ts}
    print("| point | step | rows | GEMM | alone MB | forward MB (median of layers) | forward / alone |")
    print("|---|---|---|---|---|---|---|")
    n = ok = 0
    for path in argv[2:]:
        try:
            R = h5py.File(path, "r")["runs"]
        except OSError as e:
            die("%s: %s" % (path, e))
        for k in sorted(R):
            if not k.endswith(":real") or "ncu_kernels" not in R[k]:
                continue
            st, nk = R[k]["steps"][()], R[k]["ncu_kernels"][()]
            names = [x.decode() for x in nk["name"]]
            steps, kind = ncu_gemm_reads.refresh_steps(R[k], "%s: %s" % (path, k), die)
            for j, lo, hi in steps:
                T = int(st["q_tokens"][j])
                b = -(-T // 8) * 8
                seq = range(lo, hi)
                g = {c: [nk["read_bytes"][i] for i in seq if names[i].startswith("nvjet") and nk["kind"][i] == kind[c]]
                     for c in ("qkv", "o_proj", "ffn")}
                per = {"qkv": g["qkv"], "o": g["o_proj"], "gate_up": g["ffn"][0::2], "down": g["ffn"][1::2]}
                for c in ("qkv", "o", "gate_up", "down"):
                    if not per[c] or (c, b) not in alone:
                        continue
                    f, a = statistics.median(per[c]), alone[(c, b)]
                    n += 1
                    ok += abs(f / a - 1) <= 0.05
                    print("| %s | %d | %d | %s | %.1f | %.1f | %.3f |" % (k[:-5], j, T, c, a / 1e6, f / 1e6, f / a))
    if n == 0:
        die("no Refresh step GEMM with a measurement alone in %s" % " ".join(argv[2:]))
    print("\n%d of %d within 5 %%" % (ok, n))
    return 0


def shape_block(classes, key, value, comment, bytes_of):
    """A profile block of GEMM shapes by row count: `key = {{model, class, n, k, beta, rows, VALUE}, ...},` after
    the comment lines, each value bytes_of(trial) rounded to 4 KB."""
    out = ["  -- " + c for c in comment] + ["  %s = {" % key]
    for ts in classes:
        t0 = ts[0]
        out.append('    {model = "%s", class = "%s", n = %d, k = %d, beta = %d,' % (t0["model"], t0["class"], t0["N"],
                                                                                 t0["K"], t0["beta"]))
        out.append("      rows = {%s}," % ", ".join(str(t["T"]) for t in ts))
        out.append("      %s = {%s}}," % (value, ", ".join("%d" % (round(bytes_of(t) / 4096) * 4096) for t in ts)))
    out.append("  },")
    return "\n".join(out) + "\n"


def block(classes, src):
    return shape_block(classes, "gemm_reads", "read", [
        "each GEMM shape's HBM reads at every warm-up row count as the forward meets it, measured alone",
        "(cuda/bench/gemm_algo.cu reads under Nsight Compute, %s): L2 flushed, the input just written," % src,
        "the residual cold; `read` in bytes; docs/COST_MODEL.md \"Large-M GEMM reads, measured\""], lambda t: t["rd"])


def left_bytes(t):
    """What trial t's GEMM left of its output in L2: the output less the readout's HBM reads, at least 0."""
    return max(0.0, t["out"] - t["ro"])


def block_left(classes, src):
    return shape_block(classes, "gemm_left", "left", [
        "what each GEMM shape leaves of its output in L2 for the row walk after it, measured alone every 16",
        "rows (cuda/bench/gemm_algo.cu left under Nsight Compute, %s): its output less the HBM reads of" % src,
        "one read of it in row order; `left` in bytes; docs/COST_MODEL.md \"What a GEMM leaves of its output\""],
        left_bytes)


def table_left(classes):
    print("| model | class | rows | output MB | left in L2 MB | left / output |")
    print("|---|---|---|---|---|---|")
    for ts in classes:
        for t in ts:
            if t["T"] in SHOW:
                print("| %s | %s | %d | %.1f | %.1f | %.3f |" % (t["model"], t["class"], t["T"], t["out"] / 1e6,
                                                              left_bytes(t) / 1e6, left_bytes(t) / t["out"]))
    print("\n%d classes, %d trials (row counts %d to %d)" % (len(classes), sum(len(ts) for ts in classes),
                                                            min(ts[0]["T"] for ts in classes),
                                                            max(ts[-1]["T"] for ts in classes)))


def block_store(classes, src):
    return shape_block(classes, "gemm_store", "found", [
        "what the fused RoPE-store's row walk finds in L2 of the q|k|v GEMM's output right before it, measured alone",
        "(cuda/bench/gemm_algo.cu store under Nsight Compute, %s): the output less the HBM reads of the" % src,
        "store's walk; `found` in bytes; docs/COST_MODEL.md \"The walk after a GEMM\""], left_bytes)


def table_store(classes):
    print("| model | rows | q\\|k\\|v output MB | the store finds MB | finds / output |")
    print("|---|---|---|---|---|")
    for ts in classes:
        for t in ts:
            print("| %s | %d | %.1f | %.1f | %.3f |" % (t["model"], t["T"], t["out"] / 1e6, left_bytes(t) / 1e6,
                                                      left_bytes(t) / t["out"]))
    print("\n%d classes, %d trials" % (len(classes), sum(len(ts) for ts in classes)))


def table(classes):
    print("| model | class | rows | tile id | kernel tile | measured reads MB | weights MB | reads / weights |"
          " writes MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for ts in classes:
        for t in ts:
            if t["T"] in SHOW:
                m = re.search(r"nvjet_sm90_[a-z]+_(\d+x\d+)_", t["kernel"])
                print("| %s | %s | %d | %d | %s | %.1f | %.1f | %.3f | %.1f |" % (
                    t["model"], t["class"], t["T"], t["tile"], m.group(1) if m else "-", t["rd"] / 1e6, t["w"] / 1e6,
                    t["rd"] / t["w"], t["wr"] / 1e6))
    print("\n%d classes, %d trials (row counts 8 to %d)" % (len(classes), sum(len(ts) for ts in classes),
                                                          max(ts[-1]["T"] for ts in classes)))


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "pre":
        return pre(argv[1:])
    if argv[0] == "check":
        return check(argv[1:])
    kind = "reads"
    if argv[0] in ("left", "store"):
        kind, argv = argv[0], argv[1:]
        if not argv:
            die("%s needs DIR (see --help)" % kind)
    src, rest = argv[0].rstrip("/"), argv[1:]
    opts = {}
    while rest:
        if rest[0] == "--block":
            opts["--block"] = True
            rest = rest[1:]
            continue
        if rest[0] not in ("--profile", "--name", "-o") or len(rest) < 2:
            die("unknown or incomplete option %r (see --help)" % rest[0])
        opts[rest[0]] = rest[1]
        rest = rest[2:]
    classes = measure(src, kind)
    blk, tab, key = {"left": (block_left, table_left, "gemm_left"), "store": (block_store, table_store, "gemm_store"),
                     "reads": (block, table, "gemm_reads")}[kind]
    if "--profile" not in opts:
        if opts.get("--block"):
            sys.stdout.write(blk(classes, src))
        else:
            tab(classes)
        return 0
    if set(opts) != {"--profile", "--name", "-o"}:
        die("--profile, --name and -o go together")
    profile_graft.graft(die, key, blk(classes, src), ("" if kind == "reads" else kind + " ") + src, "gemm_reads.py",
                        opts["--profile"], opts["--name"], opts["-o"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
