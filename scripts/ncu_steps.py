#!/usr/bin/python3
"""ncu_steps.py - HBM bytes per kernel class, step by step: the counted bytes (core/cost, the :sim twin) beside
Nsight Compute's for every step of every point, where scripts/ncu_bytes.py sums the steps (docs/COST_MODEL.md
"HBM bytes with an L2"; how session 21 found the attention's and the walks' misses).

    /usr/bin/python3 scripts/ncu_steps.py REAL.h5 SIM.h5 [--point P] [--class C]

REAL.h5: runs val:<point>:real with Nsight Compute's kernels imported (dkv ncu-import: ncu_kernels), e.g.
scripts/ncu_model_bytes.sh's OUT/real.h5, scripts/ncu_score.sh's OUT/<set>/out/real.h5 or hw_session.sh post's
h5/val.h5; SIM.h5: their :sim twins (OUT/sim.h5, sim/val.h5).  Steps are split at the reset kernel that starts
each.  One line per step: the point, the step, R (Refresh) or U (Reuse), its query rows, then per class
"counted/measured MB (error)" for reads and "w counted/measured" for writes.  --point and --class keep one
point or one class (qkv, attn, o_proj, ffn, lm_head, kv_store, kv_gather, elementwise).  Exits 1 naming the
file on runs it cannot pair."""
import os
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_gemm_reads  # noqa: E402  (step_bounds: the steps among the kernels)
import ncu_rows  # noqa: E402  (cli: the arguments)
import script_io  # noqa: E402  (open_h5, table: a file refused in one line naming it)

CLASSES = {"qkv": 0, "attn": 1, "o_proj": 2, "ffn": 3, "lm_head": 4, "kv_store": 5, "kv_gather": 6, "elementwise": 8}


def die(msg):
    sys.stderr.write("ncu_steps.py: %s\n" % msg)
    sys.exit(1)


def err(a, b):
    return "%+.0f%%" % (100 * (a - b) / b) if b > 0 else "-"


def main(argv):
    _, opts = ncu_rows.cli(argv, __doc__, 2, ("--point", "--class"), die)
    if "--class" in opts and opts["--class"] not in CLASSES:
        die("unknown class %r (%s)" % (opts["--class"], ", ".join(CLASSES)))
    R, S = script_io.open_h5(argv[0], die)["runs"], script_io.open_h5(argv[1], die)["runs"]
    names = {v: k for k, v in CLASSES.items()}
    n = 0
    for key in sorted(R):
        if not key.endswith(":real") or not isinstance(R[key], h5py.Group) or "ncu_kernels" not in R[key]:
            continue
        point = key[4:-5] if key.startswith("val:") else key[:-5]
        if "--point" in opts and point != opts["--point"]:
            continue
        if key[:-5] + ":sim" not in S:
            die("%s: %s has no %s in %s" % (argv[0], key, key[:-5] + ":sim", argv[1]))
        r, s = R[key], S[key[:-5] + ":sim"]
        where = "%s: run %s" % (argv[0], key)
        nk = script_io.table(r, "ncu_kernels", where, die, ("kind", "read_bytes", "write_bytes"))
        st = script_io.table(r, "steps", where, die, ("n_refresh", "q_tokens"))
        sk = script_io.table(s, "kernels", "%s: run %s" % (argv[1], key[:-5] + ":sim"), die,
                             ("step_index", "kind", "read_bytes", "write_bytes"))
        bounds = ncu_gemm_reads.step_bounds(r, "%s: %s" % (argv[0], key), die)
        for j in range(len(st)):
            real, sim = {}, {}
            for i in range(bounds[j], bounds[j + 1]):
                c = real.setdefault(int(nk["kind"][i]), [0.0, 0.0])
                c[0] += nk["read_bytes"][i]
                c[1] += nk["write_bytes"][i]
            for x in sk[sk["step_index"] == j]:
                c = sim.setdefault(int(x["kind"]), [0.0, 0.0])
                c[0] += x["read_bytes"]
                c[1] += x["write_bytes"]
            cells = []
            for c in sorted(set(real) | set(sim)):
                if c not in names or ("--class" in opts and names[c] != opts["--class"]):
                    continue
                a, m = sim.get(c, [0, 0]), real.get(c, [0, 0])
                cells.append("%s %.0f/%.0f (%s) w %.0f/%.0f (%s)" % (names[c], a[0] / 1e6, m[0] / 1e6, err(a[0], m[0]),
                                                                  a[1] / 1e6, m[1] / 1e6, err(a[1], m[1])))
            print("%s %d %s %d | %s" % (point, j, "R" if st["n_refresh"][j] else "U", st["q_tokens"][j], " | ".join(cells)))
            n += 1
    if not n:
        die("%s: no run with Nsight Compute's kernels%s" % (argv[0], " at point %s" % opts["--point"] if "--point" in opts else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
