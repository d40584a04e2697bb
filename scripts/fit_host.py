#!/usr/bin/python3
"""fit_host.py - the engine's planning time per step (a profile's host.base_s and host.per_item_s,
docs/PROFILE_FORMAT.md) fitted from executed runs' per-step host records.

    fit_host.py [--runs REGEX] [--write PROFILE.lua [--source TEXT]] FILE.h5 [FILE.h5 ...]

Every run whose name ends in ':real' and matches REGEX (default: all) and whose steps dataset has
host_plan_s (dkv.execute records it per step: the engine's scheduling, memory, plan building and
commit between two steps) contributes its steps.  Fit: host_plan_s = base_s + per_item_s x n_items,
least squares, both terms >= 0 (a negative one is set to 0 and the other refitted).  Prints the fit,
the runs, steps and the residual; with --write, sets base_s and per_item_s in PROFILE's host table
(the line `  host = {...}`) and records the source in a comment above it; nothing else of the
file changes.  Exit 1 on no usable run or an unreadable profile."""
import argparse
import re
import sys

import h5py
import numpy as np


def fit(x, y):
    A = np.stack([np.ones_like(x), x], axis=1)
    (b, p), *_ = np.linalg.lstsq(A, y, rcond=None)
    if p < 0:
        b, p = float(np.mean(y)), 0.0
    if b < 0:
        b, p = 0.0, float(np.dot(x, y) / np.dot(x, x))
    return float(b), float(p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--runs", default=".*", help="regex the run names must match (default: all)")
    ap.add_argument("--write", metavar="PROFILE.lua", help="set host.base_s / per_item_s in this profile")
    ap.add_argument("--source", help="where the files come from, for the profile's comment (default: their paths)")
    a = ap.parse_args()
    rx = re.compile(a.runs)
    xs, ys, used = [], [], []
    for f in a.files:
        try:
            runs = h5py.File(f, "r")["runs"]
        except (OSError, KeyError) as e:
            sys.exit("fit_host: %s: %s" % (f, e))
        for n in runs:
            if not n.endswith(":real") or not rx.search(n) or "steps" not in runs[n]:
                continue
            st = runs[n]["steps"][()]
            if "host_plan_s" not in st.dtype.names:
                continue
            ok = st["n_items"] > 0
            xs.append(st["n_items"][ok].astype(float))
            ys.append(st["host_plan_s"][ok].astype(float))
            used.append("%s:%s (%d steps)" % (f, n, int(ok.sum())))
    if not used:
        sys.exit("fit_host: no ':real' run with host_plan_s in %s (--runs %s)" % (", ".join(a.files), a.runs))
    x, y = np.concatenate(xs), np.concatenate(ys)
    b, p = fit(x, y)
    r = y - (b + p * x)
    print("fit_host: host_plan_s = %.4g s + %.4g s x items over %d steps of %d runs (items %d..%d); "
          "rms residual %.3g s, mean %.3g s" % (b, p, len(x), len(used), x.min(), x.max(), np.sqrt(np.mean(r * r)),
                                               np.mean(y)))
    for u in used:
        print("  " + u)
    if a.write:
        try:
            text = open(a.write).read()
        except OSError as e:
            sys.exit("fit_host: %s" % e)
        m = re.search(r"(?m)^(  -- base_s, per_item_s: fitted by scripts/fit_host\.py .*\n)?  host = \{(.*)\},\n", text)
        if not m:
            sys.exit("fit_host: %s: no line '  host = {...},'" % a.write)
        fields = [kv.strip() for kv in m.group(2).split(",") if kv.strip()]   # an earlier fit's note is replaced
        fields = [kv for kv in fields if not kv.startswith(("base_s", "per_item_s"))]
        line = "  host = {base_s = %.6g, per_item_s = %.6g, %s},\n" % (b, p, ", ".join(fields))
        note = ("  -- base_s, per_item_s: fitted by scripts/fit_host.py from %d steps of %d dkv.execute runs "
                "(%s; --runs '%s')\n" % (len(x), len(used), a.source or ", ".join(sorted(set(a.files))), a.runs))
        text = text[:m.start()] + note + line + text[m.end():]
        open(a.write, "w").write(text)
        print("fit_host: %s: host.base_s = %.6g, per_item_s = %.6g written" % (a.write, b, p))


if __name__ == "__main__":
    main()
