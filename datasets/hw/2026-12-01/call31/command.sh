#!/usr/bin/env bash
# Device call 31 (session 13): experiments/hw_long_ctx.lua (8 requests of 2,048-3,072 prompt tokens, in-sample
# diagnostic) without and with class events, each point warmed first, on the warming backend (.hwbin of b41d921).
# here:  the tiny model moved out of the tree for the call (the carry limit, docs/COMPARE.md)
# there: run(command="bash datasets/hw/2026-12-01/call31/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
mkdir -p "$OUT/x"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/x/device.txt"
for ct in false true; do
    timeout 120 .hwbin/dkv run experiments/hw_long_ctx.lua -D backend=cuda -D warmup=each -D class_timing=$ct \
        -o "$OUT/x/lc_ct$ct.h5" > "$OUT/x/lc_ct$ct.log" 2>&1; echo "== exit $?" >> "$OUT/x/lc_ct$ct.log"
    tail -n 7 "$OUT/x/lc_ct$ct.log"
done
cd "$OUT" && tar czf call31.tgz x && rm -rf x
