#!/usr/bin/env bash
# Device call 26 (session 13): one H200 machine's full dkv profile, its validation and held-out points,
# hw_offload on today's backend, the 9 validation points cold (LLaDA-8B, Dream-7B), the 9 points with
# 32 steps per block (the Reuse steps long after their Refresh), the validation points again at the
# end, the CUDA tests the COMPRESS-range change touches; nvidia-smi clocks/power every 20 ms beside.
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances; xz -9 .hwbin/dkv .hwbin/lib/*
#        mkdir build/regress; cp build/release/tests/gpu/test_backend_{lossy,lowrank} build/regress; xz -9 build/regress/*
# there: run(command="bash datasets/hw/2026-12-01/call26/command.sh", carry=[".hwbin", "build/regress"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz build/regress/*.xz
chmod +x .hwbin/dkv build/regress/* 2> /dev/null
X=$OUT/x; mkdir -p "$X"
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$X/device.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active,utilization.gpu \
    --format=csv -lms 20 > "$X/smi.csv" 2> /dev/null &
SMI=$!
mark() { echo "$(date -u '+%Y/%m/%d %H:%M:%S.%3N') $1" >> "$X/marks.txt"; }
t0=$SECONDS
mark profile_start
OUT=$OUT/a STEPS="check profile" PROFILE_LIMIT=260 DEADLINE=270 bash scripts/hw_session.sh device > "$X/a.log" 2>&1
mark profile_end; echo "profile done $((SECONDS - t0)) s"
mark validate_start
OUT=$OUT/b STEPS="validate heldout experiments" STUDIES="offload" DEADLINE=150 bash scripts/hw_session.sh device > "$X/b.log" 2>&1
mark validate_end; echo "validate/heldout/offload done $((SECONDS - t0)) s"
D=.hwbin/dkv
for m in llada-8b dream-7b; do
    mark "cold_${m}_start"
    timeout 60 $D run experiments/hw_validate.lua -D backend=cuda -D model=$m -D class_timing=false -o "$X/cold_$m.h5" > "$X/cold_$m.log" 2>&1
    echo "== exit $?" >> "$X/cold_$m.log"; mark "cold_${m}_end"
done
echo "cold done $((SECONDS - t0)) s"
mark long_start
timeout 90 $D run experiments/hw_validate.lua -D backend=cuda -D steps=32 -D warmup=each -D class_timing=false -o "$X/long.h5" > "$X/long.log" 2>&1
echo "== exit $?" >> "$X/long.log"; mark long_end
mark val2_start
timeout 40 $D run experiments/hw_validate.lua -D backend=cuda -D warmup=each -D class_timing=false -o "$X/val2.h5" > "$X/val2.log" 2>&1
echo "== exit $?" >> "$X/val2.log"; mark val2_end
echo "long/val2 done $((SECONDS - t0)) s"
kill $SMI 2> /dev/null
for t in test_backend_lossy test_backend_lowrank; do
    ( s=$SECONDS; timeout 60 build/regress/$t > "$X/$t.log" 2>&1; echo "== $t exit $? ($((SECONDS - s)) s)" >> "$X/$t.log" ) &
done
wait
for t in test_backend_lossy test_backend_lowrank; do grep -E "^FAIL|^PASS:|^FAIL:" "$X/$t.log" | tail -2; tail -1 "$X/$t.log"; done
echo "all done $((SECONDS - t0)) s"
cat "$OUT/a/table.txt" "$OUT/b/table.txt" 2> /dev/null | tail -40
tail -3 "$X"/cold_*.log "$X/long.log" "$X/val2.log"
cd "$OUT" && tar czf call26.tgz a b x && rm -rf a b x
