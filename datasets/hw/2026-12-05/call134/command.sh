#!/usr/bin/env bash
# Device call 134 (session 48): a check of the L2 flush diagnostic's read entries (call 133's method) on any GH100:
# each buffer read twice in a row at the same point, so the second read finds the whole buffer in the L2 (its DRAM
# reads near 0) whatever the first found; LLaDA-8B w20:dual (as call 133), spec below.  On an H200 it first runs call
# 133's command (its rules: call133/CRITERION_h200.md).  Reported: the second reads' DRAM bytes.
# .hwbin: dkv and lib built by scripts/hw_session.sh build at 01539ed (call 133's), xz'd.
# here:  bash scripts/hw_carry.sh out datasets/hw/2026-12-05/call134 datasets/hw/2026-12-05/call133
# there: run(command="bash datasets/hw/2026-12-05/call134/command.sh", carry=[".hwbin"], timeout_s=540)
# post:  tar xzf check.tgz; /usr/bin/python3 scripts/ncu_flush.py check/ncu_llada_w20_dual.csv SIM.h5 --point w20:dual
#        --flush "$SPEC"
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    bash datasets/hw/2026-12-05/call133/command.sh
    mkdir -p "$OUT/c133" && mv "$OUT/ncu.tgz" "$OUT/tests.txt" "$OUT/c133/"
fi
. scripts/device_env.sh || exit 2
echo "ncu: ${NCU:-none}" | tee -a "$OUT/tests.txt"
SPEC=2:qkv:qkv,2:qkv:qkv,6:attn:att,6:attn:att,10:o:x,10:o:x,14:attn:qkv,14:attn:qkv
echo "spec: $SPEC" >> "$OUT/tests.txt"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
mkdir -p "$OUT/check"
t1=$SECONDS
timeout -k 10 120 "$NCU" $M --log-file "$OUT/check/ncu_llada_w20_dual.csv" \
    .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
    -D model=llada-8b -D point=w20:dual -D l2_flush="$SPEC" -o "$OUT/check/prof_llada_w20_dual.h5" > "$OUT/check/run.log" 2>&1
echo "ncu llada-8b w20:dual exit $? $((SECONDS - t1)) s" | tee -a "$OUT/tests.txt"
tar czf "$OUT/check.tgz" -C "$OUT" check && rm -rf "$OUT/check"
cat "$OUT/tests.txt"
