#!/usr/bin/env bash
# Device call 67 (session 19): Nsight Compute (--cache-control none --clock-control none) on two points never
# profiled, w5:dual and w6:dual (5 and 6 requests x (256 + 32): Reuse steps of 160 and 192 rows), for
# LLaDA-8B and Dream-7B: the held-out check of the profile's gemm_splitk block (committed before this call),
# at row counts where cuBLASLt's split-K differs from the replay's old rule (LLaDA-8B's down projection: 2
# and 1 splits where the rule said 4; Dream-7B's: 4 and 3, the rule 4); docs/COST_MODEL.md "GEMM
# configurations from cuBLASLt".
# The backend is session 16's final one (.hwbin built at 4978c89: dkv and its libraries); hw_validate.lua's
# w5 / w6 points are this commit's.
# here:  datasets/hw moved out of the tree for the call (64 MiB carry)
# there: run(command="bash datasets/hw/2026-12-02/call67/command.sh", carry=[".hwbin"])
# post:  for m in llada dream; do mkdir -p /tmp/c67 && tar xzf datasets/hw/2026-12-02/call67/ncu_$m.tgz -C /tmp/c67 &&
#        DKV=build/release/dkv bash scripts/ncu_model_bytes.sh /tmp/c67/ncu_$m $m-<8b|7b> /tmp/c67/o_$m; done
#        (MODEL llada-8b for ncu_llada, dream-7b for ncu_dream); then scripts/ncu_cells.py on each ncu_bytes.md
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
# the .hwbin dkv predates the gemm_splitk block and refuses profile m (unknown field): its real runs name l
# (the preset's profile only sets the real half's counted bytes, which Nsight Compute's replace here)
sed -i 's/profile = "h200-20261202m"/profile = "h200-20261202l"/' datasets/presets/gpu/h200.lua
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
X=$OUT/x; mkdir -p "$X" "$OUT/ncu_llada" "$OUT/ncu_dream"
for mp in llada-8b:ncu_llada:w5:dual llada-8b:ncu_llada:w6:dual dream-7b:ncu_dream:w5:dual dream-7b:ncu_dream:w6:dual; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    left=$((540 - SECONDS)); [ $left -lt 60 ] && { echo "ncu $model $p: skipped, ${left}s left"; continue; }
    lim=$((left - 20)); [ $lim -gt 150 ] && lim=150
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -o "$OUT/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2>/dev/null) kernels"
done
cd "$OUT" && tar czf ncu_llada.tgz ncu_llada && tar czf ncu_dream.tgz ncu_dream && rm -rf ncu_llada ncu_dream && tar czf x.tgz x && rm -rf x
