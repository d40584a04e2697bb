#!/usr/bin/env bash
# Device call 90 (session 27): when the L2 writes dirty lines back.  Nsight Compute's per-kernel rows of the forward
# show short kernels writing back almost nothing while longer ones drain what earlier kernels left dirty
# (docs/COST_MODEL.md "When the L2 writes back"); cuda/bench/l2drain under Nsight Compute (--cache-control none)
# tells time from traffic: D MB written dirty, then a kernel spinning x us on every SM or on one CTA (no memory
# traffic), or reading x MB, or the host idling x ms, then a flush (what is still dirty); and a writer x us long.
# Then the nine in-sample and eleven held-out validation points with the step probe on this machine (as call 89).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin as call 89's (dkv and its libraries)
#        plus l2drain.xz built with nvcc -O3 -arch=sm_90 cuda/bench/l2drain.cu
# there: run(command="bash datasets/hw/2026-12-03/call90/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/l2drain.py datasets/hw/2026-12-03/call90/l2drain.txt datasets/hw/2026-12-03/call90/l2drain.csv
#        DKV=$PWD/build/release/dkv RES=/tmp/s90 bash scripts/hw_session.sh post datasets/hw/2026-12-03/call90
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/l2drain.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/l2drain
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
t0=$SECONDS
timeout 240 "$NCU" --csv --clock-control none --cache-control none --target-processes all \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    --log-file "$OUT/l2drain.csv" .hwbin/l2drain > "$OUT/l2drain.txt" 2> "$OUT/l2drain.err"
echo "l2drain exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$OUT/l2drain.txt") launches"
tail -2 "$OUT/l2drain.err"
python3 scripts/l2drain.py "$OUT/l2drain.txt" "$OUT/l2drain.csv" 2>&1 | head -60
X=$OUT/x; mkdir -p "$X"
t0=$SECONDS
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" STEPS="validate heldout" DEADLINE=170 \
    bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done after $((SECONDS - t0)) s"
tail -n 4 "$OUT/table.txt" 2> /dev/null | cut -c1-120
cd "$OUT" && tar czf x.tgz x && rm -rf x
