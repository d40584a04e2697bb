#!/usr/bin/env bash
# Device call 98 (session 30): the engine now looks a pool block's id up once, when the block is taken
# (core/engine/engine_mem.c kv_push), instead of asking the pool for every cached block of every item each step; the
# CUDA backend addresses KV through those ids.  So, on the GPU: (t) the backend's engine tests (test_backend,
# test_backend_lowrank, test_backend_run: outputs against the CPU reference), dkv.execute through Lua, and the
# multi-instance test (a pool shared by instances); then (x) the 9 in-sample and 11 held-out validation points with the
# step probe, a fresh validation run set on one more machine.  .hwbin from `scripts/hw_session.sh build` with the change
# (working tree at f15f1c0 + the engine change), the three test_backend* programs copied in from build/hw-release.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call98/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-03/call98
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/*.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_* .hwbin/bwcurve .hwbin/l2probe .hwbin/bench_sel_align 2> /dev/null
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
t0=$SECONDS
for t in test_backend test_backend_lowrank test_backend_run test_multi_instances; do
    timeout -k 5 120 ".hwbin/$t" > "$OUT/$t.log" 2>&1; r=$?
    echo "$t exit $r ($((SECONDS - t0)) s): $(tail -n 1 "$OUT/$t.log")" | tee -a "$OUT/tests.txt"
done
timeout -k 5 60 .hwbin/dkv run tests/lua/test_execute.lua -o "$OUT/execute.h5" > "$OUT/test_execute.log" 2>&1
echo "test_execute.lua exit $? ($((SECONDS - t0)) s): $(tail -n 1 "$OUT/test_execute.log")" | tee -a "$OUT/tests.txt"
X=$OUT/x; mkdir -p "$X"
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" STEPS="validate heldout" DEADLINE=200 \
    bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done $((SECONDS - t0)) s"
cat "$OUT/table.txt" 2> /dev/null | tail -28 | cut -c1-110
