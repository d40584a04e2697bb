#!/usr/bin/python3
"""l2drain_gemm.py - how much of a dirty probe a cuBLAS GEMM's weight stream pushes out of the L2, against a plain read
of the same bytes, from `cuda/bench/l2drain.cu gemm` under Nsight Compute (docs/COST_MODEL.md "The soft edge"); and
since session 40 the same of lines read and written in place, from `l2drain rmw`.

    /usr/bin/python3 scripts/l2drain_gemm.py MANIFEST.txt NCU.csv
    /usr/bin/python3 scripts/l2drain_gemm.py standin MANIFEST.txt NCU.csv [--gemm-kernels N | --rmw | --after | --gout |
        --pool | --stride]

MANIFEST.txt: l2drain's stdout (one "k <n> <role> <trial> <kind> <D MB> <x>" line per launch); NCU.csv: `ncu --csv
--cache-control none` over the same run (dram__bytes_read.sum, dram__bytes_write.sum, gpu__time_duration.sum per
kernel).  Every launch of l2drain's own kernels pairs with one Nsight Compute row of that kernel's name, in order;
a GEMM launch (role m of kinds gemm<M>, M rows, role g0) pairs with the one or more rows that follow it whose
names are not l2drain's (l2drain launches one of its own kernels after every GEMM) (cuBLAS's kernels, a split-K reduction among them).  A row left over, or a name that does not
match, is an error naming both files' lines.

`l2drain rmw`'s kinds (rmwstream, rmwprobe, rmwboth) launch rmw_kernel where plain launches write_kernel (A and B,
roles w and v: rmwprobe, rmwboth) or read_kernel (the stream, role m: rmwstream, rmwboth); wwprobe launches
write_kernel twice for each of A and B.  Since session 41 its bound kinds (bwrite, brmw, bre) write D MB = 8-64 once
(role w: write_kernel, or rmw_kernel for brmw and bre, whose role p writes the same lines plainly first) and flush
(h): a table per kind, a row per D, of what the writer read and wrote back and what was still dirty after it.
Prints one table per kind (plain, then gemm<M> by M: call 121 ran gemm64 and gemm288, later calls more M; then the
others by name), a row
per stream size x (MB of weights, or of the plain read): the stream's DRAM reads, writes and time (and its kernel
count), the MB of the probe's older half A and newer half B that its re-read finds gone (their DRAM reads), and what
the flush finds still dirty.  Under an L2 that treats the GEMM's weight lines as any read line, every gemm<M> gives
plain's losses at the same x (plus what the GEMM's own input and output take).

`standin` writes a MANIFEST and NCU.csv of the run's plan from an LRU L2 of 40 MB (the GEMM: N_GEMM kernels, default
2, the weights read in the first; with --rmw, `l2drain rmw`'s plan, every kind losing A and B as plain does, every
bound kind keeping 29.7 MB dirty; with --after, `l2drain after`'s plan, the weights leaving first), to test this script
(tests/e2e/test_l2probe.sh).
Since session 44, `l2drain after`'s kinds (after_plain, after_gemm64, after_gemm288) run the weights first (role g: a
read of 96 MB, or a GEMM of 64 or 288 rows over them), then A and B, then a plain read of y MB as the stream (role m):
their tables have plain's columns, x being y.
Since session 46, `l2drain gout`'s kinds (gout_plain, gout_gemm, gout_gemm512, gout_plainrmw, gout_gemmrmw) write A
plainly, then B (role v: write_kernel, or a cuBLAS GEMM's output), kinds ending in rmw turning B in place (role u:
rmw_kernel), then a plain read of y MB (role m): their tables have plain's columns, x being y, and B's writer's DRAM
read and write MB (with --gout the stand-in's plan, A leaving first under every kind).
Since session 47, `l2drain pool`'s kinds (pool_plain, pool_kv, pool_grid) write A and B plainly, then stream y MB: a
plain read (read_kernel), or the attention's read of LLaDA-8B's KV pool by CTA (pool_kv) or grid-stride (pool_grid),
both pool_kernel: plain's columns, x being y (with --pool the stand-in's plan, every kind losing A and B as plain).
`l2drain stride`'s kinds (stride16, stride64, stride256, stride512, stride1024) read y MB as 16 KB chunks S KB apart
(pool_kernel): the same columns (with --stride the stand-in's plan, every kind losing A and B as plain).
"""
import sys

import ncu_rows
import script_io

MB = 1e6
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum")
OWN = {"read_kernel", "write_kernel", "rmw_kernel", "pool_kernel"}
KINDS = ("plain", "gemm64", "gemm288", "gemm128")   # the stand-in's, not in M order; a run's own come from its manifest
RMW_KINDS = ("plain", "rmwstream", "rmwprobe", "rmwboth", "wwprobe")   # `l2drain rmw`'s (the stand-in's with --rmw)
BOUND_KINDS = ("bwrite", "brmw", "bre")   # `l2drain rmw`'s dirty bound behind one writer (since session 41)
BOUND_DS = (8, 16, 24, 32, 40, 48, 64)    # l2drain.cu run_rmw's bds
XS = (16, 24, 32, 40, 48, 64)   # l2drain.cu run_gemm's xs
AFTER_KINDS = ("after_plain", "after_gemm64", "after_gemm288")   # `l2drain after` (since session 44)
AFTER_YS = (8, 16, 24, 32, 40, 48)   # l2drain.cu run_after's ys
GOUT_KINDS = ("gout_plain", "gout_gemm", "gout_gemm512", "gout_plainrmw", "gout_gemmrmw")   # `l2drain gout` (session 46)
GOUT_YS = (16, 24, 28, 32, 36, 40, 48)   # l2drain.cu run_gout's ys
POOL_KINDS = ("pool_plain", "pool_kv", "pool_grid")   # `l2drain pool` (session 47)
POOL_YS = (8, 12, 16, 20, 24, 28, 32, 36, 40, 48)     # l2drain.cu run_pool's ys
STRIDE_KINDS = ("stride16", "stride64", "stride256", "stride512", "stride1024")   # `l2drain stride` (session 47)
STRIDE_YS = (16, 20, 24, 28, 32, 36, 40, 48)   # l2drain.cu run_stride's ys
PLANS = ("--rmw", "--after", "--gout", "--pool", "--stride")   # the stand-in's plan flags (default: `l2drain gemm`'s)


def die(msg):
    sys.stderr.write("l2drain_gemm.py: %s\n" % msg)
    sys.exit(1)


def is_gemm_kind(kind):
    """gemm<M>: a cuBLAS GEMM of M rows"""
    return kind.startswith("gemm") and kind[4:].isdigit()


def is_gemm(m):
    return (m["role"] == "g0" or (m["role"] == "m" and is_gemm_kind(m["kind"])) or
            (m["role"] == "g" and m["kind"].startswith("after_gemm")) or
            (m["role"] == "v" and m["kind"].startswith("gout_gemm")))


def want(m):
    """the l2drain kernel a non-GEMM launch runs"""
    if (m["role"] == "w" and m["kind"] in ("brmw", "bre")) or m["role"] == "u":   # u: gout's B turned in place
        return "rmw_kernel"
    if m["role"] in ("w", "v", "p"):   # p: bre's plain write before its read-modify-write
        return "rmw_kernel" if m["kind"] in ("rmwprobe", "rmwboth") else "write_kernel"
    if m["role"] == "m" and m["kind"] in ("rmwstream", "rmwboth"):
        return "rmw_kernel"
    if m["role"] == "m" and (m["kind"] in ("pool_kv", "pool_grid") or m["kind"].startswith("stride")):
        return "pool_kernel"
    return "read_kernel"


def pair(man, ncu, mpath, npath):
    """each launch gets rd, wr, t (sums over its kernels) and nk (its kernel count)"""
    i = 0
    for m in man:
        if i >= len(ncu):
            die("%s:%d: launch %d has no Nsight Compute row left in %s" % (mpath, m["line"], m["n"], npath))
        m.update(rd=0.0, wr=0.0, t=0.0, nk=0)
        if is_gemm(m):
            while i < len(ncu) and ncu[i]["name"] not in OWN:
                k = ncu[i]
                m["rd"] += k["dram__bytes_read.sum"]
                m["wr"] += k["dram__bytes_write.sum"]
                m["t"] += k["gpu__time_duration.sum"]
                m["nk"] += 1
                i += 1
            if m["nk"] == 0:
                die("%s:%d: GEMM launch %d, but %s's row %d is %s" % (mpath, m["line"], m["n"], npath, ncu[i]["line"],
                                                                     ncu[i]["name"]))
            continue
        k = ncu[i]
        if k["name"] != want(m):
            die("%s:%d: launch %d is %s, %s's row %d is %s" % (mpath, m["line"], m["n"], want(m), npath, k["line"],
                                                              k["name"]))
        m.update(rd=k["dram__bytes_read.sum"], wr=k["dram__bytes_write.sum"], t=k["gpu__time_duration.sum"], nk=1)
        i += 1
    if i != len(ncu):
        die("%s has %d kernels after %s's last launch (row %d: %s)" % (npath, len(ncu) - i, mpath, ncu[i]["line"],
                                                                      ncu[i]["name"]))


def report(man):
    trials = {}
    for m in man:
        if m["role"] != "g0":
            trials.setdefault((m["kind"], m["trial"]), {})[m["role"]] = m
    whole = ("m", "qa", "qb", "h")   # a trial's launches the table reads (the warm-ups' flushes are not trials)
    kinds = sorted({k for (k, _), r in trials.items() if all(w in r for w in whole)},
                   key=lambda k: (k != "plain", not is_gemm_kind(k), int(k[4:]) if is_gemm_kind(k) else 0, k))
    for kind in kinds:
        rows = sorted((r for (k, _), r in trials.items() if k == kind and all(w in r for w in whole)),
                      key=lambda r: r["m"]["x"])
        if not rows:
            continue
        gout = kind.startswith("gout_")   # B's writer's own DRAM traffic: a write-through would show B's 4 MB
        print("### %s\n" % kind)
        print("| x MB | %sstream: DRAM read MB, write MB, us (kernels) | A gone MB (older dirty half) | B gone MB (newer) "
              "| still dirty at the flush MB |" % ("B's writer: DRAM read MB, write MB (kernels) | " if gout else ""))
        print("|---|%s---|---|---|---|" % ("---|" if gout else ""))
        for r in rows:
            s, v = r["m"], r.get("v")
            first = ("%.3f, %.3f (%d) | " % (v["rd"] / MB, v["wr"] / MB, v["nk"]) if v else "- | ") if gout else ""
            print("| %g | %s%.3f, %.3f, %.1f (%d) | %.3f | %.3f | %.3f |"
                  % (s["x"], first, s["rd"] / MB, s["wr"] / MB, s["t"] * 1e6, s["nk"], r["qa"]["rd"] / MB,
                     r["qb"]["rd"] / MB, r["h"]["wr"] / MB))
        print()
    report_bound(trials)


def report_bound(trials):
    """the bound kinds' tables: what one writer of D MB wrote back while it ran and left dirty (the flush's writes)"""
    for kind in BOUND_KINDS:
        rows = sorted((r for (k, _), r in trials.items() if k == kind and "w" in r and "h" in r),
                      key=lambda r: r["w"]["d"])
        if not rows:
            continue
        print("### %s (the dirty bound behind one writer)\n" % kind)
        print("| D MB | %swriter: DRAM read MB, write MB, us | still dirty at the flush MB |"
              % ("first write: DRAM write MB | " if kind == "bre" else ""))
        print("|---|%s---|---|" % ("---|" if kind == "bre" else ""))
        for r in rows:
            w = r["w"]
            first = ("%.3f | " % (r["p"]["wr"] / MB) if "p" in r else "- | ") if kind == "bre" else ""
            print("| %g | %s%.3f, %.3f, %.1f | %.3f |" % (w["d"], first, w["rd"] / MB, w["wr"] / MB, w["t"] * 1e6,
                                                          r["h"]["wr"] / MB))
        print()


def standin(mpath, npath, gemm_kernels, plan=None):
    """the plan of run_gemm (plan None) or of the l2drain mode a PLANS flag names (--rmw: run_rmw, --after: run_after,
    --gout: run_gout, --pool: run_pool, --stride: run_stride) from an LRU of 40 MB of 1 MB lines: A (4 MB) and B (4 MB)
    dirty, then the stream"""
    man, rows, trial = [], [], 0

    def launch(role, kind, x, kernels, d=8):
        man.append("k %d %s %d %s %.3f %.3f" % (len(man), role, trial, kind, d, x))
        for name, rd, wr in kernels:
            rows.append((name, rd, wr))

    def stream_end(kind, x, stream=None):
        """a trial's end under an LRU of 40 MB: the stream of x MB after A and B (8 MB) pushes out max(0, 8 + x - 40)
        MB, A's first (role m: stream(bytes written back), the kernels, or a read), A and B re-read, the flush"""
        gone = max(0, 8 + x - 40)
        a, b = min(4, gone), max(0, min(4, gone - 4))
        launch("m", kind, x, stream((a + b) * MB) if stream else [("read_kernel", x * MB, (a + b) * MB)])
        launch("qa", kind, x, [("read_kernel", a * MB, 0.0)])
        launch("qb", kind, x, [("read_kernel", b * MB, 0.0)])
        launch("h", kind, x, [("read_kernel", 268 * MB, (8 - a - b) * MB)])

    if plan == "--after":   # run_after: the GEMMs' first use, then per kind and y: the weights (g), A, B, the stream of y MB
        gemm = [("gemm_main_kernel", 96 * MB, 0.1 * MB)] + [("splitKreduce_kernel", 0.1 * MB, 0.1 * MB)] * (gemm_kernels - 1)
        for kind in AFTER_KINDS[1:]:
            launch("g0", kind, 96, gemm)
            launch("flush", kind, 96, [("read_kernel", 268 * MB, 0.0)])
        for kind in AFTER_KINDS:
            for y in AFTER_YS:
                launch("flush", kind, y, [("read_kernel", 268 * MB, 0.0)])
                launch("g", kind, y, [("read_kernel", 96 * MB, 0.0)] if kind == "after_plain" else gemm)
                launch("w", kind, y, [("write_kernel", 0.0, 0.0)])
                launch("v", kind, y, [("write_kernel", 0.0, 0.0)])
                stream_end(kind, y)   # the weights go first, then A, then B
                trial += 1

    if plan == "--gout":   # run_gout: the GEMMs' first use, then per kind and y: A, B (written, or a GEMM's output), the stream
        def gemm(k):
            return [("gemm_main_kernel", (1.0 if k == "gout_gemm" else 8.2) * MB, 0.0)] + \
                [("splitKreduce_kernel", 0.0, 0.0)] * (gemm_kernels - 1)
        for kind in GOUT_KINDS[1:3]:
            launch("g0", kind, 16, gemm(kind))
            launch("flush", kind, 16, [("read_kernel", 268 * MB, 0.0)])
        for kind in GOUT_KINDS:
            for y in GOUT_YS:
                launch("flush", kind, y, [("read_kernel", 268 * MB, 0.0)])
                launch("w", kind, y, [("write_kernel", 0.0, 0.0)])
                launch("v", kind, y, gemm(kind.replace("rmw", "")) if kind.startswith("gout_gemm") else
                       [("write_kernel", 0.0, 0.0)])
                if kind.endswith("rmw"):
                    launch("u", kind, y, [("rmw_kernel", 0.0, 0.0)])
                stream_end(kind, y)   # A first, then B
                trial += 1

    for kind, ys in [(k, POOL_YS) for k in POOL_KINDS if plan == "--pool"] + \
            [(k, STRIDE_YS) for k in STRIDE_KINDS if plan == "--stride"]:
        for y in ys:   # run_pool, run_stride: per kind and y, A and B written, then the stream of y MB
            launch("flush", kind, y, [("read_kernel", 268 * MB, 0.0)])
            launch("w", kind, y, [("write_kernel", 0.0, 0.0)])
            launch("v", kind, y, [("write_kernel", 0.0, 0.0)])
            stream_end(kind, y, lambda wb: [(want({"role": "m", "kind": kind}), y * MB, wb)])   # A first, then B
            trial += 1

    for kind in () if plan else KINDS[1:]:
        launch("g0", kind, 16, [("gemm_main_kernel", 16 * MB, 0.1 * MB)] +
               [("splitKreduce_kernel", 0.1 * MB, 0.1 * MB)] * (gemm_kernels - 1))
        launch("flush", kind, 16, [("read_kernel", 268 * MB, 0.0)])
    cap = 40
    for kind in RMW_KINDS if plan == "--rmw" else () if plan else KINDS:
        for x in XS:
            launch("flush", kind, x, [("read_kernel", 268 * MB, 0.0)])
            probe_rd = 4 * MB if kind in ("rmwprobe", "rmwboth") else 0.0
            for role in ("w", "v"):   # wwprobe writes each half twice
                for _ in range(2 if kind == "wwprobe" else 1):
                    launch(role, kind, x, [(want({"role": role, "kind": kind}), probe_rd, 0.0)])
            if not is_gemm_kind(kind):
                stream_end(kind, x, lambda wb: [(want({"role": "m", "kind": kind}), x * MB, wb)])
            else:
                stream_end(kind, x, lambda wb: [("gemm_main_kernel", x * MB, wb)] +
                           [("splitKreduce_kernel", 0.1 * MB, 0.0)] * (gemm_kernels - 1))
            trial += 1
    bound = 29.7   # with --rmw, the bound kinds: every writer keeps at most 29.7 MB dirty (call 102's), the rest written back
    for kind in BOUND_KINDS if plan == "--rmw" else ():
        for d in BOUND_DS:
            launch("flush", kind, 0, [("read_kernel", 268 * MB, 0.0)], d)
            if kind == "bre":
                launch("p", kind, 0, [("write_kernel", 0.0, max(0, d - bound) * MB)], d)
            launch("w", kind, 0, [("write_kernel" if kind == "bwrite" else "rmw_kernel",
                                   0.0 if kind == "bwrite" else max(0, d - cap if kind == "bre" else d) * MB,
                                   max(0, d - bound) * MB)], d)
            launch("h", kind, 0, [("read_kernel", 268 * MB, min(d, bound) * MB)], d)
            trial += 1
    launch("flush", "end", 0, [("read_kernel", 268 * MB, 0.0)])
    with open(mpath, "w") as f:
        f.write("# l2drain: stand-in (scripts/l2drain_gemm.py standin)\n" + "\n".join(man) + "\n")
    with open(npath, "w") as f:
        f.write('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n')
        for i, (name, rd, wr) in enumerate(rows):
            for metric, v, unit in (("dram__bytes_read.sum", rd, "byte"), ("dram__bytes_write.sum", wr, "byte"),
                                    ("gpu__time_duration.sum", 3000, "nsecond")):
                f.write('"%d","void %s(int)","%s","%s","%.1f"\n' % (i, name, metric, unit, v))


def main(argv):
    if argv[:1] == ["standin"]:
        flags = [f for f in PLANS if f in argv[3:]]   # (ncu_rows.cli's options take a value)
        if len(flags) > 1:
            die("%s: one plan at a time" % " and ".join(flags))
        (_, mpath, npath), opts = ncu_rows.cli([a for a in argv if a not in PLANS], __doc__, 3,
                                               ("--gemm-kernels",), die)
        try:
            n = int(opts.get("--gemm-kernels", "2"))
        except ValueError:
            die("--gemm-kernels %r: not a whole number" % opts["--gemm-kernels"])
        if n < 1:
            die("--gemm-kernels %d: at least 1" % n)
        script_io.new_files("l2drain_gemm.py", (mpath, npath))
        standin(mpath, npath, n, flags[0] if flags else None)
        return
    (mpath, npath), _ = ncu_rows.cli(argv, __doc__, 2, (), die)
    man = ncu_rows.read_manifest(mpath, (("role", str), ("trial", int), ("kind", str), ("d", float), ("x", float)),
                                 die, "l2drain")
    ncu = ncu_rows.read_ncu(npath, METRICS, die)
    for r in ncu:   # the bare name: "void read_kernel(const uint4 *, ...)" -> read_kernel
        r["name"] = ncu_rows.bare_name(r["name"])
    pair(man, ncu, mpath, npath)
    report(man)


if __name__ == "__main__":
    main(sys.argv[1:])
