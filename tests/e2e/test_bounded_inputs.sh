#!/usr/bin/env bash
# test_bounded_inputs.sh - limits that must hold outside the Lua VM too (issue 12, defects 13 and 15):
# a C loop over a length the script chose, a workload file without an end, a huge __tostring, and
# numbers that do not fit where they go (inf, -1, 2^64) are errors that name the place.
set -uo pipefail
: "${DKV:?}" "${T:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }

# defect 13: dkv.shard.select trusted __len = 2^62 and looped in C, past --instr-limit and SIGINT
cat >"$T/sel.lua" <<'LUA'
local dkv = require "dkv"
local t = setmetatable({}, {__len = function() return 1 << 62 end})
local r = dkv.shard.select(t)
print(#r)
LUA
out=$(timeout 60 "$DKV" run "$T/sel.lua" --instr-limit 20000000 2>&1); rc=$?
[ $rc = 1 ] || fail "shard.select over __len 2^62: exit $rc (124 = not stopped): $out"
grep -qE 'sel\.lua:3: instruction limit of 20000000 reached' <<<"$out" || fail "message: $out"
"$DKV" run "$T/sel.lua" --instr-limit 0 >"$T/sel.out" 2>&1 &
pid=$!
sleep 1
kill -INT $pid
for _ in $(seq 1 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then kill -KILL $pid; fail "shard.select did not stop within 10 s of SIGINT"; fi
wait $pid; rc=$?
[ $rc = 1 ] || fail "shard.select interrupted: exit $rc: $(cat "$T/sel.out")"
grep -qE 'sel\.lua:3: interrupted \(SIGINT\)' "$T/sel.out" || fail "SIGINT message: $(cat "$T/sel.out")"
# ... and still selects what it should, with shards
printf 'local dkv = require "dkv"\nlocal r = dkv.shard.select({1,2,3,4,5,6,7})\nprint(table.concat(r, ","))\n' >"$T/sel2.lua"
out=$("$DKV" run "$T/sel2.lua" --shard 1/3 2>&1) || fail "select: $out"
[ "$out" = "2,5" ] || fail "shard 1/3 of 1..7: '$out'"
out=$("$DKV" run "$T/sel2.lua" 2>&1) || fail "select: $out"
[ "$out" = "1,2,3,4,5,6,7" ] || fail "no shard: '$out'"
echo "bounded inputs ok"
