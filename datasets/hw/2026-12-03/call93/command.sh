#!/usr/bin/env bash
# Device call 93 (session 28): cuBLASLt's configuration (tile and K splits; the heuristic only, nothing runs) at the
# generic GEMM grid's (n, k) corners at every warm-up row count: the generic grid's lookup misses Dream-7B's shapes by
# -14 to +28 % per class (scripts/gemm_steps.py lookup, docs/COST_MODEL.md "GEMM rows between the grid's"), and the wave
# rule that predicts the staircase in m needs the corners' configurations to do the same across n and k.
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin/gemm_algo.xz built with
#        nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt (commit of this file)
# there: run(command="bash datasets/hw/2026-12-03/call93/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/gemm_steps.py grid datasets/hw/2026-12-03/call93/gemm_grid.txt.xz ...
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
t0=$SECONDS
timeout 200 .hwbin/gemm_algo grid > "$OUT/gemm_grid.txt" 2> "$OUT/gemm_grid.err"
echo "grid exit $? $((SECONDS - t0)) s, $(grep -c '^q ' "$OUT/gemm_grid.txt") lines"
t0=$SECONDS
timeout 60 .hwbin/gemm_algo splitk > "$OUT/gemm_splitk.txt" 2> "$OUT/gemm_splitk.err"
echo "splitk exit $? $((SECONDS - t0)) s, $(grep -c '^s ' "$OUT/gemm_splitk.txt") lines"
xz -9 "$OUT/gemm_grid.txt" "$OUT/gemm_splitk.txt"
