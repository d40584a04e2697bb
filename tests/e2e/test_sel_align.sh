#!/usr/bin/env bash
# test_sel_align.sh - scripts/sel_align_check.py (the selection at unaligned key counts, issue 9 session
# 13) on a STAND-IN profile: the shipped profile's kv_gather rows plus hand-made rows at anchor + 1, 2,
# 4, 8, 16 (odd counts 17 % slower).  The re-simulation under the merged profile must carry that factor
# through dkv_profile_select into hw_select_keys's kv_gather per selection (833 keys 17 % over 832,
# 840 keys not), and a profile without unaligned rows is refused by name.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"
PY=/usr/bin/python3

$PY scripts/sel_align_check.py --standin "$T/standin_sel.lua" > /dev/null
grep -q "measured = false" "$T/standin_sel.lua" || fail "the stand-in does not say measured = false"
$PY scripts/sel_align_check.py "$T/standin_sel.lua" --dkv "$DKV" -o "$T/chk" > "$T/chk.txt" ||
    fail "sel_align_check.py failed on the stand-in: $(cat "$T/chk.txt")"
grep -q "^STAND-IN DATA" "$T/chk.txt" || fail "no STAND-IN banner"
grep -q "keys   768: +1 1.170  +2 1.150  +4 1.050" "$T/chk.txt" || fail "the isolated ratios are not the stand-in's"
for m in llada-8b dream-7b; do
    # exc_sim (the last number) at 833 keys: the stand-in's 1.17 through the simulator; at 840 none
    x=$(awk -v p="$m:833" '$1 == p {v = $NF; if (v == "*") v = $(NF-1); sub("%", "", v); print v}' "$T/chk.txt")
    y=$(awk -v p="$m:840" '$1 == p {v = $NF; if (v == "*") v = $(NF-1); sub("%", "", v); print v}' "$T/chk.txt")
    awk -v x="$x" -v y="$y" 'BEGIN {exit !(x > 16 && x < 18 && y > -0.5 && y < 0.5)}' ||
        fail "$m: simulated excess at 833 / 840 keys $x / $y %, want 17 / 0 (the stand-in's factors)"
done
grep -q "^criterion: .*: \(PASS\|FAIL\)$" "$T/chk.txt" || fail "no verdict line"
# a profile without unaligned rows (the shipped one) is refused, saying why
if $PY scripts/sel_align_check.py datasets/profiles/h200-20261201g.lua --dkv "$DKV" -o "$T/chk2" 2> "$T/err.txt" > /dev/null; then
    fail "a profile without unaligned rows was accepted"
fi
grep -q "no unaligned rows beside an aligned partner" "$T/err.txt" || fail "unclear refusal: $(cat "$T/err.txt")"
echo "test_sel_align: ok"
