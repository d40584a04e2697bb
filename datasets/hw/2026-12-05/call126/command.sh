#!/usr/bin/env bash
# Device call 126 (session 43): finishes call 125's regression check of the CUDA backend after session 42's changes
# to cuda/backend.c.  Call 125 stopped tests/gpu/test_backend_score by the command's own 150 s limit after six of its
# seven modes had passed (fp8 not run).  Here every mode runs as its own process, in parallel (as scripts/gpu_run.sh
# device-score does), each under 300 s.  Question: does every mode exit 0 on the H200?  A SKIP (77) is a failed call.
# .hwbin: call 125's binaries (hw_session.sh build's static dkv and lib, the test programs of build/release/tests/gpu,
# sm_90, xz'd), built at 8bfdfdf; the tree has changed since only in core/lua/l_execute.c (dkv.execute's data path),
# which test_backend_score does not call.
# there: run(command="bash datasets/hw/2026-12-05/call126/command.sh", carry=[".hwbin"], timeout_s=420)
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:$PWD/.hwbin/lib:${LD_LIBRARY_PATH:-}"
(cd .hwbin && xz -d test_backend_score.xz lib/*.xz && chmod +x test_backend_score)
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader | tee "$OUT/device.txt"
for c in none prefix dual sparse-head sparse-shared lowrank fp8; do
    ( t0=$SECONDS; timeout 300 .hwbin/test_backend_score "$c" > "$OUT/score_$c.log" 2>&1; r=$?
      echo "test_backend_score $c exit $r ($((SECONDS - t0)) s)" >> "$OUT/score_$c.log" ) &
done
wait
rc=0
for c in none prefix dual sparse-head sparse-shared lowrank fp8; do
    tail -n 1 "$OUT/score_$c.log"
    grep -E "^(PASS|FAIL|SKIP)" "$OUT/score_$c.log" | sed 's/^/    /'
    tail -n 1 "$OUT/score_$c.log" | grep -q "exit 0 " || rc=1
done
(cd "$OUT" && tar czf score_logs.tgz score_*.log && rm -f score_*.log)
exit $rc
