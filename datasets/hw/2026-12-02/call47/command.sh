#!/usr/bin/env bash
# Device call 47 (session 16): the bucket algorithms' loss by the warm-up grid's spacing
# (tests/gpu/bench_gemm_bucket.c; docs/COST_MODEL.md "Bucket algorithms"): LLaDA-8B's four GEMMs at 13 row
# counts of real steps off the grid, each with the heuristic's algorithm at T and with the one it chose at T
# rounded up to a multiple of 8 ... 256 and at the shipped grid's bucket.
# here:  scons -Q -j2 variant=hw mode=release cuda=yes build/hw-release/tests/gpu/bench_gemm_bucket; copied into
#        .hwbin and xz -9 (nothing else in .hwbin)
# there: run(command="bash datasets/hw/2026-12-02/call47/command.sh", carry=[".hwbin"])
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/bench_gemm_bucket.xz
else python3 -c "import lzma; open('.hwbin/bench_gemm_bucket','wb').write(lzma.open('.hwbin/bench_gemm_bucket.xz').read())"; fi
chmod +x .hwbin/bench_gemm_bucket
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
timeout 240 .hwbin/bench_gemm_bucket > "$OUT/bench_gemm_bucket.log" 2>&1; echo "bench exit $? $SECONDS s"
grep SUMMARY "$OUT/bench_gemm_bucket.log"
