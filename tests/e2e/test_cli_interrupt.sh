#!/usr/bin/env bash
# test_cli_interrupt.sh - SIGINT in the middle of a long script: dkv stops the script, closes
# the results file and keeps it as long.h5.partial (a run that did not finish never takes the
# final name); every run completed before the signal is readable.
set -uo pipefail
: "${DKV:?}" "${T:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c 'import h5py' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py (apt-get install python3-h5py)"; exit 77; }

cat >"$T/long.lua" <<'LUA'
local dkv = require "dkv"
for i = 1, 100000 do
  local s = 0
  for k = 1, 100000 do s = s + k % 7 end            -- some work between runs
  local t = {}
  for k = 1, 200 do t[k] = k * i end
  dkv.write_run("run" .. i, {summary = {s = s, i = i}, tables = {v = {x = t}}})
end
LUA
"$DKV" run "$T/long.lua" -o "$T/long.h5" >"$T/out.txt" 2>"$T/err.txt" &
pid=$!
for _ in $(seq 1 200); do            # wait until the first run is written (up to 20 s) ...
    [ -e "$T/long.h5.tmp" ] && break
    sleep 0.1
done
[ -e "$T/long.h5.tmp" ] || fail "the script wrote no run within 20 s"
sleep 0.8                            # ... and a few more
kill -INT $pid
wait $pid; rc=$?
cat "$T/err.txt"
[ $rc = 1 ] || fail "interrupted run exits 1, got $rc"
grep -qE 'long\.lua:[0-9]+: interrupted \(SIGINT\)' "$T/err.txt" || fail "message names file:line"
grep -qE "interrupted; [0-9]+ completed runs? kept in $T/long.h5.partial" "$T/err.txt" || fail "summary line"
[ -f "$T/long.h5.partial" ] && [ ! -e "$T/long.h5" ] && [ ! -e "$T/long.h5.tmp" ] || fail "file kept as .partial"
n=$(grep -oE '[0-9]+ completed run' "$T/err.txt" | grep -oE '^[0-9]+')
$PY - "$T/long.h5.partial" "$n" <<'PYEOF' || fail "completed runs readable"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
n = int(sys.argv[2])
runs = list(f["runs"])
assert n >= 3, n
complete = [r for r in runs if f["runs"][r].attrs["status"] == "complete"]
assert len(complete) == n, (len(complete), n)
for i, name in enumerate(complete, 1):
    r = f["runs"][name]
    assert name == "run%d" % i
    assert r["summary"].attrs["i"] == i
    assert (r["v"]["x"] == [k * i for k in range(1, 201)]).all()
print("%d complete runs readable" % n)
PYEOF
# a script that catches the interrupt (pcall around dkv.simulate) and goes on: still interrupted, exit 1, the
# existing results file untouched and the completed runs kept aside (the engine's interrupt is sticky)
cat >"$T/pc.lua" <<'LUA'
local dkv = require "dkv"
dkv.write_run("first", {summary = {i = 1}})
for i = 1, 6 do   -- few instructions: no count hook runs between the calls
  local ok, r = pcall(dkv.simulate, {model = "llada-8b", gpu = "h200", workload = {n = 3000, rate = 50, seed = i},
                                     decode = {cache = "dual"}, mem = {kind = "blockpool"}, seed = i})
  if ok then dkv.save(r, "run" .. i) end
end
print("script end")
LUA
printf 'require("dkv").write_run("old", {summary = {x = 1}})\n' >"$T/old.lua"   # an earlier result, same name
"$DKV" run "$T/old.lua" -o "$T/pc.h5" >/dev/null || fail "writing the earlier result"
before=$(md5sum <"$T/pc.h5")
"$DKV" run "$T/pc.lua" -o "$T/pc.h5" >"$T/pc_out.txt" 2>"$T/pc_err.txt" &
pid=$!
for _ in $(seq 1 200); do
    [ -e "$T/pc.h5.tmp" ] && break
    sleep 0.1
done
sleep 1                              # inside a dkv.simulate (each takes about a second)
kill -INT $pid
wait $pid; rc=$?
cat "$T/pc_err.txt"
[ $rc = 1 ] || fail "a script that catches the interrupt still exits 1, got $rc"
grep -q 'script end' "$T/pc_out.txt" && fail "the script ran on to its end after the interrupt"
grep -qE "interrupted; [0-9]+ completed runs? kept in $T/pc.h5.partial" "$T/pc_err.txt" || fail "pcall: summary line"
[ "$(md5sum <"$T/pc.h5")" = "$before" ] || fail "pcall: the earlier pc.h5 was replaced"
echo "interrupt ok"
