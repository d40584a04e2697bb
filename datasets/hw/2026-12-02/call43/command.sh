#!/usr/bin/env bash
# Device call 43 (session 15): is Nsight Compute's per-class DRAM write count (--cache-control none) reproducible?
# Issue 9's per-class HBM target (5 %, writes) is met at 21 of 49 class-points (docs/BENCHMARKS.md "HBM bytes per
# kernel class"); with --cache-control none a kernel's dirty L2 lines are written back whenever later traffic
# evicts them, so a class's write count depends on what ran around it.  The two points of call 30 (w3:dual,
# w1:prefix), measured twice here on one machine (a, b): run to run on one machine, and machine to machine
# against call 30.
# here:  .hwbin built at commit e782c5d (the shipped profile l needs it; the first try with call 42's binary could not load it); the tiny model moved out of the tree for the call
# there: run(command="bash datasets/hw/2026-12-02/call43/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
ROOT_OUT=$OUT
for r in a b; do
    OUT=$ROOT_OUT/$r STEPS="ncu" NCU_CACHE=none NCU_POINTS="w3:dual w1:prefix" NCU_LIMIT=70 DEADLINE=170 \
        bash scripts/hw_session.sh device > "$ROOT_OUT/$r.log" 2>&1
    echo "run $r done $SECONDS s"
done
cd "$ROOT_OUT" && tar czf ncu_ab.tgz a b a.log b.log && rm -rf a b a.log b.log
