#!/usr/bin/env bash
# Device call 118 (session 37): how reproducible Nsight Compute's per-class writes are on call 117's fresh set, and
# call 117's order probe again with the kind it missed.  CRITERION.md here, committed before the call.
# 1. Nsight Compute on the same six points as call 117 (w19:dual, w20:dual, w20:prefix of LLaDA-8B and Dream-7B), the
#    same command, on another machine: per cell (point, class, direction) two measurements, from which
#    scripts/ncu_attainable.py says which cells one deterministic count can hold within 5 % of both.
# 2. cuda/bench/l2drain.cu `order`, now with kind chit (A read clean and re-read, B written dirty): call 117's three
#    kinds again on another machine, and chit.
# 3. If time is left: a fresh held-out and nv:* run set with probe clocks (as calls 116 and 117).
# Back (8 files at most): tests.txt (device, times), l2drain_tables.md, raw.tgz, ncu_llada.tgz, ncu_dream.tgz, and the
# run set's table.txt, hw_h5.tgz, logs.tgz.
# .hwbin: as call 117's (dkv built at f0e54a8; the CUDA path unchanged since), l2drain rebuilt with kind chit.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-04/call118/command.sh", carry=[".hwbin"])
# post:  mkdir /tmp/r118 && tar xzf datasets/hw/2026-12-04/call118/raw.tgz -C /tmp/r118, then
#        /usr/bin/python3 scripts/l2drain.py /tmp/r118/l2drain.txt /tmp/r118/l2drain.csv (l2drain_tables.md here);
#        DKV=$PWD/build/release/dkv bash scripts/ncu_score.sh /tmp/ns118 c117 c118, then
#        /usr/bin/python3 scripts/ncu_attainable.py /tmp/ns118/c117_llada/out/ncu_bytes.md /tmp/ns118/c118_llada/out/ncu_bytes.md
#        (and _dream); DKV=$PWD/build/release/dkv RES=/tmp/s118 bash scripts/hw_session.sh post datasets/hw/2026-12-04/call118
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
timeout -k 5 150 "$NCU" $M --log-file "$OUT/l2drain.csv" .hwbin/l2drain order > "$OUT/l2drain.txt" 2> "$OUT/l2drain.err"
echo "l2drain order exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$OUT/l2drain.txt") launches" | tee -a "$OUT/tests.txt"
tail -2 "$OUT/l2drain.err"
python3 scripts/l2drain.py "$OUT/l2drain.txt" "$OUT/l2drain.csv" > "$OUT/l2drain_tables.md" 2>&1
cat "$OUT/l2drain_tables.md"
X=$OUT/x; mkdir -p "$X" "$OUT/ncu_llada" "$OUT/ncu_dream"
for mp in llada-8b:ncu_llada:w19:dual dream-7b:ncu_dream:w19:dual llada-8b:ncu_llada:w20:dual dream-7b:ncu_dream:w20:dual \
          llada-8b:ncu_llada:w20:prefix dream-7b:ncu_dream:w20:prefix; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    left=$((430 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left" | tee -a "$OUT/tests.txt"; continue; }
    lim=$((left - 15)); [ $lim -gt 110 ] && lim=110
    tag=${p/:/_}; t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -o "$OUT/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2>/dev/null) kernels" | tee -a "$OUT/tests.txt"
done
cd "$OUT" && tar czf ncu_llada.tgz ncu_llada && tar czf ncu_dream.tgz ncu_dream && rm -rf ncu_llada ncu_dream
cd - > /dev/null
left=$((540 - SECONDS))
if [ $left -ge 110 ]; then
    HELDOUT_ARGS="-D clock_probe=true" NOVEL_ARGS="-D clock_probe=true" STEPS="heldout novel" DEADLINE=$((left - 15)) \
        bash scripts/hw_session.sh device > "$X/b.log" 2>&1
    echo "device steps exit $? ($((SECONDS - t0)) s)" | tee -a "$OUT/tests.txt"
else
    echo "run set skipped: ${left}s left" | tee -a "$OUT/tests.txt"
fi
cd "$OUT" && tar czf raw.tgz l2drain.txt l2drain.csv l2drain.err x 2> /dev/null; rm -rf x l2drain.txt l2drain.csv l2drain.err
cat "$OUT/tests.txt"; tail -n 24 "$OUT/table.txt" 2> /dev/null | cut -c1-110
