#!/usr/bin/python3
"""quality_compare.py - the quality frontier of the CPU and the CUDA backend side by side.

Reads the run `quality` (table `points`) of two results files of experiments/quality_frontier.lua,
one run with -D backend=cpu and one with -D backend=cuda, on the same prompts, targets, weights and
block, and prints per point (configuration): the bytes (the engine's peak device KV and peak host
KV: the same plans on either backend, so a difference is flagged), and for each backend the token
agreement with its own no-cache decode, the held-out bits per byte, the accuracy, and the
difference CUDA - CPU of each.  Points present in one file only are listed under the table.

    /usr/bin/python3 scripts/quality_compare.py CPU.h5 CUDA.h5 [--md] [--tol-bpb 0.05] [--tol-acc 0.02]

A file whose params say backend = cpu in the CUDA position (a CPU run, with or without
bf16_activations, standing in for the GPU) is labelled STAND-IN in the heading.  The bits-per-byte
and accuracy columns are also checked against the GPU test's tolerances (tests/gpu/
test_backend_score.c: |d bpb| <= 0.05, |d acc| <= 0.02; the criterion is printed before the
table); agreement is printed only (free-running decodes diverge from the first near-tie on, so
two backends' agreements differ legitimately).  Exit 0 when both files were read (whatever the
verdicts), 1 on an unusable file or mismatched runs (the message names the file and field), 2 on
usage.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (open_h5, group, table: a file refused in one line naming it)

SAME = ("prompts", "targets", "weights", "block")   # params both runs must share


def read(path, role):
    def die(msg):
        sys.exit("quality_compare: %s" % msg.replace(path, "%s (%s file)" % (path, role), 1))
    with script_io.open_h5(path, die) as f:
        if "runs/quality/points" not in f:
            sys.exit("quality_compare: %s (%s file) has no run 'quality' with a table 'points' "
                     "(made by experiments/quality_frontier.lua)" % (path, role))
        where = "%s: run 'quality'" % path
        need = ("point", "peak_kv_bytes", "peak_host_bytes", "agreement", "bits_per_byte", "accuracy")
        pts = script_io.table(f["runs/quality"], "points", where, die, need)
        par = {k: (v.decode() if isinstance(v, bytes) else v)
               for k, v in script_io.group(f["runs/quality"], "params", where, die).attrs.items()}
    rows = {}
    for p in pts:
        rows[p["point"].decode()] = {c: p[c] for c in pts.dtype.names}
    par.setdefault("backend", "cpu")   # files from before -D backend existed ran on the CPU
    return par, rows, [p["point"].decode() for p in pts]


def fmt(x, spec):
    return "nan" if isinstance(x, float) and math.isnan(x) else format(x, spec)


def main():
    ap = script_io.arg_parser(description=__doc__.split("\n")[0])
    ap.add_argument("cpu")
    ap.add_argument("cuda")
    ap.add_argument("--md", action="store_true", help="a Markdown table")
    ap.add_argument("--tol-bpb", type=float, default=0.05)
    ap.add_argument("--tol-acc", type=float, default=0.02)
    a = ap.parse_args()
    pc, rc, order = read(a.cpu, "CPU")
    pg, rg, order_g = read(a.cuda, "CUDA")
    if pc["backend"] != "cpu":
        sys.exit("quality_compare: %s (CPU file): params.backend is '%s', not 'cpu'" % (a.cpu, pc["backend"]))
    for k in SAME:
        if str(pc.get(k)) != str(pg.get(k)):
            sys.exit("quality_compare: the runs differ in params.%s: '%s' (%s) vs '%s' (%s): not the same "
                     "frontier" % (k, pc.get(k), a.cpu, pg.get(k), a.cuda))
    standin = pg["backend"] != "cuda"
    label = "CUDA" if not standin else "STAND-IN for CUDA (a CPU run%s)" % (
        ", bf16-emulated activations" if pg.get("bf16_activations") else "")
    print("quality frontier, CPU (%s) against %s (%s)" % (a.cpu, label, a.cuda))
    print("prompts %s, targets %s, block %s; devices: %s | %s" % (pc.get("prompts"), pc.get("targets"),
          pc.get("block"), pc.get("device", "?"), pg.get("device", "?")))
    print("criterion per point (the GPU test's tolerances, bf16 vs fp32): |d bits/byte| <= %.2f and "
          "|d accuracy| <= %.2f -> ok, else DIFF; agreement (free-running) printed only; d = CUDA - CPU"
          % (a.tol_bpb, a.tol_acc))
    both = [p for p in order if p in rg]
    hdr = ["point", "kv_peak", "host_peak", "agree cpu", "agree cuda", "d agree", "bpb cpu", "bpb cuda", "d bpb",
           "acc cpu", "acc cuda", "d acc", "verdict"]
    lines, n_ok = [], 0
    for p in both:
        c, g = rc[p], rg[p]
        kv = "%d" % c["peak_kv_bytes"] if c["peak_kv_bytes"] == g["peak_kv_bytes"] else \
            "%d|%d!" % (c["peak_kv_bytes"], g["peak_kv_bytes"])
        host = "%d" % c["peak_host_bytes"] if c["peak_host_bytes"] == g["peak_host_bytes"] else \
            "%d|%d!" % (c["peak_host_bytes"], g["peak_host_bytes"])
        db, da = g["bits_per_byte"] - c["bits_per_byte"], g["accuracy"] - c["accuracy"]
        ok = abs(db) <= a.tol_bpb and abs(da) <= a.tol_acc
        n_ok += ok
        lines.append([p, kv, host, fmt(c["agreement"], ".3f"), fmt(g["agreement"], ".3f"),
                      fmt(g["agreement"] - c["agreement"], "+.3f"), fmt(c["bits_per_byte"], ".4f"),
                      fmt(g["bits_per_byte"], ".4f"), fmt(db, "+.4f"), fmt(c["accuracy"], ".4f"),
                      fmt(g["accuracy"], ".4f"), fmt(da, "+.4f"), "ok" if ok else "DIFF"])
    if a.md:
        print("| " + " | ".join(hdr) + " |")
        print("|" + "---|" * len(hdr))
        for ln in lines:
            print("| " + " | ".join(ln) + " |")
    else:
        w = [max(len(h), *(len(ln[i]) for ln in lines)) if lines else len(h) for i, h in enumerate(hdr)]
        print("  ".join(h.rjust(w[i]) if i else h.ljust(w[i]) for i, h in enumerate(hdr)))
        for ln in lines:
            print("  ".join(x.rjust(w[i]) if i else x.ljust(w[i]) for i, x in enumerate(ln)))
    print("%d of %d points within the tolerances%s" % (n_ok, len(both),
          "" if not any("!" in ln[1] + ln[2] for ln in lines) else "; ! = the engine's bytes differ (not the same plans)"))
    for role, par in (("CPU", pc), ("CUDA", pg)):
        if par.get("failed"):
            print("FAILED in the %s run (-D keep_going: left out of its tables): %s" % (role, par["failed"]))
    only_c = [p for p in order if p not in rg]
    only_g = [p for p in order_g if p not in rc]
    if only_c:
        print("only in the CPU file: " + ", ".join(only_c))
    if only_g:
        print("only in the CUDA file: " + ", ".join(only_g))


if __name__ == "__main__":
    main()
