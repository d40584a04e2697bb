#!/usr/bin/env bash
# Device call 122 (session 40): the GEMM footprint probe at more row counts, then two fresh Nsight Compute sets, both
# kept unscored.  CRITERION.md here, committed before the call.
# 1. cuda/bench/l2drain.cu `gemm` under Nsight Compute (--cache-control none): an 8 MB probe's halves written dirty,
#    then a stream of x MB = 16-64 that is a plain read or a cuBLAS GEMM's weights at M = 64, 128, 192, 288, 384, 576
#    rows (K = 3,584), then each half re-read and the flush (call 121 ran M = 64 and 288 only).
# 2. Set c122: hw_validate.lua's w29:dual, w30:dual and w30:prefix of LLaDA-8B and Dream-7B.
# 3. Set c122b: w31:dual, w32:dual and w32:sparse of both models.
# Back: tests.txt, l2drain.txt (the manifest), l2drain.csv (ncu), l2drain.err, ncu_llada.tgz, ncu_dream.tgz,
#       ncu_llada_b.tgz, ncu_dream_b.tgz, logs_x.tgz.
# .hwbin: dkv and lib built by scripts/hw_session.sh build, and l2drain (nvcc -O3 -arch=sm_90 cuda/bench/l2drain.cu
#         -lcublas), at this commit's parent, xz'd.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-04/call122/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/l2drain_gemm.py datasets/hw/2026-12-04/call122/l2drain.txt
#        datasets/hw/2026-12-04/call122/l2drain.csv > datasets/hw/2026-12-04/call122/l2drain_gemm_tables.md;
#        name c122 and c122b in scripts/ncu_score.sh (not in its default list until a trial's criterion is committed)
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/*.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/l2drain 2> /dev/null
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/tests.txt"
date -u +%Y-%m-%dT%H:%M:%SZ >> "$OUT/tests.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}" | tee -a "$OUT/tests.txt"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
t0=$SECONDS
timeout -k 5 90 "$NCU" $M --log-file "$OUT/l2drain.csv" .hwbin/l2drain gemm > "$OUT/l2drain.txt" 2> "$OUT/l2drain.err"
echo "l2drain gemm exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$OUT/l2drain.txt") launches" | tee -a "$OUT/tests.txt"
tail -3 "$OUT/l2drain.err"
X=$OUT/x; mkdir -p "$X" "$OUT/ncu_llada" "$OUT/ncu_dream" "$OUT/ncu_llada_b" "$OUT/ncu_dream_b"
# MODEL:DIR:POINT: the first six are set c122, the last six set c122b
for mp in llada-8b:ncu_llada:w29:dual dream-7b:ncu_dream:w29:dual llada-8b:ncu_llada:w30:dual dream-7b:ncu_dream:w30:dual \
          llada-8b:ncu_llada:w30:prefix dream-7b:ncu_dream:w30:prefix \
          llada-8b:ncu_llada_b:w31:dual dream-7b:ncu_dream_b:w31:dual llada-8b:ncu_llada_b:w32:dual \
          dream-7b:ncu_dream_b:w32:dual llada-8b:ncu_llada_b:w32:sparse dream-7b:ncu_dream_b:w32:sparse; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    left=$((545 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left" | tee -a "$OUT/tests.txt"; continue; }
    lim=$((left - 15)); [ $lim -gt 110 ] && lim=110
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -o "$OUT/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2>/dev/null) kernels" | tee -a "$OUT/tests.txt"
done
cd "$OUT" && for d in ncu_llada ncu_dream ncu_llada_b ncu_dream_b; do tar czf $d.tgz $d && rm -rf $d; done
tar czf logs_x.tgz x && rm -rf x
cat "$OUT/tests.txt"
