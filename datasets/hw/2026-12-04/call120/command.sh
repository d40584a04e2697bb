#!/usr/bin/env bash
# Device call 120 (session 39): two fresh Nsight Compute sets, both kept unscored for later write trials.  CRITERION.md
# here, committed before the call.
# 1. Set c120: hw_validate.lua's w25:dual, w26:dual and w26:prefix of LLaDA-8B and Dream-7B.
# 2. Set c120b: w27:dual, w28:dual and w28:sparse of both models.
# No run set (the simulator's held-out figures did not change this session).
# Back (5 files): tests.txt, ncu_llada.tgz, ncu_dream.tgz, ncu_llada_b.tgz, ncu_dream_b.tgz, logs_x.tgz.
# .hwbin: dkv and lib built by scripts/hw_session.sh build at this commit's parent.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-04/call120/command.sh", carry=[".hwbin"])
# post:  name c120 and c120b in scripts/ncu_score.sh (not in its default list until a trial's criterion is committed)
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/*.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv 2> /dev/null
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/tests.txt"
date -u +%Y-%m-%dT%H:%M:%SZ >> "$OUT/tests.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}" | tee -a "$OUT/tests.txt"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
X=$OUT/x; mkdir -p "$X" "$OUT/ncu_llada" "$OUT/ncu_dream" "$OUT/ncu_llada_b" "$OUT/ncu_dream_b"
# MODEL:DIR:POINT: the first six are set c120, the last six set c120b
for mp in llada-8b:ncu_llada:w25:dual dream-7b:ncu_dream:w25:dual llada-8b:ncu_llada:w26:dual dream-7b:ncu_dream:w26:dual \
          llada-8b:ncu_llada:w26:prefix dream-7b:ncu_dream:w26:prefix \
          llada-8b:ncu_llada_b:w27:dual dream-7b:ncu_dream_b:w27:dual llada-8b:ncu_llada_b:w28:dual \
          dream-7b:ncu_dream_b:w28:dual llada-8b:ncu_llada_b:w28:sparse dream-7b:ncu_dream_b:w28:sparse; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    left=$((500 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left" | tee -a "$OUT/tests.txt"; continue; }
    lim=$((left - 15)); [ $lim -gt 110 ] && lim=110
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -o "$OUT/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2>/dev/null) kernels" | tee -a "$OUT/tests.txt"
done
cd "$OUT" && for d in ncu_llada ncu_dream ncu_llada_b ncu_dream_b; do tar czf $d.tgz $d && rm -rf $d; done
tar czf logs_x.tgz x && rm -rf x
cat "$OUT/tests.txt"
