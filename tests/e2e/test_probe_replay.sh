#!/usr/bin/env bash
# test_probe_replay.sh - datasets/hw/2026-12-04/call123/probe_replay.c (the shipped L2 replay, core/cost/cost_l2.c
# included whole, through the kernels of cuda/bench/l2drain.cu rmw; docs/COST_MODEL.md "The soft edge", session 42)
# still builds against this tree and runs: every kind and size present, and what the replay must give by its own
# rules: a probe read and written in place, or written twice, is a written probe to it (rmwprobe and wwprobe rows
# equal plain's), and one writer of more than the L2's dirty bound leaves exactly the bound dirty (1/3 of the 60 MiB
# L2, DKV_COST_L2_DIRTY_FRAC: 20.972 MB) whatever the kind of write.
set -uo pipefail
: "${ROOT:?}" "${T:?}" "${BUILD:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v gcc > /dev/null || { echo "SKIP: no gcc"; exit 77; }
cd "$ROOT"
san=(); [ "$(basename "$BUILD")" = asan ] && san=(-fsanitize=address,undefined -fno-omit-frame-pointer)   # its libraries'
gcc "${san[@]}" -std=c11 -O1 -Werror=implicit-function-declaration -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Icore -I. \
    -I"$BUILD/gen" datasets/hw/2026-12-04/call123/probe_replay.c -L"$BUILD/lib" -ldkv_cost -ldkv_engine -ldkv_policy \
    -ldkv_mem -ldkv_workload -ldkv_trace -ldkv_model -ldkv_util -lm -o "$T/pr" 2> "$T/cc.txt" ||
    fail "probe_replay.c no longer builds against this tree: $(head -n 20 "$T/cc.txt")"
"$T/pr" 0.725 > "$T/out.md" || fail "probe_replay exited $?"
[ "$(grep -cE '^\| (plain|rmwstream|rmwprobe|rmwboth|wwprobe) \| [0-9]+ \|' "$T/out.md")" = 30 ] &&
    [ "$(grep -cE '^\| (bwrite|brmw|bre) \| [0-9]+ \|' "$T/out.md")" = 21 ] || fail "rows: $(cat "$T/out.md")"
for k in rmwprobe wwprobe; do
    [ "$(grep "^| $k |" "$T/out.md" | cut -d'|' -f3-)" = "$(grep '^| plain |' "$T/out.md" | cut -d'|' -f3-)" ] ||
        fail "$k differs from plain: $(grep -E "^\| ($k|plain) \|" "$T/out.md")"
done
n=$(grep -cE '^\| (bwrite|brmw|bre) \| (40|48|64) \| [0-9.]+ \| 20\.972 \|$' "$T/out.md")
[ "$n" = 9 ] || fail "one writer past the bound leaves 20.972 MB dirty ($n of 9 rows): $(grep -E '^\| b' "$T/out.md")"
# the plain probe goes as the soft edge says: nothing gone at 16 MB of one-reader stream, all 8 MB at 64
grep -qE '^\| plain \| 16 \| [0-9.]+ \| 0\.000 \| 0\.000 \| 0\.000 \|' "$T/out.md" &&
    grep -qE '^\| plain \| 64 \| [0-9.]+ \| 4\.000 \| 4\.000 \| 8\.000 \|' "$T/out.md" || fail "plain: $(grep '^| plain' "$T/out.md")"
echo "probe_replay: ok"
