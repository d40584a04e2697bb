#!/usr/bin/env bash
# Device call 76 (session 21): what a row walk keeps dirty of what it writes, measured alone (`gemm_algo walks`:
# outputs of 4 to 192 MB written row by row while reading 1-3 times as many bytes of a cold source, between two
# L2 flushes; the walk's DRAM writes are what it wrote back during itself, the second flush's what it left
# dirty): the check of session 21's walk end state (docs/COST_MODEL.md "What a GEMM leaves of its output": a walk
# keeps its reads and writes in proportion to their bytes, C F / (G + F) of its output, at most the dirty bound),
# which was read from the forward's SwiGLU and down projection.  SM clock at base, as calls 72 and 74.
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin/gemm_algo.xz built with
#        nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt (commit of this file)
# there: run(command="bash datasets/hw/2026-12-02/call76/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/gemm_algo.py walks datasets/hw/2026-12-02/call76/walks.txt datasets/hw/2026-12-02/call76/walks.csv.gz
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
t0=$SECONDS
timeout -k 5 240 "$NCU" --csv --clock-control base --cache-control none --target-processes all \
    --kernel-name regex:"walk_kernel|flush_kernel" --metrics dram__bytes_read.sum,dram__bytes_write.sum \
    --log-file "$OUT/walks.csv" .hwbin/gemm_algo walks > "$OUT/walks.txt" 2> "$OUT/walks.err"
echo "walks exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$OUT/walks.txt") trials, $(grep -c '^"[0-9]' "$OUT/walks.csv") rows"
head -3 "$OUT/walks.err"
gzip -9 "$OUT/walks.csv"
