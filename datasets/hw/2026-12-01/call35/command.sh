#!/usr/bin/env bash
# Device call 35 (session 14): the generic GEMM grid's rows above 8,192 (m = 12,288, 16,384, 24,576 at every
# grid n and k: `dkv profile --grid gemm_grid --min-rows 12288`), where another model's large Refresh steps are
# looked up (Dream-7B's FFN in a 20,000-row step was extrapolated linearly from 8,192 rows: +13 to +16 % per class,
# docs/COST_MODEL.md "Large steps"); merged into the shipped profile by hand (PROFILE_FORMAT.md).
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align;
#        xz -9 .hwbin/dkv .hwbin/lib/*; the tiny model moved out of the tree for the call (docs/COMPARE.md)
# there: run(command="bash datasets/hw/2026-12-01/call35/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
timeout 480 .hwbin/dkv profile --grid gemm_grid --min-rows 12288 -o "$OUT/profile_grid_big.lua" --deadline 420 \
    > "$OUT/profile_grid_big.log" 2>&1
echo "== profile exit $?"; tail -n 3 "$OUT/profile_grid_big.log"
