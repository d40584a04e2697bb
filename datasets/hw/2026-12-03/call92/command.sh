#!/usr/bin/env bash
# Device call 92 (session 28), after profile t shipped (s plus the GEMM staircase of device call 91, docs/COST_MODEL.md
# "GEMM rows between the grid's"): (1) LLaDA-8B's class GEMMs every 16 rows again on a fresh machine (does the
# staircase repeat from machine to machine?), (2) the nine in-sample and eleven held-out validation points with the
# step probe on that machine, none of whose numbers any choice saw.
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin as call 91's (the device half's dkv does
#        not depend on the shipped preset: `post` re-simulates with the dkv at hand)
# there: run(command="bash datasets/hw/2026-12-03/call92/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/gemm_steps.py datasets/hw/2026-12-03/call92/steps.lua.xz
#        DKV=$PWD/build/release/dkv RES=/tmp/s92 bash scripts/hw_session.sh post datasets/hw/2026-12-03/call92
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
t0=$SECONDS
timeout 150 .hwbin/dkv profile -o "$OUT/steps.lua" --grid gemm --gemm-step 16 --model llada-8b \
    --repeats 7 --warmup 1 --probe --deadline 130 --name h200-steps2 > "$OUT/steps.log" 2>&1
echo "profile exit $? $((SECONDS - t0)) s, $(grep -c -E '^ +\{[0-9]' "$OUT/steps.lua" 2>/dev/null) rows"
tail -2 "$OUT/steps.log"
X=$OUT/x; mkdir -p "$X"
t0=$SECONDS
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" STEPS="validate heldout" DEADLINE=170 \
    bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done after $((SECONDS - t0)) s"
tail -n 4 "$OUT/table.txt" 2> /dev/null | cut -c1-120
xz -9 "$OUT/steps.lua"
cd "$OUT" && tar czf x.tgz x && rm -rf x
