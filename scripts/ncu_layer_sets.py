#!/usr/bin/python3
"""ncu_layer_sets.py - a layer's HBM bytes, run by run, across every set a score holds: the L2 replay's one layer
(core/cost, record.l2_kernels) beside Nsight Compute's mean layer (scripts/ncu_layer.py's rows), summed over the
points' steps by model, step kind and layer, then (--points) one line per step, ordered by its rows: where a class's
misses are one pattern across shapes, not scatter (docs/COST_MODEL.md "The soft edge", session 41).

    /usr/bin/python3 scripts/ncu_layer_sets.py OUT [--model M] [--kind K] [--bytes read|write] [--points ROWS]
        [--against TRIAL_OUT]

OUT: a scripts/ncu_score.sh output folder (its tables.txt names each set's ncu_bytes.md; the folder holding one holds
its real.h5 and sim.h5; a set without them, the in-sample LLaDA-8B one, is named and left out).  Every step of every
:real run pairs with its :sim twin (ncu_layer.py's pairing; an unpairable step exits 1 naming the file).  A step's
kind: refresh (every item a Refresh), reuse (every item a Reuse), mixed; steps whose layer runs another class
sequence than the commonest of their model and kind (the prefix cache's Reuse, the sparse selection's kernels) are
summed apart, one table per sequence, the commonest first.  --model keeps one model preset (llada-8b, dream-7b), --kind one kind; --bytes: the direction (default write).

Prints, per (model, kind): one row per run of the layer's kernels (ncu_layer.py's #), its class, the replay's and
Nsight Compute's MB summed over the steps, their difference, in how many steps the replay is within 5 % of Nsight
Compute's mean layer (both under 0.01 MB counts as within), and the running difference: each step's replay less
Nsight Compute summed over the layer's rows up to this one, its mean over the steps and its range (how far the
replay runs ahead of the GPU's write-back, or behind it, at each kernel boundary).  --points ROWS (comma-separated #s, e.g. 2,4,5)
adds one line per step under each table, ordered by the step's rows (q_tokens): its set, point, step, rows and,
for each named # the layer has, replay / Nsight Compute MB.  --against TRIAL_OUT (another ncu_score.sh output of the
same sets, e.g. a trial build's) adds that replay's MB and its steps within 5 % of the same Nsight Compute rows;
every step must have its twin there with the same layer (an error names the first that has not).  Exit status: 0, 1 on a file it cannot read or pair, 2 on a usage error."""
import collections
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_layer as L  # noqa: E402  (pairs, step_kernels, step_replay, layer_table, NAMES)

WITHIN, FLOOR = 0.05, 1e4   # 5 %; bytes under which both sides count as nothing


def usage(msg):
    sys.stderr.write("ncu_layer_sets.py: %s\n%s\n" % (msg, __doc__.split("\n\n")[1]))
    sys.exit(2)


def parse(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        sys.exit(0)
    opts, pos, i = {}, [], 0
    while i < len(argv):
        a = argv[i]
        if a in ("--model", "--kind", "--bytes", "--points", "--against"):
            if i + 1 >= len(argv):
                usage("%s wants a value" % a)
            opts[a] = argv[i + 1]
            i += 2
        elif a.startswith("-"):
            usage("unknown option %r" % a)
        else:
            pos.append(a)
            i += 1
    if len(pos) != 1:
        usage("one OUT folder expected, got %d arguments" % len(pos))
    if opts.get("--bytes", "write") not in ("read", "write"):
        usage("--bytes must be read or write, got %r" % opts["--bytes"])
    if opts.get("--kind", "refresh") not in ("refresh", "reuse", "mixed"):
        usage("--kind must be refresh, reuse or mixed, got %r" % opts["--kind"])
    if "--points" in opts:
        try:
            opts["--points"] = [int(x) for x in opts["--points"].split(",")]
        except ValueError:
            usage("--points wants layer row numbers (1, 2, ...) separated by commas, got %r" % opts["--points"])
        if any(x < 1 for x in opts["--points"]):
            usage("--points: row numbers count from 1")
    return pos[0], opts


def set_dirs(out):
    """(set name, folder) of each set OUT's tables.txt names, in its order"""
    t = os.path.join(out, "tables.txt")
    if not os.path.isdir(out):
        L.die("%s: %s (give a scripts/ncu_score.sh output folder)" % (
            out, "not a folder" if os.path.exists(out) else "no such folder"))
    lines = [x.strip() for x in L.script_io.read_text(t, lambda m: L.die(
        m + " (give a scripts/ncu_score.sh output folder)")).splitlines() if x.strip()]
    return [(x.split("/")[0], os.path.join(out, os.path.dirname(x))) for x in lines]


def step_kind(s):
    return "refresh" if s["n_reuse"] == 0 and s["n_refresh"] > 0 else \
        "reuse" if s["n_refresh"] == 0 and s["n_reuse"] > 0 else "mixed"


def collect(out, opts, seen):
    """Every paired step: dicts with set, point, step, model, kind, rows (q_tokens) and the layer's rows; SEEN gets
    every model and step kind the sets hold"""
    d = 1 if opts.get("--bytes", "write") == "read" else 2
    steps = []
    for name, folder in set_dirs(out):
        real, sim = os.path.join(folder, "real.h5"), os.path.join(folder, "sim.h5")
        if not (os.path.exists(real) and os.path.exists(sim)):
            sys.stderr.write("ncu_layer_sets.py: set %s: no real.h5 and sim.h5 in %s, left out\n" % (name, folder))
            continue
        for key, point, r, l2, bounds in L.pairs(real, sim):
            model = r.attrs.get("model_preset", b"?")
            model = model.decode() if isinstance(model, bytes) else str(model)
            seen.add(model)
            if "--model" in opts and model != opts["--model"]:
                continue
            nk, st = L.real_tables(r, "%s: %s" % (real, key), step_fields=("n_reuse", "n_refresh", "q_tokens"))
            for j in range(len(st)):
                kind = step_kind(st[j])
                seen.add(kind)
                if "--kind" in opts and kind != opts["--kind"]:
                    continue
                rows, _, _, _ = L.layer_table("%s: %s" % (real, key), j, L.step_kernels(nk, bounds[j], bounds[j + 1]),
                                              L.step_replay(sim, key[:-5] + ":sim", l2, j))
                lay = [(x[0], x[d], sum(x[d + 2]) / len(x[d + 2])) for x in rows]
                steps.append({"set": name, "point": point, "step": j, "model": model, "kind": kind,
                              "rows": int(st[j]["q_tokens"]), "layer": lay,
                              "sig": tuple(k for k, _, _ in lay)})
    return steps


def step_key(s):
    return s["set"], s["point"], s["step"]


def within(a, b):
    return abs(a - b) <= WITHIN * b if b >= FLOOR else a < FLOOR


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # quiet under head
    out, opts = parse(argv)
    seen = set()
    steps = collect(out, opts, seen)
    trial = {}   # --against: the other score's steps by step_key, its replay's rows
    if "--against" in opts:
        trial = {step_key(t): t for t in collect(opts["--against"], opts, set())}
        missing = [s for s in steps if step_key(s) not in trial or trial[step_key(s)]["sig"] != s["sig"]]
        if missing:
            m = missing[0]
            L.die("--against %s: %d of %d steps have no twin with the same layer (first: set %s, %s step %d)" % (
                opts["--against"], len(missing), len(steps), m["set"], m["point"], m["step"]))
    if not steps:
        L.die("no step to show in %s%s (its sets hold: %s)" % (
            out, "".join(" %s %s" % (k, v) for k, v in opts.items() if k in ("--model", "--kind")),
            ", ".join(sorted(seen)) or "no paired run"))
    longest = max(len(s["sig"]) for s in steps)
    absent = [x for x in opts.get("--points", []) if x > longest]
    if absent:   # checked before any table is printed
        L.die("--points %s: no table has row #%d (the longest layer has %d rows)" % (
            ",".join(map(str, opts["--points"])), absent[0], longest))
    groups = collections.OrderedDict()
    for s in sorted(steps, key=lambda s: (s["model"], s["kind"])):
        groups.setdefault((s["model"], s["kind"]), []).append(s)
    what = opts.get("--bytes", "write")
    for (model, kind), ss in groups.items():
        sigs = [sig for sig, _ in collections.Counter(s["sig"] for s in ss).most_common()]
        for n_sig, sig in enumerate(sigs):
            sub = [s for s in ss if s["sig"] == sig]
            tag = kind if n_sig == 0 else "%s (other layer %d: %s)" % (kind, n_sig, " ".join(
                L.NAMES.get(k, str(k)) for k in sig))
            print("### %s, %s steps: %d (%s MB, the replay's layer against Nsight Compute's mean layer)\n" % (
                model, tag, len(sub), what))
            vs = " | against: replay MB | steps within 5 %" if trial else ""
            print("| # | class | replay MB | ncu MB | replay - ncu | steps within 5 %% | after it, replay - ncu so far "
                  "a step: mean (min..max) MB%s |" % vs)
            print("|---|---|---|---|---|---|---|%s" % ("---|---|" if trial else ""))
            run = [0.0] * len(sub)   # each step's replay - ncu over the layer's rows so far
            twins = [trial[step_key(s)] for s in sub] if trial else []
            for i, k in enumerate(sig):
                a = sum(s["layer"][i][1] for s in sub) / 1e6
                b = sum(s["layer"][i][2] for s in sub) / 1e6
                n = sum(within(s["layer"][i][1], s["layer"][i][2]) for s in sub)
                run = [r + (s["layer"][i][1] - s["layer"][i][2]) / 1e6 for r, s in zip(run, sub)]
                other = ""
                if twins:   # the other score's replay against the same Nsight Compute rows
                    ts = [t["layer"][i][1] for t in twins]
                    other = " | %.1f | %d / %d" % (sum(ts) / 1e6, sum(within(t, s["layer"][i][2])
                                                                       for t, s in zip(ts, sub)), len(sub))
                print("| %d | %s | %.1f | %.1f | %+.1f | %d / %d | %+.2f (%+.1f..%+.1f)%s |" % (
                    i + 1, L.NAMES.get(k, str(k)), a, b, a - b, n, len(sub), sum(run) / len(run), min(run), max(run),
                    other))
            print()
            if "--points" in opts:
                pts = [x for x in opts["--points"] if x <= len(sig)]
                if not pts:
                    continue
                print("| set | point | step | rows | %s |" % " | ".join(
                    "#%d %s replay / ncu" % (x, L.NAMES.get(sig[x - 1], "?")) for x in pts))
                print("|---|---|---|---|" + "---|" * len(pts))
                for s in sorted(sub, key=lambda s: (s["rows"], s["set"], s["point"], s["step"])):
                    print("| %s | %s | %d | %d | %s |" % (s["set"], s["point"], s["step"], s["rows"], " | ".join(
                        "%.2f / %.2f" % (s["layer"][x - 1][1] / 1e6, s["layer"][x - 1][2] / 1e6) for x in pts)))
                print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
