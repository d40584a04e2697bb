#!/usr/bin/python3
"""clock_model.py - the inputs of the simulator's clock model (docs/COST_MODEL.md "The step's clock"; the
profile's `clock` block, docs/PROFILE_FORMAT.md), each from a measurement:

    /usr/bin/python3 scripts/clock_model.py rows PROFILE.lua[.xz]      # the GEMM classes' row clocks by rows
    /usr/bin/python3 scripts/clock_model.py states STATES.lua...       # each kernel's sensitivity (dkv profile --states)
    /usr/bin/python3 scripts/clock_model.py window RES PROFILE.lua[.xz] # the clock's lag and window (per-step clocks)
    /usr/bin/python3 scripts/clock_model.py follow PROFILE.lua[.xz] RES... [--check RES...]  # the follow form's time constants
    /usr/bin/python3 scripts/clock_model.py block PROFILE.lua[.xz] [--lag S --window S --gemm LO HI SENS --attn R F]

rows:   the median `sm_mhz` of each GEMM class table's rows (qkv, o, ffn, lm_head) by m (a profile written
        with the per-row clock, dkv profile since session 14: datasets/hw/2026-12-01/call39/profile.lua.xz).
        --probe-rows (rows, window, follow, block): the rows' `probe_mhz` instead, the SMs' own clock over the row's
        flushed calls (dkv profile --probe, since session 25: datasets/hw/2026-12-03/call84/profile.lua.xz).
        --k K[,K...]: only the rows of shapes with those inner dimensions (call 84 timed Dream-7B's shapes right after
        LLaDA-8B's largest, and its first rows ran at the clock those left: 1,440 MHz at 16 rows against 1,909).
states: per table and row, t_hot / t_cool and the sensitivity s = ln(t_hot / t_cool) / ln(f_cool / f_hot)
        with f_cool = 1,980 MHz (the cool state keeps the GPU awake on a one-thread spin: the maximum) and
        f_hot = 1,515 MHz (back-to-back GEMMs, the heater's state: docs/COST_MODEL.md "Clocks by kind of
        work", device call 37); the states' own NVML readings are not used (NVML's value moves in steps of
        tens of milliseconds).  Then medians by kind.
window: RES is a post result (scripts/hw_session.sh post) of a run set recorded with sm_clock; each step's
        settle clock (its simulated classes' row clocks, weighted by time) averaged over [start - lag -
        window, end - lag] of the simulated timeline (idle at the maximum) against the measured sm_mhz:
        mean |error| over a grid of lag and window.
follow: the follow form (docs/COST_MODEL.md "The clock that follows the work"): on the *measured* timeline of
        each RES's real runs (val and heldout), the clock follows each step's settle clock (its simulated
        classes' row clocks, weighted by time; idle time at the maximum) as a first-order lag, time constant
        down_s while falling and up_s while rising, from the maximum at the run's start; each step's
        prediction is the mean over the step.  Prints, against the measured sm_mhz of every step after the
        first: the window form at the shipped lag 0.05 s and window 0.1 s, then the follow form over a grid
        of down_s and up_s: mean |error|, its mean weighted by step time, and the mean signed error (MHz,
        predicted - measured), overall and by kind of step (R: Refresh items only, U: Reuse only, M: both);
        the grid's best by time-weighted |error| last.  --check RES...: the same numbers for other run sets
        (not used in choosing).  --probe: against the clock probe's sm_probe_mhz (the SMs' cycle counters over
        the step, dkv.execute clock_probe) instead of NVML's sm_mhz.
oracle: SHIPPED.lua PROFILE.lua RES... [--gemm LO HI SENS, default 64 768 0.96: call 77's measurement]: how far
        the steps would be with the right clock, a bound for any clock predictor.  Each simulated step's GEMM times
        are moved from the clock the simulator ran them at (SHIPPED's clock block: its row clocks and sensitivity) to
        the step's measured probe clock (sm_probe_mhz), scaled by (row clock / step clock)^sens with PROFILE's row
        clocks (--probe-rows --k: the probe's, the same scale).  Per point the mean |error| of the paired steps after
        the first, as simulated and so.  Runs recorded with clock_probe only.  --follow DOWN UP: the follow form's
        clock over the measured timeline (settle clocks: PROFILE's row clocks) in place of the measured one.
settle: RES... [--check RES...] [--free KEYS]: the clocks sustained work settles at, on the probe's scale, and the follow form's
        time constants, fitted on the step probe clocks of RES (runs recorded with clock_probe): each simulated step's
        settle clock is its GEMM classes' (by rows, log-linear between 64, 256, 1,024, 4,096 and 16,384 rows) and its
        other classes' (one value) weighted by their simulated time; the clock follows it (down_s falling, up_s
        rising, toward the maximum while idle) from the maximum at the run's start; coordinate descent over a grid,
        four passes, minimising the time-weighted |error| (settle clocks at most the maximum).  Prints the block's
        --settle and --follow arguments.  (A row's few milliseconds after a spin do not settle: docs/COST_MODEL.md
        "The clock on the probe's scale".)
sustained: PROFILE [--last N]: the sustained runs of a profile written with `dkv profile --sustain` (block
        `sustained`; docs/COST_MODEL.md "Settle clocks measured"): per model, kind and rows the SMs' clock over each
        window, then the settle clocks they measure: a run's mean over its last N windows (default 2); the GEMMs' by
        rows (the models' mean where both were run), the attention runs' median as the other classes' clock.  Prints
        the block's --settle arguments; nothing fitted.  settle --free d,u then fits only the follow form's time
        constants with those settle clocks (--start).  settle --mean P mixes a step's classes' settle clocks by their
        power mean of exponent P (default 1, the time-weighted mean; --free p fits it), --gaps counts a step's time
        outside its kernels as idle (for P < 0), --wide adds slower falls and a quicker rise to the time constants'
        grid (docs/COST_MODEL.md "Settle clocks measured": forms tried with the measured clocks).
path:   PROFILE: the sustained runs read in many short windows (dkv profile --sustain-windows; device call 87): per
        run the clock's path and the time constant of a first-order lag through it (from the maximum after a lead
        spin; with --sustain-lead 0 from the run before's last window), toward the run's last quarter.
stages: RES... [--check RES...]: the two-stage clock from calls 86 and 87's levels (the GEMMs' first-stage and
        settled clocks, the attention's, the rise's time constant), scored against the step probe clocks over a grid of
        the one thing not measured, how the first stage's hold recovers (an integral of the GEMM share leaking with
        tau_h, the second stage from H); nothing shipped.
duty:   PROFILE [--last N] [--shipped PROFILE --shares PROFILE]: the duty runs of a profile written with `dkv profile
        --sustain-gaps` (kind duty; docs/COST_MODEL.md "The clock against the duty cycle", device call 89): per model,
        rows and host idle gap, the step's GPU time, the idle it had (its cycle less the step), the duty cycle and the
        SMs' clock over the steps of the last N windows (default 4).  --shipped: what that profile's clock block (its
        settle form and follow time constants) predicts for each run at steady state, the step settling toward its
        GEMMs' settle clock at the rows and other_mhz for the rest, weighted by the GEMMs' share of the layer's time
        from --shares (a profile with the sustained gemm and layer runs at the same rows: call 88's).  Nothing fitted.
        --lead-in-cycle: the runs' cycle_s holds the lead spin spread over the run's steps (dkv before session 27's
        fix: device call 89's file); the idle is taken without it.
steps:  RES [--point NAME]: each probe-recorded run's steps side by side, simulated and measured: the plan's query
        rows (= where the plans agree, x where they do not), the step's time, its error, the simulator's run clock
        (sm_mhz of the simulated steps) and the step probe's (docs/COST_MODEL.md "The clock against the duty cycle":
        az:none's steps).
first:  RES [RES...] [--sim DIR]: each point's first step (from an idle GPU) over the probe-recorded post results: its
        rows, the mean simulated clock (sm_mhz), the mean probe clock and the mean time error, where the plans agree
        (RES/sim or RES/DIR as in plans).
plans:  RES [RES...] --point NAME [--sim DIR]: where a point's simulated plans first leave the measured ones, per
        post result: the first step whose query rows or admissions differ, its start on each side (ms) and rows, or
        "same"; then how many RES agree throughout.  The measured run from RES/h5, the simulated from RES/sim (the
        shipped preset's re-simulation) or RES/DIR (h5prof: the PROFILE= variant).  An arrival between the two
        starts decides such a step (docs/BENCHMARKS.md "session 28": az:none's step 3).
block:  the Lua `clock` block (paste before the profile's closing brace); --follow DOWN UP writes the follow
        form instead of --lag and --window.
"""
import argparse
import math
import re
import sys

import numpy as np

import script_io
from profile_graft import base_name, renamed

FMAX, F_COOL, F_HOT = 1980.0, 1980.0, 1515.0
GEMM_TABLES = ("qkv", "o", "ffn", "lm_head")


def die(msg):
    sys.exit("clock_model: " + msg)


def text(path):
    """a profile's text (.xz read through lzma); exits naming PATH when it is missing, a folder or not text"""
    return script_io.read_text(path, die, packed=True)


def tables(path):
    """{name: [(fields, seconds, {extra: value})]} of a profile's kernels tables"""
    out = {}
    for m in re.finditer(r"\n    (\w+) = \{\n(.*?)\n      rows = \{(.*?)\n      \},", text(path), re.S):
        head = m.group(2)
        fl, ex = re.search(r"fields = \{([^}]*)\}", head), re.search(r"extra = \{([^}]*)\}", head)
        if not fl or not ex:
            continue
        nf = len(fl.group(1).split(","))
        names = [e.strip().strip('"') for e in ex.group(1).split(",")]
        rows = []
        for r in re.finditer(r"\{([-0-9.e+, ]+)\}", m.group(3)):
            v = [float(x) for x in r.group(1).split(",")]
            rows.append((v[:nf], v[nf], dict(zip(names, v[nf + 2:]))))
        out[m.group(1)] = rows
    return out


ROW_FIELD = "sm_mhz"   # --probe-rows: "probe_mhz" (dkv profile --probe, the SMs' cycle counters)
ROW_K = None           # --k: only the rows of GEMM shapes with these inner dimensions (one model's shapes)


def row_clocks(path):
    """{table: (rows, median row clock at each)} for the GEMM class tables: NVML's sm_mhz, or with --probe-rows the
    probe's probe_mhz"""
    t = tables(path)
    out = {}
    for name in GEMM_TABLES:
        by = {}
        for f, _, x in t.get(name, []):
            if x.get(ROW_FIELD, 0) > 0 and (ROW_K is None or int(f[2]) in ROW_K):
                by.setdefault(f[0], []).append(x[ROW_FIELD])
        if not by:
            sys.exit("clock_model: %s: table %s has no %s column (%s)" % (
                path, name, ROW_FIELD, "a profile from before session 14?" if ROW_FIELD == "sm_mhz"
                else "written without dkv profile --probe?"))
        ms = sorted(by)
        out[name] = (ms, [float(np.median(by[m])) for m in ms])
    return out


def interp(points, m):
    ms, fs = points
    if m <= ms[0]:
        return fs[0]
    for i in range(1, len(ms)):
        if m <= ms[i]:
            return fs[i - 1] + (fs[i] - fs[i - 1]) * math.log(m / ms[i - 1]) / math.log(ms[i] / ms[i - 1])
    return fs[-1]


def cmd_rows(a):
    for name, (ms, fs) in row_clocks(a.profile).items():
        print("%-8s " % name + "  ".join("%d:%.0f" % (m, f) for m, f in zip(ms, fs)))
    v = [x[ROW_FIELD] for _, _, x in tables(a.profile).get("attn", []) if x.get(ROW_FIELD, 0) > 0]
    if v:
        print("attn     median %.0f over %d rows" % (np.median(v), len(v)))


def sens(x):
    if not (x.get("cool_s", 0) > 0 and x.get("hot_s", 0) > 0):
        return None
    return math.log(x["hot_s"] / x["cool_s"]) / math.log(F_COOL / F_HOT)


def cmd_states(a):
    kinds = {}
    for path in a.states:
        for name, rows in tables(path).items():
            for f, _, x in rows:
                s = sens(x)
                if s is None:
                    continue
                if name in GEMM_TABLES:
                    k = "gemm m<=1024" if f[0] <= 1024 else "gemm m=1536-4096" if f[0] <= 4096 else "gemm m>=6144"
                elif name == "attn":
                    if f[5] in (1, 2):
                        continue   # copies of mode 0 (the writer's sparse modes)
                    k = "attn Refresh-like (q >= keys)" if f[0] >= f[1] and f[5] == 0 else "attn Reuse (q < keys)"
                else:
                    k = name
                kinds.setdefault(k, []).append(s)
                if a.verbose:
                    print("%-12s %-28s cool %9.2f us  hot %9.2f us  s %+.2f" % (name, [int(v) for v in f],
                                                                             1e6 * x["cool_s"], 1e6 * x["hot_s"], s))
    print("sensitivity s = ln(t_hot / t_cool) / ln(%.0f / %.0f), by kind: median (quartiles), rows" % (F_COOL, F_HOT))
    for k in sorted(kinds):
        v = np.array(kinds[k])
        print("  %-32s %+.2f (%+.2f .. %+.2f)  %d" % (k, np.median(v), np.percentile(v, 25), np.percentile(v, 75), len(v)))


def settle_steps(ss, sk, clocks):
    """per simulated step: (start, length, settle clock)"""
    by = {}
    for r in sk:
        by.setdefault(int(r["step_index"]), []).append(r)
    out = []
    for y in ss:
        q = y["q_tokens"]
        num = den = 0.0
        for r in by.get(int(y["index"]), []):
            c, t = int(r["kind"]), float(r["time_s"])
            f = interp(clocks[("qkv", None, "o", "ffn")[c]], q) if c in (0, 2, 3) else \
                interp(clocks["lm_head"], y["logit_rows"]) if c == 4 else FMAX
            num, den = num + t * f, den + t
        out.append((float(y["start_s"]), float(y["time_s"]), num / den if den else FMAX))
    return out


def predict(seq, lag, win):
    pred = []
    for k, (s0, d0, _) in enumerate(seq):
        a, b = s0 - lag - win, s0 + d0 - lag
        if b <= a:
            b = a + 1e-6
        num = cov = 0.0
        for s, d, f in seq[:k + 1]:
            lo, hi = max(a, s), min(b, s + d)
            if hi > lo:
                num, cov = num + (hi - lo) * f, cov + hi - lo
        pred.append((num + (b - a - cov) * FMAX) / (b - a))
    return pred


def cmd_window(a):
    import h5py
    clocks = row_clocks(a.profile)
    runs = []
    for f in ("heldout", "val"):
        R, S = h5py.File("%s/h5/%s.h5" % (a.res, f), "r"), h5py.File("%s/sim/%s.h5" % (a.res, f), "r")
        for k in R["runs"]:
            if not k.endswith(":real"):
                continue
            p = k[:-5]
            rs, ss = R["runs/%s:real/steps" % p][()], S["runs/%s:sim/steps" % p][()]
            seq = settle_steps(ss, S["runs/%s:sim/kernels" % p][()], clocks)
            ok = [(x["n_refresh"], x["n_reuse"], x["q_tokens"]) == (y["n_refresh"], y["n_reuse"], y["q_tokens"])
                  and x["sm_mhz"] > 0 for x, y in zip(rs, ss)]
            runs.append((seq, [float(x["sm_mhz"]) for x in rs], ok))
    if not any(any(o) for _, _, o in runs):
        sys.exit("clock_model: %s: no executed step has a clock (recorded without sm_clock?)" % a.res)
    print("mean |predicted - measured| step clock, MHz (rows: lag s, columns: window s)")
    wins = (0.0, 0.02, 0.05, 0.1, 0.2, 0.4)
    print("lag   " + "".join("%7.2f" % w for w in wins))
    for lag in (0.0, 0.01, 0.02, 0.05, 0.1):
        e = []
        for w in wins:
            err = []
            for seq, meas, ok in runs:
                pr = predict(seq, lag, w)
                err += [abs(p - m) for p, m, o in zip(pr, meas, ok) if o]
            e.append(np.mean(err))
        print("%.2f  " % lag + "".join("%7.0f" % x for x in e))
    err = [abs(FMAX - m) for _, meas, ok in runs for m, o in zip(meas, ok) if o]
    print("(the maximum for every step: %.0f)" % np.mean(err))


def measured_steps(res, clocks, field="sm_mhz", keys=False):
    """Per real run of post result RES (val and heldout) with per-step clocks: start, length, measured clock, settle
    clock, kind and whether the step counts (after the first, with a clock); the settle clock from the simulated
    step of the same index where the plans agree, else one with the same kind and query rows, else the nearest
    query rows of the same kind.  With keys, each run as ((file, point), steps)."""
    import h5py
    out = []
    for f in ("val", "heldout"):
        rp, sp = "%s/h5/%s.h5" % (res, f), "%s/sim/%s.h5" % (res, f)
        try:
            R, S = h5py.File(rp, "r"), h5py.File(sp, "r")
        except OSError:
            continue
        for k in R["runs"]:
            p = k[:-5]
            if not k.endswith(":real") or p + ":sim" not in S["runs"]:
                continue
            rs, ss = R["runs/%s:real/steps" % p][()], S["runs/%s:sim/steps" % p][()]
            if len(ss) == 0 or field not in rs.dtype.names or not (rs[field] > 0).any():
                continue
            seq = settle_steps(ss, S["runs/%s:sim/kernels" % p][()], clocks)
            plan = lambda y: (int(y["n_refresh"]) > 0, int(y["n_reuse"]) > 0, int(y["q_tokens"]))
            by = {}
            for j, y in enumerate(ss):
                by.setdefault(plan(y), j)
            steps = []
            for i, x in enumerate(rs):
                same = i < len(ss) and all(x[f] == ss[i][f] for f in ("n_refresh", "n_reuse", "q_tokens"))
                j = i if same else by.get(plan(x))
                if j is None:
                    j = min(range(len(ss)), key=lambda jj: ((ss[jj]["n_refresh"] > 0) != (x["n_refresh"] > 0),
                                                           abs(int(ss[jj]["q_tokens"]) - int(x["q_tokens"]))))
                kind = "M" if x["n_refresh"] and x["n_reuse"] else "R" if x["n_refresh"] else "U"
                steps.append((float(x["start_s"]), float(x["time_s"]), float(x[field]), seq[j][2], kind,
                              i > 0 and x[field] > 0))
            out.append(((f, p), steps) if keys else steps)
    if not out:
        sys.exit("clock_model: %s: no real run with per-step clocks in %s (recorded without sm_clock or clock_probe?)" % (res, field))
    return out


def lag(x, u, dt, down, up):
    """A clock at x moving toward u for dt seconds, time constant down while falling and up while rising (sim/sim_clock.c's
    follow(), exactly): where it ends, and its mean over the dt"""
    tau = down if u < x else up
    if dt <= 0:
        return x, x
    e = math.exp(-dt / tau)
    return u + (x - u) * e, u + (x - u) * tau / dt * (1 - e)


def follow_predict(steps, down, up):
    """The follow form's clock over each step (sim/sim_clock.c's follow(), exactly)"""
    x, at, pred = FMAX, None, []
    for start, dur, _, settle, _, _ in steps:
        if at is not None:
            x, _ = lag(x, FMAX, start - at, down, up)
        x, mean = lag(x, settle, dur, down, up)
        at = start + dur
        pred.append(mean)
    return pred


def window_predict(steps, lag, win):
    return predict([(s, d, f) for s, d, _, f, _, _ in steps], lag, win)


def clock_errors(runs, fn):
    """mean |error|, mean |error| weighted by step time, mean error, and the mean error by kind"""
    e, w, kinds = [], [], {}
    for steps in runs:
        for (_, dur, meas, _, kind, ok), p in zip(steps, fn(steps)):
            if ok:
                e.append(p - meas), w.append(dur)
                kinds.setdefault(kind, []).append(p - meas)
    e, w = np.array(e), np.array(w)
    return np.mean(np.abs(e)), np.sum(np.abs(e) * w) / np.sum(w), np.mean(e), {k: np.mean(v) for k, v in kinds.items()}


def show(label, r):
    print("%-32s %5.0f %5.0f %+6.0f   %s" % (label, r[0], r[1], r[2], "  ".join("%s %+.0f" % (k, r[3][k]) for k in sorted(r[3]))))


def cmd_follow(a):
    clocks = row_clocks(a.profile)
    by_res = [measured_steps(res, clocks, a.field) for res in a.res]
    fit = [steps for runs in by_res for steps in runs]
    window = lambda s: window_predict(s, 0.05, 0.1)
    print("predicted - measured step clock, MHz, over %d runs of %d run sets: mean |e|, time-weighted |e|, mean e, "
          "mean e by kind" % (len(fit), len(a.res)))
    show("window lag 0.05 window 0.1", clock_errors(fit, window))
    best = None
    for down in (0.02, 0.04, 0.06, 0.1, 0.15):
        for up in (0.2, 0.4, 0.6, 0.8, 1.2):
            r = clock_errors(fit, lambda s: follow_predict(s, down, up))
            show("follow down %.2f up %.2f" % (down, up), r)
            if best is None or r[1] < best[0][1]:
                best = (r, down, up)
    print("best (time-weighted |e|): down_s %g, up_s %g" % (best[1], best[2]))
    for label, fn in (("window", window), ("best", lambda s: follow_predict(s, best[1], best[2]))):
        per = [[p - m for steps in runs for (_, _, m, _, _, ok), p in zip(steps, fn(steps)) if ok] for runs in by_res]
        left = np.concatenate([np.abs(np.array(v) - np.mean(v)) for v in per if v])
        print("%s: mean |e| once each run set's own mean e is removed: %.0f MHz" % (label, np.mean(left)))
    if a.check:
        chk = [s for res in a.check for s in measured_steps(res, clocks, a.field)]
        print("check, %d runs of %d run sets (not used in choosing):" % (len(chk), len(a.check)))
        show("window lag 0.05 window 0.1", clock_errors(chk, window))
        show("follow down %g up %g" % (best[1], best[2]), clock_errors(chk, lambda s: follow_predict(s, best[1], best[2])))


def shipped_clock(path):
    """The `clock` block of profile PATH: ({table: (rows, mhz)}, (lo_rows, hi_rows, sens))"""
    t = text(path)
    m = re.search(r"gemm_sens = \{lo_rows = ([0-9.e+]+), hi_rows = ([0-9.e+]+), sens = ([0-9.e+]+)\}", t)
    if not m:
        sys.exit("clock_model: %s: no clock block with gemm_sens (a profile from before session 15?)" % path)
    rows = {}
    for name in GEMM_TABLES:
        r = re.search(r"\n      %s = \{rows = \{([^}]*)\},\s*mhz = \{([^}]*)\}\}" % name, t)
        if not r:
            sys.exit("clock_model: %s: its clock block has no gemm_mhz.%s" % (path, name))
        rows[name] = ([float(v) for v in r.group(1).split(",")], [float(v) for v in r.group(2).split(",")])
    return rows, tuple(float(v) for v in m.groups())


def ramp(m, lo, hi, s):
    """A GEMM's sensitivity at m rows in the clock block's form: 0 up to lo, s from hi, log-linear between"""
    return 0.0 if m <= lo else s if m >= hi else s * math.log(m / lo) / math.log(hi / lo)


def probe_runs(res, sim="sim"):
    """(file, point, real steps, simulated steps, simulated kernels) of each run of post result RES (val and heldout)
    recorded with the step probe (sm_probe_mhz) and simulated (RES/SIM: sim, the shipped preset's, or h5prof)"""
    import h5py
    for f in ("val", "heldout"):
        try:
            R, S = h5py.File("%s/h5/%s.h5" % (res, f), "r"), h5py.File("%s/%s/%s.h5" % (res, sim, f), "r")
        except OSError:
            continue
        for k in R["runs"]:
            p = k[:-5]
            if not k.endswith(":real") or p + ":sim" not in S["runs"]:
                continue
            rs = R["runs/%s:real/steps" % p][()]
            if "sm_probe_mhz" in rs.dtype.names:
                yield f, p, rs, S["runs/%s:sim/steps" % p][()], S["runs/%s:sim/kernels" % p][()]


def cmd_oracle(a):
    """Each simulated step's GEMM times (q|k|v, O, FFN, LM head) moved from the clock the simulator ran them at to the
    step's measured probe clock: t_table = t_sim / (f_row / f_sim)^s_shipped (the shipped block's row clocks and
    sensitivity), then t = t_table (g_row / g)^SENS with g_row the row's own probe clock (PROFILE's probe_mhz) and g
    the step's sm_probe_mhz.  Per point, the mean |error| of the paired steps after the first, as simulated and so."""
    rows0, (lo0, hi0, s0) = shipped_clock(a.shipped)
    rows1 = row_clocks(a.profile)
    per = {}
    pred = {}   # --follow: (res, file, point) -> the follow form's clock of each real step
    if a.follow:
        for res in a.res:
            for key, steps in measured_steps(res, rows1, "sm_probe_mhz", keys=True):
                pred[(res,) + key] = follow_predict(steps, *a.follow)
    for res in a.res:
        for f, p, rs, ss, sk in probe_runs(res):
            by = {}
            for r in sk:
                by.setdefault(int(r["step_index"]), []).append((int(r["kind"]), float(r["time_s"])))
            for i in range(1, min(len(rs), len(ss))):
                x, y = rs[i], ss[i]
                if (x["n_refresh"], x["n_reuse"], x["q_tokens"]) != (y["n_refresh"], y["n_reuse"], y["q_tokens"]) \
                        or not (x["sm_probe_mhz"] > 0 and y["sm_mhz"] > 0):
                    continue
                t, g = float(y["time_s"]), float(x["sm_probe_mhz"])
                if a.follow:
                    g = pred[(res, f, p)][i]
                for c, tc in by.get(int(y["index"]), []):
                    if c not in (0, 2, 3, 4):
                        continue
                    name, m = ("qkv", None, "o", "ffn", "lm_head")[c], float(y["logit_rows"] if c == 4 else y["q_tokens"])
                    t0 = tc / (interp(rows0[name], m) / float(y["sm_mhz"])) ** ramp(m, lo0, hi0, s0)
                    t += t0 * (interp(rows1[name], m) / g) ** ramp(m, *a.gemm) - tc
                e = per.setdefault(p, ([], []))
                e[0].append(abs(float(y["time_s"]) / float(x["time_s"]) - 1)), e[1].append(abs(t / float(x["time_s"]) - 1))
    if not per:
        sys.exit("clock_model: no paired steps with a probe clock in %s (recorded without clock_probe?)" % " ".join(a.res))
    print("mean step |error| over the paired steps after the first, as simulated -> each GEMM at the step's %s "
          "probe clock (sensitivity %g from %g to %g rows)" % (
              "follow form's (down_s %g, up_s %g)" % tuple(a.follow) if a.follow else "measured", a.gemm[2], a.gemm[0], a.gemm[1]))
    for p in sorted(per):
        print("%-30s %5.2f %% -> %5.2f %%  (%d steps)" % (p, 100 * np.mean(per[p][0]), 100 * np.mean(per[p][1]), len(per[p][0])))
    print("mean over %d points: %.2f %% -> %.2f %%" % (len(per), 100 * np.mean([np.mean(v[0]) for v in per.values()]),
                                                       100 * np.mean([np.mean(v[1]) for v in per.values()])))


SETTLE_KNOTS = (64, 128, 256, 512, 1024, 2048, 4096, 16384)
EXTRA_D, EXTRA_U = [], []   # settle --wide: slower falls and a quicker rise besides the default grid
FIRST = False   # settle --first: each run's first step counts too


def settle_runs(res):
    """Per simulated run of post result RES (val and heldout): its steps on the simulated timeline, each (start,
    length, query rows, logit rows, GEMM seconds (q|k|v, O, FFN), LM-head seconds, other seconds, measured probe
    clock, counts): the step counts when it pairs with the real step of the same index (plans agree) and that one
    has a probe clock, after the first"""
    out = []
    for _, _, rs, ss, sk in probe_runs(res):
        by = {}
        for r in sk:
            by.setdefault(int(r["step_index"]), {})[int(r["kind"])] = float(r["time_s"])
        steps = []
        for i, y in enumerate(ss):
            t = by.get(int(y["index"]), {})
            same = i < len(rs) and all(rs[i][c] == y[c] for c in ("n_refresh", "n_reuse", "q_tokens"))
            meas = float(rs[i]["sm_probe_mhz"]) if same else 0.0
            steps.append((float(y["start_s"]), float(y["time_s"]), float(y["q_tokens"]), float(y["logit_rows"]),
                          sum(v for c, v in t.items() if c in (0, 2, 3)), t.get(4, 0.0),
                          sum(v for c, v in t.items() if c not in (0, 2, 3, 4)), meas, (i > 0 or FIRST) and meas > 0))
        out.append(steps)
    if not out:
        sys.exit("clock_model: %s: no real run with probe clocks (recorded without clock_probe?)" % res)
    return out


def settle_predict(steps, P):
    """The follow form's clock over each simulated step with the settle clocks P (GEMMs by rows, the rest one value).
    With P["S"] > 0 (settle --slow) a slow state h rises toward the step's GEMM share while it runs (time constant
    P["ts"]) and decays while idle (P["tr"]), and the step settles at its settle clock less S x h (h's mean over it)"""
    g = lambda m: interp((SETTLE_KNOTS, P["g"]), m)
    x, at, out, h = FMAX, None, [], 0.0
    S = P.get("S", 0.0)
    for start, dur, q, lr, gt, lt, ot, _, _ in steps:
        den = gt + lt + ot
        pw = P.get("p", 1.0)
        if den <= 0:
            settle = FMAX
        elif pw == 1.0:
            settle = (gt * g(q) + lt * g(lr) + ot * P["o"]) / den
        else:   # the power mean of the classes' settle clocks (--mean): p = 1 the time-weighted mean above; with --gaps
            # the step's time outside its kernels counts as idle (no power: an infinite settle clock, for p < 0)
            tot = max(den, dur) if GAPS and pw < 0 else den
            settle = min(FMAX, ((gt * g(q) ** pw + lt * g(lr) ** pw + ot * P["o"] ** pw) / tot) ** (1.0 / pw))
        if at is not None:
            x, _ = lag(x, FMAX, start - at, P["d"], P["u"])
            if S > 0:
                h *= math.exp(-max(0.0, start - at) / P["tr"])
        if S > 0 and dur > 0:
            share = gt / den if den > 0 else 0.0
            e = math.exp(-dur / P["ts"])
            settle -= S * (share + (h - share) * P["ts"] / dur * (1 - e))
            h = share + (h - share) * e
        x, mean = lag(x, settle, dur, P["d"], P["u"])
        at = start + dur
        out.append(mean)
    return out


def settle_errors(runs, P):
    e, w = [], []
    for steps in runs:
        for s, p in zip(steps, settle_predict(steps, P)):
            if s[8]:
                e.append(p - s[7]), w.append(s[1])
    e, w = np.array(e), np.array(w)
    return np.sum(np.abs(e) * w) / np.sum(w), np.mean(np.abs(e)), np.mean(e)


def cmd_settle(a):
    """Fits the settle clocks and the follow form's time constants on probe step clocks"""
    fit = [s for res in a.res for s in settle_runs(res)]
    chk = [s for res in (a.check or []) for s in settle_runs(res)]
    P = {"g": [interp(((64, 256, 1024, 4096, 16384), (1900.0, 1850.0, 1650.0, 1450.0, 1350.0)), k) for k in SETTLE_KNOTS],
         "o": 1900.0, "d": 0.02, "u": 1.2}
    if a.start:
        try:
            P = {"g": [float(v) for v in a.start[0].split(",")], "o": float(a.start[1]), "d": float(a.start[2]),
                 "u": float(a.start[3])}
        except ValueError:
            sys.exit("clock_model: settle --start: expected MHZ,... OTHER DOWN UP as numbers, got %s" % " ".join(a.start))
        if len(P["g"]) != len(SETTLE_KNOTS):
            sys.exit("clock_model: settle --start: %d clocks for the %d row counts %s" % (
                len(P["g"]), len(SETTLE_KNOTS), ",".join("%d" % k for k in SETTLE_KNOTS)))
    P["p"] = a.mean
    if a.slow:   # the slow state's depth and time constants, from none (S = 0: the form above)
        P.update(S=0.0, ts=0.2, tr=0.01)
    objective = lambda Q: settle_errors(fit, Q)[0 if a.weight == "time" else 1]
    best = objective(P)
    print("start: fit %.1f %.1f %+.1f" % settle_errors(fit, P))
    grids = {"p": [1.0, -1.0, -2.0, -3.0, -4.0, -6.0, -9.0],
             "d": [0.002, 0.005, 0.01, 0.02, 0.05, 0.1] + EXTRA_D, "u": [0.05, 0.1, 0.2, 0.3, 0.6, 1.2, 2, 3, 5] + EXTRA_U,
             "o": [float(v) for v in range(1500, 1981, 20)], "S": [0, 50, 100, 150, 200, 250, 300, 400],
             "ts": [0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0], "tr": [0.001, 0.003, 0.01, 0.03, 0.1, 0.3]}
    print("settle clocks (MHz at %s rows; other classes), follow down_s, up_s: time-weighted |e|, |e|, mean e (MHz) "
          "against the probe's step clocks" % ", ".join("%d" % k for k in SETTLE_KNOTS))
    keys = (["S", "ts", "tr"] if a.slow else []) + ["o", "d", "u"] + ["g%d" % i for i in range(len(SETTLE_KNOTS))] + (
        ["p"] if a.free and "p" in a.free.split(",") else [])
    if a.free:
        free = [] if a.free == "none" else a.free.split(",")   # none: only score the --start point
        bad = [k for k in free if k not in ("o", "d", "u", "g", "p")]
        if bad:
            sys.exit("clock_model: settle --free: unknown key(s) %s (o, d, u, g, p)" % ",".join(bad))
        keys = [k for k in keys if k in free or (k[0] == "g" and "g" in free) or k in ("S", "ts", "tr")]
    for it in range(4):
        for key in keys:
            cands = grids[key] if key in grids else [min(FMAX, P["g"][int(key[1])] + dv) for dv in range(-200, 201, 10)]
            for c in cands:
                Q = dict(P, g=list(P["g"]))
                if key[0] == "g":
                    Q["g"][int(key[1])] = c
                else:
                    Q[key] = c
                v = objective(Q)
                if v < best:
                    best, P = v, Q
        print("pass %d: fit %.1f %.1f %+.1f%s" % ((it + 1,) + settle_errors(fit, P) + (
            "  check %.1f %.1f %+.1f" % settle_errors(chk, P) if chk else "",)))
    print("best: --settle %s %s %g --follow %g %g%s" % (",".join("%d" % k for k in SETTLE_KNOTS),
                                                         ",".join("%.0f" % v for v in P["g"]), P["o"], P["d"], P["u"],
                                                         "" if P["p"] == 1.0 else " --mean %g" % P["p"]) + (
        "  (slow: S %g MHz, ts %g s, tr %g s)" % (P["S"], P["ts"], P["tr"]) if a.slow else ""))


def sustained_runs(path):
    """[(model, kind, rows, keys, calls, call_s, nvml_mhz, [mhz per window])] of a profile's sustained block"""
    t = text(path)
    m = re.search(r"\n  sustained = \{\n(.*?)\n  \},", t, re.S)
    if not m:
        sys.exit("clock_model: %s: no sustained block (a profile written with dkv profile --sustain has one)" % path)
    out = []
    for r in re.finditer(r'\{model = "([^"]*)", kind = "(\w+)", rows = ([\d.e+-]+), keys = ([\d.e+-]+), calls = (\d+), '
                         r'call_s = ([\d.e+-]+), nvml_mhz = ([\d.e+-]+), mhz = \{([^}]*)\}\}', m.group(1)):
        out.append((r.group(1), r.group(2), float(r.group(3)), float(r.group(4)), int(r.group(5)), float(r.group(6)),
                    float(r.group(7)), [float(v) for v in r.group(8).split(",")]))
    if not out:
        sys.exit("clock_model: %s: the sustained block has no runs" % path)
    return out


def cmd_sustained(a):
    runs = sustained_runs(a.profile)
    W = len(runs[0][7])
    if not 1 <= a.last <= W:
        sys.exit("clock_model: sustained --last %d: the runs have %d windows" % (a.last, W))
    print("model       kind  rows   keys    calls  ms/call  NVML  SM clock by window (MHz)  settle (last %d)" % a.last)
    gemm, other, layer = {}, [], {}
    for model, kind, rows, keys, calls, cs, nv, mhz in runs:
        settle = float(np.mean(mhz[-a.last:]))
        print("%-11s %-4s %6d %6d %8d %8.3f %5.0f  %-24s  %5.0f" % (
            model, kind, rows, keys, calls, 1e3 * cs, nv, " ".join("%5.0f" % v for v in mhz), settle))
        if kind == "gemm":
            gemm.setdefault(rows, []).append(settle)
        elif kind == "attn":
            other.append(settle)
        else:
            layer.setdefault(rows, []).append(settle)
    rows = sorted(gemm)
    mhz = [min(FMAX, float(np.mean(gemm[r]))) for r in rows]
    o = min(FMAX, float(np.median(other))) if other else FMAX
    print("settle: GEMMs %s; other classes %.0f (median of %d attention runs)" % (
        ", ".join("%d: %.0f" % (r, f) for r, f in zip(rows, mhz)), o, len(other)))
    if layer:   # the whole layer's settle clock by rows (the models' mean): a step's own mix (docs/COST_MODEL.md)
        print("layer: %s" % ", ".join("%d: %.0f" % (r, float(np.mean(layer[r]))) for r in sorted(layer)))
    if layer and a.shipped:   # what the shipped clock block predicts for each layer run at steady state
        t = text(a.shipped)
        m = re.search(r"settle = \{rows = \{([^}]*)\}, mhz = \{([^}]*)\}, other_mhz = ([0-9.]+)\}", t)
        if not m:
            sys.exit("clock_model: sustained --shipped %s: no clock.settle block" % a.shipped)
        sr, sf = [float(v) for v in m.group(1).split(",")], [float(v) for v in m.group(2).split(",")]
        so = float(m.group(3))
        gcall = {(r[0], r[2]): r[5] for r in runs if r[1] == "gemm"}
        print("layer runs against %s's settle form (its GEMM settle clock at the rows and other_mhz, weighted by the "
              "GEMMs' share of the layer's time: the sustained GEMM run's seconds a call over the layer's):" % a.shipped)
        d = []
        for model, kind, lr, keys, calls, cs, nv, lm in runs:
            if kind != "layer" or (model, lr) not in gcall:
                continue
            g = min(1.0, gcall[(model, lr)] / cs)
            pred = g * interp((sr, sf), lr) + (1 - g) * so
            meas = float(np.mean(lm[-a.last:]))
            d.append(pred - meas)
            print("  %-9s %6d rows: GEMM share %.2f, predicted %5.0f, measured %5.0f (%+5.0f)" % (model, lr, g, pred, meas,
                                                                                         pred - meas))
        if d:
            print("  mean |predicted - measured| %.0f MHz over %d runs, mean %+.0f" % (float(np.mean(np.abs(d))), len(d),
                                                                                   float(np.mean(d))))
    print("best: --settle %s %s %.0f" % (",".join("%d" % r for r in rows), ",".join("%.0f" % f for f in mhz), o))


def sustained_lead(path):
    """The sustained block's lead spin, seconds (0.3 where the block predates lead_s: device call 86's files)"""
    m = re.search(r"lead_s = ([\d.e+-]+)", text(path))
    return float(m.group(1)) if m else 0.3


def duty_runs(path):
    """[(model, rows, calls, call_s, [mhz per window], gap_s, step_calls, cycle_s)] of a profile's duty runs"""
    out = []
    for r in re.finditer(r'\{model = "([^"]*)", kind = "duty", rows = ([\d.e+-]+), keys = [\d.e+-]+, calls = (\d+), '
                         r'call_s = ([\d.e+-]+), nvml_mhz = [\d.e+-]+, mhz = \{([^}]*)\}, gap_s = ([\d.e+-]+), '
                         r'step_calls = (\d+), cycle_s = ([\d.e+-]+)\}', text(path)):
        out.append((r.group(1), float(r.group(2)), int(r.group(3)), float(r.group(4)),
                    [float(v) for v in r.group(5).split(",")], float(r.group(6)), int(r.group(7)), float(r.group(8))))
    if not out:
        sys.exit("clock_model: %s: no duty runs (a profile written with dkv profile --sustain-gaps has them)" % path)
    return out


def steady_follow(u, busy, idle, down, up):
    """The follow form's mean clock over a step at steady state: busy seconds toward u, then idle seconds toward the
    maximum, repeated (sim/sim_clock.c's follow(); from the maximum until the start clock repeats)"""
    x = FMAX
    for _ in range(10000):
        end, mean = lag(x, u, busy, down, up)
        nx = lag(end, FMAX, idle, down, up)[0]
        if abs(nx - x) < 1e-6:
            break
        x = nx
    return lag(x, u, busy, down, up)[1]


def cmd_duty(a):
    runs = duty_runs(a.profile)
    lead = sustained_lead(a.profile) if a.lead_in_cycle else 0.0
    W = len(runs[0][4])
    if not 1 <= a.last <= W:
        sys.exit("clock_model: duty --last %d: the runs have %d windows" % (a.last, W))
    pred = None
    if a.shipped:
        if not a.shares:
            sys.exit("clock_model: duty --shipped needs --shares PROFILE (the sustained gemm and layer runs)")
        t = text(a.shipped)
        m = re.search(r"settle = \{rows = \{([^}]*)\}, mhz = \{([^}]*)\}, other_mhz = ([0-9.]+)\}", t)
        f = re.search(r"follow = \{down_s = ([0-9.e+-]+), up_s = ([0-9.e+-]+)\}", t)
        if not m or not f:
            sys.exit("clock_model: duty --shipped %s: no clock.settle and clock.follow blocks" % a.shipped)
        sr, sf = [float(v) for v in m.group(1).split(",")], [float(v) for v in m.group(2).split(",")]
        so, down, up = float(m.group(3)), float(f.group(1)), float(f.group(2))
        sh = sustained_runs(a.shares)
        gcall = {(r[0], r[2]): r[5] for r in sh if r[1] == "gemm"}
        lcall = {(r[0], r[2]): r[5] for r in sh if r[1] == "layer"}

        def pred(model, rows, busy, idle):
            if (model, rows) not in gcall or (model, rows) not in lcall:
                sys.exit("clock_model: duty --shares %s: no gemm and layer runs of %s at %d rows" % (a.shares, model,
                                                                                                   rows))
            g = min(1.0, gcall[(model, rows)] / lcall[(model, rows)])
            return steady_follow(g * interp((sr, sf), rows) + (1 - g) * so, busy, idle, down, up)
    print("model       rows  gap ms  step ms  idle ms  duty  SM clock (last %d windows)%s" % (
        a.last, "  predicted (%s)  error" % a.shipped if pred else ""))
    by, err = {}, []
    for model, rows, total, cs, mhz, gap, calls, cyc in runs:
        busy = calls * cs
        cyc -= lead / (total / calls)   # the lead spread over the run's steps (--lead-in-cycle)
        idle = max(0.0, cyc - busy)
        meas = float(np.mean(mhz[-a.last:]))
        by.setdefault((rows, gap), []).append(meas)
        line = "%-11s %5d %7.1f %8.2f %8.2f %5.2f  %5.0f" % (model, rows, 1e3 * gap, 1e3 * busy, 1e3 * idle,
                                                          busy / cyc, meas)
        if pred:
            p = pred(model, rows, busy, idle)
            err.append(p - meas)
            line += "  %5.0f  %+5.0f" % (p, p - meas)
        print(line)
    gaps = sorted({g for _, g in by})
    print("the models' mean clock, MHz, by rows (down) and gap (across, ms): %s" % " ".join("%6.0f" % (1e3 * g)
                                                                                          for g in gaps))
    for rows in sorted({r for r, _ in by}):
        print("  %5d rows %s" % (rows, " ".join("%6.0f" % float(np.mean(by[(rows, g)])) if (rows, g) in by else
                                                "     -" for g in gaps)))
    if err:
        print("predicted - measured: mean |e| %.0f MHz over %d runs, mean %+.0f, max |e| %.0f" % (
            float(np.mean(np.abs(err))), len(err), float(np.mean(err)), float(np.max(np.abs(err)))))


def cmd_steps(a):
    """Each run's paired steps: rows, time and clock, simulated against measured"""
    n_runs, buckets = 0, {}
    edges = (128, 384, 768, 1536, 3072)
    for _, pt, rs, ss, _ in probe_runs(a.res):
        if a.point and pt != a.point and pt.split(":", 1)[-1] != a.point:
            continue
        n_runs += 1
        print("%s (%d real steps, %d simulated): step, plans, query rows sim/real, ms sim/real, error, clock sim/probe "
              "(MHz)" % (pt, len(rs), len(ss)))
        for i in range(min(len(rs), len(ss))):
            same = all(rs[i][c] == ss[i][c] for c in ("n_refresh", "n_reuse", "q_tokens"))
            print("  %3d %s %6d %6d %8.2f %8.2f %+6.1f %% %6.0f %6.0f" % (
                i, "=" if same else "x", ss[i]["q_tokens"], rs[i]["q_tokens"], 1e3 * ss[i]["time_s"], 1e3 * rs[i]["time_s"],
                100 * (ss[i]["time_s"] / rs[i]["time_s"] - 1), ss[i]["sm_mhz"], rs[i]["sm_probe_mhz"]))
            if same and i > 0 and rs[i]["sm_probe_mhz"] > 0:
                b = sum(1 for e in edges if rs[i]["q_tokens"] >= e)
                buckets.setdefault(b, []).append((float(ss[i]["sm_mhz"]), float(rs[i]["sm_probe_mhz"])))
    if buckets:
        print("same-plan steps after each run's first, by query rows: steps, median clock simulated / probe (MHz)")
        for b in sorted(buckets):
            v = np.array(buckets[b])
            lo, hi = ([0] + list(edges))[b], (list(edges) + [None])[b]
            print("  %5d-%-5s %4d  %5.0f %5.0f" % (lo, hi - 1 if hi else "", len(v), float(np.median(v[:, 0])),
                                                 float(np.median(v[:, 1]))))
    if not n_runs:
        sys.exit("clock_model: %s: no probe-recorded run%s" % (a.res, " of point %s" % a.point if a.point else ""))


def cmd_first(a):
    """Each point's first step over the probe-recorded post results: rows, clocks and time error"""
    per = {}
    for res in a.res:
        for _, p, rs, ss, _ in probe_runs(res, a.sim):
            if not len(rs) or not len(ss) or rs[0]["q_tokens"] != ss[0]["q_tokens"]:
                continue
            per.setdefault(p, []).append((int(rs[0]["q_tokens"]), float(ss[0]["sm_mhz"]), float(rs[0]["sm_probe_mhz"]),
                                          float(ss[0]["time_s"] / rs[0]["time_s"] - 1)))
    if not per:
        sys.exit("clock_model: no probe-recorded first steps in %s" % " ".join(a.res))
    print("point | rows | RES | clock simulated / probe (MHz) | time error")
    for p in sorted(per):
        v = per[p]
        print("%-28s %6d %3d  %5.0f / %5.0f  %+5.1f %%" % (p, v[0][0], len(v), np.mean([x[1] for x in v]),
                                                         np.mean([x[2] for x in v]), 100 * np.mean([x[3] for x in v])))


def cmd_plans(a):
    """Where a point's simulated plans first leave the measured ones, per post result"""
    import h5py
    same = n = 0
    for res in a.res:
        f = "val" if a.point.startswith("val:") else "heldout"
        name = a.point if a.point.startswith(("val:", "ho:")) else "ho:" + a.point
        try:
            R, S = h5py.File("%s/h5/%s.h5" % (res, f), "r"), h5py.File("%s/%s/%s.h5" % (res, a.sim, f), "r")
        except OSError as e:
            sys.exit("clock_model: %s: %s" % (res, e))
        if name + ":real" not in R["runs"] or name + ":sim" not in S["runs"]:
            sys.exit("clock_model: %s: no run pair %s in h5/%s.h5 and %s/%s.h5" % (res, name, f, a.sim, f))
        rs, ss = R["runs/%s:real/steps" % name][()], S["runs/%s:sim/steps" % name][()]
        n += 1
        k = next((i for i in range(min(len(rs), len(ss))) if rs[i]["q_tokens"] != ss[i]["q_tokens"]
                  or rs[i]["n_admitted"] != ss[i]["n_admitted"]), None)
        if k is None:
            same += 1
            print("%s: same" % res)
        else:
            print("%s: step %d: measured at %.2f ms, %d rows, %d admitted; simulated at %.2f ms, %d rows, %d admitted" % (
                res, k, 1e3 * rs[k]["start_s"], rs[k]["q_tokens"], rs[k]["n_admitted"], 1e3 * ss[k]["start_s"],
                ss[k]["q_tokens"], ss[k]["n_admitted"]))
    print("%s: plans the same throughout on %d of %d" % (name, same, n))


def path_fit(mhz, dt, x0):
    """The first-order lag through the windows' means (each dt long) from x0 toward u (the last quarter's mean): the
    time constant (s) of the least squares over a log grid, and u"""
    n = len(mhz)
    u = float(np.mean(mhz[-max(1, n // 4):]))
    best = None
    for tau in np.exp(np.linspace(np.log(1e-3), np.log(5.0), 200)):
        pred, x = [], x0
        for _ in range(n):
            x, mean = lag(x, u, dt, tau, tau)
            pred.append(mean)
        e = float(np.sum((np.array(pred) - np.array(mhz)) ** 2))
        if best is None or e < best[0]:
            best = (e, float(tau))
    return best[1], u, math.sqrt(best[0] / n)


def cmd_path(a):
    """Each sustained run's clock path and the time constant of a first-order lag through it"""
    lead = sustained_lead(a.profile)
    runs = sustained_runs(a.profile)
    print("lead %g s; per run: window length, the clock's start (the maximum after a lead, else the run before's last "
          "window), its first windows, settle (the last quarter's mean), the lag's time constant and rms (MHz)" % lead)
    prev = None
    taus = {}
    for model, kind, rows, keys, calls, cs, nv, mhz in runs:
        dt = calls * cs / len(mhz)
        x0 = FMAX if lead > 0 or prev is None else prev
        tau, u, rms = path_fit(mhz, dt, x0)
        way = "fall" if u < x0 else "rise"
        taus.setdefault((kind, way), []).append(tau)
        print("%-9s %-4s %6d %5d  %5.1f ms  from %5.0f: %s  settle %5.0f  %s tau %7.1f ms  rms %4.0f" % (
            model, kind, rows, keys, 1e3 * dt, x0, " ".join("%4.0f" % v for v in mhz[:6]), u, way, 1e3 * tau, rms))
        prev = mhz[-1]
    for (kind, way), v in sorted(taus.items()):
        print("%s %s: tau median %.1f ms over %d runs (%.1f-%.1f)" % (kind, way, 1e3 * float(np.median(v)), len(v),
                                                                      1e3 * min(v), 1e3 * max(v)))


def stages_predict(steps, F1, F2, other, H, tau_h, tau_up, dt=0.001):
    """The two-stage clock: a leaky integral h of the step's GEMM share (time constant tau_h); while h < H the GEMMs
    run at their first-stage clock F1(rows), after it at the settled F2(rows); the rest at `other`; a step's clock is
    the time mix, the clock falls at once and rises with tau_up (idle toward the maximum)"""
    out, x, h, at = [], FMAX, 0.0, None
    for start, dur, q, lr, gt, lt, ot, _, _ in steps:
        if at is not None and start > at:
            h *= math.exp(-(start - at) / tau_h)
            x = FMAX + (x - FMAX) * math.exp(-(start - at) / tau_up)
        den = gt + lt + ot
        g = (gt + lt) / den if den > 0 else 0.0
        n = max(1, int(round(dur / dt)))
        d, acc = dur / n, 0.0
        for _ in range(n):
            h += g * d - h * d / tau_h
            fg = interp(F1, q) if h < H else interp(F2, q)
            target = g * fg + (1 - g) * other if den > 0 else FMAX
            x = target if target < x else target + (x - target) * math.exp(-d / tau_up)
            acc += x
        out.append(acc / n)
        at = start + dur
    return out


def cmd_stages(a):
    """Scores the two-stage clock (measured levels; H and tau_h over a grid) against the step probe clocks"""
    def pts(spec):
        try:
            r, f = spec.split(":")
            r, f = tuple(float(v) for v in r.split(",")), tuple(float(v) for v in f.split(","))
        except ValueError:
            sys.exit("clock_model: stages: %r: expected ROWS:MHZ, comma-separated numbers" % spec)
        if len(r) != len(f) or list(r) != sorted(set(r)):
            sys.exit("clock_model: stages: %r: as many clocks as row counts, the rows increasing" % spec)
        return r, f
    F1, F2 = pts(a.first), pts(a.settled)
    fit = [s for res in a.res for s in settle_runs(res)]
    chk = [s for res in (a.check or []) for s in settle_runs(res)]
    def score(runs, H, tau_h):
        e = []
        for steps in runs:
            for s, p in zip(steps, stages_predict(steps, F1, F2, a.other, H, tau_h, a.tau_up)):
                if s[8]:
                    e.append(p - s[7])
        e = np.array(e)
        return float(np.mean(np.abs(e))), float(np.mean(e))
    print("two stages: per-step |error| and mean error (MHz) against the step probe clocks; hold = the first stage's "
          "length for GEMMs from rest")
    for tau_h in a.tau_h:
        for H in a.hold:
            if H >= tau_h:
                continue
            f, c = score(fit, H, tau_h), score(chk, H, tau_h) if chk else (float("nan"), float("nan"))
            print("tau_h %.2f H %.3f (hold %3.0f ms): RES |e| %.1f mean %+.1f | check |e| %.1f mean %+.1f" % (
                tau_h, H, -1e3 * tau_h * math.log(1 - H / tau_h), f[0], f[1], c[0], c[1]))


def block_text(a):
    """The Lua `clock` block: its comment lines, `clock = {` ... `},`"""
    clocks = row_clocks(a.profile)
    src = a.profile.split("/")[-2]
    src = re.sub(r"^call(\d+)$", r"device call \1", src)
    fit = ("the follow form's time constants fitted on per-step clocks (clock_model.py follow)" if a.follow else
           "lag and window fitted on per-step clocks (dkv.execute sm_clock)")
    if not a.settle:
        out = ["  -- the SM clock a step runs at and its classes' times at that clock (docs/COST_MODEL.md \"The step's clock\",",
               "  -- scripts/clock_model.py): GEMM rows' clocks from %s; sensitivities from dkv profile --states;" % src,
               "  -- " + fit]
    else:   # the probe's scale (docs/COST_MODEL.md "The clock on the probe's scale")
        out = ["  -- the SM clock a step runs at and its classes' times at that clock, on the SMs' own clock (docs/COST_MODEL.md",
               "  -- \"The clock on the probe's scale\", scripts/clock_model.py): GEMM rows' clocks from %s's %s;" % (src, ROW_FIELD),
               "  -- the GEMMs' sensitivity measured at two clocks (device call 77); settle clocks and the follow form's time",
               "  -- constants fitted on the step probe clocks (clock_model.py settle)"]
    if a.follow:
        out.append("  clock = {\n    max_mhz = %.0f, follow = {down_s = %g, up_s = %g}," % (FMAX, a.follow[0], a.follow[1]))
    else:
        out.append("  clock = {\n    max_mhz = %.0f, lag_s = %g, window_s = %g," % (FMAX, a.lag, a.window))
    out.append("    gemm_sens = {lo_rows = %g, hi_rows = %g, sens = %g}," % tuple(a.gemm))
    out.append("    attn_sens = {reuse = %g, refresh = %g}," % tuple(a.attn))
    out.append("    gemm_mhz = {")
    for name in GEMM_TABLES:
        ms, fs = clocks[name]
        out.append("      %s = {rows = {%s},\n        mhz = {%s}}," % (name, ", ".join("%d" % m for m in ms),
                                                                   ", ".join("%.0f" % f for f in fs)))
    out.append("    },")
    if a.attn_mhz:
        out.append("    attn_mhz = %g," % a.attn_mhz)
    if a.settle:
        out.append("    settle = {rows = {%s}, mhz = {%s}, other_mhz = %s}," % (
            a.settle[0].replace(",", ", "), a.settle[1].replace(",", ", "), a.settle[2]))
    out.append("  },")
    return "\n".join(out) + "\n"


def cmd_block(a):
    text = block_text(a)
    if not a.into:
        sys.stdout.write(text)
        return
    if not a.name or not a.out:
        sys.exit("clock_model: block --into needs --name and -o")
    base = script_io.read_text(a.into, die)
    m = re.search(r"(?ms)^  -- the SM clock a step runs at.*?^  clock = \{\n.*?^  \},\n", base)
    if not m:
        sys.exit("clock_model: %s: no clock block to replace (a profile from before session 15?)" % a.into)
    base = base[:m.start()] + text + base[m.end():]
    form = "follow = {down_s = %g, up_s = %g}" % tuple(a.follow) if a.follow else "lag_s = %g, window_s = %g" % (a.lag, a.window)
    argv = (["--follow %g %g" % tuple(a.follow)] if a.follow else ["--lag %g --window %g" % (a.lag, a.window)]) + \
        ["--gemm %g %g %g" % tuple(a.gemm), "--attn %g %g" % tuple(a.attn)] + \
        (["--settle %s %s %s" % tuple(a.settle)] if a.settle else []) + \
        (["--attn-mhz %g" % a.attn_mhz] if a.attn_mhz else []) + \
        (["--probe-rows"] if ROW_FIELD == "probe_mhz" else []) + (["--k %s" % a.k] if a.k else [])
    head = ("-- Provenance: %s (its header below) with its `clock` block replaced: %s (docs/PROFILE_FORMAT.md \"clock\"; "
            "written by `/usr/bin/python3 scripts/clock_model.py block %s %s --into %s --name %s -o ...`); no row added or "
            "replaced.\n" % (base_name(a.into), form, a.profile, " ".join(argv), a.into, a.name))
    renamed(lambda msg: sys.exit("clock_model: " + msg), base, a.into, a.name, head, a.out)


def main():
    global ROW_FIELD, ROW_K, FIRST, SETTLE_KNOTS, GAPS, EXTRA_D, EXTRA_U
    ap = script_io.arg_parser(description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 allow_abbrev=False,
                                 epilog=__doc__[__doc__.index("\n"):])
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_parser = sub.add_parser   # every subcommand's options whole: no abbreviation taken for another option
    sub.add_parser = lambda name, **kw: add_parser(name, allow_abbrev=False, **kw)
    p = sub.add_parser("rows"); p.add_argument("profile"); p.set_defaults(fn=cmd_rows)
    p = sub.add_parser("states"); p.add_argument("states", nargs="+"); p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(fn=cmd_states)
    p = sub.add_parser("window"); p.add_argument("res"); p.add_argument("profile"); p.set_defaults(fn=cmd_window)
    p = sub.add_parser("follow"); p.add_argument("profile"); p.add_argument("res", nargs="+")
    p.add_argument("--check", nargs="+", metavar="RES")
    p.add_argument("--probe", dest="field", action="store_const", const="sm_probe_mhz", default="sm_mhz",
                   help="score against the clock probe's sm_probe_mhz (dkv.execute clock_probe) instead of NVML's sm_mhz")
    p.set_defaults(fn=cmd_follow)
    p = sub.add_parser("oracle"); p.add_argument("shipped"); p.add_argument("profile"); p.add_argument("res", nargs="+")
    p.add_argument("--gemm", type=float, nargs=3, default=[64, 768, 0.96], metavar=("LO", "HI", "SENS"))
    p.add_argument("--follow", type=float, nargs=2, metavar=("DOWN", "UP"),
                   help="the follow form's clock (settle: the rows' clocks) in place of the measured one")
    p.set_defaults(fn=cmd_oracle)
    p = sub.add_parser("block"); p.add_argument("profile")
    p.add_argument("--follow", type=float, nargs=2, metavar=("DOWN", "UP"))
    p.add_argument("--into", metavar="PROFILE", help="write PROFILE with its clock block replaced (with --name, -o)")
    p.add_argument("--name"); p.add_argument("-o", dest="out")
    p.add_argument("--lag", type=float, default=0.05); p.add_argument("--window", type=float, default=0.1)
    p.add_argument("--gemm", type=float, nargs=3, default=[2048, 6144, 0.5], metavar=("LO", "HI", "SENS"))
    p.add_argument("--attn", type=float, nargs=2, default=[0.45, 0.65], metavar=("REUSE", "REFRESH"))
    p.add_argument("--attn-mhz", type=float, help="the clock the attention rows ran at (clock_model.py rows prints "
                                                 "their median); default: max_mhz")
    p.add_argument("--settle", nargs=3, metavar=("ROWS", "MHZ", "OTHER"),
                   help="the settle clocks (clock_model.py settle): GEMMs' at ROWS (comma-separated), the rest's OTHER")
    p.set_defaults(fn=cmd_block)
    p = sub.add_parser("settle"); p.add_argument("res", nargs="+"); p.add_argument("--check", nargs="+", metavar="RES")
    p.add_argument("--first", action="store_true", help="each run's first step counts too (the GPU idle before it)")
    p.add_argument("--start", nargs=4, metavar=("MHZ", "OTHER", "DOWN", "UP"),
                   help="the descent's starting point (MHZ: one clock per row count, comma-separated)")
    p.add_argument("--weight", choices=("time", "step"), default="time",
                   help="minimise the |error| weighted by step time (default) or per step")
    p.add_argument("--mean", type=float, default=1.0,
                   help="the exponent of the power mean that mixes a step's classes' settle clocks (default 1: the "
                        "time-weighted mean; --free p fits it)")
    p.add_argument("--wide", action="store_true", help="the time constants' grid also at down_s 0.2-2 s and up_s 0.02 s")
    p.add_argument("--slow", action="store_true", help="also a slow state (depth S, time constants ts busy, tr idle) "
                                                      "that lowers the settle clock after busy work (session 27)")
    p.add_argument("--gaps", action="store_true", help="with --mean below 0: a step's time outside its kernels is idle")
    p.add_argument("--knots", help="the GEMM settle clocks' row counts, comma-separated (default %s)" %
                   ",".join("%d" % k for k in SETTLE_KNOTS))
    p.add_argument("--free", help="the keys the descent may move, comma-separated: o (the other classes' clock), d, u "
                                  "(the follow form's time constants), g (the GEMMs' settle clocks), p (--mean); none: only score --start; "
                                  "default all but p")
    p.set_defaults(fn=cmd_settle)
    p = sub.add_parser("path"); p.add_argument("profile"); p.set_defaults(fn=cmd_path)
    p = sub.add_parser("stages"); p.add_argument("res", nargs="+"); p.add_argument("--check", nargs="+", metavar="RES")
    p.add_argument("--first", default="64,128,256,1024,16384:1820,1775,1600,1600,1595",
                   help="ROWS:MHZ, the GEMMs' first-stage clocks (default: device call 87's first windows)")
    p.add_argument("--settled", default="64,128,256,512,1024,2048,4096,8192,16384:"
                                        "1685,1328,1277,1291,1317,1342,1325,1314,1318",
                   help="ROWS:MHZ, the GEMMs' settled clocks (default: device call 86)")
    p.add_argument("--other", type=float, default=1790, help="the other classes' clock (default: the attention's)")
    p.add_argument("--tau-up", type=float, default=0.035, help="the rise's time constant (call 87: 31-40 ms)")
    p.add_argument("--tau-h", type=float, nargs="+", default=[0.05, 0.1, 0.2, 0.5])
    p.add_argument("--hold", type=float, nargs="+", default=[0.02, 0.03, 0.04])
    p.set_defaults(fn=cmd_stages)
    p = sub.add_parser("sustained"); p.add_argument("profile")
    p.add_argument("--last", type=int, default=2, help="windows at the run's end a settle clock is the mean of")
    p.add_argument("--shipped", metavar="PROFILE", help="also score PROFILE's clock.settle against the whole-layer runs")
    p.set_defaults(fn=cmd_sustained)
    p = sub.add_parser("steps"); p.add_argument("res"); p.add_argument("--point", help="only this point (e.g. az:none)")
    p.set_defaults(fn=cmd_steps)
    p = sub.add_parser("first"); p.add_argument("res", nargs="+")
    p.add_argument("--sim", default="sim", help="the simulated results' folder in RES (sim, or h5prof)")
    p.set_defaults(fn=cmd_first)
    p = sub.add_parser("plans"); p.add_argument("res", nargs="+"); p.add_argument("--point", required=True)
    p.add_argument("--sim", default="sim", help="the simulated results' folder in RES (sim, or h5prof)")
    p.set_defaults(fn=cmd_plans)
    p = sub.add_parser("duty"); p.add_argument("profile")
    p.add_argument("--last", type=int, default=4, help="windows at the run's end its clock is the mean of")
    p.add_argument("--shipped", metavar="PROFILE", help="also what PROFILE's clock block predicts for each run")
    p.add_argument("--shares", metavar="PROFILE", help="with --shipped: a profile with the sustained gemm and layer "
                                                       "runs at the duty runs' rows (the GEMMs' share of a layer)")
    p.add_argument("--lead-in-cycle", action="store_true", help="cycle_s holds the lead spin (call 89's file)")
    p.set_defaults(fn=cmd_duty)
    for q in (sub.choices["rows"], sub.choices["window"], sub.choices["follow"], sub.choices["block"], sub.choices["oracle"]):
        q.add_argument("--probe-rows", action="store_true",
                       help="the rows' clocks from the probe's probe_mhz column (dkv profile --probe) instead of NVML's sm_mhz")
        q.add_argument("--k", help="only rows of GEMM shapes with these inner dimensions, K[,K...] (one model's shapes: "
                                   "LLaDA-8B 4096,12288)")
    a = ap.parse_args()
    if getattr(a, "knots", None):
        try:
            SETTLE_KNOTS = tuple(int(v) for v in a.knots.split(","))
        except ValueError:
            sys.exit("clock_model: --knots %r: expected whole numbers separated by commas" % a.knots)
        if list(SETTLE_KNOTS) != sorted(set(SETTLE_KNOTS)) or SETTLE_KNOTS[0] < 1:
            sys.exit("clock_model: --knots %r: expected increasing row counts" % a.knots)
    FIRST = getattr(a, "first", False)
    GAPS = getattr(a, "gaps", False)
    if getattr(a, "wide", False):
        EXTRA_D, EXTRA_U = [0.2, 0.5, 1.0, 2.0], [0.02]
    ROW_FIELD = "probe_mhz" if getattr(a, "probe_rows", False) else "sm_mhz"
    if getattr(a, "k", None):
        try:
            ROW_K = {int(v) for v in a.k.split(",")}
        except ValueError:
            sys.exit("clock_model: --k %r: expected whole numbers separated by commas" % a.k)
    a.fn(a)


if __name__ == "__main__":
    main()
