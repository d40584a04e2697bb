#!/usr/bin/env bash
# Device call 140 (session 49): the held-out and nv:* points on a fourth H100 (the machine a try for an H200 lent,
# still warm), for the shipped h100 preset (h100-80gb-hbm3-20261205c, fixed at 4a9b179 before this call): a run set
# none of its choices saw.  Targets: issue 9's, as call 137 states them.
# here:  bash scripts/hw_carry.sh out datasets/hw/2026-12-05/call140 (written while call 133's carry was out)
# there: run(command="bash datasets/hw/2026-12-05/call140/command.sh", carry=[".hwbin"], timeout_s=240)
# post:  GPU_BASE=h100 DKV=$PWD/build/release/dkv RES=/tmp/s140 bash scripts/hw_session.sh post <files_at copy>
set -u
. scripts/device_env.sh || exit 2    # unpacks .hwbin/*.xz; tests.txt: the GPU and its serial
STEPS="check heldout novel" DEADLINE=220 HELDOUT_LIMIT=120 NOVEL_LIMIT=60 \
    HELDOUT_ARGS="-D gpu=h100" NOVEL_ARGS="-D gpu=h100" bash scripts/hw_session.sh device
