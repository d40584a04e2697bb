#!/usr/bin/env bash
# Device call 69 (session 20): cuda/bench/gemm_algo's pre mode under Nsight Compute - does the way a GEMM's
# input rows were written change what the GEMM reads?  Call 68 measured every shape after the input was
# written alone; in the forward (calls 3/9/30/67) LLaDA-8B's down projection at 1,664 rows (144 x 128 tiles)
# read 293 MB per layer where call 68 measured 424, while the other GEMMs agreed within 1-8 %.  Fifteen
# shapes, each three times after each of three preparations (written alone; by a walk reading twice the
# bytes, as the SwiGLU; three times, as the attention): scripts/gemm_reads.py pre.
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin/gemm_algo.xz built with
#        nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt (commit of this file)
# there: run(command="bash datasets/hw/2026-12-02/call69/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/gemm_reads.py pre datasets/hw/2026-12-02/call69/pre.txt datasets/hw/2026-12-02/call69/pre.csv.gz
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
t0=$SECONDS
timeout -k 5 240 "$NCU" --csv --clock-control none --cache-control none --target-processes all \
    --kernel-name regex:"nvjet|splitKreduce" --metrics dram__bytes_read.sum,dram__bytes_write.sum \
    --log-file "$OUT/pre.csv" .hwbin/gemm_algo pre > "$OUT/pre.txt" 2> "$OUT/pre.err"
echo "pre exit $? $((SECONDS - t0)) s, $(grep -c '^p ' "$OUT/pre.txt") trials"
head -3 "$OUT/pre.err"
gzip -9 "$OUT/pre.csv"
