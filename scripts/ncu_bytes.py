#!/usr/bin/python3
"""ncu_bytes.py - HBM bytes per kernel class, counted (core/cost) against Nsight Compute (issue 9).

    /usr/bin/python3 scripts/ncu_bytes.py REAL.h5 SIM.h5 [-o TABLE.md]

REAL.h5: runs NAME:real carrying `ncu_classes` (dkv ncu-import: dram__bytes_read.sum /
dram__bytes_write.sum summed per kernel class); SIM.h5: the twin runs NAME:sim whose `kernels`
table holds the counted bytes of the same plans (dkv.simulate; the counts are core/cost's, the
same a dkv.execute run reports).  Every class either side has is listed, reads and writes apart,
plus all classes together; setup kernels (weight initialisation) are not part of any step and are
left out.  Prints a markdown table; the criterion comes first.  Exit 0 when a table was written
(PASS/MISS is the table's business), 1 when no run of REAL has ncu figures or a twin is missing, or a file is
not a dkv results file or lacks a table or field read here (the message names it), 2 on usage.  TABLE.md is
written through TABLE.md.tmp and renamed (a failed write leaves no half table).
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (open_h5, table, write_text)

CLASSES = ["qkv", "attn", "o_proj", "ffn", "lm_head", "kv_store", "kv_gather", "reorder", "elementwise", "compress"]
TOL = 0.05


def die(msg, status=1):
    sys.stderr.write("ncu_bytes: %s\n" % msg)
    sys.exit(status)


def counted(sim_run, where="run"):
    k = script_io.table(sim_run, "kernels", where, die, ("kind", "read_bytes", "write_bytes"))
    out = {}
    for c in range(len(CLASSES)):
        sel = k["kind"] == c
        if sel.any():
            out[CLASSES[c]] = (float(np.sum(k["read_bytes"][sel])), float(np.sum(k["write_bytes"][sel])))
    return out


def measured(real_run, where="run"):
    out = {}
    for r in script_io.table(real_run, "ncu_classes", where, die, ("name", "read_bytes", "write_bytes")):
        name = r["name"].decode() if isinstance(r["name"], bytes) else str(r["name"])
        if name in CLASSES or name == "unknown":
            out[name] = (float(r["read_bytes"]), float(r["write_bytes"]))
    return out


def cell(c, m):
    if m == 0:
        return ("-", "n/a (ncu 0)") if c else ("+0.0%", "PASS")
    e = (c - m) / m
    return ("%+.1f%%" % (100 * e), "PASS" if abs(e) <= TOL else "MISS")


def main(argv):
    args = [a for a in argv[1:]]
    if args[:1] in (["-h"], ["--help"]):
        sys.stdout.write(__doc__)
        return 0
    out = None
    if "-o" in args:
        i = args.index("-o")
        if i + 1 >= len(args):
            die("-o needs a file (-o TABLE.md)", 2)
        out = args[i + 1]
        del args[i:i + 2]
    script_io.unknown_options("ncu_bytes.py", args)
    if len(args) != 2:
        sys.stderr.write(__doc__)
        return 2
    real, sim = script_io.open_h5(args[0], die), script_io.open_h5(args[1], die)
    lines = ["Criterion (issue 9): for every kernel class, counted HBM bytes (core/cost, what dkv.simulate and "
             "dkv.execute report) within 5 % of Nsight Compute's dram__bytes_read.sum (reads) and "
             "dram__bytes_write.sum (writes), each direction on its own; ncu ran with --cache-control none "
             "(no flush between kernels).  Error = (counted - ncu) / ncu, summed over the run's steps.", ""]
    n_points = 0
    for name in sorted(real["runs"]):
        if not name.endswith(":real") or not isinstance(real["runs"][name], h5py.Group) or \
                "ncu_classes" not in real["runs"][name]:
            continue
        twin = name[:-5] + ":sim"
        if twin not in sim["runs"]:
            sys.stderr.write("ncu_bytes: %s has ncu figures but %s has no run %s\n" % (args[0], args[1], twin))
            return 1
        n_points += 1
        cnt = counted(sim["runs"][twin], "%s: run %s" % (args[1], twin))
        mea = measured(real["runs"][name], "%s: run %s" % (args[0], name))
        lines += ["### %s" % name[:-5], "",
                  "| class | counted read GB | ncu read GB | read error | read | counted write GB | ncu write GB "
                  "| write error | write |", "|---|---|---|---|---|---|---|---|---|"]
        tot = [0.0, 0.0, 0.0, 0.0]
        passed = [0, 0]
        for cl in CLASSES + ["unknown"]:
            if cl not in cnt and cl not in mea:
                continue
            cr, cw = cnt.get(cl, (0.0, 0.0))
            mr, mw = mea.get(cl, (0.0, 0.0))
            tot = [tot[0] + cr, tot[1] + mr, tot[2] + cw, tot[3] + mw]
            er, vr = cell(cr, mr)
            ew, vw = cell(cw, mw)
            passed[0] += vr == "PASS"
            passed[1] += vw == "PASS"
            lines.append("| %s | %.4f | %.4f | %s | %s | %.4f | %.4f | %s | %s |"
                         % (cl, cr / 1e9, mr / 1e9, er, vr, cw / 1e9, mw / 1e9, ew, vw))
        er, vr = cell(tot[0], tot[1])
        ew, vw = cell(tot[2], tot[3])
        lines.append("| **all** | %.4f | %.4f | %s | %s | %.4f | %.4f | %s | %s |"
                     % (tot[0] / 1e9, tot[1] / 1e9, er, vr, tot[2] / 1e9, tot[3] / 1e9, ew, vw))
        ncl = sum(1 for cl in CLASSES + ["unknown"] if cl in cnt or cl in mea)
        lines += ["", "%s: reads within 5 %% in %d of %d classes, writes in %d of %d" % (name[:-5], passed[0], ncl,
                                                                                      passed[1], ncl), ""]
    if n_points == 0:
        sys.stderr.write("ncu_bytes: no run of %s has ncu_classes (dkv ncu-import)\n" % args[0])
        return 1
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if out:
        try:
            script_io.write_text(out, text, inputs=args[:2])
        except OSError as e:
            die("%s: cannot write: %s" % (out, e.strerror))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
