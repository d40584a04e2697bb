#!/usr/bin/env bash
# Device call 97 (session 29): call 79's two run sets on a machine not seen before: (x) the 9 in-sample and 11 held-out
# points with the step probe, no class events (a fresh validation run set after `dkv compare`'s pairing change), (c) the
# 11 held-out points with class events.  The questions: the held-out targets on one more machine; the class events'
# cost per launch on a second machine (`scripts/class_errors.py c/h5/heldout.h5 POINTS --event-cost x/h5/heldout.h5`,
# 1.6-1.8 us at the median on call 79 but 0.8 on dream:mc:prefix,long); Dream-7B's per-class times (docs/COMPARE.md
# next steps).  .hwbin's dkv from `scripts/hw_session.sh build` at commit 0b11f47 (the backend as at this commit).
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call97/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-03/call97  (and, from
#        c.tgz unpacked, its c/)
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
X=$OUT/x; mkdir -p "$X"
t0=$SECONDS
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" STEPS="validate heldout" DEADLINE=200 \
    bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done $((SECONDS - t0)) s"
OUT=$OUT/c STEPS="heldout" CLASS_TIMING=true HELDOUT_ARGS="-D clock_probe=true" DEADLINE=150 \
    bash scripts/hw_session.sh device > "$X/c.log" 2>&1
echo "held-out with class events done $((SECONDS - t0)) s"
cat "$OUT/table.txt" 2> /dev/null | tail -28 | cut -c1-110
cd "$OUT" && tar czf c.tgz c x && rm -rf c x
