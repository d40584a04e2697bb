#!/usr/bin/env bash
# Device call 46 (session 16): a second fresh run set after the GEMM warm-up's bucket algorithms (call 45's
# change, docs/COST_MODEL.md "Cold shapes", "Bucket algorithms"): the 9 in-sample points and the 11 held-out
# points (sm_clock on, no class events) on another machine, with the same binaries as call 45.
# here:  .hwbin of call 45 (built from this session's tree before its commit); the tiny model moved out
# there: run(command="bash datasets/hw/2026-12-02/call46/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-02/call46
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
tail -16 "$OUT/table.txt" | cut -c1-110
