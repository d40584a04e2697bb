#!/usr/bin/env bash
# writeback.sh - the write-back trials of session 27 (issue 9's HBM writes per class; not shipped,
# docs/COST_MODEL.md "When the L2 writes back (session 27)").  writeback.patch (against commit 9d367d1's
# core/cost/cost_l2.c; the same file since) adds environment switches to the L2 replay:
#   DKV_L2AGE=f  a dirty line is written back (and stays, clean) once more than f x C bytes sit newer than it
#   DKV_L2DF=x   the dirty bound's fraction of the L2 (DKV_COST_L2_DIRTY_FRAC, 1/3 shipped)
#   DKV_KVF=1|2  the attention's streamed KV of earlier steps takes DKV_COST_L2_ONE_READER of its bytes (1: LLaDA-8B,
#                whose heads each have their own K and V; 2: both models)
#   DKV_L2DBG=1  each kernel's replayed read and write bytes to stderr
# drain.patch (applied instead; the same file and cost.h, cost_l2_memo.c/.h): a write-back delay in replay time,
# each kernel timed by a fixed part and the roofline (the preset's flops_bf16 and hbm_bw):
#   DKV_DD=us    dirty bytes written more than this long before a kernel's end are written back during it (unset: off)
#   DKV_DK=1     a line's age counts from the current kernel's start only;  DKV_DP=1  a kernel never drains its own
#   DKV_DT=us    the fixed part of a kernel's time (3);  DKV_DA=x  the attention's efficiency (0.1);  DKV_DS=1  split-K
#                partials spread over the GEMM;  DKV_L2DBG=1  each kernel's time and bytes to stderr
# Scores each VARIANT (default: writeback.patch's eight) with scripts/ncu_score.sh (every Nsight Compute set; ~40 s
# each); a VARIANT is "base" or space-separated NAME=VALUE settings:
#   git worktree add /tmp/wb HEAD && cd /tmp/wb && git apply datasets/hw/2026-12-02/call56/variants/writeback.patch
#   scons -Q -j2 mode=release && bash datasets/hw/2026-12-02/call56/variants/writeback.sh /tmp/wbout
#   (drain.patch: bash .../writeback.sh /tmp/dout "DKV_DD=12 DKV_DK=1 DKV_DP=1" "DKV_DD=10")
set -euo pipefail
O=${1:?usage: writeback.sh OUT_DIR [VARIANT...]}
shift
DKV=${DKV:-build/release/dkv}
[ -e "$O" ] && { echo "writeback.sh: $O exists" >&2; exit 2; }
mkdir -p "$O"
[ $# -gt 0 ] || set -- base DKV_L2AGE=0.5 DKV_L2AGE=0.75 DKV_L2AGE=0.9 DKV_L2DF=0.2 DKV_L2DF=0.1 DKV_KVF=1 DKV_KVF=2
i=0
for v in "$@"; do
    echo "== $v"
    i=$((i + 1))
    if [ "$v" = base ]; then DKV=$DKV bash scripts/ncu_score.sh "$O/$i"; else env $v DKV=$DKV bash scripts/ncu_score.sh "$O/$i"; fi
done
