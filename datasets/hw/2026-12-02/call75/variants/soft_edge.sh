#!/usr/bin/env bash
# soft_edge.sh - session 22's soft LRU edge for the L2 replay's writes (docs/COST_MODEL.md "A soft LRU edge for the
# writes"; tried offline, not shipped): applies soft_edge.patch (against commit 8d651be's core/cost/cost_l2.c) to a
# copy of the tree, builds it and scores every recorded Nsight Compute set at W = 0, 1, 3, 4, 6, 8 MB
# (DKV_SOFT=W; W = 0 is the shipped replay).  About 6 minutes on 2 cores.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../../../.." && pwd)
W=$(mktemp -d)
git -C "$ROOT" worktree add -q --detach "$W/t" HEAD
trap 'git -C "$ROOT" worktree remove --force "$W/t"' EXIT
cd "$W/t" && patch -p1 -s < "$ROOT/datasets/hw/2026-12-02/call75/variants/soft_edge.patch"
scons -j2 mode=release build/release/dkv > "$W/build.log" 2>&1
for w in 0 1 3 4 6 8; do
    echo "== W = $w MB"
    DKV_SOFT=$w DKV=build/release/dkv bash scripts/ncu_score.sh "$W/s$w"
done
