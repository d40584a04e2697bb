#!/usr/bin/python3
"""p50_repeat.py - run-level figures of the same validation points run several times on one machine (device call
99's recipe: the held-out set back to back, each run its own process), to tell a machine's spread from a run's:
per point, each run's request latency p50 (the `:real` runs' summary `latency_p50_s`, what `dkv compare` and
scripts/summary_counts.py read), max / min of the p50s and of the p99s (`latency_p99_s`), and the simulated p50 beside
them when the files hold a `:sim` run of the point (the last file's: the simulation made with the run).

    /usr/bin/python3 scripts/p50_repeat.py [--point P] RUNS.h5...

RUNS.h5: results files of experiments/hw_validate.lua on the GPU (e.g. a call's runs.tgz unpacked: runs/ho1.h5 ...,
or several posts' h5/heldout.h5).  Points are the runs `ho:<point>:real` (held out) or `val:<point>:real`.  A point
whose p50 spreads more than (1 + 0.08) / (1 - 0.08) = 1.174 over the runs of ONE machine cannot meet issue 9's 8 %
p50 target on every run whatever one value predicts it.  Exits 2 naming a file without such runs."""
import sys

import h5py

LIMIT = 1.08 / 0.92


def die(msg, code=2):
    print("p50_repeat.py: " + msg, file=sys.stderr)
    sys.exit(code)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    only = None
    if argv[0] == "--point":
        if len(argv) < 2:
            die("--point needs a point name")
        only, argv = argv[1], argv[2:]
    if not argv:
        die("no results files")
    real, sim, order = {}, {}, []
    for path in argv:
        try:
            f = h5py.File(path, "r")
        except OSError as e:
            die("%s: %s" % (path, e))
        with f:
            if "runs" not in f:
                die("%s: no runs group (not a dkv results file)" % path)
            found = 0
            for name in f["runs"]:
                parts = name.split(":")
                if len(parts) < 3 or parts[0] not in ("ho", "val") or parts[-1] not in ("real", "sim"):
                    continue
                pt = ":".join(parts[1:-1])
                if only is not None and pt != only:
                    continue
                g = f["runs"][name]
                if "summary" not in g or "latency_p50_s" not in g["summary"].attrs:
                    die("%s: run %s has no summary latency_p50_s" % (path, name))
                v = (float(g["summary"].attrs["latency_p50_s"]), float(g["summary"].attrs["latency_p99_s"]))
                if parts[-1] == "sim":
                    sim[pt] = v
                    continue
                found += 1
                if pt not in real:
                    real[pt] = []
                    order.append(pt)
                real[pt].append(v)
            if not found:
                die("%s: no :real runs of validation points%s" % (path, " named " + only if only else ""))
    print("| point | runs | p50 per run (s) | p50 max / min | p99 max / min | simulated p50 | p50 within 8 % of it |")
    print("|---|---|---|---|---|---|---|")
    over = []
    for pt in order:
        v = real[pt]
        p50 = [x[0] for x in v]
        p99 = [x[1] for x in v]
        s50 = p50[:]
        r50 = max(s50) / min(s50) if min(s50) > 0 else float("inf")
        r99 = max(p99) / min(p99) if min(p99) > 0 else float("inf")
        if r50 > LIMIT:
            over.append(pt)
        sv = sim.get(pt)
        within = "-" if sv is None else "%d / %d" % (sum(abs(sv[0] / x - 1) <= 0.08 for x in p50), len(p50))
        print("| %s | %d | %s | %.3f | %.3f | %s | %s |" % (pt, len(v), ", ".join("%.3f" % x for x in p50), r50, r99,
              "-" if sv is None else "%.3f" % sv[0], within))
    print("\np50 spread over one machine's runs above %.3f (no single prediction passes every run): %s" %
          (LIMIT, ", ".join(over) if over else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
