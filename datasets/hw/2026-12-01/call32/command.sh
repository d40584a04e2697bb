#!/usr/bin/env bash
# Device call 32 (session 13): dkv profile --grid gemm with the class tables' rows to 24,576 (12,288, 16,384,
# 24,576 added: steps of more than 8,192 rows, docs/COST_MODEL.md "Large steps"), twice (run-to-run spread).
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align;
#        xz -9 .hwbin/dkv .hwbin/lib/*; the tiny model moved out of the tree for the call (docs/COMPARE.md)
# there: run(command="bash datasets/hw/2026-12-01/call32/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
for i in 1 2; do
    timeout 120 .hwbin/dkv profile --grid gemm -o "$OUT/profile_gemm$i.lua" --deadline 90 > "$OUT/profile_gemm$i.log" 2>&1
    echo "== profile $i exit $?"; tail -n 2 "$OUT/profile_gemm$i.log"
done
