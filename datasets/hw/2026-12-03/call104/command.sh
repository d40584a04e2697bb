#!/usr/bin/env bash
# Device call 104 (session 32).  Two parts, the probe first.
# 1. Does an SM's read (or rewrite) of lines another SM left dirty write them back?  The kernel-by-kernel records of
#    session 32 (docs/COST_MODEL.md "Kernel by kernel", scripts/ncu_layer.py) show LLaDA-8B's attention at Refresh
#    steps writing back 1-13 MB a layer more than the replay, which keeps them dirty until the O projection: the GPU
#    holds ~3 MB dirty after w10:dual's attention, the replay 15.6.  The attention reads by head what the RoPE-store
#    wrote by row (other CTAs, other SMs); the L2 probes so far (calls 90, 101, 102) read a probe with the grid that
#    wrote it, each CTA its own lines, and found nothing written back below the dirty bound.  cuda/bench/l2drain.cu's
#    share kinds under Nsight Compute (--cache-control none): a D = 1, 4, 8 MB probe written dirty, then read by the
#    same grid with each CTA reading what CTA b + B wrote (xread0: its own, the control; xread1, xread66), read whole
#    by every CTA (xreadall), or rewritten by CTA b + B (xwrite0, xwrite66); then re-read as written (q) and flushed
#    (h: still dirty).  Two repeats.
#    Criterion, set first (this file is committed before the call): if xreadall's middle kernel writes back at least
#    half of D at every D while xread0's writes at most 5 % of D, a read from other SMs cleans dirty lines (a replay
#    rule to try: reads by CTAs on both halves write back the dirty part they read); if xreadall's writes at most 5 %
#    of D at every D, the hypothesis is refuted; otherwise partial, the numbers reported.  The same for xwrite66
#    against xwrite0 (rewrites).
# 2. A fresh Nsight Compute set, recorded before any rule it will judge was chosen: w15:dual, w15:prefix, w16:dual,
#    w16:prefix (5 x (480 + 32) and 7 x (192 + 32): Refresh steps of 2,560 and 1,568 rows, Reuse of 160 and 224) for
#    LLaDA-8B and Dream-7B, as call 103 (dkv of .hwbin: its CUDA path unchanged since call 100).
# .hwbin as call 103's plus l2drain rebuilt (nvcc -O3 -arch=sm_90 cuda/bench/l2drain.cu -o .hwbin/l2drain).
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call104/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/l2drain.py datasets/hw/2026-12-03/call104/l2drain.txt datasets/hw/2026-12-03/call104/l2drain.csv
#        DKV=build/release/dkv bash scripts/ncu_score.sh /tmp/sc c104
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/l2drain
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
t0=$SECONDS
timeout -k 10 120 "$NCU" $M --log-file "$OUT/l2drain.csv" .hwbin/l2drain share > "$OUT/l2drain.txt" 2> "$OUT/l2drain.err"
echo "l2drain share exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$OUT/l2drain.txt") launches"
tail -2 "$OUT/l2drain.err"
python3 scripts/l2drain.py "$OUT/l2drain.txt" "$OUT/l2drain.csv" 2>&1 | head -80
X=$OUT/x; mkdir -p "$X" "$OUT/ncu_llada" "$OUT/ncu_dream"
for mp in llada-8b:ncu_llada:w15:dual dream-7b:ncu_dream:w15:dual llada-8b:ncu_llada:w16:dual dream-7b:ncu_dream:w16:dual \
          llada-8b:ncu_llada:w15:prefix dream-7b:ncu_dream:w15:prefix llada-8b:ncu_llada:w16:prefix dream-7b:ncu_dream:w16:prefix; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    left=$((570 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left"; continue; }
    lim=$((left - 15)); [ $lim -gt 120 ] && lim=120
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -o "$OUT/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2>/dev/null) kernels"
done
cd "$OUT" && tar czf ncu_llada.tgz ncu_llada && tar czf ncu_dream.tgz ncu_dream && rm -rf ncu_llada ncu_dream && tar czf x.tgz x && rm -rf x
