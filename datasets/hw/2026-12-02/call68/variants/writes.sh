#!/usr/bin/env bash
# writes.sh - a variant of docs/COST_MODEL.md "Large-M GEMM reads, measured" (session 20, not shipped): the
# GEMMs' writes corrected like their reads (the write bytes call 68 measured alone, less what the replay
# counts for that measurement).  writes.patch (against commit abf27f1) adds an optional `write` array to the
# gemm_reads block and X_WRITES=1 to scripts/gemm_reads.py; prints the cell scores of /tmp/score-like runs.
#   git apply datasets/hw/2026-12-02/call68/variants/writes.patch && scons -j2 mode=release
#   bash datasets/hw/2026-12-02/call68/variants/writes.sh /tmp/wv        # ~1 min
#   git checkout core scripts && scons -j2 mode=release
# Measured (session 20): in-sample writes LLaDA-8B 30 -> 28 of 63 (10.1 -> 10.5 %), Dream-7B 15 -> 14 (18.3 ->
# 19.4 %); call 67 held out 5 -> 4 and 2 -> 2 of 14 (reads unchanged): worse on both models.
set -euo pipefail
O=${1:?usage: writes.sh OUT_DIR}
DKV=${DKV:-build/release/dkv}
[ -e "$O" ] && { echo "writes.sh: $O exists" >&2; exit 2; }
mkdir -p "$O/nd"
X_WRITES=1 /usr/bin/python3 scripts/gemm_reads.py datasets/hw/2026-12-02/call68 --profile datasets/profiles/h200-20261202m.lua \
    --name h200-20261202x -o datasets/profiles/h200-20261202x.lua
trap 'rm -f datasets/profiles/h200-20261202x.lua; sed -i "s/profile = \"h200-20261202x\",/profile = \"h200-20261202n\",/" datasets/presets/gpu/h200.lua' EXIT
DKV=$DKV RES="$O/post" bash scripts/hw_session.sh post datasets/hw/2026-12-01/call7 datasets/hw/2026-12-01/call3 \
    datasets/hw/2026-12-01/call9 datasets/hw/2026-12-01/call30 > "$O/post.log" 2>&1
for c in 56 57 59; do tar xzf datasets/hw/2026-12-02/call$c/ncu_dream.tgz -C "$O"; cp "$O"/ncu_dream/* "$O/nd/"; done
mkdir -p "$O/c67"; for m in llada dream; do tar xzf datasets/hw/2026-12-02/call67/ncu_$m.tgz -C "$O/c67"; done
for p in n x; do
    sed -i "s/profile = \"h200-20261202[nx]\",/profile = \"h200-20261202$p\",/" datasets/presets/gpu/h200.lua
    "$DKV" run experiments/hw_validate.lua -D backend=sim -o "$O/$p.h5" > /dev/null
    /usr/bin/python3 scripts/ncu_bytes.py "$O/post/h5/val.h5" "$O/$p.h5" -o "$O/$p.md" > /dev/null
    DKV=$DKV bash scripts/ncu_model_bytes.sh "$O/nd" dream-7b "$O/d_$p" > /dev/null
    DKV=$DKV bash scripts/ncu_model_bytes.sh "$O/c67/ncu_llada" llada-8b "$O/l67_$p" > /dev/null
    DKV=$DKV bash scripts/ncu_model_bytes.sh "$O/c67/ncu_dream" dream-7b "$O/d67_$p" > /dev/null
    for t in "$p.md" "d_$p/ncu_bytes.md" "l67_$p/ncu_bytes.md" "d67_$p/ncu_bytes.md"; do
        printf '%-28s %s\n' "$t" "$(/usr/bin/python3 scripts/ncu_cells.py "$O/$t")"
    done
done
