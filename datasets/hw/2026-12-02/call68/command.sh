#!/usr/bin/env bash
# Device call 68 (session 20): cuda/bench/gemm_algo's reads mode under Nsight Compute - each GEMM class of
# LLaDA-8B and Dream-7B (q|k|v, O, gate|up, down) at every warm-up row count, 8 to 8,192 by 8, as the forward
# meets it (L2 flushed, the input rows just written, the residual cold where the GEMM adds into it): its
# kernels' dram__bytes_read.sum / dram__bytes_write.sum with --cache-control none.  The data of the profile's
# gemm_reads block (scripts/gemm_reads.py; docs/COST_MODEL.md "Large-M GEMM reads, measured"): what a GEMM
# re-reads of its weights follows cuBLAS's tile and traversal, which the replay's rule does not carry to
# row counts it was not fitted on (call 67).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin/gemm_algo.xz built with
#        nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt (commit of this file)
# there: run(command="bash datasets/hw/2026-12-02/call68/command.sh", carry=[".hwbin"])
#        The first run (all eight classes, 211 s) brought back only its first eight files (a count limit on
#        what comes back): classes 0 and 1 whole; the rest were run again (CLASSES="2 3 4 5 6 7", 160 s) with
#        the output packed into one reads.tgz.
# post:  tar xzf datasets/hw/2026-12-02/call68/reads.tgz -C datasets/hw/2026-12-02/call68 (the second run's files)
#        /usr/bin/python3 scripts/gemm_reads.py datasets/hw/2026-12-02/call68
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
start=$SECONDS
for c in ${CLASSES:-0 1 2 3 4 5 6 7}; do
    left=$((540 - (SECONDS - start)))
    if [ "$left" -lt 30 ]; then echo "class $c: skipped, ${left} s left"; continue; fi
    lim=$(( left < 110 ? left : 110 ))
    t0=$SECONDS
    timeout -k 5 "$lim" "$NCU" --csv --clock-control none --cache-control none --target-processes all \
        --kernel-name regex:"nvjet|splitKreduce" --metrics dram__bytes_read.sum,dram__bytes_write.sum \
        --log-file "$OUT/reads_$c.csv" .hwbin/gemm_algo reads "$c" > "$OUT/reads_$c.txt" 2> "$OUT/reads_$c.err"
    echo "class $c exit $? $((SECONDS - t0)) s, $(grep -c '^r ' "$OUT/reads_$c.txt") trials, $(grep -c '^"[0-9]' "$OUT/reads_$c.csv") rows"
done
cat "$OUT"/reads_*.err | sort | uniq -c | head -5
for f in "$OUT"/reads_*.csv; do gzip -9 "$f"; done
(cd "$OUT" && tar czf reads.tgz reads_* && rm -f reads_*)
