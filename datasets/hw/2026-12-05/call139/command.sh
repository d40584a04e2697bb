#!/usr/bin/env bash
# Device call 139 (session 49).  On an H100: call 137's held-out and nv:* points, a fresh run set for CRITERION.md
# (whether the H200's clock block carries to the H100 profile; committed before the call).  On an H200 (the kind
# asked is nvidia-h200, which lends H100s mostly): call 133's probes instead (call133/command.sh as committed, its
# criterion call133/CRITERION_h200.md), since an H200 has been asked for since session 47.
# .hwbin: call 137's (scripts/hw_session.sh build at 29c2c2d), xz'd.
# here:  bash scripts/hw_carry.sh out datasets/hw/2026-12-05/call139 datasets/hw/2026-12-05/call133
# there: run(command="bash datasets/hw/2026-12-05/call139/command.sh", carry=[".hwbin"], kind="nvidia-h200",
#            timeout_s=480)
# post:  GPU_BASE=h100-roofline PROFILE=<plain or grafted> DKV=$PWD/build/release/dkv RES=/tmp/s139 \
#        bash scripts/hw_session.sh post <files_at copy>
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
    echo "an H200: call 133's probes"
    exec bash datasets/hw/2026-12-05/call133/command.sh
fi
. scripts/device_env.sh || exit 2    # unpacks .hwbin/*.xz; tests.txt: the GPU and its serial
STEPS="check heldout novel" DEADLINE=220 HELDOUT_LIMIT=120 NOVEL_LIMIT=60 \
    HELDOUT_ARGS="-D gpu=h100" NOVEL_ARGS="-D gpu=h100" bash scripts/hw_session.sh device
