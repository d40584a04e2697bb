#!/usr/bin/env bash
# Device call 131 (session 47): how a strided read's edge depends on its stride.  Call 130 found the attention's read of
# LLaDA-8B's pool (256-byte rows, a token's 512 KB apart) and the same bytes read grid-stride (16 KB chunks 512 KB
# apart) both start pushing a dirty probe out at a smaller y than a contiguous read and finish later.
# cuda/bench/l2drain.cu `stride` under Nsight Compute (--cache-control none): A and B (4 MB each) written dirty, then
# y = 16-48 MB read as 16 KB chunks S = 16 (contiguous), 64, 256, 512 and 1,024 KB apart, A and B re-read, the flush.
# CRITERION.md here states the rule, committed before any run; the comparison is within one GPU (H100 or H200).
# .hwbin: l2drain alone (nvcc -O3 -arch=sm_90 cuda/bench/l2drain.cu -lcublas, at the commit that adds `stride`), xz'd.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-05/call131/command.sh", carry=[".hwbin"], timeout_s=300)
# post:  tar xzf stride.tgz; /usr/bin/python3 scripts/l2drain_gemm.py stride/l2drain_stride.txt
#        stride/l2drain_stride.csv > stride_tables.md; the rule of CRITERION.md on its rows
set -u
. scripts/device_env.sh || exit 2
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
mkdir -p "$OUT/stride"
t0=$SECONDS
f="$OUT/stride/l2drain_stride"
timeout -k 5 150 "$NCU" $M --log-file "$f.csv" .hwbin/l2drain stride > "$f.txt" 2> "$f.err"
echo "l2drain stride exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$f.txt") launches" | tee -a "$OUT/tests.txt"
tail -2 "$f.err"
tar czf "$OUT/stride.tgz" -C "$OUT" stride && rm -rf "$OUT/stride"
