#!/usr/bin/env bash
# Device call 45 (session 16): the GEMM warm-up's bucket algorithms (core/model/gemm_warm.h, cuda/gemm.cu
# make_plan: after the warm-up a shape of T <= 8,192 rows plans with the algorithm the heuristic chose at
# its bucket, the least warm-up row count >= T).  Before: call 40's class events showed the q|k|v and O
# projections 1.5-7 ms over the simulator at the first step of a row count off the warm-up grid (a
# kernel the warm-up had not loaded), ~0.1-0.3 ms on it.
# (a) tests/gpu/test_kernels: the bucket test, and per call bucket algorithm against the heuristic's own
#     (LLaDA-8B q|k|v and gate|up at 200-3,466 rows; printed, not asserted); test_backend (GPU checks of
#     the backend with the new plans);
# (b) a fresh run set: the 9 in-sample points and the 11 held-out points (sm_clock on), no class events;
# (c) the held-out points again with class events (per class: is the first-step excess gone?).
# here:  bash scripts/hw_session.sh build; test_kernels and test_backend built in variant hw and copied
#        into .hwbin; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align; xz -9 -T2 the
#        binaries and .hwbin/lib/*; the tiny model moved out of the tree for the call
# there: run(command="bash datasets/hw/2026-12-02/call45/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-02/call45
#        (class events: tar xzf c.tgz, then post c/)
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/test_kernels.xz .hwbin/test_backend.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_kernels .hwbin/test_backend
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
X=$OUT/x; mkdir -p "$X"
t0=$SECONDS
timeout 90 .hwbin/test_kernels > "$X/test_kernels.log" 2>&1; echo "test_kernels exit $? $((SECONDS - t0)) s"
grep -E "INFO gemm|FAIL|PASS" "$X/test_kernels.log" | cut -c1-220
timeout 150 .hwbin/test_backend > "$X/test_backend.log" 2>&1; echo "test_backend exit $? $((SECONDS - t0)) s"
grep -E "^(FAIL|PASS)|failed" "$X/test_backend.log" | tail -5
STEPS="validate heldout" DEADLINE=200 bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done $((SECONDS - t0)) s"
OUT=$OUT/c STEPS="heldout" CLASS_TIMING=true DEADLINE=120 bash scripts/hw_session.sh device > "$X/c.log" 2>&1
echo "held-out with class events done $((SECONDS - t0)) s"
cat "$OUT/table.txt" 2> /dev/null | tail -28 | cut -c1-110
cd "$OUT" && tar czf c.tgz c x && rm -rf c x
