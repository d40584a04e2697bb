#!/usr/bin/env bash
# test_cli_limits.sh - the sandbox stops an infinite loop (Lua run time limit by default,
# instruction limit, also through pcall) and a runaway allocation (memory cap), quickly and with
# the script's file:line; time inside dkv.simulate does not count against the time limit.
set -uo pipefail
: "${DKV:?}" "${T:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }

printf 'local i = 0\nwhile true do\n  i = i + 1\nend\n' >"$T/loop.lua"
out=$(timeout 30 "$DKV" run "$T/loop.lua" --instr-limit 20000000 2>&1); rc=$?
[ $rc = 1 ] || fail "infinite loop: exit $rc (124 = not stopped): $out"
grep -qE 'loop\.lua:[2-4]: instruction limit of 20000000 reached' <<<"$out" || fail "message: $out"

printf 'while true do pcall(function() while true do end end) end\n' >"$T/pcall.lua"   # also below
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
grep -qE 'mem2\.lua:2: memory limit of 32 MiB reached' <<<"$out" || fail "message names file:line: $out"

# defaults: a pure-Lua infinite loop is stopped by the 10 s Lua run time limit
# The limit counts the Lua thread's CPU time, so the check is on the process's CPU time (user +
# sys), not on the wall clock: on a loaded machine 10 s of CPU can take a minute of wall time.
TIMEFORMAT='%U %S'
cpu=$( { time timeout 600 "$DKV" run "$T/loop.lua" >"$T/loop.out" 2>&1; echo "rc=$?" >"$T/loop.rc"; } 2>&1 )
out=$(cat "$T/loop.out"); rc=$(sed 's/rc=//' "$T/loop.rc")
cpu_ms=$(awk '{printf "%d", ($1 + $2) * 1000}' <<<"$cpu")
echo "infinite loop under the default limits: stopped after ${cpu_ms} ms of CPU time (exit $rc)"
[ $rc = 1 ] || fail "default limits: exit $rc (124 = not stopped): $out"
grep -qE 'loop\.lua:[2-4]: time limit of 10\.0 s of Lua CPU time reached \(raise it with --time-limit' <<<"$out" || fail "message: $out"
# 10 s of Lua CPU time plus start-up; 20 s only guards against counting something else
[ "$cpu_ms" -ge 9000 ] && [ "$cpu_ms" -lt 20000 ] || fail "used ${cpu_ms} ms of CPU time"
out=$(timeout 60 "$DKV" run "$T/pcall.lua" --time-limit 1 --instr-limit 0 2>&1); rc=$?
[ $rc = 1 ] && grep -q 'time limit of 1.0 s' <<<"$out" || fail "pcall must not swallow the time limit: $rc: $out"
# a runaway table (no single huge allocation) under a memory cap: stopped with file:line (64 MiB: about 1.3 s of CPU
# to fill; 256 MiB, as before, took 5-6 s for the same check)
printf 'local t, i = {}, 0\nwhile true do\n  i = i + 1\n  t[i] = {i, "x" .. i}\nend\n' >"$T/grow.lua"
out=$(timeout 120 "$DKV" run "$T/grow.lua" --mem-limit 64M 2>&1); rc=$?
[ $rc = 1 ] || fail "growing table: exit $rc: $out"
grep -qE 'grow\.lua:[2-4]: (memory limit of 64 MiB|time limit of 10\.0 s)' <<<"$out" || fail "growing table: $out"

# time inside dkv.simulate does not count: simulations of more than 1 s under a 0.3 s limit
cat >"$T/sim.lua" <<'LUA'
local dkv = require "dkv"
local wall, n = 0, 0
while wall < 1.0 do   -- until the simulations together took 1 s of wall time
  local r = dkv.simulate{model = "llada-8b", gpu = "h200", decode = {cache = "dual"},
    workload = {kind = "poisson", n = 1000, rate = 50, prompt = 512, gen = 256},
    record = {steps = false, memory_every = 0}}
  wall, n = wall + r.summary.wall_s, n + 1
end
print(string.format("%d simulations, %.2f s", n, wall))
LUA
out=$(timeout 300 "$DKV" run "$T/sim.lua" -o "$T/sim.h5" --time-limit 0.3 2>&1) || fail "dkv.simulate time counted: $out"
echo "$out"

# 0 disables a limit; a small script under generous limits runs
printf 'local s = 0\nfor i = 1, 1e5 do s = s + i end\nprint(s)\n' >"$T/ok.lua"
out=$("$DKV" run "$T/ok.lua" --instr-limit 0 --mem-limit 0 2>&1) || fail "unlimited: $out"
[ "$out" = 5000050000 ] || fail "sum: $out"
echo "limits ok"
