#!/usr/bin/env bash
# Device call 39 (session 14): a full `dkv profile` with this session's default grid (the generic GEMM grid now
# also at 12,288-24,576 rows: estimate 270 s at the H200's ceilings) -- does one run still fit issue 9's
# 8 minutes? -- and with every row's SM clock (`sm_mhz`), the input of a clock model.  Not shipped.
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align;
#        xz -9 .hwbin/dkv .hwbin/lib/*; the tiny model moved out of the tree for the call (docs/COMPARE.md)
# there: run(command="bash datasets/hw/2026-12-01/call39/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
s=$SECONDS
timeout 540 .hwbin/dkv profile -o "$OUT/profile.lua" > "$OUT/profile.log" 2>&1
echo "== profile exit $? ($((SECONDS - s)) s)"; tail -n 3 "$OUT/profile.log"
cd "$OUT" && xz -9 profile.lua
