#!/usr/bin/env bash
# Device call 138 (session 49): call 137's held-out and nv:* points again, on another H100 when the pool lends one:
# call 137's profile (another machine's, or the same machine's later) predicting this run set, as docs/COMPARE.md
# section 6 asks ("re-run the points on at least one other machine").  The targets are call 137's (issue 9's),
# stated in call137/command.sh before any H100 row.
# .hwbin: call 137's (scripts/hw_session.sh build at 5385a04's parent), xz'd.
# here:  bash scripts/hw_carry.sh out datasets/hw/2026-12-05/call138
# there: run(command="bash datasets/hw/2026-12-05/call138/command.sh", carry=[".hwbin"], kind="nvidia-h100-x1",
#            timeout_s=240)
# post:  GPU_BASE=h100 PROFILE=datasets/hw/2026-12-05/call137/h100/profile.lua DKV=$PWD/build/release/dkv
#        RES=/tmp/s138 bash scripts/hw_session.sh post <files_at copy>
set -u
. scripts/device_env.sh || exit 2    # unpacks .hwbin/*.xz; tests.txt: the GPU and its serial
STEPS="check heldout novel" DEADLINE=220 HELDOUT_LIMIT=120 NOVEL_LIMIT=60 \
    HELDOUT_ARGS="-D gpu=h100" NOVEL_ARGS="-D gpu=h100" bash scripts/hw_session.sh device
