#!/usr/bin/python3
"""ncu_gemm_reads.py - the GEMM classes' HBM reads of every Refresh step, counted and measured, as multiples
of the layers' weight bytes (docs/COST_MODEL.md "GEMM configurations from cuBLASLt": where the large-M
re-read model does and does not carry).

    /usr/bin/python3 scripts/ncu_gemm_reads.py MODEL REAL.h5 SIM.h5

REAL.h5: runs val:<point>:real with Nsight Compute's kernels imported (dkv ncu-import: ncu_kernels,
ncu_classes), e.g. scripts/ncu_model_bytes.sh's OUT/real.h5 or hw_session.sh post's h5/val.h5; SIM.h5: their
:sim twins (OUT/sim.h5, sim/val.h5).  MODEL: llada-8b or dream-7b (the weight bytes per layer: q|k|v, O, the
FFN's three matrices).  Steps are split at the reset kernel that starts each; prints per Refresh step its
query rows and, per class, counted / measured reads over the weights (input rows and residuals included,
so 1.0 is not "each weight read once").  Exit 1 naming the file (and the table or field) on a file that is not a
dkv results file or lacks what is read here; 2 on usage."""
import os
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (open_h5, table)

W = {"llada-8b": (32, {"qkv": 12288 * 4096, "o_proj": 4096 * 4096, "ffn": 24576 * 4096 + 4096 * 12288}),
     "dream-7b": (28, {"qkv": 4608 * 3584, "o_proj": 3584 * 3584, "ffn": 37888 * 3584 + 3584 * 18944})}


def step_bounds(r, where, die):
    """Where each step of run r (a val:<point>:real group with Nsight Compute's kernels imported) starts among
    its kernels, split at the reset kernel that starts each step: a list one longer than the steps (the last
    the kernel count); die(message) when the steps cannot be found."""
    st = script_io.table(r, "steps", where, die)
    nk = script_io.table(r, "ncu_kernels", where, die, ("name",))
    names = [x.decode() for x in nk["name"]]
    starts = [i for i, x in enumerate(names)
              if x.startswith("reset_kernel") and (i == 0 or not names[i - 1].startswith("reset_kernel"))]
    if len(starts) < len(st):
        die("%s: %d step starts (reset_kernel) for %d steps" % (where, len(starts), len(st)))
    return starts[-len(st):] + [len(nk)]


def refresh_steps(r, where, die):
    """The Refresh steps of run r: a list of (step index j, its first kernel, the kernel after its last)
    (step_bounds), and the class name -> kind map of ncu_classes."""
    st, bounds = script_io.table(r, "steps", where, die, ("n_refresh",)), step_bounds(r, where, die)
    nc = script_io.table(r, "ncu_classes", where, die, ("kind", "name"))
    kind = {x.decode(): int(y) for y, x in zip(nc["kind"], nc["name"])}
    return [(j, bounds[j], bounds[j + 1]) for j in range(len(st)) if st["n_refresh"][j] != 0], kind


def die(msg):
    sys.exit("ncu_gemm_reads.py: " + msg)


def main(argv):
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if len(argv) != 3 or argv[0] not in W:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    layers, wb = W[argv[0]]
    R, S = script_io.open_h5(argv[1], die)["runs"], script_io.open_h5(argv[2], die)["runs"]
    n = 0
    for k in sorted(R):
        if not k.endswith(":real") or not isinstance(R[k], h5py.Group) or "ncu_kernels" not in R[k] or \
                k[:-5] + ":sim" not in S:
            continue
        r, s = R[k], S[k[:-5] + ":sim"]
        where = "%s: run %s" % (argv[1], k)
        st = script_io.table(r, "steps", where, die, ("index", "q_tokens"))
        nk = script_io.table(r, "ncu_kernels", where, die, ("kind", "read_bytes"))
        sk = script_io.table(s, "kernels", "%s: run %s" % (argv[2], k[:-5] + ":sim"), die,
                             ("read_bytes", "step_index", "kind"))
        steps, kind = refresh_steps(r, where, die)
        for j, lo, hi in steps:
            seg = nk[lo:hi]
            cols = []
            for c in ("qkv", "o_proj", "ffn"):
                if c not in kind:
                    die("%s: table 'ncu_classes' has no class '%s'" % (where, c))
                w = 2.0 * wb[c] * layers
                meas = seg["read_bytes"][seg["kind"] == kind[c]].sum() / w
                cnt = sk["read_bytes"][(sk["step_index"] == st["index"][j]) & (sk["kind"] == kind[c])].sum() / w
                cols.append("%s %.2f / %.2f" % (c, cnt, meas))
            print("%-16s step %d  %5d rows:  %s" % (k[:-5], j, st["q_tokens"][j], "   ".join(cols)))
            n += 1
    if n == 0:
        sys.exit("ncu_gemm_reads.py: no Refresh step with Nsight Compute's kernels in %s" % argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
