#!/usr/bin/python3
"""plot.py - figures from a dkv results file (HDF5 written by `dkv run`).

    /usr/bin/python3 scripts/plot.py results/quickstart.h5 [-o results/quickstart.png]
                                     [--runs REGEX] [--max-runs N] [--run NAME]

One PNG with up to four panels, each drawn from whatever the runs contain:
  memory over time   every run's allocated bytes (table `memory`, written by dkv.save, or
                     `mem_series`, written by dkv.mem / dkv replay), one line per run;
  memory by tag      the per-tag breakdown (weights, kv, activation, logits, staging, host) of
                     one run (--run NAME; default the first with a `memory` table), stacked;
  latency CDF        per-request latency (`requests.latency_s` of finished requests);
  step timeline      the steps of one run (--run; table `steps`): each step a bar from start_s
                     to start_s + time_s, its height the Refresh and Reuse items it batched
                     (stacked), with the step time on a second axis.
The title names the model, the GPU (and whether it was simulated or measured) and the workload,
from each run's flat configuration (docs/HDF5_SCHEMA.md, "config").  Runs whose curves are
identical (to 1e-4 of their largest value: closer than a line is wide) are drawn once,
labelled "a = b (identical)" or "a = b (within 0.01 %)".  More than 10 curves get distinct colour
and line-style pairs and the legend moves outside the axes.

A sweep (runs that differ in one or two parameters, scripts/dkvresults.py's swept()) also gets
<output>.sweep.png: each headline metric (tokens/s, requests/s, P99 latency, peak KV, peak
reserved, KV external fragmentation at peak) against the first swept parameter, one line per
value of the second.  It needs python3-pandas; without it that figure is skipped with a note.

Runs lacking a table are skipped with a note on stderr.  Exit status: 0 with a figure written,
1 for a file that cannot be read or holds nothing to plot, 2 for bad arguments (an -o whose extension
matplotlib does not write, such as .xyz; a negative --max-runs: 0 means no limit).

Uses Debian's python3-h5py and python3-matplotlib (Agg backend, no display needed); run it
with /usr/bin/python3 (another python3 earlier on PATH may lack them).
"""
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (open_h5: a file refused in one line naming it; figure_path)

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
    f = script_io.open_h5(path, fail, need=())
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


def cfg_of(run):
    """The run's flat configuration (group config), plus params and origin attributes."""
    c = {}
    if "params" in run:
        c.update({k: decode(v) for k, v in run["params"].attrs.items()})
    if "config" in run and isinstance(run["config"], h5py.Group):
        c.update({k: decode(v) for k, v in run["config"].attrs.items()})
    for k in ("backend", "device"):
        if k in run.attrs:
            c["@" + k] = decode(run.attrs[k])
    return c


def fmt_num(v):
    return ("%g" % v) if isinstance(v, (float, np.floating)) else str(v)


def workload_text(c):
    kind = c.get("workload.kind")
    if kind is None:
        return None
    n = c.get("workload.count", c.get("workload.n"))
    if kind == "trace":
        src = os.path.basename(str(c.get("workload.file", c.get("workload.source", "trace"))))
        t = "%s requests of %s" % (n, src)
        rs = c.get("workload.rate_scale", 1)
        if rs != 1:
            t += " at %sx rate" % fmt_num(rs)
        return t
    t = "%s %s requests" % (n, kind)
    if "workload.rate" in c:
        t += " at %s/s" % fmt_num(c["workload.rate"])
    p, g = c.get("workload.prompt"), c.get("workload.gen")
    if p is not None and g is not None:
        t += ", P=%s G=%s" % (fmt_num(p), fmt_num(g))
    return t


def describe(cfgs):
    """'model on GPU (simulated): workload' for the runs' configurations (a list of dicts)."""
    def vals(key, alt=None):
        v = []
        for c in cfgs:
            x = c.get(key, c.get(alt) if alt else None)
            if x is not None and x not in v:
                v.append(x)
        return v
    models, gpus = vals("model.name", "model"), vals("gpu.name", "gpu")
    backends, devices = [b for b in vals("@backend") if b != "none"], vals("@device")
    wl = []
    for c in cfgs:
        w = workload_text(c)
        if w and w not in wl:
            wl.append(w)
    if len(wl) > 1:   # one text with the varying workload values as ranges ("rate 1-12")
        wcfgs = [c for c in cfgs if "workload.kind" in c]
        merged = dict(wcfgs[0])
        for k in set().union(*[c.keys() for c in wcfgs]):
            if not k.startswith("workload."):
                continue
            v = [c.get(k) for c in wcfgs if c.get(k) is not None]
            if len(set(map(str, v))) > 1:
                num = all(isinstance(x, (int, float, np.integer, np.floating)) for x in v)
                merged[k] = ("%s-%s" % (fmt_num(min(v)), fmt_num(max(v))) if num
                             else "/".join(dict.fromkeys(map(str, v))))
        wl = [workload_text(merged)]
    def join(v, what):
        return v[0] if len(v) == 1 else "%d %ss" % (len(v), what) if v else "%s ?" % what
    def kind(b):   # how a backend's runs were obtained (the GPU named in the title is the config's preset)
        if b == "sim":
            return "simulated"
        if b == "cuda":
            return "measured on %s" % (devices[0].split(",")[0] if len(devices) == 1 else "GPUs")
        if b == "cpu":
            return "measured on the CPU"
        return "backend %s" % b
    how = ""
    if sorted(backends) == ["cuda", "sim"]:
        how = " (measured and simulated)"
    elif backends:
        how = " (%s)" % " and ".join(kind(b) for b in backends)
    text = "%s on %s%s" % (join(models, "model"), join(gpus, "GPU"), how)
    if wl:
        text += ": " + (wl[0] if len(wl) == 1 else "%d workloads" % len(wl))
    return text


def _same(a, b, rtol):
    if a is None or b is None:
        return a is None and b is None
    if a.shape != b.shape:
        return False
    if rtol == 0:
        return np.array_equal(a, b, equal_nan=True)
    scale = np.nanmax(np.abs(np.concatenate([a, b]))) if a.size else 0.0
    return bool(np.allclose(a, b, rtol=0, atol=rtol * (scale if scale > 0 else 1.0), equal_nan=True))


def merge_identical(items, rtol=1e-4):
    """items: [(label, arrays...)] -> [(label, arrays...)]: curves equal to within rtol of their
    largest value (1e-4: closer than a line's width) are drawn once, labelled 'a = b (identical)',
    or '(within 0.01 %)' when they are not bit-for-bit equal."""
    out = []   # [labels, exact, arrays...]
    for it in items:
        for k, o in enumerate(out):
            arrs = o[2:]
            if len(arrs) == len(it[1:]) and all(_same(a, b, rtol) for a, b in zip(arrs, it[1:])):
                exact = o[1] and all(_same(a, b, 0) for a, b in zip(arrs, it[1:]))
                out[k] = [o[0] + [it[0]], exact] + list(arrs)
                break
        else:
            out.append([[it[0]], True] + list(it[1:]))
    res = []
    for o in out:
        label = " = ".join(o[0])
        if len(o[0]) > 1:
            label += " (identical)" if o[1] else " (within %g %%)" % (rtol * 100)
        res.append(tuple([label] + o[2:]))
    return res


LINESTYLES = ["-", "--", ":", "-."]


def style(i, n):
    """Colour and line style of curve i of n: tab10 colours, then the next line style."""
    color = plt.get_cmap("tab10")(i % 10)
    return dict(color=color, ls=LINESTYLES[(i // 10) % len(LINESTYLES)] if n > 10 else "-")


def legend(ax, n):
    if n > 10:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    else:
        ax.legend(fontsize=7, loc="best")


def report(panel, curves):
    for c in curves:
        if c[0].endswith((" (identical)", " %)")):
            print("plot: %s: drawn once: %s" % (panel, c[0]))
    if len(curves) > 10:
        print("plot: %s: %d curves: colour and line-style pairs, legend outside the axes" % (panel, len(curves)))


def panel_mem(ax, mem):
    curves = merge_identical([(n, t, alloc, res) for n, (t, alloc, res, _) in mem.items()])
    report("memory", curves)
    for i, (label, t, alloc, res) in enumerate(curves):
        st = style(i, len(curves))
        ax.plot(t, alloc / GiB, label=label, lw=1.2, **st)
        if res is not None:
            ax.plot(t, res / GiB, color=st["color"], lw=0.7, ls=(0, (2, 2)), alpha=0.7)
    ax.set_title("memory over time (solid: allocated, dotted: reserved)", fontsize=9)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("GiB")
    return len(curves)


def panel_lat(ax, lat):
    curves = merge_identical([(n, v) for n, v in lat.items()])
    report("latency", curves)
    for i, (label, v) in enumerate(curves):
        ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=label, lw=1.2, **style(i, len(curves)))
    ax.set_title("latency CDF (finished requests)", fontsize=9)
    ax.set_xlabel("arrival to finish (s)")
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1.02)
    return len(curves)


def panel_tags(ax, f, tagged):
    d = f["runs"][tagged]["memory"][()]
    present = [k for k in TAGS if k in d.dtype.names and np.any(d[k])]
    ax.stackplot(d["time_s"], *[d[k] / GiB for k in present], labels=present, alpha=0.85)
    if "reserved" in d.dtype.names:
        ax.plot(d["time_s"], d["reserved"] / GiB, color="k", lw=1, ls="--", label="reserved")
    ax.set_title("memory by tag: %s" % tagged, fontsize=9)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("GiB")
    return len(present) + 1


def panel_steps(ax, timeline):
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
    ax.set_title("step timeline: %s" % n, fontsize=9)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("requests in the step")
    return 2


METRICS = [("tokens_per_s", "tokens/s", 1.0), ("throughput_rps", "requests/s", 1.0),
           ("latency_p99_s", "P99 latency (s)", 1.0), ("peak_kv_bytes", "peak KV (GiB)", 1 / GiB),
           ("peak_reserved", "peak reserved (GiB)", 1 / GiB),
           ("kv_external_frag_at_peak", "KV external fragmentation at peak", 1.0)]


def sweep_figure(path, names, out, title):
    """<out>.sweep.png: headline metrics against the swept parameter(s); returns the path or None."""
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import dkvresults
    except ImportError as e:
        note("no sweep figure: %s (install python3-pandas)" % e)
        return None
    df = dkvresults.runs(path)
    df = df[df["run"].isin(names)]
    metrics = [m for m in METRICS if m[0] in df.columns]
    if metrics:
        df = df[df[metrics[0][0]].notna()]
    if len(df) < 2 or not metrics:
        return None
    swept = dkvresults.swept(df)
    if not 1 <= len(swept) <= 2:
        if swept:
            note("runs differ in %d parameters (%s); no sweep figure" % (len(swept), ", ".join(swept[:6])))
        return None
    x = swept[0]
    if len(swept) == 2 and df[swept[0]].nunique() < df[swept[1]].nunique():
        x = swept[1]            # the axis with more values on x, the other as lines
    series = [s for s in swept if s != x]
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) for v in df[x])
    xs = sorted(df[x].unique(), key=lambda v: (str(type(v)), v)) if numeric else list(dict.fromkeys(df[x]))
    pos = {v: (float(v) if numeric else i) for i, v in enumerate(xs)}
    groups = [(None, df)] if not series else [(v, g) for v, g in df.groupby(series[0], sort=True)]
    cols = 3
    rows = (len(metrics) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.0 * cols, 3.8 * rows), squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    for ax, (key, label, scale) in zip(axes, metrics):
        items = []
        for v, g in groups:
            g = g.sort_values(x, key=lambda c: c.map(pos))
            xv = np.array([pos[a] for a in g[x]], dtype=float)
            items.append(("%s = %s" % (series[0], v) if series else key, xv,
                          g[key].to_numpy(dtype=float) * scale))
        curves = merge_identical(items)
        report("sweep %s" % key, curves)
        for i, (lab, xv, yv) in enumerate(curves):
            ax.plot(xv, yv, marker="o", ms=3, lw=1.2, label=lab, **style(i, len(curves)))
        if not numeric:
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([str(v) for v in xs], rotation=30, ha="right", fontsize=7)
        ax.set_xlabel(x)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        if series or len(curves) > 1:
            legend(ax, len(curves))
    fig.suptitle("%s\nsweep over %s" % (title, " and ".join(swept)), fontsize=9)
    fig.tight_layout()
    sp = os.path.splitext(out)[0] + ".sweep.png"
    fig.savefig(sp, dpi=110)
    plt.close(fig)
    return sp, " and ".join(swept)


def main(argv):
    ap = script_io.arg_parser(description="figures from a dkv results file")
    ap.add_argument("file", help="results file written by dkv run")
    ap.add_argument("-o", "--output", help="PNG to write (default: FILE with .png; a name without an extension gets "
                                           ".png)")
    ap.add_argument("--runs", help="only runs whose name matches this regular expression")
    ap.add_argument("--max-runs", type=int, default=24,
                    help="at most this many runs per panel (default 24; 0: no limit)")
    ap.add_argument("--run", "--tags-run", dest="run",
                    help="run shown in the per-run panels (memory by tag, step timeline); default: the first "
                         "with a per-tag memory table")
    args = ap.parse_args(argv)
    out = script_io.figure_path(args.output) if args.output else os.path.splitext(args.file)[0] + ".png"
    if args.max_runs < 0:
        note("--max-runs %d: a count of runs (0: no limit)" % args.max_runs)
        sys.exit(2)
    ext = os.path.splitext(out)[1][1:].lower()
    kinds = matplotlib.backend_bases.FigureCanvasBase.get_supported_filetypes()
    if ext and ext not in kinds:
        note("-o %s: matplotlib writes no .%s (it writes %s)" % (out, ext, ", ".join("." + k for k in sorted(kinds))))
        sys.exit(2)

    f = open_results(args.file)
    names = run_names(f, args.runs, args.max_runs)
    if not names:
        fail("%s: no runs%s" % (args.file, " match %r" % args.runs if args.runs else ""))
    if args.run and args.run not in f["runs"]:
        have = ", ".join(list(f["runs"])[:12])
        f.close()
        note("--run %s: no such run in %s (runs: %s)" % (args.run, args.file, have))
        sys.exit(2)

    mem, lat, tagged = {}, {}, None
    for n in names:
        run = f["runs"][n]
        m = memory_series(run)
        if m is None:
            note("run %s: no memory table (memory or mem_series); skipped in the memory panels" % n)
        else:
            mem[n] = m
            if m[3] == "memory" and tagged is None and args.run is None:
                tagged = n
        l_ = latencies(run)
        if l_ is None:
            note("run %s: no requests.latency_s of finished requests; skipped in the latency panel" % n)
        else:
            lat[n] = l_
    if args.run:
        m = memory_series(f["runs"][args.run])
        tagged = args.run if m is not None and m[3] == "memory" else None
        if tagged is None:
            note("run %s has no per-tag memory table; no tag panel" % args.run)
    timeline = None
    for n in ([args.run] if args.run else []) + ([tagged] if tagged else []) + ([] if args.run else names):
        d = step_table(f["runs"][n])
        if d is not None:
            timeline = (n, d)
            break
    panels = [p for p, have in (("mem", mem), ("tags", tagged), ("lat", lat), ("steps", timeline)) if have]
    if not panels:
        f.close()
        fail("%s: none of the %d runs has a memory or latency table; nothing to plot" % (args.file, len(names)))

    title = describe([cfg_of(f["runs"][n]) for n in names])
    print("plot: title: %s" % title)
    if tagged or timeline:
        print("plot: per-run panels: %s" % ", ".join(
            "%s %s" % (what, n) for what, n in (("memory by tag", tagged), ("steps", timeline and timeline[0])) if n))
    many = max(len(mem), len(lat)) > 10
    cols = min(len(panels), 2) if len(panels) > 3 else len(panels)
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=((6.2 + (2.4 if many else 0)) * cols, 4.6 * rows), squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax, p in zip(axes, panels):
        if p == "mem":
            k = panel_mem(ax, mem)
        elif p == "tags":
            k = panel_tags(ax, f, tagged)
        elif p == "steps":
            k = panel_steps(ax, timeline)
        else:
            k = panel_lat(ax, lat)
        ax.grid(alpha=0.3)
        legend(ax, k)
    fig.suptitle("%s\n%s" % (title, os.path.basename(args.file)), fontsize=10)
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=110)
    except (OSError, ValueError, RuntimeError) as e:   # RuntimeError: .pgf without LaTeX
        fail("cannot write %s: %s" % (out, e))
    plt.close(fig)
    print("plot: wrote %s (%s)" % (out, ", ".join(panels)))
    f.close()
    sp = sweep_figure(args.file, names, out, title)
    if sp:
        print("plot: wrote %s (sweep over %s)" % sp)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
