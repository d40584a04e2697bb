#!/usr/bin/python3
"""summary_counts.py - the held-out and in-sample targets of several hw_session.sh post results, summed per simulated
variant (issue 9: step latency mean |error| <= 5 %, p50 and p99 <= 8 %, tokens/s <= 5 %, memory <= 2 %).

    /usr/bin/python3 scripts/summary_counts.py [--attainable | --per-set | --by-plans] RES [RES...]

Each RES is a post result (scripts/hw_session.sh post, with PROFILE=FILE.lua for a "profile" variant): its
summary.md's per-point rows ("| point | variant | steps | step | PASS/MISS | p50 | ... |", held-out points and
val:* alike).  Prints, per variant, the passes of each target over every point row of every RES (and over the
held-out point rows alone, and the nv:* rows alone: the held-out kind of point at other block lengths and steps per
block, since session 34), then per point
the mean step |error| of each variant and its step passes (how docs/COST_MODEL.md compares a profile variant
against the shipped preset over the ten fresh machines).  Exits 2 naming the file where a RES has no such rows.

--per-set: per RES, each variant's mean step |error| over its in-sample (val:*) and its held-out point rows, and
how much the other variants move it against the shipped preset's (the project's in-sample rule: no RES's in-sample
mean worse by more than 0.1 point).

--by-plans: the held-out step target split by whether a point's simulated plans stayed the measured ones throughout
(every paired step of its comparison the same plan: `dkv compare`'s same_plan, from RES's pairs.txt and cmp/NNN.h5 for
the shipped preset, cmp/prof_NNN.h5 for a PROFILE= variant, cmp/mach_NNN.h5 for the machine-calibrated one) or parted
(an arrival between the two halves' starts of a step admits a request on one side only; docs/BENCHMARKS.md "session
28"): per variant, point rows, step passes, mean and largest step |error| of each kind.

--attainable: for every point and run-level target (p50, p99, tokens/s, memory) of each variant, whether ONE
predicted value could pass on every RES at all.  The simulated value of a point is the same on every RES (the
simulator does not know the machine), so the measured values are 1 / (1 + e) of it; one value x passes on RES i
iff |x (1 + e_i) - 1| <= tol (not for the machine-calibrated variant, simulated per RES).  Prints the points where the best x passes on fewer RES than there are (the target
cannot be met there by any single prediction: the machines' own spread, max / min of the measured values, exceeds
(1 + tol) / (1 - tol)), or where it passes on more RES than the simulated value does, with that best x relative to
the simulated one.  The step target is a mean over paired steps, not one value: for it, where a RES has its
comparisons (pairs.txt and cmp/NNN.h5, the shipped preset's), the same question for one factor c per point applied
to every simulated step (mean over the steps of the same plan of |c (1 + e) - 1| <= 5 %): a bound for simulators
that move a point's steps together, not for every simulator."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402

STEP_TOL = 0.05

ROW = re.compile(r"^\| ([^|]+) \| ([a-z][a-z0-9 -]*) \| (\d+) \| ([-0-9.]+)% \| (PASS|MISS) \| ([-+0-9.]+)% \| (PASS|MISS) \| "
                 r"([-+0-9.]+)% \| (PASS|MISS) \| ([-+0-9.]+)% \| (PASS|MISS) \| ([-+0-9.]+)% \| (PASS|MISS)")


def die(msg):
    print("summary_counts.py: %s" % msg, file=sys.stderr)
    sys.exit(2)


MODES = ("--attainable", "--per-set", "--by-plans")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    modes = [a for a in argv if a in MODES]
    argv = [a for a in argv if a not in MODES]
    script_io.unknown_options("summary_counts.py", argv)
    if len(set(modes)) > 1:
        die("%s: give one of them" % " and ".join(sorted(set(modes))))
    attainable, per_set, by_plans = ("--attainable" in modes, "--per-set" in modes, "--by-plans" in modes)
    if not argv:
        die("%s needs at least one RES" % (modes[0] if modes else "a summary"))
    by_point = {}   # (RES, variant, point) -> (step |e|, step passes), held-out rows only
    by_set = {}   # RES -> variant -> {"in": [step |e|], "out": [step |e|]}
    rows = {}   # variant -> point -> [(step |e|, passes of 5)]
    errs = {}   # variant -> point -> [[p50, p99, tok/s, mem error]] (fractions)
    for res in argv:
        path = os.path.join(res, "summary.md")
        text = script_io.read_text(path, die).splitlines()
        n = 0
        for l in text:
            m = ROW.match(l)
            if m:
                rows.setdefault(m.group(2), {}).setdefault(m.group(1), []).append(
                    (float(m.group(4)), [m.group(i) == "PASS" for i in (5, 7, 9, 11, 13)]))
                errs.setdefault(m.group(2), {}).setdefault(m.group(1), []).append(
                    [float(m.group(i)) / 100 for i in (6, 8, 10, 12)])
                if not m.group(1).startswith("nv:"):   # the held-out set proper (nv:* apart: other blocks and steps)
                    by_set.setdefault(res, {}).setdefault(m.group(2), {"in": [], "out": []})[
                        "in" if m.group(1).startswith("val:") else "out"].append(float(m.group(4)))
                if not m.group(1).startswith(("val:", "nv:")):
                    by_point[(res, m.group(2), m.group(1))] = (float(m.group(4)), m.group(5) == "PASS")
                n += 1
        if n == 0:
            die("%s: no per-point target rows (a hw_session.sh post summary?)" % path)
    # the comparison files are read before anything is printed: a broken one is refused, not reported after the table
    parted = {res: plans_parted(res) for res in argv} if by_plans else None
    steps = step_errors(argv) if attainable else None
    names = ("step", "p50", "p99", "tok/s", "mem")
    for v in sorted(rows):
        for label, keep in (("", lambda p: True), (", held out", lambda p: not p.startswith(("val:", "nv:"))),
                            (", other blocks (nv:*)", lambda p: p.startswith("nv:"))):
            allr = [x for p, xs in rows[v].items() if keep(p) for x in xs]
            if allr:
                print("%-32s %s (of %d point rows)" % (v + label, ", ".join(
                    "%s %d" % (names[i], sum(x[1][i] for x in allr)) for i in range(5)), len(allr)))
    vs = sorted(rows)
    print("\n| point | " + " | ".join("%s: step |e|, step passes" % v for v in vs) + " |")
    print("|---|" + "---|" * len(vs))
    for p in sorted({p for v in vs for p in rows[v]}):
        cells = []
        for v in vs:
            x = rows[v].get(p, [])
            cells.append("%.2f %%, %d / %d" % (sum(e for e, _ in x) / len(x), sum(ok[0] for _, ok in x), len(x)) if x else "-")
        print("| %s | %s |" % (p, " | ".join(cells)))
    if per_set:
        print_per_set(by_set)
    if by_plans:
        print_by_plans(argv, parted, by_point)
    if attainable:
        print_attainable(errs)
        print_step_attainable(steps)
    return 0


def print_per_set(by_set):
    mean = lambda v: sum(v) / len(v) if v else float("nan")
    pc = lambda x: "-" if x != x else "%.2f %%" % x
    dp = lambda x: "-" if x != x else "%+.2f" % x
    vs = sorted({v for r in by_set.values() for v in r})
    base = "shipped h200" if "shipped h200" in vs else vs[0]
    print("\nPer RES, mean step |error| over the in-sample / held-out point rows (and the change against %s):" % base)
    print("| RES | " + " | ".join("%s: in-sample | held out" % v for v in vs) + " |")
    print("|---|" + "---|---|" * len(vs))
    worse = {v: 0 for v in vs}
    for res in by_set:
        cells = []
        b = by_set[res].get(base, {"in": [], "out": []})
        for v in vs:
            x = by_set[res].get(v)
            if not x:
                cells.append("- | -")
                continue
            di, do = mean(x["in"]) - mean(b["in"]), mean(x["out"]) - mean(b["out"])
            worse[v] += di > 0.1 + 1e-9
            cells.append("%s%s | %s%s" % (pc(mean(x["in"])), "" if v == base else " (%s)" % dp(di), pc(mean(x["out"])),
                                           "" if v == base else " (%s)" % dp(do)))
        print("| %s | %s |" % (res, " | ".join(cells)))
    for v in vs:
        if v != base:
            print("%s: in-sample mean worse than %s's by more than 0.1 point on %d of %d RES" % (v, base, worse[v],
                                                                                              len(by_set)))


def compare_steps(path, point, fields):
    """The per-step table `dkv compare` wrote for point into path, holding FIELDS; dies naming the file and what it
    lacks"""
    import importlib.util
    if importlib.util.find_spec("h5py") is None:
        die("%s: reading the comparisons needs python3-h5py (/usr/bin/python3)" % path)
    with script_io.open_h5(path, die) as h:
        run = "compare:%s:real" % point
        if run not in h["runs"]:
            die("%s: no comparison of point %s (no run %s)" % (path, point, run))
        g = script_io.group(h["runs"], run, "%s: runs" % path, die)
        return script_io.table(g, "compare_steps", "%s: run %s" % (path, run), die, fields=fields)


def plans_parted(res):
    """{(variant, point): True where the point's plans parted, False where they stayed the same} from RES's comparisons
    (pairs.txt: cmp/NNN.h5 by line for the shipped preset; the held-out lines' own count for cmp/prof_NNN.h5 and
    cmp/mach_NNN.h5).  Dies naming a comparison file that is there but unreadable."""
    out, k = {}, 0
    pairs = os.path.join(res, "pairs.txt")
    if not os.path.exists(pairs):
        return out
    for i, line in enumerate(script_io.read_text(pairs, die).splitlines()):
        f = line.split()
        if len(f) < 2 or not f[0].endswith("/heldout.h5"):
            continue
        k += 1
        point = f[1]
        for variant, name in (("shipped h200", "%03d.h5" % (i + 1)), ("profile", "prof_%03d.h5" % k),
                              ("machine-calibrated h200", "mach_%03d.h5" % k)):
            path = os.path.join(res, "cmp", name)
            if not os.path.exists(path):
                continue
            st = compare_steps(path, point, ("same_plan",))
            out[(variant, point[3:] if point.startswith("ho:") else point)] = bool((st["same_plan"] != 1).any())
    return out


def print_by_plans(res_list, parted_of, by_point):
    kinds = {}   # variant -> parted -> [(|e|, pass)]
    for res in res_list:
        parted = parted_of[res]
        for (r, v, p), x in by_point.items():
            if r == res and (v, p) in parted:
                kinds.setdefault(v, {}).setdefault(parted[(v, p)], []).append(x)
    print("\nHeld-out step target by whether the point's plans stayed the measured ones (dkv compare's same_plan):")
    print("| variant | plans | point rows | step passes | mean step |e| | largest |")
    print("|---|---|---|---|---|---|")
    for v in sorted(kinds):
        for parted in (False, True):
            x = kinds[v].get(parted, [])
            if x:
                print("| %s | %s | %d | %d | %.2f %% | %.1f %% |" % (v, "parted" if parted else "the same throughout", len(x),
                                                                     sum(ok for _, ok in x),
                                                                     sum(e for e, _ in x) / len(x), max(e for e, _ in x)))


def step_errors(res_list):
    """point -> [per RES: the relative errors sim / real - 1 of its steps of the same plan], from each RES's
    pairs.txt and cmp/NNN.h5 (the shipped preset's comparisons); RES without them are left out.  Dies naming a
    broken comparison file."""
    out = {}
    for res in res_list:
        pairs = os.path.join(res, "pairs.txt")
        if not os.path.exists(pairs):
            continue
        for i, line in enumerate(script_io.read_text(pairs, die).splitlines()):
            f = line.split()
            if len(f) < 2:
                continue
            point, path = f[1], os.path.join(res, "cmp", "%03d.h5" % (i + 1))
            st = compare_steps(path, point, ("same_plan", "sim_time_s", "real_time_s"))
            same = st["same_plan"] == 1
            e = [s / r - 1 for s, r in zip(st["sim_time_s"][same], st["real_time_s"][same]) if r > 0]
            if e:
                out.setdefault(point.split(":", 1)[1] if point.startswith("ho:") else point, []).append(e)
    return out


def print_step_attainable(steps):
    if not steps:
        return
    print("\nStep latency, one factor c per point on every simulated step (mean |error| <= 5 % over its paired steps):")
    print("| point | RES | passes now | best with one c | its c | per-RES bias, min .. max |")
    print("|---|---|---|---|---|---|")
    grid = [0.85 + 0.0005 * i for i in range(601)]
    for p in sorted(steps):
        es = steps[p]
        ok = lambda c: sum(sum(abs(c * (1 + e) - 1) for e in r) / len(r) <= STEP_TOL + 1e-12 for r in es)
        now = ok(1.0)
        counts = [(ok(c), c) for c in grid]
        best = max(n for n, _ in counts)
        if best == len(es) and now == best:
            continue
        cs = [c for n, c in counts if n == best]
        bias = [sum(r) / len(r) for r in es]
        print("| %s | %d | %d | %d | %.4f-%.4f | %+.1f .. %+.1f %% |" % (
            p, len(es), now, best, min(cs), max(cs), 100 * min(bias), 100 * max(bias)))


TARGETS = (("p50", 0.08), ("p99", 0.08), ("tok/s", 0.05), ("mem", 0.02))


def best_single(es, tol):
    """The most RES one value x passes on, and the range of such x (relative to the simulated value): each RES
    admits x in [(1 - tol) / (1 + e), (1 + tol) / (1 + e)]; the best x lies at some interval's lower end."""
    iv = [((1 - tol) / (1 + e), (1 + tol) / (1 + e)) for e in es]
    best, lo, hi = 0, 1.0, 1.0
    for x, _ in iv:
        n = sum(a <= x * (1 + 1e-12) and x <= b * (1 + 1e-12) for a, b in iv)
        if n > best:
            best, lo = n, x
            hi = min(b for a, b in iv if a <= x * (1 + 1e-12) and x <= b * (1 + 1e-12))
    return best, lo, hi


def print_attainable(errs):
    print("\nOne prediction per point for every RES (run-level targets; x: the best predicted value over the simulated):")
    print("| variant | point | target | RES | passes now | best one value | its x | measured max / min | limit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for v in sorted(errs):
        if v.startswith("machine-calibrated"):   # its simulated value differs per RES: the premise does not hold
            continue
        for p in sorted(errs[v]):
            x = errs[v][p]
            for k, (name, tol) in enumerate(TARGETS):
                es = [r[k] for r in x]
                now = sum(abs(e) <= tol + 1e-12 for e in es)
                best, lo, hi = best_single(es, tol)
                if best == len(es) and now == best:
                    continue
                span = max(1 + e for e in es) / min(1 + e for e in es)
                print("| %s | %s | %s | %d | %d | %d | %.3f-%.3f | %.3f | %.3f |" % (
                    v, p, name, len(es), now, best, lo, hi, span, (1 + tol) / (1 - tol)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
