#!/usr/bin/env bash
# Device call 84 (session 25): the clock each profile row ran at, read from the SMs' own cycle counters (`dkv profile
# --probe`, cuda/sm_probe.h), on the same machine as a validation run set with the step probe (clock_probe).  The
# question (docs/COST_MODEL.md "The clock that follows the work"; docs/COMPARE.md next steps): the simulator scales a
# profile row's time by the step's clock over the row's clock, both on NVML's scale, and NVML misses a drop within a
# step (az:none's first three 1,088-row steps: NVML 1,965 MHz throughout, the probe 1,688 -> 1,642 -> 1,613 on call 81,
# steps 4-8 % longer than simulated).  What do the rows' own clocks say?
# (t) tests/gpu/test_backend, whose probe check covers the backend's move to cuda/sm_probe.cu;
# (p) dkv profile --probe for both models' GEMM, LM-head, attention, KV-store and elementwise shapes (~1-2 min);
# (x) the nine in-sample and eleven held-out validation points with clock_probe (as calls 79 and 81).
# .hwbin built by `bash scripts/hw_session.sh build` at this session's tree, plus tests/gpu/test_backend (xz'd).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call84/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/s84 bash scripts/hw_session.sh post datasets/hw/2026-12-03/call84
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/test_backend.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_backend
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
X=$OUT/x; mkdir -p "$X"
t0=$SECONDS
timeout 120 .hwbin/test_backend > "$X/test_backend.log" 2>&1
echo "test_backend exit $? after $((SECONDS - t0)) s"
grep -E "SM clock|FAIL|passed|failed" "$X/test_backend.log" | head -8
t0=$SECONDS
timeout -k 10 200 .hwbin/dkv profile --probe --model llada-8b --model dream-7b --grid gemm,lm_head,attn,kv_store,elementwise \
    --deadline 180 -o "$OUT/profile.lua" > "$X/profile.log" 2>&1
echo "profile exit $? after $((SECONDS - t0)) s"; tail -n 2 "$X/profile.log"
t0=$SECONDS
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" STEPS="validate heldout" DEADLINE=170 \
    bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done after $((SECONDS - t0)) s"
tail -n 4 "$OUT/table.txt" 2> /dev/null | cut -c1-120
cd "$OUT" && xz -9 profile.lua && tar czf x.tgz x && rm -rf x
