#!/usr/bin/env bash
# Device call 82 (session 24): Nsight Compute (--cache-control none --clock-control none) on four points no
# Nsight Compute run had seen, w11:dual, w12:dual, w11:prefix and w12:prefix (4 requests x (304 + 32) and 2 x
# (1632 + 32): Refresh steps of 1,344 and 3,328 rows, then Reuse steps), for LLaDA-8B and Dream-7B: the held-out
# check, recorded after the session's last replay commit, of its three changes (docs/COST_MODEL.md "The walk after a
# GEMM": the store and the norms reach what the GEMM left last; the LM head's argmax likewise; the SwiGLU meets
# gate|up's left rows evenly).  1,344 rows: the store's and the SwiGLU's partial ranges; 3,328: the norm's.
# .hwbin built by `bash scripts/hw_session.sh build` at that commit (dkv and its libraries, xz'd).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry)
# there: run(command="bash datasets/hw/2026-12-02/call82/command.sh", carry=[".hwbin"])
# post:  DKV=build/release/dkv bash scripts/ncu_score.sh /tmp/sc c82
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
X=$OUT/x; mkdir -p "$X" "$OUT/ncu_llada" "$OUT/ncu_dream"
for mp in llada-8b:ncu_llada:w11:dual dream-7b:ncu_dream:w11:dual llada-8b:ncu_llada:w12:dual dream-7b:ncu_dream:w12:dual \
          llada-8b:ncu_llada:w11:prefix dream-7b:ncu_dream:w11:prefix llada-8b:ncu_llada:w12:prefix dream-7b:ncu_dream:w12:prefix; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    left=$((575 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left"; continue; }
    lim=$((left - 15)); [ $lim -gt 120 ] && lim=120
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -o "$OUT/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2>/dev/null) kernels"
done
cd "$OUT" && tar czf ncu_llada.tgz ncu_llada && tar czf ncu_dream.tgz ncu_dream && rm -rf ncu_llada ncu_dream && tar czf x.tgz x && rm -rf x
