#!/usr/bin/python3
"""ncu_layer.py - where a step's HBM bytes land, kernel by kernel: the L2 replay's kernels of one layer (core/cost,
recorded with record.l2_kernels) beside Nsight Compute's kernels of the same step's layers, and the step's start and
end beside the replay's (docs/COST_MODEL.md "HBM bytes with an L2"; scripts/ncu_steps.py gives the class sums).

    /usr/bin/python3 scripts/ncu_layer.py REAL.h5 SIM.h5 [--point P] [--step S]
    /usr/bin/python3 scripts/ncu_layer.py REAL.h5 SIM.h5 --point P --step S --kernels L

REAL.h5: runs <study>:<point>:real with Nsight Compute's kernels imported (dkv ncu-import: ncu_kernels), e.g.
scripts/ncu_model_bytes.sh's OUT/real.h5 or scripts/ncu_score.sh's OUT/<set>/out/real.h5; SIM.h5: their :sim twins
simulated with record.l2_kernels = true (`hw_validate.lua -D backend=sim -D l2_kernels=true`, which both of those
scripts run: OUT/sim.h5).  Steps are split at the reset kernel that starts each (as ncu_steps.py); a step's layers at
each norm kernel followed by the q|k|v GEMM; the kernels before the first layer are the step's start, those after
the last layer's last FFN kernel its end.  Consecutive kernels of one class are one row (a GEMM and its split-K
reduction, the attention's passes); setup kernels (the weights' fill, the L2 flush diagnostic's flush_kernel) are
left out, so a run with opts.l2_flush pairs too (its flushes change what the kernels after them find in L2).  For each step: one row per such run of the layer, the replay's read and
written MB against Nsight Compute's mean over the layers but the first and the last (min-max beside), then the
start and the end per class.  --point keeps one point, --step one step (its index).  --kernels L (since session 40)
prints instead layer L's kernels one by one (L counts from 0): Nsight Compute's, each with its name, class, read and
written MB and time, then the replay's layer, each kernel's class, read and written MB (the figures a kernel-level
claim quotes, e.g. the selection's per-item reads in docs/COST_MODEL.md "The soft edge").  Exits 1 naming the file on
runs it cannot pair: no l2_kernels table (simulated without record.l2_kernels), steps without layers, a layer
whose run of classes is not the replay's (printed, both)."""
import os
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_gemm_reads  # noqa: E402  (step_bounds: the steps among the kernels)
import ncu_rows  # noqa: E402  (cli: the arguments)
import script_io  # noqa: E402  (open_h5, table: a file refused in one line naming it)

NAMES = {0: "qkv", 1: "attn", 2: "o_proj", 3: "ffn", 4: "lm_head", 5: "kv_store", 6: "kv_gather", 7: "reorder",
         8: "elementwise", 9: "compress", 10: "unknown", 11: "setup"}
ELEM, QKV, FFN, SETUP = 8, 0, 3, 11


def die(msg):
    sys.stderr.write("%s: %s\n" % (os.path.basename(sys.argv[0]) or "ncu_layer.py", msg))
    sys.exit(1)


def runs(kernels):
    """(kind, read, write) of each run of consecutive kernels of one class in KERNELS, a list of (kind, rd, wr)"""
    out = []
    for k, rd, wr in kernels:
        if out and out[-1][0] == k:
            out[-1] = (k, out[-1][1] + rd, out[-1][2] + wr)
        else:
            out.append((k, rd, wr))
    return out


def layer_bounds(ks):
    """KS, one step's kernels (each a tuple whose first item is its kind): the index of each layer's first kernel and
    one past the last layer's last FFN kernel, or None without a layer"""
    heads = [i - 1 for i in range(1, len(ks)) if ks[i][0] == QKV and ks[i - 1][0] == ELEM]
    ffn = [i for i in range(heads[-1], len(ks)) if ks[i][0] == FFN] if heads else []
    return heads + [ffn[-1] + 1] if ffn else None


def split_layers(ks):
    """KS, one step's Nsight Compute kernels as (kind, rd, wr): (start, [layer, ...], end), each a list of kernels"""
    bounds = layer_bounds(ks)
    if bounds is None:
        return None
    return ks[:bounds[0]], [ks[bounds[j]:bounds[j + 1]] for j in range(len(bounds) - 1)], ks[bounds[-1]:]


def kernels_of_layer(where, j, nk, lo, hi, layer, rep):
    """Prints layer LAYER of step J (NK's kernels lo..hi-1, the setup kernels left out) kernel by kernel, then the
    replay's layer (REP: (part, kind, rd, wr))"""
    ks = step_kernels(nk, lo, hi, named=True)
    bounds = layer_bounds(ks)
    if bounds is None:
        die("%s: step %d has no layer (a norm kernel then the q|k|v GEMM) among its %d kernels" % (where, j, len(ks)))
    if layer >= len(bounds) - 1:
        die("%s: step %d has %d layers, no layer %d" % (where, j, len(bounds) - 1, layer))
    print("### step %d, layer %d of %d: Nsight Compute's kernels\n" % (j, layer, len(bounds) - 1))
    print("| # | kernel | class | read MB | write MB | us |")
    print("|---|---|---|---|---|---|")
    for n, (k, rd, wr, name, t) in enumerate(ks[bounds[layer]:bounds[layer + 1]]):
        name = name.decode() if isinstance(name, bytes) else str(name)
        print("| %d | %s | %s | %s | %s | %.1f |" % (n + 1, name, NAMES.get(k, str(k)), mb(rd), mb(wr), t * 1e6))
    print("\n### step %d: the replay's layer\n" % j)
    print("| # | class | read MB | write MB |")
    print("|---|---|---|---|")
    for n, (_, k, rd, wr) in enumerate(x for x in rep if x[0] == 1):
        print("| %d | %s | %s | %s |" % (n + 1, NAMES.get(k, str(k)), mb(rd), mb(wr)))
    print()


def real_tables(r, where, named=False, step_fields=()):
    """(ncu_kernels, steps) of :real run R, read whole; exits naming WHERE and the table or field it lacks (the
    kernels' name, kind, read_bytes and write_bytes, with NAMED their time_s; the steps' STEP_FIELDS)"""
    return (script_io.table(r, "ncu_kernels", where, die, ("name", "kind", "read_bytes", "write_bytes")
                            + (("time_s",) if named else ())),
            script_io.table(r, "steps", where, die, step_fields))


def step_kernels(nk, lo, hi, named=False):
    """(kind, rd, wr) of the kernels lo..hi-1 of NK (an ncu_kernels table, or a dict of its columns), the setup
    kernels left out (the weights' fill; the L2 flush diagnostic's flush_kernel, docs/GPU.md), which no class has;
    with NAMED, (kind, rd, wr, name, seconds)"""
    return [(int(nk["kind"][i]), float(nk["read_bytes"][i]), float(nk["write_bytes"][i]))
            + ((nk["name"][i], float(nk["time_s"][i])) if named else ()) for i in range(lo, hi)
            if int(nk["kind"][i]) != SETUP]


def mb(x):
    return "%.3f" % (x / 1e6)


def err(a, b):
    return "%+.0f%%" % (100 * (a - b) / b) if b > 0 else "-"


def by_class(kernels):
    s = {}
    for k, rd, wr in kernels:
        c = s.setdefault(k, [0.0, 0.0])
        c[0] += rd
        c[1] += wr
    return s


def layer_table(where, j, ncu, rep):
    """Step J's layer rows: NCU, its kernels (kind, rd, wr); REP, the replay's records (part, kind, rd, wr).  Returns
    (rows, n_layers, start, end): rows one per run of the replay's layer, (kind, replay rd, replay wr, ncu reads,
    ncu writes), the ncu lists over the layers but the first and the last (all of them with at most two layers);
    start and end the step's kernels before and after its layers.  Exits naming WHERE on a step it cannot pair."""
    parts = split_layers(ncu)
    if parts is None:
        die("%s: step %d has no layer (a norm kernel then the q|k|v GEMM) among its %d kernels" % (where, j, len(ncu)))
    start, layers, end = parts
    lay = runs([(k, rd, wr) for p, k, rd, wr in rep if p == 1])
    mid = layers[1:-1] if len(layers) > 2 else layers
    cols = [runs(x) for x in mid]
    for i, c in enumerate(cols):
        if [k for k, _, _ in c] != [k for k, _, _ in lay]:
            die("%s: step %d, layer %d: Nsight Compute's classes %s, the replay's %s" % (
                where, j, i + (1 if len(layers) > 2 else 0), " ".join(NAMES.get(k, str(k)) for k, _, _ in c),
                " ".join(NAMES[k] for k, _, _ in lay)))
    rows = [(k, rd, wr, [c[i][1] for c in cols], [c[i][2] for c in cols]) for i, (k, rd, wr) in enumerate(lay)]
    return rows, len(layers), start, end


def report(where, point, j, ncu, rep):
    """Prints step J's tables; NCU: its kernels (kind, rd, wr); REP: the replay's records (part, kind, rd, wr)"""
    rows, nl, start, end = layer_table(where, j, ncu, rep)
    print("### %s step %d: %d layers (Nsight Compute's mean over layers 2-%d; the replay's one layer)" % (
        point, j, nl, nl - 1) if nl > 2 else "### %s step %d: %d layers" % (point, j, nl))
    print()
    print("| # | class | replay read MB | ncu read MB (min-max) | read | replay write MB | ncu write MB (min-max) | write |")
    print("|---|---|---|---|---|---|---|---|")
    for i, (k, rd, wr, r, w) in enumerate(rows):
        mr, mw = sum(r) / len(r), sum(w) / len(w)
        print("| %d | %s | %s | %s (%s-%s) | %s | %s | %s (%s-%s) | %s |" % (
            i + 1, NAMES[k], mb(rd), mb(mr), mb(min(r)), mb(max(r)), err(rd, mr), mb(wr), mb(mw), mb(min(w)),
            mb(max(w)), err(wr, mw)))
    print()
    for name, ks, p in (("start", start, 0), ("end", end, 2)):
        n, s = by_class(ks), by_class([(k, rd, wr) for q, k, rd, wr in rep if q == p])
        cells = ["%s read %s/%s write %s/%s" % (NAMES.get(k, str(k)), mb(s.get(k, [0, 0])[0]), mb(n.get(k, [0, 0])[0]),
                                                 mb(s.get(k, [0, 0])[1]), mb(n.get(k, [0, 0])[1]))
                 for k in sorted(set(n) | set(s))]
        print("step's %s (replay/ncu MB): %s" % (name, "; ".join(cells) if cells else "none"))
    print()


def pairs(real, sim, point=None):
    """Yields (key, point, real run, the sim twin's l2_kernels table, step bounds) for each :real run of the file
    REAL with ncu_kernels (POINT: that point's only), its :sim twin in SIM; exits naming the file on a twin missing
    or simulated without record.l2_kernels"""
    R, S = script_io.open_h5(real, die)["runs"], script_io.open_h5(sim, die)["runs"]
    for key in sorted(R):
        if not key.endswith(":real") or not isinstance(R[key], h5py.Group) or "ncu_kernels" not in R[key]:
            continue
        pt = key.split(":", 1)[1][:-5]
        if point is not None and pt != point:
            continue
        twin = key[:-5] + ":sim"
        if twin not in S:
            die("%s: %s has no %s in %s" % (real, key, twin, sim))
        if not isinstance(S[twin], h5py.Group) or "l2_kernels" not in S[twin]:
            die("%s: %s has no l2_kernels table (simulate it with record.l2_kernels = true: hw_validate.lua "
                "-D backend=sim -D l2_kernels=true)" % (sim, twin))
        l2 = script_io.table(S[twin], "l2_kernels", "%s: %s" % (sim, twin), die,
                             ("step_index", "l2_seq", "l2_part", "kind", "read_bytes", "write_bytes"))
        yield key, pt, R[key], l2, ncu_gemm_reads.step_bounds(R[key], "%s: %s" % (real, key), die)


def step_replay(sim, twin, l2, j):
    """The replay's records of step J, (part, kind, rd, wr) in their order; exits when there are none"""
    sel = l2[l2["step_index"] == j]
    if len(sel) == 0:
        die("%s: %s has no l2_kernels records of step %d" % (sim, twin, j))
    return [x[1:] for x in sorted((int(x["l2_seq"]), int(x["l2_part"]), int(x["kind"]), float(x["read_bytes"]),
                                   float(x["write_bytes"])) for x in sel)]


def main(argv):
    _, opts = ncu_rows.cli(argv, __doc__, 2, ("--point", "--step", "--kernels"), die)
    if "--step" in opts and not opts["--step"].isdigit():
        die("--step wants a step index (0, 1, ...), got %r" % opts["--step"])
    if "--kernels" in opts and not opts["--kernels"].isdigit():
        die("--kernels wants a layer index (0, 1, ...), got %r" % opts["--kernels"])
    if "--kernels" in opts and ("--point" not in opts or "--step" not in opts):
        die("--kernels needs --point and --step (one layer of one step)")
    n, n_runs, most = 0, 0, 0   # steps shown; runs paired, the most steps of one
    for key, point, r, l2, bounds in pairs(argv[0], argv[1], opts.get("--point")):
        nk, st = real_tables(r, "%s: %s" % (argv[0], key), named="--kernels" in opts)
        n_runs, most = n_runs + 1, max(most, len(st))
        for j in range(len(st)):
            if "--step" in opts and j != int(opts["--step"]):
                continue
            ncu = step_kernels(nk, bounds[j], bounds[j + 1])
            rep = step_replay(argv[1], key[:-5] + ":sim", l2, j)
            if "--kernels" in opts:
                kernels_of_layer("%s: %s" % (argv[0], key), j, nk, bounds[j], bounds[j + 1], int(opts["--kernels"]),
                                 rep)
            else:
                report("%s: %s" % (argv[0], key), point, j, ncu, rep)
            n += 1
    if n == 0 and n_runs and "--step" in opts:
        die("%s: --step %s: out of range: %s has steps 0..%d" % (
            argv[0], opts["--step"], "its :real run" if n_runs == 1 else "the longest of its %d :real runs" % n_runs,
            most - 1) if most else "%s: --step %s: its :real runs have no step" % (argv[0], opts["--step"]))
    if n == 0:
        die("no step to show (no :real run with ncu_kernels%s)" % (
            " at point %s" % opts["--point"] if "--point" in opts else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
