#!/usr/bin/env bash
# Device call 108 (session 32, at its end): a fresh Nsight Compute set for the next session's write trials, recorded
# before any of them exists (session 32's twelfth trial was judged on call 104's set, so that set has judged one).
# Nsight Compute (--cache-control none --clock-control none) on w17:dual, w18:dual, w17:sparse and w18:sparse
# (6 x (352 + 32) and 3 x (1056 + 32): Refresh steps of 2,304 and 3,264 rows, Reuse of 192 and 96) for LLaDA-8B and
# Dream-7B, as call 103.  No question is asked of it here; nothing in session 32 is scored on it.
# .hwbin as call 107's (dkv at commit cfaaefc; its CUDA path unchanged since).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry)
# there: run(command="bash datasets/hw/2026-12-04/call108/command.sh", carry=[".hwbin"])
# post:  scripts/ncu_score.sh gains the set (c108) when a trial is judged on it
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
for mp in llada-8b:ncu_llada:w17:dual dream-7b:ncu_dream:w17:dual llada-8b:ncu_llada:w18:dual dream-7b:ncu_dream:w18:dual \
          llada-8b:ncu_llada:w17:sparse dream-7b:ncu_dream:w17:sparse llada-8b:ncu_llada:w18:sparse dream-7b:ncu_dream:w18:sparse; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    left=$((400 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left"; continue; }
    lim=$((left - 15)); [ $lim -gt 120 ] && lim=120
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -o "$OUT/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2>/dev/null) kernels"
done
cd "$OUT" && tar czf ncu_llada.tgz ncu_llada && tar czf ncu_dream.tgz ncu_dream && rm -rf ncu_llada ncu_dream && tar czf x.tgz x && rm -rf x
