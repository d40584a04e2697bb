#!/usr/bin/env bash
# Device call 142 (session 50).  On an H100 (what the nvidia-h200 kind has lent since session 47):
#  1. issue 11's multi-instance study on a second GPU (k = 1, 2, 4, 8 instances in one process at b1, b8 and arrive,
#     shared and partitioned; k = 1, 2, 4 separate processes; b1:8 left out: 8 weight copies do not fit 80 GB), sized
#     by the h100 preset, judged after the call against the simulator re-simulated on the shipped h100 preset
#     (CRITERION.md, committed before the call);
#  2. a fresh Nsight Compute set on the H100 (--cache-control none): hw_validate.lua's new w37:dual, w38:dual and
#     w38:sparse of LLaDA-8B and Dream-7B (set h142), kept unscored: it judges the next HBM write trial on the H100 and
#     is scored under no replay before a trial's criterion names it.
# On an H200: call 133's probes (call133/command.sh, rules in call133/CRITERION_h200.md) and the same six points under
# Nsight Compute (then set c142, a fresh H200 reserve, under the same rule); no multi-instance study (the H200's is
# call 10's).
# .hwbin: scripts/hw_session.sh build at 29c2c2d (call 137's), xz'd; the experiments travel with the tree.
# here:  bash scripts/hw_carry.sh out datasets/hw/2026-12-05/call142 datasets/hw/2026-12-05/call133
# there: run(command="bash datasets/hw/2026-12-05/call142/command.sh", carry=[".hwbin"], kind="nvidia-h200",
#            timeout_s=570)
# back:  tests.txt; multi.tgz (hw_session.sh device's files; H100) or ncu.tgz (call 133's; H200); ncu_llada.tgz,
#        ncu_dream.tgz, logs_x.tgz (the six points).
# post:  multi (repacked after the call into h100/m/: RESULT.md): GPU_BASE=h100 DKV=$PWD/build/release/dkv RES=/tmp/m142
#        bash scripts/hw_session.sh post datasets/hw/2026-12-05/call142/h100/m  (multi.md).  ncu: as call 141's (scripts/ncu_score.sh's set h142, once a criterion names it).
set -u
. scripts/device_env.sh || exit 2
t0=$SECONDS
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    echo "an H200: call 133's probes first" | tee -a "$OUT/tests.txt"
    bash datasets/hw/2026-12-05/call133/command.sh
else
    mkdir -p "$OUT/m"
    OUT="$OUT/m" STEPS="check multi" DEADLINE=250 MULTI_ARGS="-D gpu=h100" \
        MULTI_PROCS="b1:1 b1:2 b1:4 b8:1 b8:2 b8:4 arrive:1 arrive:2 arrive:4" bash scripts/hw_session.sh device
    echo "multi: $((SECONDS - t0)) s" | tee -a "$OUT/tests.txt"
    tar czf "$OUT/multi.tgz" -C "$OUT" m && rm -rf "$OUT/m"
fi
left=$((545 - (SECONDS - t0)))
bash scripts/ncu_points.sh "$left" llada-8b:ncu_llada:w37:dual dream-7b:ncu_dream:w37:dual \
    llada-8b:ncu_llada:w38:dual dream-7b:ncu_dream:w38:dual llada-8b:ncu_llada:w38:sparse dream-7b:ncu_dream:w38:sparse
cd "$OUT" && for d in ncu_llada ncu_dream; do [ -d $d ] && tar czf $d.tgz $d && rm -rf $d; done
[ -d x ] && tar czf logs_x.tgz x && rm -rf x
cat "$OUT/tests.txt"
