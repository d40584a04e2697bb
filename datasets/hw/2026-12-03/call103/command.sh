#!/usr/bin/env bash
# Device call 103 (session 31): Nsight Compute (--cache-control none --clock-control none) on four points no Nsight
# Compute run had seen, w13:dual, w14:dual, w13:sparse and w14:sparse (3 x (640 + 32) and 8 x (160 + 32): Refresh
# steps of 2,016 and 1,536 rows, Reuse steps of 96 and 256), for LLaDA-8B and Dream-7B: a fresh held-out set for a
# candidate chosen on the older ones.  The candidate: the replay's dirty bound 0.40 of the L2 (25.2 MB; shipped
# 1/3, 21.0 MB; measured in isolation 28-30 MB) with a dirty byte weighing 1 / 1.08 of a byte (call 56's probe
# ratio; datasets/hw/2026-12-02/call56/variants/dirty_keep.patch), picked from four (bound, weight) pairs by their
# scores on the sets of calls 3-82 (reads unchanged in every set, writes 190 -> 200 of 406 cells, but the mean
# |error| up in most sets), so those sets cannot judge it.
# Criterion, set first (this file is committed before the call): on this call's two sets, against the shipped replay,
# reads within 5 % in no fewer cells for either model, writes within 5 % in more cells over both, neither model's
# writes down by more than 1, and the writes' mean |error| over both not higher.  Else not shipped.
# .hwbin as call 100's (dkv unchanged since; experiments/hw_validate.lua gains w13 and w14, read from the tree).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry)
# there: run(command="bash datasets/hw/2026-12-03/call103/command.sh", carry=[".hwbin"])
# post:  DKV=build/release/dkv bash scripts/ncu_score.sh /tmp/sc c103
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
X=$OUT/x; mkdir -p "$X" "$OUT/ncu_llada" "$OUT/ncu_dream"
for mp in llada-8b:ncu_llada:w13:dual dream-7b:ncu_dream:w13:dual llada-8b:ncu_llada:w14:dual dream-7b:ncu_dream:w14:dual \
          llada-8b:ncu_llada:w13:sparse dream-7b:ncu_dream:w13:sparse llada-8b:ncu_llada:w14:sparse dream-7b:ncu_dream:w14:sparse; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    left=$((560 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left"; continue; }
    lim=$((left - 15)); [ $lim -gt 120 ] && lim=120
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -o "$OUT/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2>/dev/null) kernels"
done
cd "$OUT" && tar czf ncu_llada.tgz ncu_llada && tar czf ncu_dream.tgz ncu_dream && rm -rf ncu_llada ncu_dream && tar czf x.tgz x && rm -rf x
