#!/usr/bin/python3
"""ncu_flush.py - the dirty bytes the GPU's L2 holds at chosen points of the forward, against the L2 replay's: the
CUDA backend's l2_flush diagnostic (dkv.execute's opts.l2_flush, hw_lib's -D l2_flush; docs/GPU.md "The L2 flush
diagnostic") reads a buffer of twice the L2 after each listed point, so Nsight Compute's DRAM writes of that
flush_kernel (--cache-control none) are the dirty bytes the L2 held there; the simulated twin recorded with
record.l2_kernels gives the replay's dirty bytes after the same kernel (l2_kernels.l2_dirty_bytes; docs/COST_MODEL.md
"Kernel by kernel").

    /usr/bin/python3 scripts/ncu_flush.py NCU.csv SIM.h5 --point P --flush SPEC

Since session 48 an entry may read one of the forward's activation buffers instead (LAYER:POINT:READ, READ one of x, h,
qkv, att, gu, ff; flush, the default, is the flush): the same flush_kernel reads the step's rows of that buffer (its
bytes: the step's q_tokens of the simulated twin times the buffer's row, bf16, from the run's model), so its DRAM
reads are the bytes of it the L2 did not hold there, and the row gives what it held: the bytes less those reads.

NCU.csv: `ncu --csv` of the executed run (every kernel, or only `--kernel-name flush_kernel`); SIM.h5: the point's
:sim run with l2_kernels (`hw_validate.lua -D backend=sim -D l2_kernels=true -D point=P`); P: the point (e.g.
w10:dual); SPEC: the -D l2_flush the run had (LAYER:POINT[:READ],...).  Every step flushes once per SPEC entry, in the
order the forward reaches them (by layer, then by point, then as listed), so the flush kernels are taken in that
order, step after step.  One row per flush: the step, the layer and point, the GPU's dirty MB, the replay's after
that kernel of its counted layer (the same in every layer), and the difference; then, when SPEC has READ entries, a
second table, one row per read: the step, the layer and point, the buffer, the step's rows, the buffer's MB, the MB of
it the L2 held (the GPU's), and for x, qkv and att the replay's after the same kernel (l2_kernels.l2_held_x,
l2_held_qkv, l2_held_att, since session 48; "-" for the other buffers or a file without them) and the difference.  The CSV needs dram__bytes_write.sum, and
dram__bytes_read.sum too when SPEC reads.  Exits 1 naming the file on a flush count that is not a multiple of SPEC's, a
SPEC that does not parse, or a simulated run without l2_kernels."""
import os
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_rows  # noqa: E402

POINTS = ("norm", "qkv", "rope", "attn", "o", "ffn_norm", "gate_up", "swiglu", "down")
READS = ("flush", "x", "h", "qkv", "att", "gu", "ff")
ATTN = 1
MB = 1e6


def die(msg):
    sys.stderr.write("ncu_flush.py: %s\n" % msg)
    sys.exit(1)


def parse_spec(spec):
    out = []
    for item in spec.split(","):
        f = item.split(":")
        if len(f) not in (2, 3) or not f[0].isdigit() or f[1] not in POINTS or (len(f) == 3 and f[2] not in READS):
            die("--flush: %r is not LAYER:POINT[:READ] (POINT one of %s; READ one of %s)"
                % (item, ", ".join(POINTS), ", ".join(READS)))
        out.append((int(f[0]), POINTS.index(f[1]), READS.index(f[2]) if len(f) == 3 else 0))
    return sorted(out, key=lambda e: e[:2])   # stable: entries at one point in the order listed


def row_bytes(cfg, read):
    """bytes of one row of buffer READS[read] (cuda/backend_fwd.c's bf16 activations), from the run's model"""
    m = {k: int(cfg["model." + k]) for k in ("hidden", "ffn", "n_heads", "n_kv_heads", "head_dim")}
    qd = m["n_heads"] * m["head_dim"]
    return 2 * {1: m["hidden"], 2: m["hidden"], 3: qd + 2 * m["n_kv_heads"] * m["head_dim"], 4: qd,
                5: 2 * m["ffn"], 6: m["ffn"]}[read]


def held_of(rec):
    """the replay's held bytes after a kernel record, by buffer name (empty for a file written before session 48)"""
    names = rec.dtype.names
    return {b: float(rec["l2_held_" + b]) for b in ("x", "qkv", "att") if "l2_held_" + b in names}


def replay_index(kinds, point):
    """the index in KINDS (the replay's layer kernels in order) of the kernel after which POINT flushes"""
    if point <= 2:   # norm, q|k|v, RoPE(-store): the layer's first three
        return point
    if ATTN not in kinds:
        return None
    return kinds.index(ATTN) + point - 3   # attention, then O, the FFN norm, gate|up, SwiGLU, down


def main(argv):
    _, opts = ncu_rows.cli(argv, __doc__, 2, ("--point", "--flush"), die)
    if "--point" not in opts or "--flush" not in opts:
        die("--point and --flush are required (see --help)")
    spec = parse_spec(opts["--flush"])
    reads = any(r for _, _, r in spec)
    rows = ncu_rows.read_ncu(argv[0], ("dram__bytes_write.sum",) + (("dram__bytes_read.sum",) if reads else ()), die)
    flushes = [r for r in rows if ncu_rows.bare_name(r["name"]) == "flush_kernel"]
    if not flushes or len(flushes) % len(spec):
        die("%s: %d flush_kernel rows, not a multiple of the %d points of --flush" % (argv[0], len(flushes), len(spec)))
    try:
        runs = h5py.File(argv[1], "r")["runs"]
    except (OSError, KeyError) as e:
        die("%s" % e)
    name = next((k for k in runs if k.endswith(":" + opts["--point"] + ":sim")), None)
    if name is None:
        die("%s: no run <study>:%s:sim" % (argv[1], opts["--point"]))
    if "l2_kernels" not in runs[name]:
        die("%s: %s has no l2_kernels table (simulate it with -D l2_kernels=true)" % (argv[1], name))
    l2 = runs[name]["l2_kernels"][()]
    cfg = runs[name]["config"].attrs
    q_tokens = {int(s["index"]): int(s["q_tokens"]) for s in runs[name]["steps"][()]}
    n_steps = len(flushes) // len(spec)
    print("| step | layer:point | GPU dirty MB | replay dirty MB | replay - GPU |")
    print("|---|---|---|---|---|")
    held = []
    for j in range(n_steps):
        lay = sorted((int(x["l2_seq"]), int(x["kind"]), float(x["l2_dirty_bytes"]), held_of(x)) for x in l2
                     if int(x["step_index"]) == j and int(x["l2_part"]) == 1)
        if not lay:
            die("%s: %s has no layer records of step %d (its steps and the executed run's differ?)" % (argv[1], name, j))
        kinds = [k for _, k, _, _ in lay]
        for i, (layer, point, read) in enumerate(spec):
            f = flushes[j * len(spec) + i]
            ri = replay_index(kinds, point)
            if read:
                b = q_tokens.get(j, 0) * row_bytes(cfg, read) // 16 * 16
                gpu = (b - f["dram__bytes_read.sum"]) / MB
                rep = lay[ri][3].get(READS[read]) if ri is not None and ri < len(lay) else None
                held.append("| %d | %d:%s | %s | %d | %.3f | %.3f | %s |" % (
                    j, layer, POINTS[point], READS[read], q_tokens.get(j, 0), b / MB, gpu,
                    "%.3f | %+.3f" % (rep / MB, rep / MB - gpu) if rep is not None else "- | -"))
                continue
            gpu = f["dram__bytes_write.sum"] / MB
            rep = lay[ri][2] / MB if ri is not None and ri < len(lay) else float("nan")
            print("| %d | %d:%s | %.3f | %.3f | %+.3f |" % (j, layer, POINTS[point], gpu, rep, rep - gpu))
    if held:
        print("\n| step | layer:point | buffer | rows | buffer MB | GPU: held in L2 MB | replay: held MB | replay - GPU |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(held))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
