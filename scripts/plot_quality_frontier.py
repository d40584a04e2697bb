#!/usr/bin/python3
"""plot_quality_frontier.py - quality against bytes from experiments/quality_frontier.lua.

Reads the run `quality` (table `points`) of the results file and draws two panels against the
peak device KV of each point (the engine's block-pool figure; offload points are labelled with
their peak host KV, the compressed bytes, since progressive offload under the dual cache does not
lower the device peak): held-out
teacher-forced NLL in bits per byte (lower is better; bars: the standard error over requests of the
paired difference against no cache) and token agreement with the dense no-cache decode (higher is
better).  One marker per point, coloured by group (cache / sparse / lowrank /
kv_dtype).  The title names the backend of the run (params.backend: cpu or cuda).

    /usr/bin/python3 scripts/plot_quality_frontier.py frontier.h5 frontier.png

Exit 1, with one line naming the file (and the table or field), on a file that is not such a results file;
2 on usage (--help: this text, exit 0).
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (open_h5, group, table: a file refused in one line naming it)


def die(msg):
    sys.exit("plot_quality_frontier: " + msg)


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return
    if len(sys.argv) != 3:
        print("usage: plot_quality_frontier.py RESULTS.h5 OUT.png", file=sys.stderr)
        sys.exit(2)
    with script_io.open_h5(sys.argv[1], die) as f:
        if "runs/quality/points" not in f:
            sys.exit("plot_quality_frontier: %s has no run 'quality' with a table 'points' "
                     "(made by experiments/quality_frontier.lua)" % sys.argv[1])
        where = "%s: run 'quality'" % sys.argv[1]
        pts = script_io.table(f["runs/quality"], "points", where, die,
                              ("point", "group", "peak_kv_bytes", "peak_host_bytes", "bits_per_byte", "agreement"))
        par = {k: (v.decode() if isinstance(v, bytes) else v)
               for k, v in script_io.group(f["runs/quality"], "params", where, die).attrs.items()}
    colours = {"cache": "black", "sparse": "tab:blue", "lowrank": "tab:orange", "kv_dtype": "tab:green"}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, col, label in ((axes[0], "bits_per_byte", "held-out NLL, bits per byte (teacher-forced)"),
                           (axes[1], "agreement", "token agreement with dense no-cache decode")):
        for p in pts:
            name, group = p["point"].decode(), p["group"].decode()
            x = int(p["peak_kv_bytes"]) / 2 ** 20
            if int(p["peak_host_bytes"]):
                name += " (host %.2f MiB)" % (int(p["peak_host_bytes"]) / 2 ** 20)
            ax.scatter(x, p[col], color=colours.get(group, "grey"), s=22)
            if col == "bits_per_byte" and "bpb_delta_se" in pts.dtype.names:   # paired s.e. vs no cache
                ax.errorbar(x, p[col], yerr=p["bpb_delta_se"], color=colours.get(group, "grey"), lw=0.8)
            ax.annotate(name.replace("sparse_", "").replace("per_head", "ph"), (x, p[col]), fontsize=6,
                        xytext=(3, 2), textcoords="offset points")
        ax.set_xlabel("peak device KV, MiB (engine's block pool)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    for g, c in colours.items():
        axes[0].scatter([], [], color=c, label=g)
    axes[0].legend(fontsize=8)
    backend = par.get("backend", "cpu")   # files from before -D backend ran on the CPU
    if backend == "cpu" and par.get("bf16_activations"):
        backend = "CPU with bf16 activations (stand-in for CUDA)"
    fig.suptitle("tiny byte-level dLLM (7.9 M params), %s backend, held-out text" % backend.upper()
                 if backend in ("cpu", "cuda") else "tiny byte-level dLLM (7.9 M params), %s, held-out text" % backend)
    fig.tight_layout()
    out = script_io.figure_path(sys.argv[2])   # OUT without an extension: OUT.png, named as such
    try:
        fig.savefig(out, dpi=120)
    except (OSError, ValueError) as e:   # a folder that is not there, a format matplotlib does not write
        die("%s: cannot write: %s" % (out, e))
    print("plot_quality_frontier: wrote %s (%d points)" % (out, len(pts)))


if __name__ == "__main__":
    main()
