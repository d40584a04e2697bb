#!/usr/bin/env bash
# Device call 135 (session 48): on an H200, call 133 (its rules: call133/CRITERION_h200.md).  On any other GPU (the
# kind has lent H100s: 50 MB of L2 against the H200's 60 MiB), Nsight Compute on call 117's six points (w19:dual,
# w20:dual, w20:prefix of LLaDA-8B and Dream-7B; HBM bytes per kernel, --cache-control none), the set the H200 gave as
# c117: the L2 replay's HBM bytes per class at another L2 size, which no constant of it was fitted on (an exploration:
# the replay's GEMM corrections are the H200 profile's).
# .hwbin: dkv and lib built by scripts/hw_session.sh build at 01539ed (call 133's), xz'd.
# here:  bash scripts/hw_carry.sh out datasets/hw/2026-12-05/call135 datasets/hw/2026-12-05/call133
# there: run(command="bash datasets/hw/2026-12-05/call135/command.sh", carry=[".hwbin"], timeout_s=540)
# post:  H200: call 133's post.  Otherwise ncu_llada.tgz and ncu_dream.tgz as a set's (scripts/ncu_model_bytes.sh DIR
#        MODEL OUT with GPU= the other GPU's preset)
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    bash datasets/hw/2026-12-05/call133/command.sh
    exit $?
fi
. scripts/device_env.sh || exit 2
echo "ncu: ${NCU:-none}" | tee -a "$OUT/tests.txt"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
X=$OUT/x; mkdir -p "$X" "$OUT/ncu_llada" "$OUT/ncu_dream"
for mp in llada-8b:ncu_llada:w19:dual dream-7b:ncu_dream:w19:dual llada-8b:ncu_llada:w20:dual dream-7b:ncu_dream:w20:dual \
          llada-8b:ncu_llada:w20:prefix dream-7b:ncu_dream:w20:prefix; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    left=$((480 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left" | tee -a "$OUT/tests.txt"; continue; }
    lim=$((left - 15)); [ $lim -gt 110 ] && lim=110
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -o "$OUT/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2>/dev/null) kernels" | tee -a "$OUT/tests.txt"
done
cd "$OUT" && for d in ncu_llada ncu_dream; do tar czf $d.tgz $d && rm -rf $d; done
tar czf logs_x.tgz x && rm -rf x
cat "$OUT/tests.txt"
