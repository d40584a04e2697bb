#!/usr/bin/env bash
# Device call 29 (session 13): per-class times (CUDA events around every kernel class, CLASS_TIMING=true)
# of the 9 validation points (LLaDA-8B, then Dream-7B, each point warmed first) and of the 11 held-out
# points, on the warming backend (commit b41d921): which kernel class carries the remaining step errors.
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align; xz -9 .hwbin/dkv .hwbin/lib/*
# there: run(command="bash datasets/hw/2026-12-01/call29/command.sh", carry=[".hwbin"])
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
CLASS_TIMING=true OUT=$OUT/b STEPS="validate heldout" DEADLINE=170 bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout (class events) done $((SECONDS - t0)) s"
timeout 60 .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D model=dream-7b -D warmup=each -D class_timing=true \
    -o "$X/val_dream_ct.h5" > "$X/val_dream_ct.log" 2>&1; echo "== exit $?" >> "$X/val_dream_ct.log"
echo "all done $((SECONDS - t0)) s"
cat "$OUT/b/table.txt" 2> /dev/null | tail -28 | cut -c1-110
tail -n 11 "$X/val_dream_ct.log" | cut -c1-90
cd "$OUT" && tar czf call29.tgz b x && rm -rf b x
