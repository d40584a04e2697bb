#!/usr/bin/env bash
# Device call 79 (session 23): the SM clock read from the SMs' own cycle counters (dkv.execute's new clock_probe,
# docs/HDF5_SCHEMA.md sm_probe_mhz) beside NVML's (sm_clock), on a machine not seen before: (x) the 9 in-sample and
# 11 held-out points without class events, (c) the 11 held-out points with class events.  The question
# (docs/COST_MODEL.md "The clock that follows the work"): does a class's time follow the counters' step clock with
# the sensitivity measured at known clocks (call 77, 0.94-0.98 above 256 rows), where it follows NVML's with 0.1-0.5?
# .hwbin built by `scripts/hw_session.sh build` at this session's working tree (the probe added to cuda/backend.c and
# cuda/backend_kernels.cu; dkv and its libraries xz-compressed); the simulated half is re-simulated by `post`.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-02/call79/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-02/call79  (and /c)
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
