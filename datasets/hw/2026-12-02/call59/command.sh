#!/usr/bin/env bash
# Device call 59 (session 18): Nsight Compute (--cache-control none --clock-control none) on the last two
# Dream-7B validation points, w1:sparse and w3:prefix (-D model=dream-7b), never
# profiled before: the held-out check of all three session-18 rules (the one-reader weights were chosen
# with calls 56's and 57's seven Dream points in view, so only these two points check it;
# docs/COST_MODEL.md "Dream-7B against Nsight Compute").
# The backend is session 16's final one (.hwbin of calls 50-56: dkv and its libraries).
# here:  the tiny model and calls 7's and 10's hw_h5_multi.tgz moved out of the tree for the call (64 MiB carry)
# there: run(command="bash datasets/hw/2026-12-02/call59/command.sh", carry=[".hwbin"])
# post:  tar xzf datasets/hw/2026-12-02/call59/ncu_dream.tgz -C /tmp/c59 &&
#        DKV=build/release/dkv bash scripts/ncu_model_bytes.sh /tmp/c59/ncu_dream dream-7b /tmp/c59/o
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
X=$OUT/x; mkdir -p "$X" "$OUT/ncu_dream"
for p in w1:sparse w3:prefix; do
    left=$((540 - SECONDS)); [ $left -lt 60 ] && { echo "ncu dream $p: skipped, ${left}s left"; continue; }
    lim=$((left - 20)); [ $lim -gt 150 ] && lim=150
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/ncu_dream/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=dream-7b -D point="$p" -o "$OUT/ncu_dream/prof_$tag.h5" > "$X/ncu_dream_$tag.log" 2>&1
    echo "ncu dream $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/ncu_dream/ncu_$tag.csv" 2>/dev/null) kernels"
done
cd "$OUT" && tar czf ncu_dream.tgz ncu_dream && rm -rf ncu_dream && tar czf x.tgz x && rm -rf x
