#!/usr/bin/env bash
# Device call 143 (session 50), written down after the call: its command was given inline, on the H200 that call
# 133's guarded try found warm (the first H200 lent since session 48), within the 30 s before the machine went back.
# It is call 142's Nsight Compute part unchanged (call142/command.sh, committed before call 142), so the same six
# points (w37:dual, w38:dual, w38:sparse of LLaDA-8B and Dream-7B) are set c143 on an H200: a fresh reserve, under
# call142/CRITERION.md's rule (scored under no replay before a trial's criterion names it).
# .hwbin: 29c2c2d's, xz'd; datasets/hw carried out (call 133's command.sh alone in the tree).
. scripts/device_env.sh || exit 2
bash scripts/ncu_points.sh 330 llada-8b:ncu_llada:w37:dual dream-7b:ncu_dream:w37:dual llada-8b:ncu_llada:w38:dual \
    dream-7b:ncu_dream:w38:dual llada-8b:ncu_llada:w38:sparse dream-7b:ncu_dream:w38:sparse
cd "$OUT" && for d in ncu_llada ncu_dream; do [ -d $d ] && tar czf $d.tgz $d && rm -rf $d; done
[ -d x ] && tar czf logs_x.tgz x && rm -rf x
cat "$OUT/tests.txt"
