#!/usr/bin/env bash
# wb.sh - a variant of docs/COST_MODEL.md "The attention's walk across heads" (session 21, not shipped): the
# dirty share of the attention's inputs that the walk replaces before their turn goes to HBM during the
# attention.  wb.patch (against commit b90c062) adds it to core/cost/cost_l2.c walk_heads behind DKV_WB=1 (the
# write-backs added) and DKV_WB_CLEAN=1 (and the same bytes made clean in the L2, so no byte is written twice).
#   git apply datasets/hw/2026-12-02/call73/variants/wb.patch && scons -j2 mode=release build/release/dkv
#   bash datasets/hw/2026-12-02/call73/variants/wb.sh /tmp/wbv        # ~2 min
#   git checkout core && scons -j2 mode=release build/release/dkv
# Measured (session 21), writes within 5 % (mean |error|), shipped -> DKV_WB=1 -> DKV_WB=1 DKV_WB_CLEAN=1:
#   LLaDA-8B nine points 29 (9.4 %) -> 30 (8.9 %) -> 29 (9.3 %); Dream-7B 15 (18.3 %) -> 15 (18.3 %) -> 15 (18.3 %)
#   call 70: LLaDA 9 -> 10 -> 10, Dream 4 (11.3 %) -> 4 (12.0 %) -> 4 (12.5 %)
#   call 73: LLaDA 13 (6.6 %) -> 15 (5.9 %) -> 15 (5.8 %), Dream 12 (11.8 %) -> 12 (11.9 %) -> 11 (12.4 %)
# Reads unchanged.  The first writes some bytes twice; the consistent second helps LLaDA and hurts Dream.
set -euo pipefail
O=${1:?usage: wb.sh OUT_DIR}
[ -e "$O" ] && { echo "wb.sh: $O exists" >&2; exit 2; }
mkdir -p "$O"
bash scripts/ncu_score.sh "$O/shipped"
DKV_WB=1 bash scripts/ncu_score.sh "$O/wb"
DKV_WB=1 DKV_WB_CLEAN=1 bash scripts/ncu_score.sh "$O/wb_clean"
