#!/usr/bin/python3
"""l2drain.py - when the GPU's L2 writes dirty lines back, from cuda/bench/l2drain.cu under Nsight Compute
(docs/COST_MODEL.md "When the L2 writes back").

    /usr/bin/python3 scripts/l2drain.py MANIFEST.txt NCU.csv
    /usr/bin/python3 scripts/l2drain.py standin MANIFEST.txt NCU.csv --rate MB_PER_US [--idle]
    /usr/bin/python3 scripts/l2drain.py standin MANIFEST.txt NCU.csv --share --clean FRACTION
    /usr/bin/python3 scripts/l2drain.py standin MANIFEST.txt NCU.csv --order --lru MB

MANIFEST.txt: l2drain's stdout (one "k <n> <role> <trial> <kind> <D MB> <x>" line per launch, in launch order);
NCU.csv: `ncu --csv --cache-control none` over the same run (dram__bytes_read.sum, dram__bytes_write.sum,
gpu__time_duration.sum per kernel).  Kernels are paired in launch order; a count or name mismatch is an error.

Prints one table per kind, a row per trial: the probe's D MB written dirty (role w: its own DRAM writes and
duration), the middle kernel (role m: spin / spin1 x microseconds, read x MB; none: the host idled x ms) with its
DRAM writes and duration, and the flush after (role h: the probe's lines still dirty).  A drain in time shows as the
middle kernel's writes growing with its duration at no traffic (spin); a drain by traffic as the read's growing
with x; a drain while idle as the flush's writes falling with the host's idle (none).  Kind slow: the probe written
by a kernel x microseconds long (its writes first, then a spin): its own writes against its length.  Kinds
sread<S> (the middle kernel reads x MB as 1 KB chunks S KB apart; sread1 is contiguous) and swrite<S> (the probe
itself written as D MB of 1 KB chunks S KB apart): whether the KV pool's strided addressing pushes dirty lines out
of an L2 far from full (set conflicts), where contiguous traffic does not.  Kind behind<L>: L MB written dirty
and read back (roles b and r, the LM head's logits and argmax), then the D MB probe and a 2 MB read: whether the L2
is left at its dirty bound, so that a small writer writes back about what it writes (behind0: no logits).
Kinds of `l2drain share` (since session 32): xread<B> (the probe read by the grid, each CTA reading what CTA b + B
wrote; xread0 its own lines), xreadall (every CTA reads all of it) and xwrite<B> (rewritten so), each followed by a
re-read as written (role q: its DRAM reads are the probe's lines no longer in L2): whether an SM's read or rewrite of
lines another SM left dirty writes them back.
Kinds of `l2drain order` (since session 36): rehit (half A of the probe written dirty, read again, then half B
written dirty), rehit0 (no re-read), dclean (A written dirty, then C read clean), chit (since session 37: A read
clean, read again, then B written dirty), a stream of x MB read once (role m), then each half re-read (qa, qb or qc;
kinds ending in r re-read the other half first): the re-reads' DRAM reads are what the stream pushed out of each half,
so the table says which half the L2 gave up first (an LRU: A in all four; an L2 keeping re-referenced lines: B under
rehit and chit; one keeping dirty lines: C under dclean, A under chit).

`standin` writes MANIFEST and NCU.csv from a model L2 instead of a GPU, to test this script (tests/e2e/
test_l2probe.sh): dirty lines drain at MB_PER_US while a kernel runs (none while the GPU idles, unless --idle),
every kernel of the plan lasting as its x says (spin, slow) or 3 us.  With --share, the manifest of `l2drain share`
from a model L2 in which a read or rewrite by other CTAs (every kind but xread0 and xwrite0) writes FRACTION of the
probe's dirty bytes back.  With --order, the manifest of `l2drain order` from an LRU L2 of MB megabytes (whole
lines, no preference): A goes first in every kind.
"""
import re
import sys

import ncu_rows
import script_io

MB = 1e6
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum")
KERNEL_OF = {"flush": "read_kernel", "h": "read_kernel", "w": "write_kernel"}
MIDDLE = {"spin": "spin_kernel", "spin1": "spin_kernel", "read": "read_kernel"}
KINDS = ("spin", "spin1", "read", "none", "slow")
STRIDED = re.compile(r"^s(read|write)([0-9]+)$")   # sread<S KB>, swrite<S KB> (since session 31)
BEHIND = re.compile(r"^behind([0-9]+)$")            # behind<L MB> (since session 31)
STRIDES_KB = (1, 56, 512)
SHARE = re.compile(r"^x(read|write)([0-9]+|all)$")  # xread<B>, xreadall, xwrite<B> (since session 32)
ORDER = re.compile(r"^(rehit|rehit0|dclean|chit)(r?)$")  # `l2drain order` (since session 36; chit since 37)
ORDER_X = (20, 24, 28, 32, 36, 40, 44)   # l2drain.cu run_order's xs


def kernel_of(role, kind):
    """the kernel a launch of this role and kind runs, None if the pair is not one l2drain.cu makes"""
    if ORDER.match(kind):    # A written (w; chit: read), re-read (a), B written (v) or C read (c), the stream (m),
        if role == "w" and kind.startswith("chit"):   # re-reads (q*)
            return "read_kernel"
        return {"v": "write_kernel", "a": "read_kernel", "c": "read_kernel", "m": "read_kernel", "qa": "read_kernel",
                "qb": "read_kernel", "qc": "read_kernel"}.get(role, KERNEL_OF.get(role))
    if SHARE.match(kind):    # the probe read or rewritten by other CTAs (m), re-read as written (q)
        return {"m": "xread_kernel", "q": "read_kernel"}.get(role, KERNEL_OF.get(role))
    if BEHIND.match(kind):   # the logits written (b) and read (r), the probe, a contiguous read
        return {"b": "write_kernel", "r": "read_kernel", "m": "read_kernel"}.get(role, KERNEL_OF.get(role))
    m = STRIDED.match(kind)
    if m and m.group(1) == "read" and role == "m":
        return "sread_kernel"
    if m and m.group(1) == "write" and role == "w":
        return "swrite_kernel"
    if role == "m":
        return None if m else MIDDLE.get(kind)
    return KERNEL_OF.get(role)


def known(kind):
    """a kind of trial the report tabulates"""
    return kind in KINDS or STRIDED.match(kind) or BEHIND.match(kind) or SHARE.match(kind) or ORDER.match(kind)


def kinds_in(man):
    """the kinds of the manifest's trials in l2drain.cu's order: the fixed ones, then the others as they came"""
    seen = []
    for m in man:
        if known(m["kind"]) and m["kind"] not in seen:
            seen.append(m["kind"])
    return [k for k in KINDS if k in seen] + [k for k in seen if k not in KINDS]


def die(msg):
    sys.stderr.write("l2drain.py: %s\n" % msg)
    sys.exit(1)


def read_manifest(path):
    return ncu_rows.read_manifest(path, (("role", str), ("trial", int), ("kind", str), ("d", float), ("x", float)), die, "l2drain")


def read_ncu(path):
    rows = ncu_rows.read_ncu(path, METRICS, die)
    for r in rows:   # the kernel's bare name: "void spin_kernel(unsigned long long, ...)" -> spin_kernel
        r["name"] = ncu_rows.bare_name(r["name"])
    return rows


def pair(man, ncu, mpath, npath):
    if len(ncu) != len(man):
        die("%s has %d kernels, %s lists %d launches" % (npath, len(ncu), mpath, len(man)))
    for m, k in zip(man, ncu):
        want = kernel_of(m["role"], m["kind"])
        if want is None:
            die("%s:%d: role %r of kind %r not known" % (mpath, m["line"], m["role"], m["kind"]))
        if k["name"] != want:
            die("%s:%d: launch %d is %s, Nsight Compute's row %d is %s" % (mpath, m["line"], m["n"], want, k["line"],
                                                                          k["name"]))
        m.update(rd=k["dram__bytes_read.sum"], wr=k["dram__bytes_write.sum"], t=k["gpu__time_duration.sum"])


def report_behind(kind, rows):
    """a behind<L> table: the logits' writer (b) and read (r) before the probe's rows"""
    print("\n### %s\n" % kind)
    print("| D MB | x (MB read) | b: %s MB written, writes MB | r: its read, writes MB | w: writes MB, us | "
          "m: writes MB, us | h: writes MB (still dirty) |" % BEHIND.match(kind).group(1))
    print("|---|---|---|---|---|---|---|")
    for t in sorted(rows, key=lambda t: (t["w"]["d"], t["w"]["x"])):
        w, h, m, b, r = t["w"], t["h"], t["m"], t.get("b"), t.get("r")
        print("| %g | %g | %s | %s | %.3f, %.1f | %.3f, %.1f | %.3f |" % (
            w["d"], w["x"], "%.3f" % (b["wr"] / MB) if b else "-", "%.3f" % (r["wr"] / MB) if r else "-",
            w["wr"] / MB, w["t"] * 1e6, m["wr"] / MB, m["t"] * 1e6, h["wr"] / MB))


def report_share(kind, rows):
    """an xread / xwrite table: the probe, the other CTAs' access (m), the re-read (q), the flush (h)"""
    print("\n### %s\n" % kind)
    print("| D MB | repeat | w: writes MB | m: writes MB, reads MB, us | q: reads MB (gone), writes MB | "
          "h: writes MB (still dirty) |")
    print("|---|---|---|---|---|---|")
    for t in sorted(rows, key=lambda t: (t["w"]["d"], t["w"]["x"])):
        w, m, q, h = t["w"], t["m"], t["q"], t["h"]
        print("| %g | %g | %.3f | %.3f, %.3f, %.1f | %.3f, %.3f | %.3f |" % (
            w["d"], w["x"], w["wr"] / MB, m["wr"] / MB, m["rd"] / MB, m["t"] * 1e6, q["rd"] / MB, q["wr"] / MB,
            h["wr"] / MB))


def report_order(base, by_kind):
    """a rehit / rehit0 / dclean table over both re-read orders: each half's bytes gone taken from the trial that
    re-read it first (the second re-read finds what the first one's misses pushed out), and which went first"""
    other = "c" if base == "dclean" else "b"
    fwd, rev = by_kind.get(base, []), by_kind.get(base + "r", [])
    xs = sorted({t["w"]["x"] for t in fwd + rev})
    at = lambda rows, x: next((t for t in rows if t["w"]["x"] == x), None)
    print("\n### %s (%s)\n" % (base, "and %sr" % base if rev else "one order only"))
    print("| D MB | x (MB streamed) | m: writes MB (dirty pushed out) | A gone MB (qa first) | %s gone MB (q%s first) | "
          "h: writes MB (still dirty) | first to go |" % (other.upper(), other))
    print("|---|---|---|---|---|---|---|")
    for x in xs:
        f, r = at(fwd, x), at(rev, x)
        t = f or r
        a = f["qa"]["rd"] / MB if f else None
        o = r["q" + other]["rd"] / MB if r else None
        cell = lambda v: "-" if v is None else "%.3f" % v
        if a is None or o is None:
            first = "?"
        elif max(a, o) < 0.05 * t["w"]["d"] / 2:
            first = "neither"
        else:
            first = "A" if a > o else other.upper() if o > a else "both"
        print("| %g | %g | %.3f | %s | %s | %.3f | %s |" % (t["w"]["d"], x, t["m"]["wr"] / MB, cell(a), cell(o),
                                                            t["h"]["wr"] / MB, first))


def report(man):
    trials = {}
    for m in man:
        if known(m["kind"]):
            trials.setdefault(m["trial"], {})[m["role"]] = m
    done_order = set()
    for kind in kinds_in(man):
        rows = [t for t in trials.values() if t.get("w", t.get("h"))["kind"] == kind]
        if not rows:
            continue
        if BEHIND.match(kind):
            report_behind(kind, rows)
            continue
        if SHARE.match(kind):
            report_share(kind, rows)
            continue
        mo = ORDER.match(kind)
        if mo:
            if not mo.group(2) or mo.group(1) not in done_order:
                done_order.add(mo.group(1))
                report_order(mo.group(1), {k: [t for t in trials.values() if t.get("w", t.get("h"))["kind"] == k]
                                           for k in (mo.group(1), mo.group(1) + "r")})
            continue
        unit = {"read": "MB read", "none": "ms idle"}.get(kind, "us")
        sm = STRIDED.match(kind)
        if sm:
            unit = "MB read as 1 KB chunks %s KB apart" % sm.group(2) if sm.group(1) == "read" else \
                "0; the probe written as 1 KB chunks %s KB apart" % sm.group(2)
        print("\n### %s\n" % kind)
        print("| D MB | x (%s) | w: writes MB, us | m: writes MB, us | h: writes MB (still dirty) |" % unit)
        print("|---|---|---|---|---|")
        for t in sorted(rows, key=lambda t: (t["w"]["d"], t["w"]["x"])):
            w, h, m = t["w"], t["h"], t.get("m")
            mid = "%.3f, %.1f" % (m["wr"] / MB, m["t"] * 1e6) if m else "-"
            print("| %g | %g | %.3f, %.1f | %s | %.3f |" % (w["d"], w["x"], w["wr"] / MB, w["t"] * 1e6, mid, h["wr"] / MB))


def standin(mpath, npath, rate, idle):
    """A model run: launches as l2drain.cu makes them; dirty bytes drain at rate MB/us while a kernel runs"""
    import itertools
    man, n = [], itertools.count()
    trial = 0
    for d in (1, 8):
        for kind, xs in (("spin", (2, 5, 10, 20, 50, 100, 200, 500, 1000)), ("spin1", (2, 5, 10, 20, 50, 100, 200, 500, 1000)),
                         ("read", (0.5, 1, 2, 4, 8)), ("none", (1, 10, 100)), ("slow", (2, 5, 10, 20, 50, 100, 200, 500, 1000))):
            for x in xs:
                roles = ["flush", "w"] + (["m"] if kind in MIDDLE else []) + ["h"]
                man += [(next(n), r, trial, kind, d, x) for r in roles]
                trial += 1
    for sk in STRIDES_KB:   # as l2drain.cu: per stride, the strided reads at both D, then the strided writes
        for d in (1, 8):
            for x in (0.5, 2, 8):
                man += [(next(n), r, trial, "sread%d" % sk, d, x) for r in ("flush", "w", "m", "h")]
                trial += 1
        for d in (1, 8):
            man += [(next(n), r, trial, "swrite%d" % sk, d, 0) for r in ("flush", "w", "h")]
            trial += 1
    for lg in (0, 16, 39, 64):   # behind<L>: the logits written and read first (none at 0)
        for d in (0.5, 1):
            roles = ("flush", "b", "r", "w", "m", "h") if lg else ("flush", "w", "m", "h")
            man += [(next(n), r, trial, "behind%d" % lg, d, 2) for r in roles]
            trial += 1
    man.append((next(n), "flush", trial, "end", 0, 0))
    rows, dirty = [], 0.0
    for k, role, tr, kind, d, x in man:
        name = kernel_of(role, kind)
        t = x if (role == "m" and kind in ("spin", "spin1")) or (role == "w" and kind == "slow") else 3.0
        wr = 0.0
        if role in ("flush", "h"):
            wr, dirty = dirty, 0.0
        elif role == "b":   # the logits: L MB written (the kind's number), drained at the rate like any writer
            lg = float(BEHIND.match(kind).group(1))
            own = min(lg, rate * 2.0)
            wr, dirty = own, dirty + lg - own
        elif role == "w":
            own = min(d, rate * max(0.0, t - 1.0))   # what the writer's own run drains of its writes (written by 1 us)
            wr, dirty = own, dirty + d - own   # (dirty is 0 after a flush, but behind<L> leaves logits)
        else:
            wr = min(dirty, rate * t)
            dirty -= wr
        if role == "w" and kind == "none" and idle:
            dirty = max(0.0, dirty - rate * x * 1e3)
        rows.append((k, name, wr * MB, (d * MB if role == "w" else 0.0), t))
    write_standin(mpath, npath, man, rows, "drain %g MB/us%s" % (rate, " (also idle)" if idle else ""))


def standin_share(mpath, npath, clean):
    """`l2drain share`'s launches from a model L2: a read or rewrite by other CTAs writes back CLEAN of the probe's
    dirty bytes; nothing else is written back before the flush, and every line stays"""
    man, n, trial = [], 0, 0
    for rep in (0, 1):
        for kind in ("xread0", "xread1", "xread66", "xreadall", "xwrite0", "xwrite66"):
            for d in (1, 4, 8):
                for r in ("flush", "w", "m", "q", "h"):
                    man.append((n, r, trial, kind, d, rep))
                    n += 1
                trial += 1
    man.append((n, "flush", trial, "end", 0, 0))
    rows, dirty = [], 0.0
    for k, role, tr, kind, d, x in man:
        wr = rd = 0.0
        if role in ("flush", "h"):
            wr, dirty = dirty, 0.0
        elif role == "w":
            dirty, rd = d, 0.0
        elif role == "m" and kind not in ("xread0", "xwrite0"):
            wr = clean * dirty
            dirty -= wr
        if role == "m" and kind.startswith("xwrite"):
            dirty = d   # rewritten: dirty again
        rows.append((k, kernel_of(role, kind), wr * MB, rd * MB, 3.0))
    write_standin(mpath, npath, man, rows, "share, clean %g" % clean)


def standin_order(mpath, npath, lru_mb):
    """`l2drain order`'s launches from an LRU L2 of lru_mb MB, tracked in 0.5 MB pieces (buffer, piece) with a dirty
    flag: a read of a piece not held reads it from DRAM, an eviction of a dirty piece writes it back"""
    man, n, trial = [], 0, 0
    for kind in ("rehit", "rehit0", "dclean", "chit", "rehitr", "rehit0r", "dcleanr", "chitr"):
        for x in ORDER_X:
            clean, rev = kind.startswith("dclean"), kind.endswith("r")
            hit = kind.startswith("chit") or (kind.startswith("rehit") and not kind.startswith("rehit0"))
            roles = ["flush", "w"] + (["a"] if hit else [])
            roles += ["c"] if clean else ["v"]
            roles += ["m"] + ([("qc" if clean else "qb"), "qa"] if rev else ["qa", ("qc" if clean else "qb")]) + ["h"]
            for r in roles:
                man.append((n, r, trial, kind, 8, x))
                n += 1
            trial += 1
    man.append((n, "flush", trial, "end", 0, 0))
    P = 0.5
    cache, cap = [], int(lru_mb / P)   # pieces, least recent first: [key, dirty]

    def touch(key, write):
        rd = wr = 0.0
        for i, (k, dirty) in enumerate(cache):
            if k == key:
                cache.pop(i)
                cache.append([key, dirty or write])
                return 0.0, 0.0
        if not write:
            rd = P
        cache.append([key, write])
        while len(cache) > cap:
            k, dirty = cache.pop(0)
            wr += P if dirty else 0.0
        return rd, wr

    def access(buf, mb, write):
        rd = wr = 0.0
        for i in range(int(round(mb / P))):
            r, w = touch((buf, i), write)
            rd, wr = rd + r, wr + w
        return rd, wr
    rows = []
    for k, role, tr, kind, d, x in man:
        if role in ("flush", "h"):   # 256 MB read: everything dirty written back, the L2 left clean
            wr = sum(P for _, dirty in cache if dirty)
            cache.clear()
            rd, _ = access(("flush", tr, role), 64, False)   # (a quarter: enough to fill a model L2)
        elif role in ("w", "a", "qa"):
            rd, wr = access("A", d / 2, role == "w" and not kind.startswith("chit"))
        elif role in ("v", "qb"):
            rd, wr = access("B", d / 2, role == "v")
        elif role in ("c", "qc"):
            rd, wr = access("C", d / 2, False)
        else:   # m: x MB streamed once
            rd, wr = access(("stream", tr), x, False)
        rows.append((k, kernel_of(role, kind), wr * MB, rd * MB, 3.0))
    write_standin(mpath, npath, man, rows, "order, LRU %g MB" % lru_mb)


def write_standin(mpath, npath, man, rows, what):
    with open(mpath, "w") as f:
        f.write("# l2drain: stand-in, %s\n" % what)
        for k, role, tr, kind, d, x in man:
            f.write("k %d %s %d %s %.3f %.3f\n" % (k, role, tr, kind, d, x))
    with open(npath, "w") as f:
        f.write('"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n')
        for k, name, wr, rd, t in rows:
            f.write('"%d","%s(int)","dram__bytes_read.sum","byte","%.0f"\n' % (k, name, rd))
            f.write('"%d","%s(int)","dram__bytes_write.sum","byte","%.0f"\n' % (k, name, wr))
            f.write('"%d","%s(int)","gpu__time_duration.sum","nsecond","%.0f"\n' % (k, name, t * 1e3))


def standin_opts(argv):
    """the options after `standin MANIFEST NCU.csv`: {name: value (None for a flag)}; die() on one that is unknown,
    lacks its value or has no effect in the mode chosen (--order, --share, else the drain rate)"""
    takes = {"--order": False, "--share": False, "--idle": False, "--lru": True, "--clean": True, "--rate": True}
    opts, i = {}, 0
    while i < len(argv):
        o = argv[i]
        if o not in takes:
            die("standin: unknown option %r (see --help)" % o)
        if takes[o] and i + 1 >= len(argv):
            die("standin: %s needs a value" % o)
        opts[o] = argv[i + 1] if takes[o] else None
        i += 2 if takes[o] else 1
    mode = [m for m in ("--order", "--share") if m in opts]
    if len(mode) > 1:
        die("standin: --order and --share are two manifests; give one")
    own = {"--order": ("--order", "--lru"), "--share": ("--share", "--clean")}.get(mode[0] if mode else None,
                                                                                   ("--rate", "--idle"))
    for o in opts:
        if o not in own:
            die("standin%s: %s has no effect here (with %s)" % (" " + mode[0] if mode else "", o,
                                                                  " ".join(own)))
    return opts


def opt_float(opts, name):
    """the number given to option name, None when it is missing or not a number"""
    try:
        return float(opts[name])
    except (KeyError, ValueError):
        return None


def main(argv):
    if len(argv) >= 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) >= 4 and argv[1] == "standin":
        opts = standin_opts(argv[4:])
        script_io.new_files("l2drain.py", argv[2:4])
        if "--order" in opts:
            lru = opt_float(opts, "--lru")
            if lru is None or lru <= 0:
                die("standin --order needs --lru MB (a number > 0)")
            standin_order(argv[2], argv[3], lru)
            return 0
        if "--share" in opts:
            clean = opt_float(opts, "--clean")
            if clean is None or not 0 <= clean <= 1:
                die("standin --share needs --clean FRACTION (a number in [0, 1])")
            standin_share(argv[2], argv[3], clean)
            return 0
        rate = opt_float(opts, "--rate")
        if rate is None or rate < 0:
            die("standin needs --rate MB_PER_US (a number >= 0)")
        standin(argv[2], argv[3], rate, "--idle" in opts)
        return 0
    if len(argv) != 3:
        die("usage: l2drain.py MANIFEST.txt NCU.csv | standin MANIFEST.txt NCU.csv --rate MB_PER_US [--idle] | "
            "standin MANIFEST.txt NCU.csv --share --clean FRACTION | standin MANIFEST.txt NCU.csv --order --lru MB")
    man, ncu = read_manifest(argv[1]), read_ncu(argv[2])
    pair(man, ncu, argv[1], argv[2])
    report(man)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
