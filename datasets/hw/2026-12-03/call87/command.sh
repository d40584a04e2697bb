#!/usr/bin/env bash
# Device call 87 (session 26): the clock's path, measured.  Call 86 showed back-to-back GEMMs settle at ~1,310 MHz at
# 128-16,384 rows while whole steps run at 1,500-1,900, and the step model's fitted settle clocks are effective values
# (docs/COST_MODEL.md "Settle clocks measured").  What is missing to predict a step's clock from measured clocks is
# the power limit's dynamics: how fast the clock falls under GEMMs and rises under lighter work.  These runs read it
# in short windows (dkv profile --sustain-windows):
# (f) --sustain 0.4 --sustain-windows 40: every shape of call 86, 10 ms windows, after the 0.3 s spin (the fall from
#     the maximum; ~16 s);
# (t) the same with --sustain-lead 0: each run starts at the clock the run before left (LLaDA's 64-row GEMMs after
#     Dream's 2,048-row attention, the attention after 16,384-row GEMMs: the rise; ~10 s);
# (s) --sustain 1.6 --sustain-windows 32: 50 ms windows (the slow part of the fall and the limit's hunting; ~45 s).
# .hwbin built by `bash scripts/hw_session.sh build` at this session's tree (xz'd).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call87/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/clock_model.py path datasets/hw/2026-12-03/call87/path_f.lua.xz
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
X=$OUT/x; mkdir -p "$X"
M="--model llada-8b --model dream-7b"
t0=$SECONDS
timeout -k 10 60 .hwbin/dkv profile --grid sustained --sustain 0.4 --sustain-windows 40 $M --deadline 50 \
    -o "$OUT/path_f.lua" > "$X/f.log" 2>&1
echo "(f) exit $? after $((SECONDS - t0)) s"
t0=$SECONDS
timeout -k 10 60 .hwbin/dkv profile --grid sustained --sustain 0.4 --sustain-windows 40 --sustain-lead 0 $M --deadline 50 \
    -o "$OUT/path_t.lua" > "$X/t.log" 2>&1
echo "(t) exit $? after $((SECONDS - t0)) s"
t0=$SECONDS
timeout -k 10 100 .hwbin/dkv profile --grid sustained --sustain 1.6 --sustain-windows 32 $M --deadline 90 \
    -o "$OUT/path_s.lua" > "$X/s.log" 2>&1
echo "(s) exit $? after $((SECONDS - t0)) s"
for f in f t s; do grep -m3 "sustained llada-8b gemm rows \(128\|1024\|16384\)" "$X/$f.log" | cut -c1-200; done
cd "$OUT" && for f in path_f.lua path_t.lua path_s.lua; do [ -f "$f" ] && xz -9 "$f"; done; tar czf x.tgz x && rm -rf x
