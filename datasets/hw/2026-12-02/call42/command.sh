#!/usr/bin/env bash
# Device call 42 (session 15): each kernel's clock sensitivity (docs/COST_MODEL.md "Clock sensitivity"):
# dkv profile --states times every shape also cool (each call after a one-thread spin) and hot (each right after
# a heater GEMM), the SM clock sampled while each state's work runs.  The class GEMMs of both models (the default grid), then the attention,
# KV store and elementwise kernels on the quick grid.
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align;
#        xz -9 .hwbin/dkv .hwbin/lib/*; the tiny model moved out of the tree for the call (docs/COMPARE.md)
# there: run(command="bash datasets/hw/2026-12-02/call42/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
D=.hwbin/dkv
t0=$SECONDS
timeout 200 $D profile --grid gemm --states --model llada-8b --model dream-7b -o "$OUT/states_gemm.lua" \
    --deadline 170 > "$OUT/states_gemm.log" 2>&1; echo "gemm exit $? $((SECONDS - t0)) s"
timeout 100 $D profile --grid attn,kv_store,elementwise --quick --states --model llada-8b --model dream-7b \
    -o "$OUT/states_attn.lua" --deadline 80 > "$OUT/states_attn.log" 2>&1; echo "attn exit $? $((SECONDS - t0)) s"
for f in "$OUT"/states_*.log; do tail -n 2 "$f"; done
grep -A26 "qkv = {" "$OUT/states_gemm.lua" | tail -6 | cut -c1-200
# then a fresh validation run set (the 9 in-sample and 11 held-out points, per-step clocks), not looked at
# until the clock model was fixed on calls 40 and 42 (docs/COST_MODEL.md "Clock sensitivity")
STEPS="validate heldout" DEADLINE=200 bash scripts/hw_session.sh device > "$OUT/val.log" 2>&1
echo "validate/heldout done $((SECONDS - t0)) s"
