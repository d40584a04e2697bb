#!/usr/bin/python3
"""ncu_repeat.py - how reproducible Nsight Compute's DRAM bytes per kernel class are (issue 9's per-class HBM
target, docs/BENCHMARKS.md "HBM bytes per kernel class"): the same validation point profiled several times
(`scripts/hw_session.sh device` with STEPS=ncu, any NCU_CACHE), each run imported with `dkv ncu-import` into a
copy of its own results file, then per class the read and write GB of every run and the largest spread
between them, (max - min) / mean:

    /usr/bin/python3 scripts/ncu_repeat.py DKV POINT DIR...

DIR: a folder holding ncu_<point>.csv and prof_<point>.h5 (POINT as w3:dual: files ncu_w3_dual.csv,
prof_w3_dual.h5), e.g. call 30's ncu/ and call 43's a/ncu, b/ncu.  A class whose spread exceeds 5 % cannot
be held to 5 % of any one run by a deterministic count.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from ncu_bytes import CLASSES   # dkv's kernel classes in ncu_classes' kind order (scripts/ncu_bytes.py)


def classes(dkv, d, point):
    tag = point.replace(":", "_")
    csv, h5 = os.path.join(d, "ncu_%s.csv" % tag), os.path.join(d, "prof_%s.h5" % tag)
    for f in (csv, h5):
        if not os.path.exists(f):
            sys.exit("ncu_repeat: %s: no such file" % f)
    tmp = os.path.join(tempfile.mkdtemp(prefix="ncu-repeat-"), "r.h5")
    shutil.copy(h5, tmp)
    run = "val:%s:real" % point
    p = subprocess.run([dkv, "ncu-import", csv, tmp, "--run", run, "--replace"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("ncu_repeat: dkv ncu-import %s: %s" % (csv, p.stderr.strip()))
    t = h5py.File(tmp, "r")["runs/%s/ncu_classes" % run][()]
    out = {}
    for r in t:
        k = int(r["kind"])
        if 0 <= k < len(CLASSES):
            out[CLASSES[k]] = (float(r["read_bytes"]) / 1e9, float(r["write_bytes"]) / 1e9)
    return out


def main():
    if len(sys.argv) < 4 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    dkv, point, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
    runs = [classes(dkv, d, point) for d in dirs]
    print("%s: DRAM GB per class in %d runs (%s); spread = (max - min) / mean" % (point, len(runs), ", ".join(dirs)))
    print("| class | " + " | ".join("read %d" % (i + 1) for i in range(len(runs))) + " | read spread | " +
          " | ".join("write %d" % (i + 1) for i in range(len(runs))) + " | write spread |")
    print("|---|" + "---|" * (2 * len(runs) + 2))
    for c in CLASSES:
        if not all(c in r for r in runs):
            continue
        rd, wr = np.array([r[c][0] for r in runs]), np.array([r[c][1] for r in runs])
        sp = lambda v: (v.max() - v.min()) / v.mean() * 100 if v.mean() > 0 else 0.0
        print("| %s | %s | %.1f %% | %s | %.1f %% |" % (c, " | ".join("%.4f" % v for v in rd), sp(rd),
                                                     " | ".join("%.4f" % v for v in wr), sp(wr)))


if __name__ == "__main__":
    main()
