#!/usr/bin/env bash
# Device call 137 (session 49): the simulator on a second GPU, an H100 SXM5 (the kind the device pool lends since
# session 47), profiled once and validated on the held-out and nv:* points, as issue 9 asks of the H200: one
# `dkv profile` (the default grid, LLaDA-8B's exact shapes; Dream-7B's GEMMs from the generic grid), then the 11
# held-out and 5 nv:* points through dkv.execute in the same call (hw_session.sh's steps; their simulated half on the
# roofline-only h100 preset, datasets/presets/gpu/h100.lua).  bwcurve measures the H100's read rate by run length.
# Nothing here is fitted to the H100 beyond what `dkv profile` measures: the clock model, the GEMM staircase and the
# HBM replay's GEMM constants of the h200 preset's profile are the H200's and are not in this profile.
# Judged here (post, scripts/hw_session.sh with GPU_BASE=h100) by issue 9's targets, stated before any H100 row:
# step latency mean |error| <= 5 %, request latency p50 and p99 <= 8 %, tokens/s <= 5 %, peak device memory <= 2 %,
# every point reported; once under the h100 roofline preset (what a GPU without a profile gets) and once under the
# preset naming this call's profile (what one `dkv profile` run buys).  No simulator change follows from these rows.
# .hwbin: scripts/hw_session.sh build at this commit, xz'd (the 64 MiB carry).
# here:  bash scripts/hw_carry.sh out datasets/hw/2026-12-05/call137
# there: run(command="bash datasets/hw/2026-12-05/call137/command.sh", carry=[".hwbin"], kind="nvidia-h100-x1",
#            timeout_s=600)
# post:  GPU_BASE=h100 DKV=$PWD/build/release/dkv RES=/tmp/s137 bash scripts/hw_session.sh post <files_at copy>
set -u
. scripts/device_env.sh || exit 2    # unpacks .hwbin/*.xz (hw_session.sh device does not); tests.txt: the GPU
nvidia-smi --query-gpu=name,serial,memory.total --format=csv,noheader
STEPS="check bwcurve profile heldout novel" DEADLINE=575 PROFILE_LIMIT=410 HELDOUT_LIMIT=110 NOVEL_LIMIT=60 \
    HELDOUT_ARGS="-D gpu=h100" NOVEL_ARGS="-D gpu=h100" bash scripts/hw_session.sh device
