#!/usr/bin/env bash
# Device call 78 (session 23): a fresh run set on a machine not seen before, recorded to check the follow form of the
# clock (docs/COST_MODEL.md "The clock that follows the work"; profile h200-20261202q) on runs that were not there
# when its time constants were fitted (on calls 50-55 and 60-63's step clocks) or when it was judged against the
# shipped window form (calls 40-63): the 9 in-sample and the 11 held-out points (sm_clock on, no class events), as
# calls 50-55 and 60-63.
# The backend is unchanged since call 63 (cuda/ differs only in bench/); .hwbin built by `scripts/hw_session.sh
# build` at this session's commit (dkv and its libraries xz-compressed); the simulated half is re-simulated by
# `post` with the dkv at hand.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-02/call78/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-02/call78
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
