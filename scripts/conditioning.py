#!/usr/bin/env python3
"""conditioning.py - how far each validation point's run-level figures move when every kernel runs a little faster or
slower: which run-level targets of issue 9 a simulator whose steps are right within the machines' own spread can meet.

    /usr/bin/python3 scripts/conditioning.py [--dkv build/release/dkv] [--set heldout|classic] [--point P]
        [--band machine|step | --scales 0.98,0.99,1.01,1.02] [--measured RES...] [-D NAME=VALUE ...] [-o OUT.md]

Simulates the points of experiments/hw_validate.lua (-D set=...: the held-out points, or classic: the nine
in-sample val:* points; -D point=...) once unscaled and once at each
`sim.kernel_scale` of the band (every kernel class's time times that number: docs/COST_MODEL.md "Machine calibration".
--band machine, the default, is 0.98, 0.99, 1.01, 1.02: it lies inside the per-machine scales of the recorded H200s,
0.987-1.024 over the 27 run sets of docs/BENCHMARKS.md "session 29".  --band step is 0.95 to 1.05 by 0.01: every step
time within the step target's 5 %, so a figure ill-conditioned there can miss its target under a simulator that meets
the step target on every step (docs/BENCHMARKS.md "session 34": dream:az:sparse_head).  --scales gives any other
list.)  Prints per point, for request latency p50, p99, tokens/s and peak device memory (since session 35: the
simulated peak_device_bytes, which follows the largest step's rows; measured, the :device run's cudaMemGetInfo peak),
the unscaled figure, its
range over the band and the largest change from the unscaled figure.  Criterion: a figure is **ill-conditioned** at a
point when some scale in the band moves it by more than its target (p50 and p99 8 %, tokens/s 5 %, memory 2 %): there
a simulator
whose every kernel is right within the band can still miss that target, and which machines it misses on is decided by
which side of an arrival a step ends (docs/COMPARE.md "The same plans").

-D NAME=VALUE (repeatable): passed to hw_validate.lua with every simulation, e.g. what `hw_session.sh post` derives
from a run set's :real runs (warm_compressor=false for runs recorded before the backend warmed its compressor), so
the simulated points follow the recorded process.

--measured RES...: `scripts/hw_session.sh post` results; adds, per point and figure, the measured values' range over
those run sets and how many fall inside the band's range.

Exit status: 0 printed, 1 a simulation failed, 2 usage error.
"""
import os
import subprocess
import sys
import tempfile

try:
    import h5py
except ImportError:
    sys.exit("conditioning.py: needs h5py (apt-get install python3-h5py; run it with /usr/bin/python3)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import script_io  # noqa: E402  (out_dir, write_text: -o checked before the simulations, written whole)
FIGS = (("p50", "latency_p50_s", 0.08), ("p99", "latency_p99_s", 0.08), ("tok/s", "tokens_per_s", 0.05),
        ("mem", "peak_device_bytes", 0.02))
# the measured peak device memory is the :device run's cudaMemGetInfo peak (hw_session.sh's memory target)
MEASURED_MEM = "mem_used_peak_bytes"
# --band: the machines' own spread (the default), or every step within the step target's 5 %
BANDS = {"machine": "0.98,0.99,1.01,1.02", "step": ",".join("%.2f" % (0.95 + 0.01 * i) for i in range(11))}


def die(msg):
    print("conditioning.py: " + msg, file=sys.stderr)
    sys.exit(2)


def scales_of(text):
    try:
        v = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        die("--scales: '%s' is not a comma-separated list of numbers" % text)
    if not v or any(not 0 < x <= 10 for x in v):
        die("--scales: every scale must be in (0, 10] (sim.kernel_scale's range), got '%s'" % text)
    return sorted(set(v) - {1.0})


def summaries(path, suffix, keys=None):
    """{point: {summary key: value}} of every run NAME<suffix> in a results file (keys: FIGS' by default)."""
    keys = keys or [k for _, k, _ in FIGS]
    out = {}
    with h5py.File(path, "r") as f:
        for name, run in f["runs"].items():
            if not name.endswith(suffix) or "summary" not in run:
                continue
            point = name[:-len(suffix)]
            point = point[3:] if point.startswith("ho:") else point
            out[point] = {k: float(run["summary"].attrs[k]) for k in keys if k in run["summary"].attrs}
    return out


def simulate(dkv, a, scale, tmp):
    out = os.path.join(tmp, "s%.6f.h5" % scale)
    cmd = [dkv, "run", "experiments/hw_validate.lua", "-D", "backend=sim", "-D", "set=" + a.set,
           "-D", "kernel_scale=%.6f" % scale, "-o", out]
    for d in a.define:
        cmd[3:3] = ["-D", d]
    if a.point:
        cmd[3:3] = ["-D", "point=" + a.point]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    if r.returncode != 0:
        print("conditioning.py: %s failed (exit %d):\n%s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]),
              file=sys.stderr)
        sys.exit(1)
    return summaries(out, ":sim")


def main():
    p = script_io.arg_parser(prog="conditioning.py", description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--dkv", default="build/release/dkv")
    p.add_argument("--set", default="heldout", choices=("heldout", "classic", "novel"))
    p.add_argument("--point")
    p.add_argument("--band", choices=sorted(BANDS))
    p.add_argument("--scales")
    p.add_argument("--measured", nargs="+", metavar="RES", default=[])
    p.add_argument("-D", dest="define", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("-o", dest="out")
    a = p.parse_args()
    for d in a.define:
        if "=" not in d or not d.split("=", 1)[0]:
            die("-D: want NAME=VALUE, got '%s'" % d)
    if not os.access(a.dkv, os.X_OK):
        die("no dkv at %s (--dkv)" % a.dkv)
    if a.out:   # before the simulations (minutes), not after them
        script_io.out_dir(a.out, die)
    a.dkv = os.path.abspath(a.dkv)
    if a.band and a.scales is not None:
        die("--band and --scales: give one of them")
    scales = scales_of(a.scales if a.scales is not None else BANDS[a.band or "machine"])
    if not scales:
        die("--scales: give at least one scale other than 1")
    measured = {}
    for res in a.measured:
        path = os.path.join(res, "h5", {"heldout": "heldout.h5", "novel": "novel.h5"}.get(a.set, "val.h5"))
        if not os.path.exists(path):
            die("--measured: %s has no %s" % (res, path))
        dev = summaries(path, ":device", (MEASURED_MEM,))
        for point, s in summaries(path, ":real").items():
            s = {k: v for k, v in s.items() if k != "peak_device_bytes"}   # the engine's count, not the GPU's
            if MEASURED_MEM in dev.get(point, {}):
                s["peak_device_bytes"] = dev[point][MEASURED_MEM]
            measured.setdefault(point, []).append(s)
    with tempfile.TemporaryDirectory(prefix="dkv-cond-") as tmp:
        base = simulate(a.dkv, a, 1.0, tmp)
        band = {s: simulate(a.dkv, a, s, tmp) for s in scales}
    lines = ["Run-level figures under sim.kernel_scale %s (set %s): the unscaled figure, its range over the band, the "
             "largest change from it (criterion: ill-conditioned where that exceeds the target: p50 and p99 8 %%, "
             "tokens/s 5 %%, memory 2 %%)%s." % (", ".join("%g" % s for s in scales), a.set,
                                    "; measured: the range over %d run sets and how many lie inside the band's range"
                                    % len(a.measured) if a.measured else ""), ""]
    head = "| point |" + "".join(" %s | band | largest change |%s" % (f, " measured | inside |" if a.measured else "")
                                 for f, _, _ in FIGS) + " ill-conditioned |"
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    n_ill = 0
    for point in base:
        cells, ill = [], []
        for f, key, tol in FIGS:
            v0 = base[point].get(key)
            vs = [band[s][point][key] for s in scales if key in band[s].get(point, {})]
            if v0 is None or not vs or v0 == 0:
                cells += ["-", "-", "-"] + (["-", "-"] if a.measured else [])
                continue
            lo, hi = min(vs + [v0]), max(vs + [v0])
            worst = max(abs(v / v0 - 1) for v in vs)
            if worst > tol:
                ill.append(f)
            cells += ["%.4g" % v0, "%.4g to %.4g" % (lo, hi), "%.1f %%" % (100 * worst)]
            if a.measured:
                ms = [m[key] for m in measured.get(point, []) if key in m]
                cells += ["%.4g to %.4g" % (min(ms), max(ms)) if ms else "-",
                          "%d / %d" % (sum(lo <= m <= hi for m in ms), len(ms)) if ms else "-"]
        n_ill += bool(ill)
        lines.append("| %s | %s | %s |" % (point, " | ".join(cells), ", ".join(ill) if ill else "no"))
    lines += ["", "%d of %d points have an ill-conditioned figure." % (n_ill, len(base))]
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        try:
            script_io.write_text(a.out, text)
        except OSError as e:
            die("%s: cannot write: %s" % (a.out, e.strerror or e))


if __name__ == "__main__":
    main()
