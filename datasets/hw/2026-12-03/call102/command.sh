#!/usr/bin/env bash
# Device call 102 (session 31): is the L2 left at its dirty bound by the step's end?  The LM head writes fp32 logits
# (39 MB at 64 logit rows on Dream-7B) and the argmax reads them; if that leaves the L2 at its 28-30 MB dirty bound,
# every small writer afterwards writes back about what it writes, as Dream-7B's store and attention do on the GPU and
# not in the replay.  cuda/bench/l2drain.cu's behind<L> kinds under Nsight Compute (--cache-control none): L MB
# written and read back (L = 0, the control, 16, 39, 64), then a 0.5 or 1 MB probe written (w) and 2 MB read (m).
# Question, set first: with L >= 39, do w and m together write back at least half the probe's size, against ~0 at
# L = 0?  (The strided and older kinds run again: call 90's and 101's rows on another machine.)
# .hwbin as call 100's plus l2drain (nvcc -O3 -arch=sm_90 cuda/bench/l2drain.cu -o .hwbin/l2drain).
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call102/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/l2drain.py datasets/hw/2026-12-03/call102/l2drain.txt datasets/hw/2026-12-03/call102/l2drain.csv
set -u
chmod +x .hwbin/l2drain
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
t0=$SECONDS
timeout 200 "$NCU" --csv --clock-control none --cache-control none --target-processes all \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    --log-file "$OUT/l2drain.csv" .hwbin/l2drain > "$OUT/l2drain.txt" 2> "$OUT/l2drain.err"
echo "l2drain exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$OUT/l2drain.txt") launches"
tail -2 "$OUT/l2drain.err"
python3 scripts/l2drain.py "$OUT/l2drain.txt" "$OUT/l2drain.csv" 2>&1 | sed -n '/### behind0$/,$p'
