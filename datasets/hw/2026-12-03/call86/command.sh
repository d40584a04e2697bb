#!/usr/bin/env bash
# Device call 86 (session 26): the clocks seconds of one shape's work settle at, measured (`dkv profile --sustain`,
# the sustained section; docs/COST_MODEL.md "Settle clocks measured").  Profile s's clock.settle (the GEMMs' settle
# clocks by rows, the other classes' one clock) was fitted on the step probe clocks of calls 79 and 81; these runs
# measure them: each model's layer GEMMs (q|k|v, o, gate|up, down) at 64 to 16,384 rows and its attention, each back
# to back after a light spin, the SMs' own clock over four windows of each run.
# (t) tests/gpu/test_profile (the quick grid, then the sustained section alone at 0.4 s a shape);
# (a) --sustain 2, LLaDA-8B then Dream-7B (~55 s);
# (b) --sustain 4, Dream-7B then LLaDA-8B (~100 s): the same shapes in the other order and twice as long, so whether
#     (a)'s last windows had settled, and how much the order moves them, are both measured.
# .hwbin built by `bash scripts/hw_session.sh build` at this session's tree, plus tests/gpu/test_profile (xz'd).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call86/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/clock_model.py sustained datasets/hw/2026-12-03/call86/sustained_a.lua.xz
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
timeout -k 10 120 .hwbin/dkv profile --grid sustained --sustain 2 --model llada-8b --model dream-7b --deadline 100 \
    -o "$OUT/sustained_a.lua" > "$X/a.log" 2>&1
echo "profile (a) exit $? after $((SECONDS - t0)) s"; grep "sustained " "$X/a.log" | cut -c1-150
t0=$SECONDS
timeout -k 10 170 .hwbin/dkv profile --grid sustained --sustain 4 --model dream-7b --model llada-8b --deadline 150 \
    -o "$OUT/sustained_b.lua" > "$X/b.log" 2>&1
echo "profile (b) exit $? after $((SECONDS - t0)) s"; grep "sustained " "$X/b.log" | cut -c1-150
cd "$OUT" && for f in sustained_a.lua sustained_b.lua; do [ -f "$f" ] && xz -9 "$f"; done; tar czf x.tgz x && rm -rf x
