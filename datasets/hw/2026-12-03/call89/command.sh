#!/usr/bin/env bash
# Device call 89 (session 27): the clock against the duty cycle.  Profile s's settle clocks are effective values fitted
# to whole steps; sustained runs (calls 86-88) showed they are not the clocks of back-to-back work: the fit absorbs
# the pauses real runs have.  Here each model's forward runs as steps (its layer count of whole layers at 256, 1,024,
# 2,048 and 4,096 rows against 1,024 keys), the host idle 0, 1, 3, 10 or 30 ms after each synchronised step, for 2 s
# of steps after a 0.3 s lead spin, the SMs' own clock read over each step alone (kind duty; docs/COST_MODEL.md
# "The clock against the duty cycle").  Then the nine in-sample and eleven held-out validation points with the step
# probe on this fresh machine (a held-out run set for the shipped profile, as call 85).
# (t) tests/gpu/test_profile (the quick grid, the sustained section, now with two duty runs);
# (a) dkv profile --grid sustained --sustain 2 --sustain-windows 8 --sustain-gaps 0,1,3,10,30, both models (~95 s);
# (v) hw_session.sh device, STEPS="validate heldout" with clock_probe (~55 s).
# .hwbin built by `bash scripts/hw_session.sh build` at this session's tree (c76e778), plus tests/gpu/test_profile.
# here:  datasets/hw moved out of the tree for the call (64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call89/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/clock_model.py duty datasets/hw/2026-12-03/call89/duty.lua.xz
#        DKV=$PWD/build/release/dkv RES=/tmp/s89 bash scripts/hw_session.sh post datasets/hw/2026-12-03/call89
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
grep -E "duty|FAIL|ALL PASS|FAILED" "$X/test_profile.log" | head -8
t0=$SECONDS
timeout -k 10 170 .hwbin/dkv profile --grid sustained --sustain 2 --sustain-windows 8 --sustain-gaps 0,1,3,10,30 \
    --model llada-8b --model dream-7b --deadline 150 -o "$OUT/duty.lua" > "$X/a.log" 2>&1
echo "profile exit $? after $((SECONDS - t0)) s"; grep "sustained .* duty " "$X/a.log" | cut -c1-150 | head -40
t0=$SECONDS
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" STEPS="validate heldout" DEADLINE=170 \
    bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done after $((SECONDS - t0)) s"
tail -n 4 "$OUT/table.txt" 2> /dev/null | cut -c1-120
cd "$OUT" && [ -f duty.lua ] && xz -9 duty.lua; tar czf x.tgz x && rm -rf x
