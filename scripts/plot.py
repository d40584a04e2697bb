#!/usr/bin/python3
"""plot.py - figures from a dkv results file (HDF5 written by `dkv run`).

    /usr/bin/python3 scripts/plot.py results/quickstart.h5 [-o results/quickstart.png]
                                     [--runs REGEX] [--max-runs N] [--tags-run NAME]

One PNG with up to three panels, each drawn from whatever the runs contain:
  memory over time   every run's allocated bytes (table `memory`, written by dkv.save, or
                     `mem_series`, written by dkv.mem / dkv replay), one line per run;
  memory by tag      the per-tag breakdown (weights, kv, activation, logits, staging, host) of
                     one run with a `memory` table, stacked;
  latency CDF        per-request latency (`requests.latency_s` of finished requests);
  step timeline      the steps of one run (table `steps`, written by dkv.save): each step a bar
                     from start_s to start_s + time_s, its height the Refresh and Reuse items it
                     batched (stacked), with the step time on a second axis.
Runs lacking a table are skipped with a note on stderr.  Exit status: 0 with a figure written,
1 for a file that cannot be read or holds nothing to plot, 2 for bad arguments.

Uses Debian's python3-h5py and python3-matplotlib (Agg backend, no display needed); run it
with /usr/bin/python3 (another python3 earlier on PATH may lack them).
"""
import argparse
import os
import re
import sys

try:
    import numpy as np
    import h5py
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.stderr.write("plot: %s (install python3-h5py python3-matplotlib python3-numpy, "
                     "and run with /usr/bin/python3)\n" % e)
    sys.exit(1)

GiB = float(2 ** 30)
TAGS = ["weights", "kv", "activation", "logits", "staging", "host"]


def note(msg):
    sys.stderr.write("plot: %s\n" % msg)


def fail(msg):
    note(msg)
    sys.exit(1)


def decode(v):
    return v.decode() if isinstance(v, bytes) else v


def open_results(path):
    if not os.path.exists(path):
        fail("%s: no such file" % path)
    try:
        f = h5py.File(path, "r")
    except (OSError, ValueError) as e:
        fail("%s: not an HDF5 file (%s)" % (path, e))
    fmt = decode(f.attrs.get("format", ""))
    if fmt != "dkv-results" or "runs" not in f:
        f.close()
        fail("%s: not a dkv results file (root attribute format=%r, expected 'dkv-results')" % (path, fmt))
    return f


def run_names(f, pattern, limit):
    names = list(f["runs"].keys())  # creation order: dkv tracks it on /runs
    if pattern:
        try:
            rx = re.compile(pattern)
        except re.error as e:
            note("--runs %r: %s" % (pattern, e))
            sys.exit(2)
        names = [n for n in names if rx.search(n)]
    if limit and len(names) > limit:
        note("%d runs match; plotting the first %d (use --max-runs)" % (len(names), limit))
        names = names[:limit]
    return names


def memory_series(run):
    """(time_s, allocated bytes, reserved bytes or None, source table) of a run, or None."""
    for tname in ("memory", "mem_series"):
        if tname in run and isinstance(run[tname], h5py.Dataset) and run[tname].dtype.names:
            d = run[tname][()]
            names = d.dtype.names
            if "time_s" in names and "allocated" in names and len(d) > 0:
                res = d["reserved"].astype(float) if "reserved" in names else None
                return d["time_s"].astype(float), d["allocated"].astype(float), res, tname
    return None


def latencies(run):
    if "requests" not in run or not run["requests"].dtype.names:
        return None
    d = run["requests"][()]
    if "latency_s" not in d.dtype.names or len(d) == 0:
        return None
    lat = d["latency_s"].astype(float)
    ok = np.isfinite(lat)
    if "status" in d.dtype.names:
        ok &= d["status"] == 0
    lat = np.sort(lat[ok])
    return lat if len(lat) else None


def step_table(run):
    if "steps" not in run or not run["steps"].dtype.names:
        return None
    d = run["steps"][()]
    need = ("start_s", "time_s", "n_refresh", "n_reuse")
    if len(d) == 0 or any(k not in d.dtype.names for k in need):
        return None
    return d


def main(argv):
    ap = argparse.ArgumentParser(description="figures from a dkv results file")
    ap.add_argument("file", help="results file written by dkv run")
    ap.add_argument("-o", "--output", help="PNG to write (default: FILE with .png)")
    ap.add_argument("--runs", help="only runs whose name matches this regular expression")
    ap.add_argument("--max-runs", type=int, default=12, help="at most this many runs per panel (default 12)")
    ap.add_argument("--tags-run", help="run whose memory is broken down by tag (default: the first with tags)")
    args = ap.parse_args(argv)
    out = args.output or os.path.splitext(args.file)[0] + ".png"

    f = open_results(args.file)
    names = run_names(f, args.runs, args.max_runs)
    if not names:
        fail("%s: no runs%s" % (args.file, " match %r" % args.runs if args.runs else ""))

    mem, lat, tagged = {}, {}, None
    for n in names:
        run = f["runs"][n]
        m = memory_series(run)
        if m is None:
            note("run %s: no memory table (memory or mem_series); skipped in the memory panels" % n)
        else:
            mem[n] = m
            if m[3] == "memory" and tagged is None and (args.tags_run in (None, n)):
                tagged = n
        l_ = latencies(run)
        if l_ is None:
            note("run %s: no requests.latency_s of finished requests; skipped in the latency panel" % n)
        else:
            lat[n] = l_
    if args.tags_run and tagged != args.tags_run:
        note("run %s has no per-tag memory table; no tag panel" % args.tags_run)
    timeline = None
    for n in ([tagged] if tagged else []) + names:
        d = step_table(f["runs"][n])
        if d is not None:
            timeline = (n, d)
            break
    panels = [p for p, have in (("mem", mem), ("tags", tagged), ("lat", lat), ("steps", timeline)) if have]
    if not panels:
        f.close()
        fail("%s: none of the %d runs has a memory or latency table; nothing to plot" % (args.file, len(names)))

    cols = min(len(panels), 2) if len(panels) > 3 else len(panels)
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.6 * rows), squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax, p in zip(axes, panels):
        if p == "mem":
            for n, (t, alloc, res, _) in mem.items():
                line, = ax.plot(t, alloc / GiB, label=n, lw=1.2)
                if res is not None:
                    ax.plot(t, res / GiB, color=line.get_color(), lw=0.8, ls="--")
            ax.set_title("memory over time (solid: allocated, dashed: reserved)")
            ax.set_xlabel("time (s)")
            ax.set_ylabel("GiB")
        elif p == "tags":
            d = f["runs"][tagged]["memory"][()]
            present = [k for k in TAGS if k in d.dtype.names and np.any(d[k])]
            ax.stackplot(d["time_s"], *[d[k] / GiB for k in present], labels=present, alpha=0.85)
            if "reserved" in d.dtype.names:
                ax.plot(d["time_s"], d["reserved"] / GiB, color="k", lw=1, ls="--", label="reserved")
            ax.set_title("memory by tag: %s" % tagged)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("GiB")
        elif p == "steps":
            n, d = timeline
            if len(d) > 2000:  # keep the figure readable: the first 2000 steps
                note("run %s: step timeline shows the first 2000 of %d steps" % (n, len(d)))
                d = d[:2000]
            x, w = d["start_s"].astype(float), d["time_s"].astype(float)
            ax.bar(x, d["n_refresh"], width=w, align="edge", label="refresh items", color="tab:red", lw=0)
            ax.bar(x, d["n_reuse"], width=w, bottom=d["n_refresh"], align="edge", label="reuse items",
                   color="tab:blue", lw=0)
            ax2 = ax.twinx()
            ax2.plot(x, w * 1e3, color="k", lw=0.6, label="step time")
            ax2.set_ylabel("step time (ms)")
            ax.set_title("step timeline: %s" % n)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("requests in the step")
        else:
            for n, v in lat.items():
                ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=n, lw=1.2)
            ax.set_title("latency CDF (finished requests)")
            ax.set_xlabel("arrival to finish (s)")
            ax.set_ylabel("fraction of requests")
            ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(os.path.basename(args.file), fontsize=10)
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=110)
    except OSError as e:
        fail("cannot write %s: %s" % (out, e))
    f.close()
    print("plot: wrote %s (%s)" % (out, ", ".join(panels)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
