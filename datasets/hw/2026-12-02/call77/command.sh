#!/usr/bin/env bash
# Device call 77 (session 22): cuda/bench/gemm_algo's clock mode (new): how each GEMM class's time follows the
# SM clock, measured at two known clocks: every class of both models at 16-8,192 rows, three launches each,
# under Nsight Compute at the base clock (--clock-control base) and with the clock free (--clock-control none),
# each launch's own clock from sm__cycles_elapsed.avg.per_second; the caches flushed before each launch
# (Nsight Compute's default).  It replaces the assumed state clocks of `dkv profile --states` (call 42) as the
# input of the simulator's clock model (docs/COST_MODEL.md "The step's clock").
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin/gemm_algo.xz built with
#        nvcc -O3 -arch=sm_90 cuda/bench/gemm_algo.cu -lcublasLt
# there: run(command="bash datasets/hw/2026-12-02/call77/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/gemm_algo.py clock datasets/hw/2026-12-02/call77/clock_base.txt \
#            datasets/hw/2026-12-02/call77/clock_base.csv.gz datasets/hw/2026-12-02/call77/clock_free.txt \
#            datasets/hw/2026-12-02/call77/clock_free.csv.gz
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,clocks.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
t0=$SECONDS
timeout 60 .hwbin/gemm_algo clock > "$OUT/clock_plain.txt" 2> "$OUT/clock_plain.err"
echo "plain exit $? $((SECONDS - t0)) s, $(grep -c '^c ' "$OUT/clock_plain.txt") shapes"
for cc in base none; do
    n=$([ $cc = base ] && echo base || echo free)
    t0=$SECONDS
    timeout 240 "$NCU" --csv --clock-control $cc --kernel-name regex:"nvjet|splitKreduce" \
        --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \
        --log-file "$OUT/clock_$n.csv" .hwbin/gemm_algo clock > "$OUT/clock_$n.txt" 2> "$OUT/clock_$n.err"
    echo "ncu $cc exit $? $((SECONDS - t0)) s, $(grep -c '^c ' "$OUT/clock_$n.txt") shapes, $(grep -c gpu__time_duration "$OUT/clock_$n.csv") kernels"
    tail -2 "$OUT/clock_$n.err"
    gzip -9 "$OUT/clock_$n.csv"
done
cd "$OUT" && tar czf errs.tgz clock_plain.txt clock_plain.err clock_base.err clock_free.err && rm -f clock_plain.txt clock_plain.err clock_base.err clock_free.err
ls -la "$OUT"
