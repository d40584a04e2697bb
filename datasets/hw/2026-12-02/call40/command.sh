#!/usr/bin/env bash
# Device call 40 (session 15): each step's SM clock beside its time, for the clock model of docs/COST_MODEL.md
# "Clocks by kind of work" (the profile's GEMM rows run near 1,515 MHz, its attention rows at 1,980, steps between).
# (a) test_backend (GPU), which now checks dkv.execute's sm_clock (every step of 3 ms or more has a clock);
# (b) a fresh run set with the per-step clock (sm_mhz, hw_lib's -D sm_clock=true default): the 9 validation points
#     and the 11 held-out points without class events, nvidia-smi every 10 ms beside as a cross-check of the sampler;
# (c) the same points with class events (per-class times beside the step clocks: each class's clock sensitivity).
# here:  bash scripts/hw_session.sh build; build/hw-release/tests/gpu/test_backend copied into .hwbin;
#        rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align; xz -9 .hwbin/dkv .hwbin/test_backend
#        .hwbin/lib/*; the tiny model moved out of the tree for the call (docs/COMPARE.md "The carry limit")
# there: run(command="bash datasets/hw/2026-12-02/call40/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-02/call40
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/test_backend.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_backend
X=$OUT/x; mkdir -p "$X"
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
t0=$SECONDS
timeout 150 .hwbin/test_backend > "$X/test_backend.log" 2>&1; echo "test_backend exit $? $((SECONDS - t0)) s"
grep -E "SM clock|failure" "$X/test_backend.log"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv -lms 10 \
    > "$X/smi.csv" 2> "$X/smi.err" &
SMI=$!
date +%s.%N > "$X/smi_t0.txt"
STEPS="validate heldout" DEADLINE=200 bash scripts/hw_session.sh device > "$X/b.log" 2>&1
kill $SMI
echo "validate/heldout done $((SECONDS - t0)) s"
OUT=$OUT/c STEPS="validate heldout" CLASS_TIMING=true DEADLINE=150 bash scripts/hw_session.sh device > "$X/c.log" 2>&1
echo "with class events done $((SECONDS - t0)) s"
cat "$OUT/table.txt" 2> /dev/null | tail -28 | cut -c1-110
cd "$OUT" && tar czf c.tgz c x && rm -rf c x
