#!/usr/bin/env bash
# Device call 56 (session 18): (a) cuda/bench/l2probe under Nsight Compute (--cache-control none): what the
# H200's L2 keeps between kernels (survival of a dirty or clean probe after a read stream of 0-128 MB, read
# by 1 or 2 CTAs per line; the dirty bound; a row-walking read+write), the measurement behind core/cost's L2
# replay (docs/COST_MODEL.md "What the L2 keeps between kernels"; scripts/l2probe.py); (b) Nsight Compute on
# three validation points of Dream-7B (-D model=dream-7b: hidden 3584, 4 KV heads, FFN 18944; no Dream
# point was ever profiled by ncu): held-out checks of the HBM bytes per kernel class (issue 9).
# The backend is session 16's final one (.hwbin of calls 50-55: dkv and its libraries) plus l2probe built
# here (nvcc -O3 -arch=sm_90 cuda/bench/l2probe.cu).
# here:  the tiny model and calls 7's and 10's hw_h5_multi.tgz moved out of the tree for the call (64 MiB carry)
# there: run(command="bash datasets/hw/2026-12-02/call56/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/l2probe.py <(tar xzf ... l2probe.txt) ...  (docs/COST_MODEL.md has the commands)
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/l2probe.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/l2probe
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
X=$OUT/x; mkdir -p "$X" "$OUT/ncu_dream"
t0=$SECONDS
timeout 200 "$NCU" $M --log-file "$OUT/l2probe.csv" .hwbin/l2probe > "$OUT/l2probe.txt" 2> "$X/l2probe.err"
echo "l2probe exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$OUT/l2probe.txt") launches"
tail -2 "$X/l2probe.err"
for p in w1:dual w3:dual w2:sparse; do
    left=$((560 - SECONDS)); [ $left -lt 60 ] && { echo "ncu dream $p: skipped, ${left}s left"; continue; }
    lim=$((left - 20)); [ $lim -gt 150 ] && lim=150
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/ncu_dream/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=dream-7b -D point="$p" -o "$OUT/ncu_dream/prof_$tag.h5" > "$X/ncu_dream_$tag.log" 2>&1
    echo "ncu dream $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/ncu_dream/ncu_$tag.csv" 2>/dev/null) kernels"
done
cd "$OUT" && tar czf ncu_dream.tgz ncu_dream && rm -rf ncu_dream && tar czf x.tgz x && rm -rf x
