#!/usr/bin/env bash
# Device call 38 (session 14): dkv profile with the SM clock sampled beside each row's timed calls (NVML,
# cuda/profile_clock.c; the rows' `sm_mhz` column): the class GEMMs and the attention, to check the instrument
# against call 37's nvidia-smi medians (1,515 and 1,980 MHz).
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align;
#        xz -9 .hwbin/dkv .hwbin/lib/*; the tiny model moved out of the tree for the call (docs/COMPARE.md)
# there: run(command="bash datasets/hw/2026-12-01/call38/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
timeout 120 .hwbin/dkv profile --grid gemm,attn -o "$OUT/profile_clk.lua" --deadline 90 > "$OUT/profile_clk.log" 2>&1
echo "== profile exit $?"; grep -i "clock" "$OUT/profile_clk.log" | head -3; tail -n 2 "$OUT/profile_clk.log"
grep -c "sm_mhz" "$OUT/profile_clk.lua"
