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
file changes (written through PROFILE.lua.tmp and renamed: a failed write leaves the profile as it was).
--source without --write, or a --runs that is not a regular expression, is refused (exit 2).  Exit 1 on a file
that is not a dkv results file, no usable run (or no step of one with n_items > 0) or an unreadable profile."""
import os
import re
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (open_h5, table, write_text)


def fit(x, y):
    A = np.stack([np.ones_like(x), x], axis=1)
    (b, p), *_ = np.linalg.lstsq(A, y, rcond=None)
    if p < 0:
        b, p = float(np.mean(y)), 0.0
    if b < 0:
        b, p = 0.0, float(np.dot(x, y) / np.dot(x, x))
    return float(b), float(p)


def die(msg, status=1):
    sys.stderr.write("fit_host: %s\n" % msg)
    sys.exit(status)


def main():
    ap = script_io.arg_parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--runs", default=".*", help="regex the run names must match (default: all)")
    ap.add_argument("--write", metavar="PROFILE.lua", help="set host.base_s / per_item_s in this profile")
    ap.add_argument("--source", help="where the files come from, for the profile's comment (default: their paths; "
                    "only with --write)")
    a = ap.parse_args()
    try:
        rx = re.compile(a.runs)
    except re.error as e:
        die("--runs %r: not a regular expression (%s)" % (a.runs, e), 2)
    if a.source is not None and not a.write:
        die("--source names the files in the profile's comment: it needs --write", 2)
    xs, ys, used = [], [], []
    for f in a.files:
        runs = script_io.open_h5(f, die)["runs"]
        for n in runs:
            g = runs[n]
            if not n.endswith(":real") or not rx.search(n) or not isinstance(g, h5py.Group) or "steps" not in g:
                continue
            names = g["steps"].dtype.names if isinstance(g["steps"], h5py.Dataset) else None
            if not names or "host_plan_s" not in names:
                continue
            st = script_io.table(g, "steps", "%s: run %s" % (f, n), die, ("n_items", "host_plan_s"))
            ok = st["n_items"] > 0
            xs.append(st["n_items"][ok].astype(float))
            ys.append(st["host_plan_s"][ok].astype(float))
            used.append("%s:%s (%d steps)" % (f, n, int(ok.sum())))
    if not used:
        sys.exit("fit_host: no ':real' run with host_plan_s in %s (--runs %s)" % (", ".join(a.files), a.runs))
    x, y = np.concatenate(xs), np.concatenate(ys)
    if len(x) == 0:
        die("no step with n_items > 0 in the %d ':real' run(s) with host_plan_s of %s (--runs %s): nothing to fit"
            % (len(used), ", ".join(a.files), a.runs))
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
        except (OSError, UnicodeDecodeError) as e:   # a results file given as the profile is not text
            sys.exit("fit_host: %s: %s" % (a.write, e.strerror if isinstance(e, OSError) else "not a text file (%s)" % e.reason))
        m = re.search(r"(?m)^(  -- base_s, per_item_s: fitted by scripts/fit_host\.py .*\n)?  host = \{(.*)\},\n", text)
        if not m:
            sys.exit("fit_host: %s: no line '  host = {...},'" % a.write)
        fields = [kv.strip() for kv in m.group(2).split(",") if kv.strip()]   # an earlier fit's note is replaced
        fields = [kv for kv in fields if not kv.startswith(("base_s", "per_item_s"))]
        line = "  host = {base_s = %.6g, per_item_s = %.6g, %s},\n" % (b, p, ", ".join(fields))
        note = ("  -- base_s, per_item_s: fitted by scripts/fit_host.py from %d steps of %d dkv.execute runs "
                "(%s; --runs '%s')\n" % (len(x), len(used), a.source or ", ".join(sorted(set(a.files))), a.runs))
        text = text[:m.start()] + note + line + text[m.end():]
        try:
            script_io.write_text(a.write, text, inputs=a.files)   # through PROFILE.lua.tmp: a failed write leaves the profile as it was
        except OSError as e:
            die("%s: cannot write: %s (the profile is unchanged)" % (a.write, e.strerror))
        print("fit_host: %s: host.base_s = %.6g, per_item_s = %.6g written" % (a.write, b, p))

if __name__ == "__main__":
    main()
