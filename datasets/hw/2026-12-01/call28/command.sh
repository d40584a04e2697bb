#!/usr/bin/env bash
# Device call 28 (session 13): the warming backend with 0.2 s idle after its warm-up (commit 3211f4d):
# the 9 validation points (each warmed first) with warm_gemms true and false on one GPU, the 11
# held-out points, the 9 points cold (true / false, LLaDA-8B and Dream-7B), 32-step blocks.
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align; xz -9 .hwbin/dkv .hwbin/lib/*
# there: run(command="bash datasets/hw/2026-12-01/call28/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
X=$OUT/x; mkdir -p "$X"
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$X/device.txt"
t0=$SECONDS
OUT=$OUT/b STEPS="validate heldout" DEADLINE=170 bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done $((SECONDS - t0)) s"
D=.hwbin/dkv
timeout 60 $D run experiments/hw_validate.lua -D backend=cuda -D warmup=each -D class_timing=false -D warm_gemms=false \
    -o "$X/val_warmfalse.h5" > "$X/val_warmfalse.log" 2>&1; echo "== exit $?" >> "$X/val_warmfalse.log"
for m in llada-8b dream-7b; do for w in true false; do
    timeout 60 $D run experiments/hw_validate.lua -D backend=cuda -D model=$m -D class_timing=false -D warm_gemms=$w \
        -o "$X/cold_${m}_warm$w.h5" > "$X/cold_${m}_warm$w.log" 2>&1
    echo "== exit $?" >> "$X/cold_${m}_warm$w.log"
done; done
timeout 90 $D run experiments/hw_validate.lua -D backend=cuda -D steps=32 -D warmup=each -D class_timing=false \
    -o "$X/long.h5" > "$X/long.log" 2>&1; echo "== exit $?" >> "$X/long.log"
echo "all done $((SECONDS - t0)) s"
cat "$OUT/b/table.txt" 2> /dev/null | tail -28 | cut -c1-110
for f in "$X"/val_*.log "$X"/cold_*.log; do echo "-- $f"; tail -n 11 "$f" | cut -c1-90; done
cd "$OUT" && tar czf call28.tgz b x && rm -rf b x
