#!/usr/bin/env bash
# Device call 121 (session 39): cuda/bench/l2drain.cu `gemm` under Nsight Compute (--cache-control none): an 8 MB
# probe's halves A and B written dirty, then a stream of x MB = 16-64 that is either a plain read (kind plain) or a
# cuBLAS GEMM's weights at 64 or 288 rows (gemm64, gemm288; K = 3,584), then each half re-read and the flush.
# CRITERION.md here, committed before the call.
# Back: tests.txt, l2drain.txt (the manifest), l2drain.csv (ncu), l2drain.err.
# .hwbin: l2drain alone (nvcc -O3 -arch=sm_90 cuda/bench/l2drain.cu -lcublas at this commit's parent), xz'd.
# here:  datasets/hw moved out of the tree for the call, this file put back
# there: run(command="bash datasets/hw/2026-12-04/call121/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/l2drain_gemm.py datasets/hw/2026-12-04/call121/l2drain.txt
#        datasets/hw/2026-12-04/call121/l2drain.csv > datasets/hw/2026-12-04/call121/l2drain_gemm_tables.md
set -u
for f in .hwbin/*.xz; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done
chmod +x .hwbin/l2drain 2> /dev/null
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/tests.txt"
date -u +%Y-%m-%dT%H:%M:%SZ >> "$OUT/tests.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}" | tee -a "$OUT/tests.txt"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
t0=$SECONDS
timeout -k 5 200 "$NCU" $M --log-file "$OUT/l2drain.csv" .hwbin/l2drain gemm > "$OUT/l2drain.txt" 2> "$OUT/l2drain.err"
echo "l2drain gemm exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$OUT/l2drain.txt") launches" | tee -a "$OUT/tests.txt"
tail -3 "$OUT/l2drain.err"
cat "$OUT/tests.txt"
