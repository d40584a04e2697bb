#!/usr/bin/python3
"""gemm_interp_loo.py - how well a profile's GEMM tables predict a GEMM shape they do not hold
(docs/COST_MODEL.md "GEMM interpolation").

    gemm_interp_loo.py [--profile P.lua] [--dream C5.lua | --dream-tgz extra.tgz] [--write-dream-profile OUT.lua]

1. Leave-one-out on the profile itself (the method is chosen here and only here): every interior grid
   value of an axis of the generic `gemm` grid (m, n, k; and n and k together, and all three: a shape
   off the grid in n and k is how another model's GEMMs are looked up) is dropped and predicted from
   the rest, in the column the simulator costs with (core/cost/profile.c, row_seconds); and every
   interior m of the exact-shape class tables (qkv, o, ffn, lm_head).  Dropping a value doubles the
   grid's spacing, so the errors are larger than at the grid's own spacing; they rank the rules.
2. A check, not a selection: Dream-7B's exact GEMM rows (--dream FILE: a profile of the shipped method
   without a grid of its own, device call 55's dream_gemm.lua: each row in the simulator's column against
   the profile's grid at the same shape; otherwise) of device call 5 (`dkv profile --model
   dream-7b`, warm method: one event pair per call, no L2 flush) against the grid of the same run and
   against the profile's grid in its warm_s column (the same method, another run); the run-to-run spread
   of the two runs on the grid shapes both hold; and the exact class rows against the grid at the same
   shapes (a class kernel has its own epilogue: bias, beta 1).

3. --write-dream-profile: the profile with Dream's exact call-5 rows added to qkv, o, ffn and lm_head
   (warm_s = call 5's seconds, stream_s = that less the same class's median warm_s - stream_s at the
   same m; a file of the profile's own method: its rows as measured), a diagnostic for `PROFILE=OUT.lua hw_session.sh post` (what exact Dream GEMM rows would
   change), not a profile to ship: two runs, two methods.

Rules: "log" piecewise linear in (log x, log t) (dkv before 2026-12-01 session 12), "affine" in (x, t)
(since), and candidates the leave-one-out rejects: linear in (x, t / (m n k)) (FLOP/s), and (log x,
log t / R) with R a wave-quantized roofline (tiles of 64x128 .. 128x256 over 132 SMs).
Exit 1 on an unreadable file.  Needs only the standard library."""
import argparse, bisect, itertools, math, os, re, statistics, sys, tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import script_io  # noqa: E402


def die(msg):
    sys.stderr.write("gemm_interp_loo.py: %s\n" % msg)
    sys.exit(1)


def load(text, where="", need=()):
    """{table: (fields, extra, rows)} of a dkv profile's kernel tables; exits naming WHERE on a row that is not
    numbers or a table of NEED it lacks."""
    out, cur, fields, extra, rows = {}, None, None, [], None
    for no, line in enumerate(text.split("\n"), 1):
        s = line.strip()
        m = re.match(r"^([a-z_.]+) = \{$", s)
        if m and rows is None and s != "rows = {":
            cur, fields, extra = m.group(1), None, []
            continue
        m = re.match(r"^(fields|extra) = \{(.*)\},$", s)
        if m:
            v = [x.strip().strip('"') for x in m.group(2).split(",")]
            fields, extra = (v, extra) if m.group(1) == "fields" else (fields, v)
            continue
        if s == "rows = {":
            rows = []
        elif rows is not None and s.startswith("{"):
            try:
                rows.append([float(x) for x in s.strip("{},").split(",")])
            except ValueError:
                die("%s:%d: a row that is not numbers" % (where, no))
        elif rows is not None and s.startswith("}"):
            if fields is None:
                die("%s:%d: table %s has no fields line" % (where, no, cur))
            out[cur], rows = (fields, extra, rows), None
    for t in need:
        if t not in out:
            die("%s: no table '%s' (a dkv profile with GEMM tables?)" % (where, t))
    return out


def column(tab, name, col):
    """{(m, n, k): seconds} of a GEMM table: col 'costed' (profile.c row_seconds), 'warm' or 'seconds'."""
    fields, extra, rows = tab
    nf = len(fields)
    ix = {e: nf + 2 + i for i, e in enumerate(extra)}
    dr = drain(tab) if col == "costed" and name in ("qkv", "ffn", "lm_head") and "stream_s" in ix else 0.0
    out = {}
    for r in rows:
        t = r[nf]
        if col == "warm":
            t = r[ix["warm_s"]]
        elif col == "costed" and "warm_s" in ix:
            warm, st = r[ix["warm_s"]], r[ix["stream_s"]] if "stream_s" in ix else None
            if st is None:
                t = warm if name in ("qkv", "ffn", "lm_head") else t
            elif name in ("qkv", "ffn", "lm_head"):   # stream_s + the table's drain (session 17)
                t = st + dr
            # a flushed table keeps its median (session 14)
        out[tuple(r[:3])] = t
    return out


def drain(tab):
    """The table's median warm_s - stream_s, at least 0 (profile.c table_drain)."""
    fields, extra, rows = tab
    iw, ist = len(fields) + 2 + extra.index("warm_s"), len(fields) + 2 + extra.index("stream_s")
    return max(statistics.median(r[iw] - r[ist] for r in rows), 0.0)


def interp1(xs, ys, x, rule):
    if x in xs:
        return ys[xs.index(x)]
    i = bisect.bisect_left(xs, x)
    if i == 0 or i == len(xs):
        return float("nan")
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    if rule == "affine":
        return y0 + (x - x0) / (x1 - x0) * (y1 - y0)
    w = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(y0) + w * (math.log(y1) - math.log(y0)))


def grid_interp(G, axes, q, rule, work=None):
    """t at q = (m, n, k) from a tensor grid G over axes, axis by axis (m innermost, then k, then n, as
    profile.c); work: interpolate t / work(m, n, k) instead (rule applies to it)."""
    def val(key):
        if key not in G:   # a grid with shapes missing (profile l's largest m): no value there
            return float("nan")
        return G[key] / work(*key) if work else G[key]

    def along(level, fixed):   # level 2: n, 1: k, 0: m
        j = (0, 2, 1)[level]
        xs = axes[j]
        if q[j] in xs:
            use = [q[j]]
        else:
            i = bisect.bisect_left(xs, q[j])
            if i == 0 or i == len(xs):
                return float("nan")
            use = [xs[i - 1], xs[i]]
        ys = []
        for v in use:
            f = dict(fixed)
            f[j] = v
            ys.append(val((f[0], f[1], f[2])) if level == 0 else along(level - 1, f))
        return interp1(use, ys, q[j], rule)
    y = along(2, {})
    return y * work(*q) if work else y


def wave_roof(tm, tn, sms=132, flops=700e12, bw=4.0e12):
    def r(m, n, k):
        waves = math.ceil(math.ceil(m / tm) * math.ceil(n / tn) / sms)
        return max(waves * tm * tn * 2 * k * sms / flops, 2 * (n * k + m * k + m * n) / bw)
    return r


RULES = [("log", "log", None), ("affine", "affine", None),
         ("flop/s affine", "affine", lambda m, n, k: m * n * k)]
RULES += [("wave %dx%d log" % tt, "log", wave_roof(*tt)) for tt in ((64, 128), (128, 128), (128, 256))]


def stats(errs):
    a = [abs(e) for _, e in errs]
    band = lambda lo, hi: [abs(e) for q, e in errs if lo < q[0] <= hi]
    b = [band(0, 256), band(256, 1536), band(1536, 1e18)]
    return ("%5d  %6.2f %6.2f %6.2f %6.1f %+6.2f | %6.2f %6.2f %6.2f" % (
        len(a), 100 * statistics.mean(a), 100 * statistics.median(a), 100 * sorted(a)[int(0.9 * len(a))],
        100 * max(a), 100 * statistics.mean(e for _, e in errs), *[100 * statistics.mean(x) if x else float("nan") for x in b]))


HEAD = "  n  mean|e| median  p90|e|  max   bias  | m<=256 256<m<=1536 m>1536   (%)"


def loo_grid(G, drop, rule, work):
    axes = [sorted({q[j] for q in G}) for j in range(3)]
    idx = [range(1, len(axes[j]) - 1) if j in drop else range(len(axes[j])) for j in range(3)]
    errs = []
    for ii in itertools.product(*idx):
        q = tuple(axes[j][ii[j]] for j in range(3))
        sub = [[v for v in axes[j] if not (j in drop and v == q[j])] for j in range(3)]
        if q not in G:
            continue
        e = grid_interp(G, sub, q, rule, work) / G[q] - 1
        if not math.isnan(e):   # a neighbour the grid lacks
            errs.append((q, e))
    return errs


def loo_class(P, rule):
    errs = []
    for name in ("qkv", "o", "ffn", "lm_head"):
        if name not in P:
            continue
        T = column(P[name], name, "costed")
        for nk in sorted({q[1:] for q in T}):
            ms = sorted(q[0] for q in T if q[1:] == nk)
            ts = [T[(m,) + nk] for m in ms]
            for i in range(1, len(ms) - 1):
                errs.append(((ms[i],) + nk, interp1(ms[:i] + ms[i + 1:], ts[:i] + ts[i + 1:], ms[i], rule) / ts[i] - 1))
    return errs


def dream_exact_check(P, D):
    """Dream's exact class rows measured by the shipped profile's method (device call 55: flushed, warm_s,
    stream_s; no grid of their own) against the profile's generic grid at the same shapes, each in the
    column the simulator costs with: what the lookup of an unprofiled model's GEMMs costs it."""
    print("\n## Check: Dream-7B's exact rows (flushed method) against the profile's grid, costed columns\n")
    G = column(P["gemm"], "gemm", "costed")
    axes = [sorted({q[j] for q in G}) for j in range(3)]
    print("(the LM head: the nearest measured width in proportion to n k, as profile.c looks it up)\n")
    print("| table (n, k) | rows | lookup / exact - 1: mean | m <= 256 | 256 < m <= 1536 | m > 1536 | largest |e| |")
    print("|---|---|---|---|---|---|---|")
    L = column(P["lm_head"], "lm_head", "costed")

    def lm_head(q):   # profile.c: the nearest measured (n, k) by n k, in proportion to n k
        ref = min({x[1:] for x in L}, key=lambda nk: abs(math.log(nk[0] * nk[1] / (q[1] * q[2]))))
        ms = sorted(x[0] for x in L if x[1:] == ref)
        return interp1(ms, [L[(m,) + ref] for m in ms], q[0], "affine") * q[1] * q[2] / (ref[0] * ref[1])
    for name in ("qkv", "o", "ffn", "lm_head"):
        if name not in D:
            continue
        T = column(D[name], name, "costed")
        for nk in sorted({q[1:] for q in T}):
            if name == "lm_head" and nk in {x[1:] for x in L}:
                continue   # a width the profile holds: not a lookup
            look = lm_head if name == "lm_head" else (lambda q: grid_interp(G, axes, q, "affine"))
            e = {q[0]: look(q) / T[q] - 1 for q in T if q[1:] == nk}
            e = {m: x for m, x in e.items() if not math.isnan(x)}
            if not e:
                print("| %s %d, %d | 0 | outside the lookup's range | | | | |" % (name, nk[0], nk[1]))
                continue

            def band(lo, hi):
                v = [x for m, x in e.items() if lo < m <= hi]
                return "%+.1f %%" % (100 * statistics.mean(v)) if v else "-"
            print("| %s %d, %d | %d | %+.1f %% | %s | %s | %s | %.1f %% |" % (
                name, nk[0], nk[1], len(e), 100 * statistics.mean(e.values()), band(0, 256), band(256, 1536),
                band(1536, 1e9), 100 * max(abs(x) for x in e.values())))


def dream_check(P, D):
    if "gemm" not in D:
        return dream_exact_check(P, D)
    print("\n## Check: Dream-7B's exact rows (call 5) against the grid\n")
    g5 = column(D["gemm"], "gemm", "seconds")
    g11 = column(P["gemm"], "gemm", "warm")
    common = [q for q in g5 if q in g11]
    sp = [g11[q] / g5[q] - 1 for q in common]
    print("run-to-run spread, %d grid shapes in both: profile warm_s / call 5 - 1: median %+.2f %%, median |.| %.2f %%, "
          "p90 |.| %.2f %%" % (len(sp), 100 * statistics.median(sp), 100 * statistics.median(abs(x) for x in sp),
                               100 * sorted(abs(x) for x in sp)[int(0.9 * len(sp))]))
    for name in ("qkv", "o", "ffn"):   # an exact class row against the grid at the same shape (same run)
        T = column(P[name], name, "warm")
        r = [T[q] / g11[q] - 1 for q in T if q in g11]
        if r:
            print("profile %s rows / grid at the same shape - 1 (warm_s, %d shapes): median %+.2f %%, median |.| %.2f %%"
                  % (name, len(r), 100 * statistics.median(r), 100 * statistics.median(abs(x) for x in r)))
    print("\nerror of the grid's interpolation at Dream's exact rows (per shape: mean |e|, bias; all m):\n")
    print("| shape (n, k) | grid | " + " | ".join(r for r, _, w in RULES if not w) + " |")
    print("|---|---|" + "---|" * sum(1 for _, _, w in RULES if not w))
    allr = {}
    for name in ("qkv", "o", "ffn"):
        T = column(D[name], name, "seconds")
        for nk in sorted({q[1:] for q in T}):
            for gname, G in (("call 5's own", g5), ("profile's (warm_s)", g11)):
                axes = [sorted({q[j] for q in G}) for j in range(3)]
                cells = []
                for label, rule, work in RULES:
                    if work:
                        continue
                    e = [grid_interp(G, axes, q, rule) / T[q] - 1 for q in T if q[1:] == nk]
                    allr.setdefault((gname, label), []).extend(e)
                    cells.append("%.1f %% (%+.1f %%)" % (100 * statistics.mean(abs(x) for x in e), 100 * statistics.mean(e)))
                print("| %s %d, %d | %s | %s |" % (name, nk[0], nk[1], gname, " | ".join(cells)))
    for (gname, label), e in sorted(allr.items()):
        print("all 72 rows, %s grid, %s: mean |e| %.2f %%, bias %+.2f %%" % (gname, label, 100 * statistics.mean(
            abs(x) for x in e), 100 * statistics.mean(e)))


def write_dream_profile(text, P, D, path):
    out, cur = [], None
    for line in text.split("\n"):
        s = line.strip()
        if re.match(r"^    [a-z_]+ = \{$", line) and s.split()[0] in ("qkv", "o", "ffn", "lm_head"):
            cur = s.split()[0]
        out.append(line)
        if s == "rows = {" and cur:
            fields, extra, rows = P[cur]
            iw, ist = len(fields) + 2 + extra.index("warm_s"), len(fields) + 2 + extra.index("stream_s")
            have = {tuple(r[1:3]) for r in rows}
            dfields, dextra, drows = D[cur]
            same = dextra[:len(extra)] == extra   # the same method (call 55): its own columns, as measured
            for r in drows:
                if tuple(r[1:3]) in have:
                    continue
                if same:
                    out.append("        {%s}," % ", ".join("%.9g" % v for v in r[:len(fields) + 2 + len(extra)]))
                    continue
                o = [x[iw] - x[ist] for x in rows if x[0] == r[0]]
                st = max(r[3] - (statistics.median(o) if o else 0), 0.5 * r[3])
                out.append("        {%s}," % ", ".join("%.9g" % v for v in r[:8] + [r[3], st]))
            cur = None
    try:
        script_io.write_text(path, "-- DIAGNOSTIC, NOT A MEASURED PROFILE: scripts/gemm_interp_loo.py "
                             "--write-dream-profile\n" + "\n".join(out))
    except OSError as e:
        die("%s: cannot write: %s" % (path, e.strerror or e))


def main():
    ap = script_io.arg_parser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--profile", default=os.path.join(ROOT, "datasets/profiles/h200-20261201d.lua"))
    ap.add_argument("--dream", help="a profile of Dream-7B's shapes (profile_dream.lua)")
    ap.add_argument("--dream-tgz", default=os.path.join(ROOT, "datasets/hw/2026-12-01/call5/extra.tgz"))
    ap.add_argument("--write-dream-profile", metavar="OUT.lua")
    a = ap.parse_args()
    if a.write_dream_profile:
        script_io.out_dir(a.write_dream_profile, die)
    text = script_io.read_text(a.profile, die)
    P = load(text, a.profile, ("gemm", "qkv", "o", "ffn", "lm_head"))
    if a.dream:
        D = load(script_io.read_text(a.dream, die), a.dream)
    else:
        where = "%s: ./profile_dream.lua" % a.dream_tgz
        try:
            with tarfile.open(a.dream_tgz) as tf:
                D = load(tf.extractfile("./profile_dream.lua").read().decode(), where)
        except FileNotFoundError:
            die("%s: no such file" % a.dream_tgz)
        except (OSError, tarfile.TarError) as e:
            die("%s: %s" % (a.dream_tgz, getattr(e, "strerror", None) or e))
        except KeyError:
            die("%s: no member ./profile_dream.lua" % a.dream_tgz)
        except UnicodeDecodeError as e:
            die("%s: not a text file (not UTF-8 at byte %d)" % (where, e.start))
    if a.write_dream_profile:
        for t in ("qkv", "o", "ffn", "lm_head"):
            if t not in D:
                die("%s: no table '%s' (--write-dream-profile adds its rows)" % (a.dream or where, t))
    print("# GEMM interpolation: leave-one-out on %s\n" % os.path.relpath(a.profile, ROOT))
    G = column(P["gemm"], "gemm", "costed")
    for drop, what in (([0], "m"), ([1], "n"), ([2], "k"), ([1, 2], "n and k"), ([0, 1, 2], "m, n and k")):
        print("gemm grid, drop %s (%s):" % (what, HEAD.strip()))
        for label, rule, work in RULES:
            print("  %-16s %s" % (label, stats(loo_grid(G, drop, rule, work))))
    print("class tables (qkv, o, ffn, lm_head), drop m:")
    for label, rule, work in RULES:
        if not work:
            print("  %-16s %s" % (label, stats(loo_class(P, rule))))
    dream_check(P, D)
    if a.write_dream_profile:
        write_dream_profile(text, P, D, a.write_dream_profile)
        print("\nwrote %s" % a.write_dream_profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
