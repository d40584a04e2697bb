#!/usr/bin/env bash
# Device call 144 (session 50), on an H100 (kind nvidia-h100-x1): the three fit-set studies of the H200 (hw_retention,
# hw_offload, hw_layout) and the nine validation points on a second GPU, sized and simulated by the h100 preset, for
# CRITERION.md (committed before the call).  On the H200 these runs were the calibration's fit set; on the H100 no
# constant was fitted to them (the h100 preset is one `dkv profile` run plus the H200's clock and GEMM blocks).
# .hwbin: 29c2c2d's, xz'd (hw_session.sh device unpacks it); STUDY_ARGS needs this commit's hw_session.sh (in the tree).
# here:  bash scripts/hw_carry.sh out datasets/hw/2026-12-05/call144
# there: run(command="bash datasets/hw/2026-12-05/call144/command.sh", carry=[".hwbin"], kind="nvidia-h100-x1",
#            timeout_s=400)
# Not run in session 50: its one try (20:35 UTC) was answered "no new device machine is lent at present".
# post:  GPU_BASE=h100 DKV=$PWD/build/release/dkv RES=/tmp/r144 bash scripts/hw_session.sh post <files_at copy>
set -u
STEPS="check validate experiments" STUDIES="retention offload layout" DEADLINE=330 \
    VALIDATE_ARGS="-D gpu=h100" STUDY_ARGS="-D gpu=h100" bash scripts/hw_session.sh device
