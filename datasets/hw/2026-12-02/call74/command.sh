#!/usr/bin/env bash
# Device call 74 (session 21): what a GEMM leaves of its output in L2 for the row walk after it.  Nsight Compute
# (session 21's per-kernel look at calls 9, 30 and 73) found the norm after the O and down projections reading
# 11.0 of LLaDA-8B's 19.7 MB residual at 2,400 rows (the replay: 18.9) and Dream-7B's RoPE 13.5 of its 22 MB
# q|k|v output (the replay: 20.6): the replay keeps too little of a GEMM's output, by shape.  Every GEMM class of
# LLaDA-8B and Dream-7B every 16 rows from 16 to 8,192 (`gemm_algo left C 16`: each trial as `gemm_algo reads`,
# L2 flushed, input written, the GEMM, then readout_kernel reads the output once in row order; its DRAM reads
# are the output the GEMM did not leave in L2), the SM clock at base as in call 72; output packed in one left.tgz.
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin/gemm_algo.xz built with
#        nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt (commit of this file)
# there: run(command="bash datasets/hw/2026-12-02/call74/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/gemm_reads.py left datasets/hw/2026-12-02/call74
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
start=$SECONDS
for c in 0 1 2 3 4 5 6 7; do
    left=$((480 - (SECONDS - start)))
    if [ "$left" -lt 30 ]; then echo "class $c: skipped, ${left} s left"; continue; fi
    lim=$(( left < 90 ? left : 90 ))
    t0=$SECONDS
    timeout -k 5 "$lim" "$NCU" --csv --clock-control base --cache-control none --target-processes all \
        --kernel-name regex:"nvjet|splitKreduce|readout_kernel" --metrics dram__bytes_read.sum,dram__bytes_write.sum \
        --log-file "$OUT/left_$c.csv" .hwbin/gemm_algo left "$c" 16 > "$OUT/left_$c.txt" 2> "$OUT/left_$c.err"
    echo "class $c exit $? $((SECONDS - t0)) s, $(grep -c '^l ' "$OUT/left_$c.txt") trials, $(grep -c '^"[0-9]' "$OUT/left_$c.csv") rows"
done
cat "$OUT"/left_*.err | sort | uniq -c | head -5
for f in "$OUT"/left_*.csv; do gzip -9 "$f"; done
(cd "$OUT" && tar czf left.tgz left_* && rm -f left_*)
