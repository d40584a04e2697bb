#!/usr/bin/env bash
# Device call 123 (session 41): the L2's in-place probe, then one fresh Nsight Compute set kept unscored.
# CRITERION.md here, committed before the call.
# 1. cuda/bench/l2drain.cu `rmw` under Nsight Compute (--cache-control none): an 8 MB probe's halves A and B set up
#    (written, written twice, or read and written in place), then a stream of x MB = 16-64 (read, or read and written
#    in place), then each half re-read and the flush; then (since this session, before the call) the dirty bound
#    behind one writer of D MB = 8-64 (kinds bwrite, brmw, bre), each followed by the flush.
# 2. Set c123: hw_validate.lua's w33:dual, w34:dual and w34:sparse of LLaDA-8B and Dream-7B (scripts/ncu_record.sh).
# Back: tests.txt, l2drain.txt (the manifest), l2drain.csv (ncu), l2drain.err, ncu_llada.tgz, ncu_dream.tgz,
#       logs_x.tgz.
# .hwbin: dkv and lib built by scripts/hw_session.sh build, and l2drain (nvcc -O3 -arch=sm_90 cuda/bench/l2drain.cu
#         -lcublas), at this commit's parent, xz'd.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-04/call123/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/l2drain_gemm.py datasets/hw/2026-12-04/call123/l2drain.txt
#        datasets/hw/2026-12-04/call123/l2drain.csv > datasets/hw/2026-12-04/call123/l2drain_rmw_tables.md;
#        name c123 in scripts/ncu_score.sh's REPEATS (not in its default list until a trial's criterion names it)
set -u
. scripts/device_env.sh || exit 2
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
t0=$SECONDS
timeout -k 5 90 "$NCU" $M --log-file "$OUT/l2drain.csv" .hwbin/l2drain rmw > "$OUT/l2drain.txt" 2> "$OUT/l2drain.err"
echo "l2drain rmw exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$OUT/l2drain.txt") launches" | tee -a "$OUT/tests.txt"
tail -3 "$OUT/l2drain.err"
bash scripts/ncu_record.sh "$OUT" $((500 - SECONDS)) llada-8b:ncu_llada:w33:dual dream-7b:ncu_dream:w33:dual \
    llada-8b:ncu_llada:w34:dual dream-7b:ncu_dream:w34:dual llada-8b:ncu_llada:w34:sparse dream-7b:ncu_dream:w34:sparse
echo "ncu_record exit $?" | tee -a "$OUT/tests.txt"
cat "$OUT/tests.txt"
