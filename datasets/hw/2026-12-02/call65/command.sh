#!/usr/bin/env bash
# Device call 65 (session 19): cuda/bench/gemm_algo's splitk mode - cuBLASLt's heuristic split-K (and tile
# id) for LLaDA-8B's and Dream-7B's q|k|v, O, gate|up and down at every warm-up row count, 8 to 8,192 by 8
# (nothing runs) - the data of the profile's gemm_splitk block (scripts/gemm_splitk.py; docs/COST_MODEL.md
# "GEMM configurations from cuBLASLt"); and the plain mode again, whose output must equal call 64's
# (the same choices on another machine, and after choose() was factored out).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin/gemm_algo.xz built with
#        nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt (commit of this file)
# there: run(command="bash datasets/hw/2026-12-02/call65/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/gemm_splitk.py datasets/hw/2026-12-02/call65/gemm_splitk.txt
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
t0=$SECONDS
timeout 120 .hwbin/gemm_algo splitk > "$OUT/gemm_splitk.txt" 2> "$OUT/gemm_splitk.err"
echo "splitk exit $? $((SECONDS - t0)) s, $(grep -c '^s ' "$OUT/gemm_splitk.txt") shapes"
timeout 60 .hwbin/gemm_algo > "$OUT/gemm_algo.txt" 2> "$OUT/gemm_algo.err"
echo "plain exit $? $(grep -c '^g ' "$OUT/gemm_algo.txt") shapes"
cmp -s "$OUT/gemm_algo.txt" datasets/hw/2026-12-02/call64/gemm_algo.txt && echo "plain: identical to call 64" || echo "plain: DIFFERS from call 64"
cat "$OUT/gemm_splitk.err" "$OUT/gemm_algo.err" | head -5
