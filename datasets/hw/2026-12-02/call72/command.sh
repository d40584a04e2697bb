#!/usr/bin/env bash
# Device call 72 (session 20): call 68 again with the SM clock locked to base (--clock-control base), because
# call 71 found that LLaDA-8B's down projection with cuBLAS's 144 x 128 tile reads 326-424 MB alone at the
# boost clock (--clock-control none, calls 68, 69, 71) and 291 MB at base, where the forward, whose GEMMs run
# at 1,500-1,650 MHz under load, reads 293; every other shape of call 71 reads the same at both clocks within
# 0.5 %.  Every GEMM class of LLaDA-8B and Dream-7B at every warm-up row count, 8 to 8,192 by 8, as in call 68;
# the output packed in one reads.tgz (call 68's first run lost files to the count limit on what comes back).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin/gemm_algo.xz built with
#        nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt (commit of this file)
# there: run(command="bash datasets/hw/2026-12-02/call72/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/gemm_reads.py datasets/hw/2026-12-02/call72
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
start=$SECONDS
for c in 0 1 2 3 4 5 6 7; do
    left=$((300 - (SECONDS - start)))
    if [ "$left" -lt 30 ]; then echo "class $c: skipped, ${left} s left"; continue; fi
    lim=$(( left < 80 ? left : 80 ))
    t0=$SECONDS
    timeout -k 5 "$lim" "$NCU" --csv --clock-control base --cache-control none --target-processes all \
        --kernel-name regex:"nvjet|splitKreduce" --metrics dram__bytes_read.sum,dram__bytes_write.sum \
        --log-file "$OUT/reads_$c.csv" .hwbin/gemm_algo reads "$c" > "$OUT/reads_$c.txt" 2> "$OUT/reads_$c.err"
    echo "class $c exit $? $((SECONDS - t0)) s, $(grep -c '^r ' "$OUT/reads_$c.txt") trials, $(grep -c '^"[0-9]' "$OUT/reads_$c.csv") rows"
done
cat "$OUT"/reads_*.err | sort | uniq -c | head -5
for f in "$OUT"/reads_*.csv; do gzip -9 "$f"; done
(cd "$OUT" && tar czf reads.tgz reads_* && rm -f reads_*)
