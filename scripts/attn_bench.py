#!/usr/bin/env python3
"""attn_bench.py - tables from tests/gpu/bench_attn_batch's output (docs/COST_MODEL.md, "Attention of
batched Reuse steps against the instrumented runs").

  attn_bench.py LOG [-o OUT.md]     the tables (markdown) from a device run's stdout
  attn_bench.py --standin LOG       write a STAND-IN log (made-up times of the right form, NOT measured)
                                    to test this script without a GPU

Tables:
  1. the pool setting: engine / profile time per (items, keys), flushed and back to back, and the two
     factors apart (32 layers per block at the profile's scattered ids; consecutive ids at 32 layers)
  2. item counts the profile does not measure (its rows have 1, 2, 3, 4, 6, 8, 12, 16, 24, 32 items):
     the simulator's lookup there (log-log between the neighbouring measured counts, in the profile's
     setting and column: flushed - (warm - stream)) against the measured time
  3. unequal items: measured against the uniform batch at the mean keys (log-log between grid keys)
  4. transient: attention per call after idle and after ~0.6 s of large GEMMs, in 10 ms bins
"""
import argparse
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (replacing, write_text: an output written whole or not at all)

PROFILED = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
# the fields each kind of line must have: True for a number, False for a word
NEED = {"grid": {"setting": False, "items": True, "keys": True, "flushed_us": True, "warm_us": True, "stream_us": True},
        "unequal": {"items": True, "keys_mean": True, "keys_max": True, "flushed_us": True},
        "transient": {"kind": False, "t_ms": True, "attn_us": True}}


def die(msg):
    sys.exit("attn_bench: " + msg)


def parse(path):
    rows = {"grid": [], "unequal": [], "transient": []}
    try:
        text = open(path, errors="replace").read()
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    for ln, line in enumerate(text.splitlines(), 1):
        f = line.split()
        if not f or f[0] not in rows:
            continue
        d = {}
        for kv in f[1:]:
            if "=" not in kv:
                die("%s:%d: field %r is not key=value" % (path, ln, kv))
            k, v = kv.split("=", 1)
            try:
                d[k] = float(v)
            except ValueError:
                d[k] = v
        for k, num in NEED[f[0]].items():
            if k not in d or num != isinstance(d[k], float):
                die("%s:%d: a %s line needs %s=%s" % (path, ln, f[0], k, "NUMBER" if num else "NAME"))
        rows[f[0]].append(d)
    if not rows["grid"]:
        die("%s: no 'grid' lines (not a bench_attn_batch log?)" % path)
    return rows


def eff(r):
    """the simulator's column of a flushed profile row: seconds - (warm - stream), never below stream"""
    return max(r["flushed_us"] - (r["warm_us"] - r["stream_us"]), r["stream_us"])


def loglog(x, x0, y0, x1, y1):
    w = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(y0) + w * (math.log(y1) - math.log(y0)))


def table_setting(g, out):
    by = {}
    for r in g:
        by[(r["setting"], int(r["items"]), int(r["keys"]))] = r
    keys = sorted({k for (_, _, k) in by})
    items = sorted({n for (_, n, _) in by})
    out.append("## 1. Pool setting: engine (32 layers per block, consecutive ids) / profile (4 layers, scattered)\n")
    out.append("Ratio of times, flushed column (back to back in brackets); then the two factors apart where measured: "
               "L = layers32_scatter / profile (the layer stride), C = engine / layers32_scatter (consecutive ids).\n")
    out.append("| items | " + " | ".join("K=%d" % k for k in keys) + " |")
    out.append("|---|" + "---|" * len(keys))
    allr, alls = [], []
    for n in items:
        cells = []
        for k in keys:
            p, e = by.get(("profile", n, k)), by.get(("engine", n, k))
            if not p or not e:
                cells.append("-")
                continue
            rf, rs = e["flushed_us"] / p["flushed_us"], e["stream_us"] / p["stream_us"]
            allr.append(rf), alls.append(rs)
            c = "%.3f (%.3f)" % (rf, rs)
            l = by.get(("layers32_scatter", n, k))
            if l:
                c += " L %.3f C %.3f" % (l["flushed_us"] / p["flushed_us"], e["flushed_us"] / l["flushed_us"])
            cells.append(c)
        out.append("| %d | %s |" % (n, " | ".join(cells)))
    if allr:
        out.append("\nMedian engine / profile over %d cases: flushed %.3f, back to back %.3f (min %.3f, max %.3f).\n"
                   % (len(allr), statistics.median(allr), statistics.median(alls), min(allr), max(allr)))


def table_items(g, out, setting):
    t = {}
    for r in g:
        if r["setting"] == setting:
            t[(int(r["items"]), int(r["keys"]))] = eff(r)
    keys = sorted({k for (_, k) in t})
    out.append("## 2. Item counts the profile does not measure (setting %s, the simulator's column)\n" % setting)
    out.append("Lookup: log-log in query rows (32 per item) between the neighbouring profiled item counts; "
               "error = (lookup - measured) / measured.\n")
    out.append("| items | splits | CTAs | " + " | ".join("K=%d measured / lookup us (err)" % k for k in keys) + " |")
    out.append("|---|---|---|" + "---|" * len(keys))
    errs = []
    meta = {(int(r["items"]), int(r["keys"])): r for r in g if r["setting"] == setting}
    for n in sorted({n for (n, _) in t}):
        if n in PROFILED:
            continue
        lo = max([p for p in PROFILED if p < n], default=None)
        hi = min([p for p in PROFILED if p > n], default=None)
        cells = []
        for k in keys:
            if lo is None or hi is None or (lo, k) not in t or (hi, k) not in t or (n, k) not in t:
                cells.append("-")
                continue
            y = loglog(32 * n, 32 * lo, t[(lo, k)], 32 * hi, t[(hi, k)])
            e = (y - t[(n, k)]) / t[(n, k)]
            errs.append(abs(e))
            cells.append("%.1f / %.1f (%+.1f%%)" % (t[(n, k)], y, 100 * e))
        m = meta.get((n, keys[0]), {})
        out.append("| %d | %s | %s | %s |" % (n, int(m.get("splits", 0)), int(m.get("ctas", 0)), " | ".join(cells)))
    if errs:
        out.append("\nMean |error| of the lookup at unprofiled item counts: %.1f %% (max %.1f %%, %d cases).\n"
                   % (100 * statistics.mean(errs), 100 * max(errs), len(errs)))


def table_unequal(rows, g, out):
    if not rows:
        return
    t = {(int(r["items"]), int(r["keys"])): r for r in g if r["setting"] == "engine"}
    out.append("## 3. Unequal items (engine setting): measured against the uniform batch at the mean keys\n")
    out.append("| items | mean keys | max keys | measured flushed us | uniform at mean | ratio | uniform at max | ratio |")
    out.append("|---|---|---|---|---|---|---|---|")
    for r in rows:
        n, a, mx = int(r["items"]), r["keys_mean"], int(r["keys_max"])
        ks = sorted(k for (m, k) in t if m == n)

        def at(x):
            for k0, k1 in zip(ks, ks[1:]):
                if k0 <= x <= k1:
                    return loglog(x, k0, t[(n, k0)]["flushed_us"], k1, t[(n, k1)]["flushed_us"])
            return float("nan")
        um, ux = at(a), at(mx)
        out.append("| %d | %.0f | %d | %.1f | %.1f | %.3f | %.1f | %.3f |" % (n, a, mx, r["flushed_us"], um,
                                                                          r["flushed_us"] / um, ux, r["flushed_us"] / ux))
    out.append("")


def table_transient(rows, out):
    if not rows:
        return
    out.append("## 4. Transient: attention per call (events around it) in Reuse-like steps, after 2 s idle and "
               "after ~0.6 s of 8192-row GEMMs\n")
    out.append("| t since start (ms) | idle: median us | burst: median us | burst / idle |")
    out.append("|---|---|---|---|")
    b = {}
    for r in rows:
        b.setdefault((r["kind"], int(r["t_ms"] // 10)), []).append(r["attn_us"])
    bins = sorted({k for (_, k) in b})
    for k in bins:
        i, u = b.get(("idle", k)), b.get(("burst", k))
        if not i or not u:
            continue
        mi, mu = statistics.median(i), statistics.median(u)
        out.append("| %d-%d | %.1f | %.1f | %.3f |" % (10 * k, 10 * k + 10, mi, mu, mu / mi))
    tail = {kind: statistics.median([r["attn_us"] for r in rows if r["kind"] == kind][-100:]) for kind in ("idle", "burst")}
    out.append("\nLast 100 calls: idle %.1f us, burst %.1f us.\n" % (tail["idle"], tail["burst"]))


def standin(path):
    """made-up times of the right form (a latency + bytes at a rate that falls with the layer stride), NOT measured"""
    with script_io.replacing(path) as f:
        f.write("-- STAND-IN for scripts/attn_bench.py tests: made-up times, NOT measured\n")
        sets = [("profile", 4, 1), ("engine", 32, 0), ("layers32_scatter", 32, 1), ("layers4_contig", 4, 0)]
        for name, layers, sc in sets:
            for n in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 24, 32]:
                for k in [416, 1056, 2048, 2816, 4096]:
                    base = 32 * n
                    s = 1 if base >= 264 else min(8, -(-264 // base))
                    ctas = s * n * 32
                    waves = math.ceil(ctas / 396)
                    t = 8 + waves * (k / s) * 0.05 * (1.08 if layers == 32 else 1.0)
                    f.write("grid setting=%s layers=%d scatter=%d items=%d keys=%d splits=%d ctas=%d flushed_us=%.3f "
                            "warm_us=%.3f stream_us=%.3f\n" % (name, layers, sc, n, k, s, ctas, t + 1.5, t + 1.0, t))
        for n in [4, 6, 7, 8, 12]:
            f.write("unequal setting=engine items=%d keys_mean=%.1f keys_max=3072 flushed_us=%.3f warm_us=%.3f "
                    "stream_us=%.3f\n" % (n, (2048 * (n - n // 2) + 3072 * (n // 2)) / n, 200.0, 199.0, 198.0))
        for kind, amp in [("idle", 0.0), ("burst", 0.15)]:
            for i in range(400):
                tm = i * 0.26
                f.write("transient kind=%s call=%d t_ms=%.3f attn_us=%.3f\n" % (kind, i, tm, 180 * (1 + amp * math.exp(-tm / 40))))


def main():
    ap = script_io.arg_parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log")
    ap.add_argument("-o", "--out")
    ap.add_argument("--standin", action="store_true", help="write a STAND-IN log to LOG and exit")
    a = ap.parse_args()
    if a.standin:
        if a.out:
            die("-o does nothing with --standin (it writes the log LOG and exits)")
        try:
            standin(a.log)
        except OSError as e:
            die("%s: cannot write: %s" % (a.log, e.strerror))
        return
    rows = parse(a.log)
    out = ["# bench_attn_batch: %s\n" % a.log]
    if any("STAND-IN" in l for l in open(a.log, errors="replace")):
        out.append("**STAND-IN data: made-up times, NOT measured.**\n")
    table_setting(rows["grid"], out)
    table_items(rows["grid"], out, "profile")
    table_items(rows["grid"], out, "engine")
    table_unequal(rows["unequal"], rows["grid"], out)
    table_transient(rows["transient"], out)
    text = "\n".join(out) + "\n"
    if a.out:
        try:
            script_io.write_text(a.out, text, inputs=(a.log,))
        except OSError as e:
            die("%s: cannot write: %s" % (a.out, e.strerror))
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
