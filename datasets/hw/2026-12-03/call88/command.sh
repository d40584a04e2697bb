#!/usr/bin/env bash
# Device call 88 (session 26): a step's own mix, sustained.  Calls 86 and 87 measured the GEMMs' and the attention's
# clocks run alone, and neither they nor a two-stage model from them predict the steps' clocks as well as profile s's
# fitted settle curve (docs/COST_MODEL.md "Settle clocks measured").  The sustained section now also runs each model's
# whole layer (rmsnorm, q|k|v, attention against 1,024 keys, o, rmsnorm, gate|up, SwiGLU, down) at 64-16,384 rows:
# the clock a step's own mix settles at, to set beside what s's settle form predicts for the same layer
# (`clock_model.py sustained --shipped`).
# (t) tests/gpu/test_profile (the quick grid, then the sustained section at 0.4 s a shape, now with the layer);
# (a) --sustain 2, both models: the GEMMs, the attention and the layer on one machine (~95 s).
# .hwbin built by `bash scripts/hw_session.sh build` at this session's tree, plus tests/gpu/test_profile (xz'd).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call88/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/clock_model.py sustained datasets/hw/2026-12-03/call88/sustained.lua.xz \
#            --shipped datasets/profiles/h200-20261203s.lua
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/test_profile.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_profile
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
X=$OUT/x; mkdir -p "$X"
t0=$SECONDS
timeout 120 .hwbin/test_profile > "$X/test_profile.log" 2>&1
echo "test_profile exit $? after $((SECONDS - t0)) s"
grep -E "sustained|FAIL|ALL PASS|FAILED" "$X/test_profile.log" | head -12
t0=$SECONDS
timeout -k 10 170 .hwbin/dkv profile --grid sustained --sustain 2 --model llada-8b --model dream-7b --deadline 150 \
    -o "$OUT/sustained.lua" > "$X/a.log" 2>&1
echo "profile exit $? after $((SECONDS - t0)) s"; grep "sustained .* layer " "$X/a.log" | cut -c1-140
cd "$OUT" && [ -f sustained.lua ] && xz -9 sustained.lua; tar czf x.tgz x && rm -rf x
