#!/usr/bin/env bash
# Device call 80 (session 23): tests/gpu/test_backend on the H200, for its new check of dkv.execute's clock_probe (the
# SMs' mean clock per step, plausible on every step and between 25 % below and 5 % above NVML's mean over the steps
# of 3 ms or more) beside every check it already makes.  .hwbin/test_backend built by `scons variant=hw mode=release
# cuda=yes build/hw-release/tests/gpu/test_backend` at commit this file was added in, xz-compressed.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-02/call80/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/test_backend.xz .hwbin/lib/*.xz
chmod +x .hwbin/test_backend
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
t0=$SECONDS
timeout 300 .hwbin/test_backend > "$OUT/test_backend.log" 2>&1
echo "test_backend exit $? after $((SECONDS - t0)) s"
grep -E "SM clock|FAIL|passed|failed" "$OUT/test_backend.log" | head -20
tail -3 "$OUT/test_backend.log"
