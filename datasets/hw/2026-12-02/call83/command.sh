#!/usr/bin/env bash
# Device call 83 (session 24): what the fused RoPE-store finds of what the q|k|v GEMM leaves in L2, at every 32 rows
# to 4,096, for LLaDA-8B (class 0) and Dream-7B (class 4): `gemm_algo store C 32` under Nsight Compute (flush, the
# input written, the GEMM, then store_walk_kernel, the store's memory walk: a row's q|k|v read, q and k written in
# place, k and v written to a pool row elsewhere; its DRAM reads are what it did not find).  The measurement the
# session's row-order rule for the store stands in for (docs/COST_MODEL.md "The walk after a GEMM": the GPU's
# retention falls gradually over 1,300-1,700 rows where the rule's LRU edge drops at once).
# here:  .hwbin holds gemm_algo.xz only (built by scons mode=release: build/release/bench/gemm_algo), datasets/hw moved
#        out of the tree for the call
# there: run(command="bash datasets/hw/2026-12-02/call83/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/gemm_reads.py store datasets/hw/2026-12-02/call83
set -u
if command -v xz > /dev/null; then xz -d -f .hwbin/gemm_algo.xz
else python3 -c "import lzma; open('.hwbin/gemm_algo','wb').write(lzma.open('.hwbin/gemm_algo.xz').read())" && rm -f .hwbin/gemm_algo.xz; fi
chmod +x .hwbin/gemm_algo
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
for c in 0 4; do
    t0=$SECONDS
    timeout -k 5 150 "$NCU" --csv --clock-control base --cache-control none --target-processes all \
        --kernel-name regex:"nvjet|splitKreduce|store_walk_kernel" --metrics dram__bytes_read.sum,dram__bytes_write.sum \
        --log-file "$OUT/store_$c.csv" .hwbin/gemm_algo store "$c" 32 > "$OUT/store_$c.txt" 2> "$OUT/store_$c.err"
    echo "class $c exit $? $((SECONDS - t0)) s, $(grep -c '^t ' "$OUT/store_$c.txt") trials, $(grep -c '^"[0-9]' "$OUT/store_$c.csv") rows"
done
cat "$OUT"/store_*.err | sort | uniq -c | head -5
for f in "$OUT"/store_*.csv; do gzip -9 "$f"; done
(cd "$OUT" && tar czf store.tgz store_* && rm -f store_*)
