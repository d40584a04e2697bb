#!/usr/bin/env bash
# l2_variants.sh - the experiment of docs/COST_MODEL.md "What the L2 keeps between kernels": the L2
# replay with the probe's measured constants substituted (not shipped).  Needs a dkv built with
# l2_variants.patch applied (environment variables X_CAP (MB), X_ASSOC (ways), X_DFRAC (dirty share of
# l2_bytes), X_GCAP (MB, the GEMMs' spill / sweep conditions), X_SPLIT (64-row tiles for the split-K
# decision up to 128 rows); none set: the shipped replay):
# The patch is against commit 7654c34's core/cost/cost_l2.c (later commits change that file: check out
# 7654c34 first, `git checkout 7654c34`, to reproduce l2_variants.txt):
#   git apply datasets/hw/2026-12-02/call56/l2_variants.patch && scons -j2 mode=release
#   bash datasets/hw/2026-12-02/call56/l2_variants.sh /tmp/l2v        # ~2 min
#   git apply -R datasets/hw/2026-12-02/call56/l2_variants.patch && scons -j2 mode=release
# Prints per variant the cells within 5 % and the mean |error| (cells over 10 MB, capped at 50 %),
# reads and writes apart, for LLaDA-8B's nine points (calls 3, 9, 30) and Dream-7B's three (call 56).
set -euo pipefail
O=${1:?usage: l2_variants.sh OUT_DIR}
DKV=${DKV:-build/release/dkv}
[ -e "$O" ] && { echo "l2_variants: $O exists" >&2; exit 2; }
mkdir -p "$O"
DKV=$DKV RES="$O/post" bash scripts/hw_session.sh post datasets/hw/2026-12-01/call7 datasets/hw/2026-12-01/call3 \
    datasets/hw/2026-12-01/call9 datasets/hw/2026-12-01/call30 > "$O/post.log" 2>&1
tar xzf datasets/hw/2026-12-02/call56/ncu_dream.tgz -C "$O"
score() {
    /usr/bin/python3 - "$1" <<'PY'
import re, sys
cells, pt = [], None
for l in open(sys.argv[1]):
    m = re.match(r"#+ val:(\S+)", l)
    if m:
        pt = m.group(1)
        continue
    c = [x.strip() for x in l.strip().strip("|").split("|")]
    if pt and l.startswith("| ") and not c[0].startswith("**") and len(c) >= 9 and c[4] in ("PASS", "MISS"):
        cells.append([float(c[i]) for i in (1, 2, 5, 6)])
def stat(i, j):
    e = [min(0.5, abs(x[i] - x[j]) / x[j]) for x in cells if x[j] > 0.01]
    n = sum(1 for x in cells if (x[j] > 0 and abs(x[i] - x[j]) / x[j] <= 0.05) or (x[j] == 0 and x[i] == 0))
    return "%2d / %d within 5 %%, mean %4.1f %%" % (n, len(cells), 100 * sum(e) / len(e))
print("reads %s | writes %s" % (stat(0, 1), stat(2, 3)))
PY
}
variant() {
    local tag=$1; shift
    env "$@" "$DKV" run experiments/hw_validate.lua -D backend=sim -o "$O/$tag.h5" > /dev/null
    /usr/bin/python3 scripts/ncu_bytes.py "$O/post/h5/val.h5" "$O/$tag.h5" -o "$O/$tag.md" > /dev/null
    env "$@" DKV=$DKV bash scripts/ncu_model_bytes.sh "$O/ncu_dream" dream-7b "$O/d_$tag" > /dev/null
    printf '%-44s LLaDA %s\n%-44s Dream %s\n' "$tag: $*" "$(score "$O/$tag.md")" "" "$(score "$O/d_$tag/ncu_bytes.md")"
}
variant shipped X_NONE=1
variant measured X_CAP=37 X_ASSOC=64 X_DFRAC=0.47 X_GCAP=31.5
variant measured_residency X_CAP=37 X_ASSOC=64 X_GCAP=31.5
variant measured_dirty_bound X_DFRAC=0.47
variant measured_everywhere X_CAP=37 X_ASSOC=64 X_DFRAC=0.47
variant lru_37 X_CAP=37
variant split_64_rows X_SPLIT=1
