#!/usr/bin/env bash
# test_cli_limits.sh - the sandbox stops an infinite loop (instruction limit, also through pcall)
# and a runaway allocation (memory cap), quickly and with the script's file:line.
set -uo pipefail
: "${DKV:?}" "${T:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }

printf 'local i = 0\nwhile true do\n  i = i + 1\nend\n' >"$T/loop.lua"
out=$(timeout 30 "$DKV" run "$T/loop.lua" --instr-limit 20000000 2>&1); rc=$?
[ $rc = 1 ] || fail "infinite loop: exit $rc (124 = not stopped): $out"
grep -qE 'loop\.lua:[2-4]: instruction limit of 20000000 reached' <<<"$out" || fail "message: $out"

printf 'while true do pcall(function() while true do end end) end\n' >"$T/pcall.lua"
out=$(timeout 30 "$DKV" run "$T/pcall.lua" --instr-limit 5000000 2>&1); rc=$?
[ $rc = 1 ] || fail "pcall must not swallow the limit: exit $rc: $out"
grep -q 'instruction limit' <<<"$out" || fail "message: $out"

printf 'local t = {}\nfor i = 1, 1e9 do\n  t[i] = string.rep("x", 100) .. i\nend\n' >"$T/mem.lua"
out=$(timeout 60 "$DKV" run "$T/mem.lua" --mem-limit 64M 2>&1); rc=$?
[ $rc = 1 ] || fail "runaway allocation: exit $rc: $out"
grep -qE 'mem\.lua:[0-9]+: memory limit of 64 MiB reached' <<<"$out" || fail "message: $out"

printf 'local s = "x"\nwhile true do s = s .. s end\n' >"$T/mem2.lua"
out=$(timeout 60 "$DKV" run "$T/mem2.lua" --mem-limit 32M 2>&1); rc=$?
[ $rc = 1 ] || fail "doubling string: exit $rc: $out"
grep -q 'memory limit of 32 MiB reached' <<<"$out" || fail "message: $out"

# 0 disables a limit; a small script under generous limits runs
printf 'local s = 0\nfor i = 1, 1e5 do s = s + i end\nprint(s)\n' >"$T/ok.lua"
out=$("$DKV" run "$T/ok.lua" --instr-limit 0 --mem-limit 0 2>&1) || fail "unlimited: $out"
[ "$out" = 5000050000 ] || fail "sum: $out"
echo "limits ok"
