#!/usr/bin/env bash
# Device call 71 (session 20): does the SM clock change what a GEMM reads?  Call 69's fifteen shapes
# (gemm_algo pre) again under Nsight Compute, once with --clock-control none (as calls 68/69: the GPU boosts,
# ~1,980 MHz alone) and once with --clock-control base (clocks locked to base), because the forward runs its
# GEMMs at 1,500-1,650 MHz under load (docs/COST_MODEL.md "The step's clock") and LLaDA-8B's down projection
# with the 144 x 128 tile read 293 MB per layer in the forward against 357-436 alone (call 69).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin/gemm_algo.xz built with
#        nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt (commit of this file)
# there: run(command="bash datasets/hw/2026-12-02/call71/command.sh", carry=[".hwbin"])
# post:  for c in none base; do /usr/bin/python3 scripts/gemm_reads.py pre datasets/hw/2026-12-02/call71/pre_$c.txt
#        datasets/hw/2026-12-02/call71/pre_$c.csv.gz; done
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
for c in none base; do
    t0=$SECONDS
    timeout -k 5 200 "$NCU" --csv --clock-control $c --cache-control none --target-processes all \
        --kernel-name regex:"nvjet|splitKreduce" --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
        --log-file "$OUT/pre_$c.csv" .hwbin/gemm_algo pre > "$OUT/pre_$c.txt" 2> "$OUT/pre_$c.err"
    echo "pre clock $c exit $? $((SECONDS - t0)) s, $(grep -c '^p ' "$OUT/pre_$c.txt") trials"
    head -3 "$OUT/pre_$c.err"
    gzip -9 "$OUT/pre_$c.csv"
done
