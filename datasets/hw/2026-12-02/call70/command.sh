#!/usr/bin/env bash
# Device call 70 (session 20): Nsight Compute (--cache-control none --clock-control none) on two points no
# Nsight Compute run had seen, w7:dual and w8:dual (3 requests x (768 + 32) and 2 x (1504 + 32): Refresh
# steps of 2,400 and 3,072 rows), for LLaDA-8B and Dream-7B: the held-out check of the profile's gemm_reads
# block (h200-20261202n, committed before this call; docs/COST_MODEL.md "Large-M GEMM reads, measured").
# .hwbin built by `bash scripts/hw_session.sh build` at this commit (dkv and its libraries, xz'd).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry)
# there: run(command="bash datasets/hw/2026-12-02/call70/command.sh", carry=[".hwbin"])
# post:  for m in llada dream; do mkdir -p /tmp/c70 && tar xzf datasets/hw/2026-12-02/call70/ncu_$m.tgz -C /tmp/c70; done
#        DKV=build/release/dkv bash scripts/ncu_model_bytes.sh /tmp/c70/ncu_llada llada-8b /tmp/c70/o_llada (and
#        ncu_dream with dream-7b); scripts/ncu_cells.py on each ncu_bytes.md; scripts/gemm_reads.py check
#        datasets/hw/2026-12-02/call68 MODEL /tmp/c70/o_<m>/real.h5
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
for mp in llada-8b:ncu_llada:w7:dual dream-7b:ncu_dream:w7:dual llada-8b:ncu_llada:w8:dual dream-7b:ncu_dream:w8:dual; do
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
