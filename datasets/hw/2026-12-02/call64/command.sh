#!/usr/bin/env bash
# Device call 64 (session 19): cuda/bench/gemm_algo (new): the configuration cuBLASLt's heuristic picks for
# the backend's GEMM shapes (LLaDA-8B's and Dream-7B's q|k|v, O, gate|up and down at 16-2,112 rows, the
# backend's descriptors and 32 MiB workspace) - its algorithm's attributes (tile, split-K, ...) - and each
# GEMM run once, plainly and under Nsight Compute (kernel names and grids), to learn whether the
# heuristic's attributes tell the kernel's tiles and split-K without Nsight Compute (core/cost's L2 replay
# guesses them from a rule: docs/COST_MODEL.md "GEMM configurations from cuBLASLt").
# here:  the tiny model and calls 7's and 10's hw_h5_multi.tgz (and datasets/hw) moved out of the tree for
#        the call (64 MiB carry); .hwbin/gemm_algo.xz built with
#        nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt
# there: run(command="bash datasets/hw/2026-12-02/call64/command.sh", carry=[".hwbin"])
# post:  gzip -dc datasets/hw/2026-12-02/call64/gemm_algo.csv.gz > /tmp/g.csv && /usr/bin/python3 scripts/gemm_algo.py datasets/hw/2026-12-02/call64/gemm_algo.txt /tmp/g.csv
#        (gemm_algo_ncu.txt, the manifest of the run under Nsight Compute, was identical to gemm_algo.txt: not kept;
#        the CSV is kept gzipped)
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
t0=$SECONDS
timeout 60 .hwbin/gemm_algo > "$OUT/gemm_algo.txt" 2> "$OUT/gemm_algo.err"
echo "gemm_algo exit $? $((SECONDS - t0)) s, $(grep -c '^g ' "$OUT/gemm_algo.txt") shapes"
t0=$SECONDS
timeout 300 "$NCU" --csv --target-processes all --metrics launch__grid_size,launch__block_size,gpu__time_duration.sum \
    --log-file "$OUT/gemm_algo.csv" .hwbin/gemm_algo > "$OUT/gemm_algo_ncu.txt" 2> "$OUT/gemm_algo_ncu.err"
echo "ncu exit $? $((SECONDS - t0)) s, $(grep -c '^g ' "$OUT/gemm_algo_ncu.txt") shapes"
tail -2 "$OUT/gemm_algo_ncu.err"
cmp -s "$OUT/gemm_algo.txt" "$OUT/gemm_algo_ncu.txt" && echo "the heuristic chose the same under Nsight Compute" || echo "the two runs' choices DIFFER"
head -3 "$OUT/gemm_algo.txt"
