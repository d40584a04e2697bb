#!/usr/bin/env python3
"""ab_steps.py - device call 115's A/B of the compressor warm-up: for each run folder (ab_on, ab_off, ab_on2) the
held-out point bg:dual+prog's step holding the run's first compression (the first step with PCIe d2h bytes, measured
run), its measured and simulated time, and the run's step mean |error|, request latency p50 / p99 and tokens/s
against the simulated twin.

    /usr/bin/python3 ab_steps.py AB_DIR      (AB_DIR: the unpacked ab/ of ab.tgz, or a stand-in with the same layout)
"""
import os
import sys

import h5py
import numpy as np

POINT = "ho:bg:dual+prog"


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stderr if len(sys.argv) != 2 else sys.stdout)
        sys.exit(2 if len(sys.argv) != 2 else 0)
    root = sys.argv[1]
    if os.path.isdir(os.path.join(root, "ab")):
        root = os.path.join(root, "ab")
    print("| run | first-compression step | measured ms | simulated ms | error | step mean abs error | p50 error "
          "| p99 error | tokens/s error |")
    print("|---|---|---|---|---|---|---|---|---|")
    n = 0
    for name in ("ab_on", "ab_off", "ab_on2"):
        path = os.path.join(root, name, "heldout.h5")
        if not os.path.exists(path):
            print("| %s | (no %s) | | | | | | | |" % (name, path))
            continue
        with h5py.File(path, "r") as f:
            runs = f["runs"]
            if POINT + ":real" not in runs or POINT + ":sim" not in runs:
                sys.exit("ab_steps.py: %s lacks %s:real or :sim" % (path, POINT))
            real, sim = runs[POINT + ":real"], runs[POINT + ":sim"]
            rs, ss = real["steps"][:], sim["steps"][:]
            first = np.nonzero(rs["pcie_d2h_bytes"] > 0)[0]
            if len(first) == 0:
                sys.exit("ab_steps.py: %s: no step of the measured run copies to the host" % path)
            i = int(first[0])
            m = min(len(rs), len(ss))
            same = m == len(rs) == len(ss) and np.array_equal(rs["q_tokens"], ss["q_tokens"])
            err = (ss["time_s"][:m] - rs["time_s"][:m]) / rs["time_s"][:m]
            sm = "%.2f %%" % (100 * np.mean(np.abs(err))) if same else "plans differ"
            si = ss["time_s"][i] if i < len(ss) else float("nan")

            def rel(key):
                a, b = float(real["summary"].attrs[key]), float(sim["summary"].attrs[key])
                return "%+.1f %%" % (100 * (b - a) / a) if a else "-"
            print("| %s | %d | %.1f | %.1f | %+.1f %% | %s | %s | %s | %s |" % (
                name, i, 1e3 * rs["time_s"][i], 1e3 * si, 100 * (si - rs["time_s"][i]) / rs["time_s"][i], sm,
                rel("latency_p50_s"), rel("latency_p99_s"), rel("tokens_per_s")))
            n += 1
    sys.exit(0 if n else 1)


if __name__ == "__main__":
    main()
