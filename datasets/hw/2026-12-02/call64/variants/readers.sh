#!/usr/bin/env bash
# readers.sh - a diagnostic of docs/COMPARE.md "The next hardware session" (session 19, not shipped): the L2
# replay's weight footprint by the CTAs that read each weight line, with the tiles cuBLASLt reports (device
# call 64), instead of the one-reader rule on the rule's tiles.  readers.patch (against commit 7ac2fd2's
# core/cost/cost_l2.c) reads a table "N K M tile_w tile_t splits" from $X_GCFG; X_FOOT_ALL=1: footprint
# 30 / C(readers), C = 41.4 MB (1 reader), 37.0 (2), 33.5 (3: interpolated, not measured), 30 (4 or more);
# without it: the one-reader rule (0.725 at 1 reader) on the measured tiles.
#   git apply datasets/hw/2026-12-02/call64/variants/readers.patch && scons -j2 mode=release cuda=no
#   bash datasets/hw/2026-12-02/call64/variants/readers.sh /tmp/rv     # ~1 min
#   git checkout core/cost/cost_l2.c && scons -j2 mode=release cuda=no
set -euo pipefail
O=${1:?usage: readers.sh OUT_DIR}
DKV=${DKV:-build/release/dkv}
[ -e "$O" ] && { echo "readers.sh: $O exists" >&2; exit 2; }
mkdir -p "$O/nd"
gzip -dc datasets/hw/2026-12-02/call64/gemm_algo.csv.gz > "$O/g.csv"
/usr/bin/python3 scripts/gemm_algo.py datasets/hw/2026-12-02/call64/gemm_algo.txt "$O/g.csv" | /usr/bin/python3 -c '
import sys
for l in sys.stdin:
    c = [x.strip() for x in l.split("|")]
    if len(c) > 15 and c[3].isdigit():
        w, t = c[10].split("x")
        print(c[4], c[5], c[3], w, t, c[14])' > "$O/gcfg.txt"
DKV=$DKV RES="$O/post" bash scripts/hw_session.sh post datasets/hw/2026-12-01/call7 datasets/hw/2026-12-01/call3 \
    datasets/hw/2026-12-01/call9 datasets/hw/2026-12-01/call30 > "$O/post.log" 2>&1
for c in 56 57 59; do tar xzf datasets/hw/2026-12-02/call$c/ncu_dream.tgz -C "$O"; cp "$O"/ncu_dream/* "$O/nd/"; done
variant() {
    local tag=$1; shift
    env "$@" "$DKV" run experiments/hw_validate.lua -D backend=sim -o "$O/$tag.h5" > /dev/null
    /usr/bin/python3 scripts/ncu_bytes.py "$O/post/h5/val.h5" "$O/$tag.h5" -o "$O/$tag.md" > /dev/null
    env "$@" DKV=$DKV bash scripts/ncu_model_bytes.sh "$O/nd" dream-7b "$O/d_$tag" > /dev/null
    printf '%-24s LLaDA %s\n%-24s Dream %s\n' "$tag" "$(/usr/bin/python3 scripts/ncu_cells.py "$O/$tag.md")" "" \
        "$(/usr/bin/python3 scripts/ncu_cells.py "$O/d_$tag/ncu_bytes.md")"
}
variant shipped X_NONE=1
variant one_reader_measured X_GCFG="$O/gcfg.txt"
variant readers_all X_GCFG="$O/gcfg.txt" X_FOOT_ALL=1
