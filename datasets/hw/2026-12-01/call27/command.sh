#!/usr/bin/env bash
# Device call 27 (session 13): the GEMM warm-up and plan table (tests/gpu/test_kernels), the 9
# validation and 11 held-out points with the warming backend, the 9 points cold with warm_gemms
# true and false (LLaDA-8B, Dream-7B); helper h13s's selection at unaligned key counts (dkv profile
# --grid select, bench_sel_align, its Nsight Compute names, the Dream-7B select grid).
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances; xz -9 .hwbin/dkv .hwbin/bench_sel_align .hwbin/lib/*
#        mkdir build/regress; cp build/release/tests/gpu/test_kernels build/regress; xz -9 build/regress/*
# there: run(command="bash datasets/hw/2026-12-01/call27/command.sh", carry=[".hwbin", "build/regress"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/bench_sel_align.xz .hwbin/lib/*.xz build/regress/*.xz
chmod +x .hwbin/dkv .hwbin/bench_sel_align build/regress/* 2> /dev/null
X=$OUT/x; mkdir -p "$X"
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$X/device.txt"
t0=$SECONDS
timeout 120 build/regress/test_kernels > "$X/test_kernels.log" 2>&1; echo "== test_kernels exit $?" >> "$X/test_kernels.log"
grep -E "^FAIL|gemm plans|warm-up|INFO|^PASS:|^FAIL:" "$X/test_kernels.log"; tail -1 "$X/test_kernels.log"
echo "test_kernels done $((SECONDS - t0)) s"
OUT=$OUT/b STEPS="validate heldout" DEADLINE=170 bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done $((SECONDS - t0)) s"
D=.hwbin/dkv
for m in llada-8b dream-7b; do for w in true false; do
    timeout 60 $D run experiments/hw_validate.lua -D backend=cuda -D model=$m -D class_timing=false -D warm_gemms=$w \
        -o "$X/cold_${m}_warm$w.h5" > "$X/cold_${m}_warm$w.log" 2>&1
    echo "== exit $?" >> "$X/cold_${m}_warm$w.log"
done; done
echo "cold done $((SECONDS - t0)) s"
S=$X/sel; mkdir -p "$S"
timeout 150 $D profile --grid select -o "$S/profile_sel.lua" --deadline 120 > "$S/profile_sel.log" 2>&1; echo "profile rc=$?"; tail -n 2 "$S/profile_sel.log"
timeout 60 .hwbin/bench_sel_align > "$S/bench_sel_align.txt" 2>&1; echo "bench rc=$?"; tail -n 12 "$S/bench_sel_align.txt"
N=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2> /dev/null | head -n 1)
if [ -n "$N" ]; then timeout 150 $N --csv --metrics gpu__time_duration.sum --log-file "$S/ncu_sel.csv" .hwbin/bench_sel_align --ncu > "$S/ncu_sel.out" 2>&1; echo "ncu rc=$?"; fi
timeout 60 $D profile --grid select --model llada-8b --model dream-7b -o "$S/profile_sel_dream.lua" --deadline 45 > "$S/profile_sel_dream.log" 2>&1; echo "dream rc=$?"
echo "all done $((SECONDS - t0)) s"
cat "$OUT/b/table.txt" 2> /dev/null | tail -30
for f in "$X"/cold_*.log; do echo "-- $f"; tail -n 11 "$f" | cut -c1-100; done
cd "$OUT" && tar czf call27.tgz b x && rm -rf b x
