#!/usr/bin/env bash
# Device call 66 (session 19): what a split-K GEMM leaves dirty in the L2 (cuda/bench/gemm_algo wb under Nsight
# Compute with the caches left alone): LLaDA-8B's and Dream-7B's down projection at 32, 64, 128 and 288 rows and
# O at 32 (2-4 splits), two unsplit q|k|v controls, each twice: flush (read 256 MiB), the GEMM, flush; the
# second flush's DRAM writes are the dirty lines the GEMM left.  The replay assumes all of a split GEMM's fp32
# partials (splits x rows x N x 4 bytes) stay dirty and are written back by the kernels after it; session 19
# found the GPU writing back about 2 splits' worth at Dream-7B's 3 splits and as if 4 at LLaDA-8B's 3
# (docs/COST_MODEL.md "GEMM configurations from cuBLASLt").
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin/gemm_algo.xz built with
#        nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt (commit of this file)
# there: run(command="bash datasets/hw/2026-12-02/call66/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/gemm_algo.py wb datasets/hw/2026-12-02/call66/wb.txt datasets/hw/2026-12-02/call66/wb.csv
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
t0=$SECONDS
timeout 240 "$NCU" --csv --clock-control none --cache-control none --target-processes all \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    --log-file "$OUT/wb.csv" .hwbin/gemm_algo wb > "$OUT/wb.txt" 2> "$OUT/wb.err"
echo "wb exit $? $((SECONDS - t0)) s, $(grep -c '^w ' "$OUT/wb.txt") trials"
tail -2 "$OUT/wb.err"
