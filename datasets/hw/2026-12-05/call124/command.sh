#!/usr/bin/env bash
# Device call 124 (session 42): the four GPU test programs whose checks session 42 made strict (commit 2297c48:
# test_kernels_attn's kv_pack V, test_backend_lossy's offload and rank-16 error, test_backend's offload fetch and
# clock skips, test_backend_fp8's measured least free; cuda/backend.c's checked cudaMemGetInfo), compiled here and
# never run before this call.  Question: does each pass (exit 0) on the H200?  A failure is a defect of the new check
# or of the code it checks; a SKIP (77) on the device is a failed call.
# .hwbin: the four programs from build/release/tests/gpu at 05e1f5a's tree (sm_90), xz'd.
# there: run(command="bash datasets/hw/2026-12-05/call124/command.sh", carry=[".hwbin"], timeout_s=300)
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
cd .hwbin && xz -d ./*.xz && chmod +x ./* && cd ..
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader | tee "$OUT/device.txt"
rc=0
for t in test_kernels_attn test_backend test_backend_lossy test_backend_fp8; do
    t0=$SECONDS; timeout 120 ".hwbin/$t" > "$OUT/$t.log" 2>&1; r=$?
    echo "$t exit $r ($((SECONDS - t0)) s): $(grep -E '^(PASS|FAIL|SKIP)' "$OUT/$t.log" | tail -n 1)" | tee -a "$OUT/tests.txt"
    grep -E "^(FAIL|skip:)|FAIL " "$OUT/$t.log" | head -n 8
    [ "$r" = 0 ] || rc=1
done
exit $rc
