#!/usr/bin/env bash
# Device call 91 (session 28): the GEMM staircase between the profile's rows.  The class tables hold rows at
# 1,024, 1,536, 2,048, ... and the simulator interpolates linearly between them; az:none's 1,088-row steps run
# their q|k|v and FFN GEMMs 6-7 % slower than that at the same probe clock (call 79's class events), the
# first of its steps 5-11 % short on every machine, which moves its step 3's admission (sim 80.1 ms against
# the 80.19 ms arrival; real 85-89 ms).  `dkv profile --grid gemm --gemm-step 16` times both models' class
# GEMMs at every multiple of 16 rows to 8,192 (flushed, the SMs' probe clock per row).  Then the nine
# in-sample and eleven held-out validation points with the step probe on this machine (as calls 89, 90).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry); .hwbin from `scripts/hw_session.sh
#        build` at this commit (dkv and its libraries, xz-compressed)
# there: run(command="bash datasets/hw/2026-12-03/call91/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/gemm_steps.py datasets/hw/2026-12-03/call91/steps.lua.xz
#        DKV=$PWD/build/release/dkv RES=/tmp/s91 bash scripts/hw_session.sh post datasets/hw/2026-12-03/call91
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
t0=$SECONDS
timeout 260 .hwbin/dkv profile -o "$OUT/steps.lua" --grid gemm --gemm-step 16 --model llada-8b --model dream-7b \
    --repeats 7 --warmup 1 --probe --deadline 240 --name h200-steps > "$OUT/steps.log" 2>&1
echo "profile exit $? $((SECONDS - t0)) s, $(grep -c -E '^ +\{[0-9]' "$OUT/steps.lua" 2>/dev/null) rows"
tail -3 "$OUT/steps.log"
X=$OUT/x; mkdir -p "$X"
t0=$SECONDS
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" STEPS="validate heldout" DEADLINE=170 \
    bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done after $((SECONDS - t0)) s"
tail -n 4 "$OUT/table.txt" 2> /dev/null | cut -c1-120
xz -9 "$OUT/steps.lua"
cd "$OUT" && tar czf x.tgz x && rm -rf x
