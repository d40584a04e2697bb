#!/usr/bin/env bash
# Device call 52 (session 16): another fresh run set on the session's final backend (commit 7f3637e's code:
# bucket algorithms on the grid of 8, the sparse cache's scores warm-up), the 9 in-sample and the 11 held-out
# points (sm_clock on, no class events), on whichever machine is lent.
# here:  .hwbin of call 50 (dkv and its libraries only); the tiny model moved out of the tree for the call
# there: run(command="bash datasets/hw/2026-12-02/call52/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-02/call52
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
STEPS="validate heldout" DEADLINE=200 bash scripts/hw_session.sh device > "$OUT/run.log" 2>&1
echo "validate/heldout done $SECONDS s"
grep -A14 "^point" "$OUT/table.txt" 2> /dev/null | tail -13 | cut -c1-110
