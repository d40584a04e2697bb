#!/usr/bin/env python3
"""offload_steps.py - per-step accounting of an offload point's real run against its re-simulated twin.

    /usr/bin/python3 scripts/offload_steps.py RES [--point ho:bg:dual+prog] [--steps]

RES is a folder written by `scripts/hw_session.sh post` (RES/h5/heldout.h5 holds the :real run,
RES/sim/heldout.h5 the :sim twin this dkv re-simulated).  Steps are taken by index up to the first
step whose items differ (n_items, q_tokens, logit_rows); over that common prefix it splits the steps
into those whose measured fetch exceeds the simulated one's bytes (before session 12's sim_lowrank.c
the simulator reported the plan's bytes, while the CUDA backend copies a low-rank form larger than
the plan's ratio x raw and rebuilds it: cuda/arena.c fetch_lowrank / rebuild_lowrank) and those
whose fetch bytes agree, and sums time, stall (the wait before the forward), compute and the copy
stream's time (pcie_s) of each half.  --steps prints every step of the prefix too.
Docs: docs/BENCHMARKS.md, "bg:dual+prog per step".
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (open_h5, group, table: a file refused in one line naming it)

FIELDS = ("n_items", "q_tokens", "logit_rows", "start_s", "n_admitted", "n_running", "pcie_h2d_bytes",
          "pcie_d2h_bytes", "time_s", "stall_s", "compute_s", "pcie_s")


def die(msg):
    sys.exit("offload_steps: " + msg)


def load(path, run):
    if not os.path.exists(path):
        die("%s: no such file (run scripts/hw_session.sh post first)" % path)
    with script_io.open_h5(path, die) as f:
        if run not in f["runs"]:
            die("%s has no run %s" % (path, run))
        return script_io.table(script_io.group(f["runs"], run, "%s: runs" % path, die), "steps",
                               "%s: run %s" % (path, run), die, FIELDS)


def main():
    ap = script_io.arg_parser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("res")
    ap.add_argument("--point", default="ho:bg:dual+prog")
    ap.add_argument("--steps", action="store_true")
    a = ap.parse_args()
    R = load(os.path.join(a.res, "h5", "heldout.h5"), a.point + ":real")
    S = load(os.path.join(a.res, "sim", "heldout.h5"), a.point + ":sim")
    n = min(len(R), len(S))
    key = ("n_items", "q_tokens", "logit_rows")
    first = next((i for i in range(n) if any(R[i][c] != S[i][c] for c in key)), n)
    print("%s %s: %d / %d steps (real / sim); items equal through step %d" % (a.res, a.point, len(R), len(S), first - 1))
    if first < n:
        i = first
        print("  step %d: real starts at %.4f s (%d admitted, %d running), sim at %.4f s (%d admitted, %d running)" % (
            i, R[i]["start_s"], R[i]["n_admitted"], R[i]["n_running"], S[i]["start_s"], S[i]["n_admitted"], S[i]["n_running"]))
    if a.steps:
        print("  step items q | h2d MB real sim | d2h MB real sim | time ms real sim | stall real sim | compute real sim"
              " | copy stream real sim")
        for i in range(first):
            r, s = R[i], S[i]
            print("  %4d %2d %4d | %7.1f %7.1f | %6.1f %6.1f | %6.2f %6.2f | %6.2f %6.2f | %6.2f %6.2f | %6.2f %6.2f" % (
                i, r["n_items"], r["q_tokens"], r["pcie_h2d_bytes"] / 1e6, s["pcie_h2d_bytes"] / 1e6,
                r["pcie_d2h_bytes"] / 1e6, s["pcie_d2h_bytes"] / 1e6, r["time_s"] * 1e3, s["time_s"] * 1e3,
                r["stall_s"] * 1e3, s["stall_s"] * 1e3, r["compute_s"] * 1e3, s["compute_s"] * 1e3,
                r["pcie_s"] * 1e3, s["pcie_s"] * 1e3))
    r0, s0 = R[:first], S[:first]
    tr, ts = r0["time_s"].sum(), s0["time_s"].sum()
    print("  common prefix: time %.1f ms real, %.1f sim (%+.1f %%)" % (tr * 1e3, ts * 1e3, 100 * (ts / tr - 1) if tr else 0))
    more = r0["pcie_h2d_bytes"] > s0["pcie_h2d_bytes"]
    same = (r0["pcie_h2d_bytes"] == s0["pcie_h2d_bytes"]) & (r0["pcie_h2d_bytes"] > 0)
    for name, m in (("real fetch > simulated", more), ("real fetch = simulated > 0", same)):
        r, s = r0[m], s0[m]
        if not len(r):
            print("  %s: no steps" % name)
            continue
        t = lambda x, c: x[c].sum() * 1e3
        print("  %s: %d steps; time %.1f / %.1f ms (%+.1f %%); stall %.1f / %.1f; compute %.1f / %.1f; copy stream %.1f / "
              "%.1f ms; h2d %.0f / %.0f MB" % (name, len(r), t(r, "time_s"), t(s, "time_s"),
                                               100 * (t(s, "time_s") / t(r, "time_s") - 1), t(r, "stall_s"), t(s, "stall_s"),
                                               t(r, "compute_s"), t(s, "compute_s"), t(r, "pcie_s"), t(s, "pcie_s"),
                                               r["pcie_h2d_bytes"].sum() / 1e6, s["pcie_h2d_bytes"].sum() / 1e6))


if __name__ == "__main__":
    main()
