#!/usr/bin/env bash
# Device call 62 (session 19): another fresh run set (the machine given back after call 61, so a new one) on a machine not seen before, recorded after the machine calibration (commit 4978c89) was fixed: its check
# of the held-out points on a machine whose runs were not seen when the rule was chosen: the 9 in-sample and the
# 11 held-out points (sm_clock on, no class events), as calls 50-55 and 60.
# The backend is session 16's final one (cuda/ unchanged since 7f3637e but for bench/ and a review):
# .hwbin built by `scripts/hw_session.sh build` at 4978c89 (dkv and its libraries xz-compressed); the
# simulated half is re-simulated by `post` with this commit's dkv.
# here:  the tiny model and calls 7 and 10's hw_h5_multi.tgz moved out of the tree for the call (the 64 MiB carry)
# there: run(command="bash datasets/hw/2026-12-02/call62/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-02/call62
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
STEPS="validate heldout" DEADLINE=200 bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done $((SECONDS - t0)) s"
cat "$OUT/table.txt" 2> /dev/null | tail -28 | cut -c1-110
cd "$OUT" && tar czf x.tgz x && rm -rf x
