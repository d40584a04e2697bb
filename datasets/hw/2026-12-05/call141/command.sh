#!/usr/bin/env bash
# Device call 141 (session 49).  On an H100: set c123's points (w33:dual, w34:dual, w34:sparse of LLaDA-8B and Dream-7B)
# under Nsight Compute (--cache-control none), for CRITERION.md (whether the H200's GEMM blocks of the HBM replay carry
# to the H100 profile; committed before the call).  On an H200: call 133's probes instead (call133/command.sh).
# .hwbin: call 137's (scripts/hw_session.sh build at 29c2c2d), xz'd.
# here:  bash scripts/hw_carry.sh out datasets/hw/2026-12-05/call141 datasets/hw/2026-12-05/call133
# there: run(command="bash datasets/hw/2026-12-05/call141/command.sh", carry=[".hwbin"], kind="nvidia-h200", timeout_s=330)
# post:  tar xzf ncu_<m>.tgz; SIM_ARGS="-D gpu=<preset>" bash scripts/ncu_model_bytes.sh ncu_<m> <model> OUT (CRITERION.md)
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    echo "an H200: call 133's probes"
    exec bash datasets/hw/2026-12-05/call133/command.sh
fi
. scripts/device_env.sh || exit 2
bash scripts/ncu_points.sh 300 llada-8b:ncu_llada:w33:dual dream-7b:ncu_dream:w33:dual llada-8b:ncu_llada:w34:dual \
    dream-7b:ncu_dream:w34:dual llada-8b:ncu_llada:w34:sparse dream-7b:ncu_dream:w34:sparse
cd "$OUT" && for d in ncu_llada ncu_dream; do [ -d $d ] && tar czf $d.tgz $d && rm -rf $d; done
[ -d x ] && tar czf logs_x.tgz x && rm -rf x
cat "$OUT/tests.txt"
