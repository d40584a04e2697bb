#!/usr/bin/python3
"""machine_spread.py - how much the H200 machines differ on the same held-out runs, against the
simulator's own error (docs/BENCHMARKS.md "Held-out validation (issue 9), session 16").

    /usr/bin/python3 scripts/machine_spread.py RES [RES...]

Each RES is a post result of one run set (scripts/hw_session.sh post datasets/hw/<date>/callN, RES/h5 and
RES/sim), e.g. /tmp/p28 /tmp/p36 ... /tmp/p46.  Prints, per held-out point: its real steps after the
first, summed, on every machine (s); the real-against-real mean |step difference| over every pair of
machines (steps paired by index where both plans agree: min / median / max, %); then per run set the
simulator's mean signed step error (bias) on the held-out and the in-sample points (the mean over
points of each point's mean error over its paired steps, %); then per held-out point its real request
latency p50 and p99 on every machine (numpy's linear percentile over the run's requests), their largest
over smallest, and whether one prediction can be within issue 9's 8 % of every machine at all: some x with
|x / r - 1| <= 0.08 for every machine's r exists only when max r / min r <= 1.08 / 0.92 (1.174); where it
does, the band of such x."""
import itertools
import os
import statistics as st
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402

STEP_FIELDS = ("n_refresh", "n_reuse", "q_tokens", "time_s")


def die(msg):
    sys.exit("machine_spread: " + msg)


def steps(path, fail=None, fields=STEP_FIELDS):
    """{run: its steps table} of the runs of results file PATH that have one ({} without the file); FAIL(message), the
    caller's own exit (default: this script's), on a file it cannot read or a steps table without FIELDS"""
    fail = fail or die
    out = {}
    if not os.path.exists(path):
        return out
    with script_io.open_h5(path, fail) as f:
        runs = f["runs"]
        for k in runs:
            if isinstance(runs[k], h5py.Group) and "steps" in runs[k]:
                out[k] = script_io.table(runs[k], "steps", "%s: run %s" % (path, k), fail, fields)
    return out


def same(a, b):
    return (a["n_refresh"], a["n_reuse"], a["q_tokens"]) == (b["n_refresh"], b["n_reuse"], b["q_tokens"])


def paired(r, s):
    return [s[i]["time_s"] / r[i]["time_s"] - 1 for i in range(min(len(r), len(s))) if same(r[i], s[i])]


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    script_io.unknown_options("machine_spread.py", sys.argv[1:])
    sets = []
    for res in sys.argv[1:]:
        real = steps("%s/h5/heldout.h5" % res)
        if not real:
            die("%s/h5/heldout.h5: missing or no runs (a post result?)" % res)
        if not any(k.endswith(":real") for k in real):
            die("%s: no held-out point (h5/heldout.h5 has no :real run with steps)" % res)
        sets.append((os.path.basename(res.rstrip("/")), res, real))
    points = sorted({k[:-5] for _, _, real in sets for k in real if k.endswith(":real")})
    print("point: real steps after the first, summed, per run set (s) | real vs real mean |diff| over pairs min / median / max")
    for p in points:
        tot = ["%s %.3f" % (n, sum(real[p + ":real"]["time_s"][1:])) for n, _, real in sets if p + ":real" in real]
        diffs = []
        for (_, _, a), (_, _, b) in itertools.combinations(sets, 2):
            if p + ":real" in a and p + ":real" in b:
                e = paired(a[p + ":real"], b[p + ":real"])
                if e:
                    diffs.append(100 * st.mean(abs(x) for x in e))
        spread = "%.1f / %.1f / %.1f %%" % (min(diffs), st.median(diffs), max(diffs)) if diffs else "-"
        print("%-26s %s | %s" % (p, ", ".join(tot), spread))
    print("\nrun set: simulator's mean step bias, held-out / in-sample (%)")
    for n, res, real in sets:
        line = n
        for f in ("heldout", "val"):
            r, s = steps("%s/h5/%s.h5" % (res, f)), steps("%s/sim/%s.h5" % (res, f))
            b = [st.mean(paired(r[k], s[k[:-5] + ":sim"])) * 100 for k in r
                 if k.endswith(":real") and k[:-5] + ":sim" in s and paired(r[k], s[k[:-5] + ":sim"])]
            line += "  %s %s" % (f, "%+.2f" % st.mean(b) if b else "-")
        print(line)
    tol = 0.08
    lats = {res: latencies("%s/h5/heldout.h5" % res) for _, res, _ in sets}
    print("\npoint: real request latency p50 / p99 over the machines: min .. max (s), max / min; "
          "a prediction within %.0f %% of every machine: its band, or none" % (100 * tol))
    for p in points:
        cells = []
        for q in (50, 99):
            v = [float(np.percentile(lats[res][p + ":real"], q)) for _, res, _ in sets if p + ":real" in lats[res]]
            if not v:
                cells.append("p%d -" % q)
                continue
            lo, hi = min(v), max(v)
            band = "%.3f..%.3f" % (hi / (1 + tol), lo / (1 - tol)) if hi / (1 + tol) <= lo / (1 - tol) else "none"
            cells.append("p%d %.3f..%.3f x%.3f %s" % (q, lo, hi, hi / lo, band))
        print("%-26s %s" % (p, " | ".join(cells)))


def latencies(path):
    """{run: its request latencies (s)} of the runs in path that have requests."""
    with script_io.open_h5(path, die) as f:
        runs = f["runs"]
        return {k: script_io.table(runs[k], "requests", "%s: run %s" % (path, k), die, ("latency_s",))["latency_s"]
                for k in runs if isinstance(runs[k], h5py.Group) and "requests" in runs[k]}


if __name__ == "__main__":
    main()
