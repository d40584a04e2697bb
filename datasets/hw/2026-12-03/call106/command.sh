#!/usr/bin/env bash
# Device call 106 (session 32): call 105's measurement at other shapes and cache modes, recorded for the next write
# model (docs/COMPARE.md: a replay that carries which rows of a buffer are resident and dirty), not to choose
# anything this session.  The L2 flush diagnostic (docs/GPU.md), staggered over a layer as in call 105
# (3:norm, 6:qkv, ..., 27:down), under Nsight Compute (--cache-control none, every kernel profiled), for LLaDA-8B and
# Dream-7B at w9:dual (2 x (1760 + 32): a Refresh of 3,584 rows), w5:sparse (5 x (256 + 32): the selecting step's
# kernels between the RoPE and the attention) and w12:prefix (2 x (1632 + 32)).  No question is asked of it here:
# `scripts/ncu_flush.py` tables of each run against the shipped replay go into docs/COST_MODEL.md as recorded.
# .hwbin as call 105's.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call106/command.sh", carry=[".hwbin"])
# post:  as call 105's
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
X=$OUT/x; mkdir -p "$X" "$OUT/flush"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
S=3:norm,6:qkv,9:rope,12:attn,15:o,18:ffn_norm,21:gate_up,24:swiglu,27:down
for run in llada-8b:w9:dual dream-7b:w9:dual llada-8b:w5:sparse dream-7b:w5:sparse llada-8b:w12:prefix dream-7b:w12:prefix; do
    model=${run%%:*}; p=${run#*:}
    left=$((500 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left"; continue; }
    lim=$((left - 15)); [ $lim -gt 120 ] && lim=120
    t1=$SECONDS; f=${model}_${p/:/_}_stag
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/flush/$f.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -D l2_flush="$S" -o "$X/$f.h5" > "$X/$f.log" 2>&1
    echo "ncu $f exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/flush/$f.csv" 2>/dev/null) kernels, $(grep -c 'flush_kernel.*dram__bytes_write' "$OUT/flush/$f.csv" 2>/dev/null) flushes"
done
cd "$OUT" && tar czf flush.tgz flush && rm -rf flush && tar czf x.tgz x && rm -rf x
