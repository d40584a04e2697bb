#!/usr/bin/env bash
# The next fresh Nsight Compute set (prepared in session 37, not run): it judges the nineteenth write trial
# (ramp_fast.patch, criterion CRITERION_ramp.md in this folder) unchanged, on points no trial has seen:
# hw_validate.lua's w21:dual, w22:dual and w22:prefix of LLaDA-8B and Dream-7B (Refresh steps of 3,456 and 2,288 rows,
# Reuse steps of 128 and 352), as calls 108 and 117 recorded theirs (about 200 s).
# Use: copy it into a new call folder as that call's command.sh (with its CRITERION.md: record the set before the
# trial is scored on it), build .hwbin (scripts/hw_session.sh build: dkv and lib, xz'd), move datasets/hw out of the
# tree, run(command="bash datasets/hw/<date>/call<N>/command.sh", carry=[".hwbin"]).  Then add the set to
# scripts/ncu_score.sh (ALL) and score: the shipped replay, then `git apply .../ramp_fast.patch` and
# DKV_L2_RAMP=0.32 DKV_L2_CREDIT=0.092 DKV=$PWD/build/release/dkv bash scripts/ncu_score.sh OUT c<N>.
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
X=$OUT/x; mkdir -p "$X" "$OUT/ncu_llada" "$OUT/ncu_dream"
for mp in llada-8b:ncu_llada:w21:dual dream-7b:ncu_dream:w21:dual llada-8b:ncu_llada:w22:dual dream-7b:ncu_dream:w22:dual \
          llada-8b:ncu_llada:w22:prefix dream-7b:ncu_dream:w22:prefix; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    left=$((430 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left" | tee -a "$OUT/tests.txt"; continue; }
    lim=$((left - 15)); [ $lim -gt 110 ] && lim=110
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -o "$OUT/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2>/dev/null) kernels" | tee -a "$OUT/tests.txt"
done
cd "$OUT" && tar czf ncu_llada.tgz ncu_llada && tar czf ncu_dream.tgz ncu_dream && tar czf logs_x.tgz x && rm -rf ncu_llada ncu_dream x
cat "$OUT/tests.txt"
