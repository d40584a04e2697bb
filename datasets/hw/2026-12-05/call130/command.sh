#!/usr/bin/env bash
# Device call 130 (session 47): does the attention's read of its cached keys take more of the L2 a byte than a plain
# read?  cuda/bench/l2drain.cu `pool` under Nsight Compute (--cache-control none): A and B (4 MB each) written dirty,
# then y = 8-48 MB read as a plain contiguous read (pool_plain), as cuda/attention.cu's batched Reuse launch reads
# LLaDA-8B's KV pool (pool_kv: CTA (item, head) of 12 x 32 reads its head's 256-byte K and V rows of its tokens, 512 KB
# apart) or grid-stride over the same bytes (pool_grid), then A and B re-read and the flush.  CRITERION.md here states
# the rule, committed before any run.  The comparison is within one GPU, so any GH100 (H100 or H200) answers it;
# on an H200 the call then runs call 129's command too (the probes at D = 16 and 24, its own CRITERION.md).
# .hwbin: l2drain alone (nvcc -O3 -arch=sm_90 cuda/bench/l2drain.cu -lcublas, at the commit that adds `pool`; its other
#         modes are call 129's byte for byte in behaviour), xz'd.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file and call129's command.sh put back
# there: run(command="bash datasets/hw/2026-12-05/call130/command.sh", carry=[".hwbin"], timeout_s=420)
# post:  tar xzf pool.tgz; /usr/bin/python3 scripts/l2drain_gemm.py pool/l2drain_pool.txt pool/l2drain_pool.csv >
#        pool_tables.md; the rule of CRITERION.md on its rows
set -u
. scripts/device_env.sh || exit 2
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
mkdir -p "$OUT/pool"
t0=$SECONDS
f="$OUT/pool/l2drain_pool"
timeout -k 5 120 "$NCU" $M --log-file "$f.csv" .hwbin/l2drain pool > "$f.txt" 2> "$f.err"
echo "l2drain pool exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$f.txt") launches" | tee -a "$OUT/tests.txt"
tail -2 "$f.err"
tar czf "$OUT/pool.tgz" -C "$OUT" pool && rm -rf "$OUT/pool"
cp "$OUT/tests.txt" "$OUT/tests_pool.txt"
if grep -q "H200" "$OUT/tests.txt"; then
    bash datasets/hw/2026-12-05/call129/command.sh
fi
