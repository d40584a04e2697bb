#!/usr/bin/env bash
# Device call 96 (session 29): under profile t and after dkv compare's pairing change (post-processing only), the nine in-sample and eleven held-out validation points with
# the step probe on another fresh machine (as call 92's second command; .hwbin's dkv from `scripts/hw_session.sh build`
# at commit 0b11f47: the backend and the loader as at this commit).
# here:  datasets/hw moved out of the tree for the call (64 MiB carry)
# there: run(command="bash datasets/hw/2026-12-03/call96/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/s96 bash scripts/hw_session.sh post datasets/hw/2026-12-03/call96
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
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" STEPS="validate heldout" DEADLINE=170 \
    bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done after $((SECONDS - t0)) s"
tail -n 4 "$OUT/table.txt" 2> /dev/null | cut -c1-120
cd "$OUT" && tar czf x.tgz x && rm -rf x
