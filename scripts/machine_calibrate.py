#!/usr/bin/python3
"""machine_calibrate.py - the machine calibration of one run set (docs/COST_MODEL.md "Machine calibration"):
the kernel-time scale that brings the simulator's mean step bias on this machine's in-sample validation
points (val:*, the fit set's workloads) to zero, for re-simulating its other runs (sim.kernel_scale,
hw_lib's -D kernel_scale).

    /usr/bin/python3 scripts/machine_calibrate.py RES [--scale]

RES is a post result (scripts/hw_session.sh post): its cmp/NNN.h5 are `dkv compare` results of each real
run against its re-simulation under the shipped preset.  Prints each val:* point's mean signed step error
(dkv compare's step.time_s bias), their mean b (points weighted equally) and the scale 1 / (1 + b); with
--scale, the scale alone.  The held-out points (ho:*) are never read.  Exits 2 on a RES without at least
one val:* comparison with paired steps, naming what is missing, on a cmp/NNN.h5 that is not a `dkv compare`
result (the message names the file and what it lacks), on a mean bias of -100 % or below (no scale), or on an
unknown option."""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (open_h5, group, table: a file refused in one line naming it)


def die(msg):
    print("machine_calibrate.py: %s" % msg, file=sys.stderr)
    sys.exit(2)


def val_biases(res):
    out = []
    for fn in sorted(glob.glob(os.path.join(res, "cmp", "[0-9][0-9][0-9].h5"))):
        with script_io.open_h5(fn, die) as f:
            for rn in f["runs"]:
                where = "%s: run %s" % (fn, rn)
                r = script_io.group(f["runs"], rn, fn, die)
                real = script_io.group(r, "params", where, die).attrs.get("real_run")
                if real is None:
                    die("%s: no params.real_run (not a `dkv compare` result)" % where)
                real = real.decode() if isinstance(real, bytes) else str(real)
                if not real.startswith("val:"):
                    continue
                q = {x["quantity"].decode(): x
                     for x in script_io.table(r, "compare_quantities", where, die, ("quantity", "n", "bias"))}
                x = q.get("step.time_s")
                if x is not None and x["n"] > 0:
                    out.append((real[:-5] if real.endswith(":real") else real, int(x["n"]), float(x["bias"])))
    return out


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    script_io.unknown_options("machine_calibrate.py", argv, known=("--scale",))
    args = [a for a in argv if a != "--scale"]
    flags = [a for a in argv if a == "--scale"]
    if len(args) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    res = args[0]
    if not os.path.isdir(os.path.join(res, "cmp")):
        print("machine_calibrate.py: %s: no cmp/ folder (a scripts/hw_session.sh post result?)" % res, file=sys.stderr)
        return 2
    pts = val_biases(res)
    if not pts:
        print("machine_calibrate.py: %s/cmp: no val:* comparison with paired steps (the in-sample points calibrate "
              "the machine)" % res, file=sys.stderr)
        return 2
    b = sum(p[2] for p in pts) / len(pts)
    if not 1 + b > 0:   # -100 % or below (or NaN): the simulated steps take no time; no scale brings it to 0
        die("%s/cmp: mean step.time_s bias %+.2f %% over %d val:* points: no kernel_scale 1 / (1 + b) (a bias of "
            "-100 %% or below is not a comparison of timed steps)" % (res, 100 * b, len(pts)))
    scale = 1 / (1 + b)
    if "--scale" in flags:
        print("%.6f" % scale)
        return 0
    for name, n, bias in pts:
        print("%-16s %3d steps  bias %+.2f %%" % (name, n, 100 * bias))
    print("mean bias over %d in-sample points: %+.2f %%; kernel_scale = 1 / (1 + b) = %.6f" % (len(pts), 100 * b, scale))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
