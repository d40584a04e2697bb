#!/usr/bin/env bash
# Device call 116 (session 36): the low-rank form rule moved into core/model/devmem.c (dkv_devmem_lr_*), used by
# cuda/arena.c (its fetch's rebuild, a raw offload's drop of a form: meant as no behaviour change) and by the
# engine's device-memory count (which counted a form's buffer at every fetch after a compression: 270 MB too many at
# bg:dual+prog).  CRITERION.md here, committed before the call.  Runs the GPU tests that exercise offload and the
# low-rank forms (test_backend with its new check "engine's count = backend's", test_backend_fp8, test_backend_lossy,
# test_backend_run) and tests/lua/test_execute.lua; then a fresh held-out and nv:* run set with probe clocks.
# .hwbin: scripts/hw_session.sh build at this commit (dkv) plus those tests from build/hw-release/tests/gpu, xz'd.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-04/call116/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/s116 bash scripts/hw_session.sh post datasets/hw/2026-12-04/call116
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/*.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_* 2> /dev/null
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
date -u +%Y-%m-%dT%H:%M:%SZ >> "$OUT/device.txt"
t0=$SECONDS
for t in test_backend test_backend_fp8 test_backend_lossy test_backend_run; do
    timeout -k 5 150 ".hwbin/$t" > "$OUT/x_$t.log" 2>&1; r=$?
    echo "$t exit $r ($((SECONDS - t0)) s): $(tail -n 1 "$OUT/x_$t.log")" | tee -a "$OUT/tests.txt"
done
grep -E "compressor|engine's count|devmem|FAIL" "$OUT"/x_test_backend*.log | cut -c1-220 >> "$OUT/tests.txt"
timeout -k 5 60 .hwbin/dkv run tests/lua/test_execute.lua -o "$OUT/x_execute.h5" > "$OUT/x_test_execute.log" 2>&1
echo "test_execute.lua exit $? ($((SECONDS - t0)) s): $(tail -n 1 "$OUT/x_test_execute.log")" | tee -a "$OUT/tests.txt"
HELDOUT_ARGS="-D clock_probe=true" NOVEL_ARGS="-D clock_probe=true" STEPS="heldout novel" DEADLINE=200 \
    bash scripts/hw_session.sh device > "$OUT/b.log" 2>&1
echo "device steps exit $? ($((SECONDS - t0)) s)" | tee -a "$OUT/tests.txt"
cd "$OUT" && tar czf tests_logs.tgz x_*.log 2> /dev/null; rm -rf x_*
cat "$OUT/tests.txt"; tail -n 24 "$OUT/table.txt" 2> /dev/null | cut -c1-110
