#!/usr/bin/env bash
# Device call 119 (session 38): two fresh Nsight Compute sets and, if time is left, a run set.  CRITERION.md here,
# committed before the call.
# 1. Set c119 (call118/variants/next_set.sh's points): hw_validate.lua's w21:dual, w22:dual and w22:prefix of
#    LLaDA-8B and Dream-7B, to judge session 37's nineteenth write trial (call118/variants/ramp_fast.patch) unchanged.
# 2. Set c119b, a reserve: w23:dual, w24:dual and w24:sparse of both models, not scored by any trial until a trial
#    chosen after this call has its criterion committed.
# 3. If time is left: a held-out and nv:* run set with probe clocks (as calls 116 to 118).
# Back (8 files at most): tests.txt, ncu_llada.tgz, ncu_dream.tgz, ncu_llada_b.tgz, ncu_dream_b.tgz, logs_x.tgz, and
# run.tgz (the run set's table.txt, hw_h5.tgz, logs.tgz, unpacked into this folder when committed).
# .hwbin: dkv and lib built by scripts/hw_session.sh build at this commit's parent (the CUDA path unchanged since
# call 117's build).
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-04/call119/command.sh", carry=[".hwbin"])
# post:  add c119 (and later c119b) to scripts/ncu_score.sh; DKV=$PWD/build/release/dkv bash scripts/ncu_score.sh
#        /tmp/ns119 c119; DKV=$PWD/build/release/dkv RES=/tmp/s119 bash scripts/hw_session.sh post
#        datasets/hw/2026-12-04/call119
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
# MODEL:DIR:POINT — the first six are set c119, the last six the reserve c119b
for mp in llada-8b:ncu_llada:w21:dual dream-7b:ncu_dream:w21:dual llada-8b:ncu_llada:w22:dual dream-7b:ncu_dream:w22:dual \
          llada-8b:ncu_llada:w22:prefix dream-7b:ncu_dream:w22:prefix \
          llada-8b:ncu_llada_b:w23:dual dream-7b:ncu_dream_b:w23:dual llada-8b:ncu_llada_b:w24:dual \
          dream-7b:ncu_dream_b:w24:dual llada-8b:ncu_llada_b:w24:sparse dream-7b:ncu_dream_b:w24:sparse; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    left=$((480 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left" | tee -a "$OUT/tests.txt"; continue; }
    lim=$((left - 15)); [ $lim -gt 110 ] && lim=110
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -o "$OUT/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2>/dev/null) kernels" | tee -a "$OUT/tests.txt"
done
cd "$OUT" && for d in ncu_llada ncu_dream ncu_llada_b ncu_dream_b; do tar czf $d.tgz $d && rm -rf $d; done
cd - > /dev/null
left=$((560 - SECONDS))
if [ $left -ge 90 ]; then
    HELDOUT_ARGS="-D clock_probe=true" NOVEL_ARGS="-D clock_probe=true" STEPS="heldout novel" DEADLINE=$((left - 15)) \
        bash scripts/hw_session.sh device > "$X/b.log" 2>&1
    echo "device steps exit $? ($SECONDS s)" | tee -a "$OUT/tests.txt"
    cd "$OUT" && tar czf run.tgz table.txt hw_h5.tgz logs.tgz 2> /dev/null && rm -f table.txt hw_h5.tgz logs.tgz
    cd - > /dev/null
else
    echo "run set skipped: ${left}s left" | tee -a "$OUT/tests.txt"
fi
cd "$OUT" && tar czf logs_x.tgz x && rm -rf x
cat "$OUT/tests.txt"; tar xzOf "$OUT/run.tgz" table.txt 2> /dev/null | tail -n 24 | cut -c1-110
