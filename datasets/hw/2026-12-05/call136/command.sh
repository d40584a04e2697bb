#!/usr/bin/env bash
# Device call 136 (session 48): call 133's probes on an H200 for the two points its rules read (LLaDA-8B and Dream-7B
# w20:dual; call133/CRITERION_h200.md, committed before any H200 row), when the device time left is too short for
# call 133's six; on any other GPU nothing runs (exit 3).
# .hwbin: call 133's (scripts/hw_session.sh build at 01539ed), xz'd.
# here:  bash scripts/hw_carry.sh out datasets/hw/2026-12-05/call136
# there: run(command="bash datasets/hw/2026-12-05/call136/command.sh", carry=[".hwbin"], timeout_s=<the time left>)
# post:  as call 133's (tar xzf ncu.tgz; scripts/ncu_flush.py, scripts/ncu_flush_summary.py)
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 ||
    { nvidia-smi --query-gpu=name --format=csv,noheader; echo "not an H200: nothing run"; exit 3; }
. scripts/device_env.sh || exit 2
echo "ncu: ${NCU:-none}" | tee -a "$OUT/tests.txt"
SPEC=2:qkv:qkv,4:rope:qkv,6:attn:qkv,8:attn:att,10:o:att,12:o:qkv,14:o:x,16:attn,18:o,20:attn:att,22:o:att,24:attn:qkv,26:o:qkv
echo "spec: $SPEC" >> "$OUT/tests.txt"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
mkdir -p "$OUT/ncu"
for model in llada-8b dream-7b; do
    tag=${model%%-*}_w20_dual; t1=$SECONDS
    timeout -k 5 80 "$NCU" $M --log-file "$OUT/ncu/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point=w20:dual -D l2_flush="$SPEC" -o "$OUT/ncu/prof_$tag.h5" > "$OUT/ncu/$tag.log" 2>&1
    echo "ncu $model w20:dual exit $? $((SECONDS - t1)) s" | tee -a "$OUT/tests.txt"
    tar czf "$OUT/ncu.tgz" -C "$OUT" ncu   # after each point: a cut call keeps what ran
done
rm -rf "$OUT/ncu"
cat "$OUT/tests.txt"
