#!/usr/bin/env bash
# Device call 58 (session 18): cuda/bench/l2probe under Nsight Compute (--cache-control none) again, with
# the trials added after call 56: clean 8 MB probes behind streams read by 4, 16 and 64 CTAs a line (a
# GEMM's input is read by every CTA column: which capacity do such lines see, against the replay's 31.5 MB
# and the one- and two-CTA 41.25 / 37 MB of call 56), and a probe rewritten in place row by row after it
# was written (the RoPE's pattern, which the replay's 21.0 MB dirty bound was read from).
# docs/COST_MODEL.md "What the L2 keeps between kernels".
# here:  the tiny model and calls 7's and 10's hw_h5_multi.tgz moved out of the tree for the call (64 MiB carry);
#        .hwbin/l2probe.xz built with nvcc -O3 -arch=sm_90 cuda/bench/l2probe.cu
# there: run(command="bash datasets/hw/2026-12-02/call58/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/l2probe.py datasets/hw/2026-12-02/call58/l2probe.txt datasets/hw/2026-12-02/call58/l2probe.csv
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/l2probe.xz
else python3 -c "import lzma; open('.hwbin/l2probe','wb').write(lzma.open('.hwbin/l2probe.xz').read())" && rm -f .hwbin/l2probe.xz; fi
chmod +x .hwbin/l2probe
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
t0=$SECONDS
timeout 300 "$NCU" --csv --clock-control none --cache-control none --target-processes all \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    --log-file "$OUT/l2probe.csv" .hwbin/l2probe > "$OUT/l2probe.txt" 2> "$OUT/l2probe.err"
echo "l2probe exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$OUT/l2probe.txt") launches"
tail -2 "$OUT/l2probe.err"
