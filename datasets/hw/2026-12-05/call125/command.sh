#!/usr/bin/env bash
# Device call 125 (session 42): a regression check of the CUDA backend after session 42's changes to it (cuda/backend.c:
# cudaMemGetInfo checked at begin and per step, begin's failures through its STEP teardown), beside call 124's four
# programs: the other GPU test programs and dkv.execute through Lua (tests/lua/test_execute.lua), each alone, in
# turn.  Question: does each exit 0 on the H200?  A SKIP (77) on the device is a failed call.
# .hwbin: hw_session.sh build's static dkv and lib, and the test programs of build/release/tests/gpu, at 8bfdfdf's
# tree (sm_90), xz'd.
# there: run(command="bash datasets/hw/2026-12-05/call125/command.sh", carry=[".hwbin"], timeout_s=480)
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:$PWD/.hwbin/lib:${LD_LIBRARY_PATH:-}"
(cd .hwbin && xz -d ./*.xz lib/*.xz && chmod +x dkv test_*)
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader | tee "$OUT/device.txt"
rc=0
for t in test_backend_run test_backend_lowrank test_backend_score test_backend_tiny test_multi_instances test_forward \
         test_kernels test_profile; do
    t0=$SECONDS; timeout 150 ".hwbin/$t" > "$OUT/$t.log" 2>&1; r=$?
    echo "$t exit $r ($((SECONDS - t0)) s): $(grep -E '^(ALL PASS|PASS|FAIL|SKIP)' "$OUT/$t.log" | tail -n 1)" | tee -a "$OUT/tests.txt"
    grep -E "^(FAIL|skip:)|FAIL " "$OUT/$t.log" | head -n 8
    [ "$r" = 0 ] || rc=1
done
t0=$SECONDS; timeout 150 .hwbin/dkv run tests/lua/test_execute.lua -o "$OUT/execute.h5" > "$OUT/test_execute.log" 2>&1; r=$?
echo "test_execute.lua exit $r ($((SECONDS - t0)) s): $(grep -E '^GPU:' "$OUT/test_execute.log" | tail -n 1)" | tee -a "$OUT/tests.txt"
[ "$r" = 0 ] || { rc=1; tail -n 5 "$OUT/test_execute.log"; }
exit $rc
