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
out=$(timeout 60 "$DKV" run "$T/sel.lua" --instr-limit 0 --time-limit 2 2>&1); rc=$?
[ $rc = 1 ] || fail "shard.select under --time-limit 2: exit $rc (124 = not stopped): $out"
grep -qE 'sel\.lua:3: time limit of 2(\.0)? s of Lua CPU time reached' <<<"$out" || fail "time message: $out"
"$DKV" run "$T/sel.lua" --instr-limit 0 --time-limit 0 >"$T/sel.out" 2>&1 &
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

# defect 15: workload.file = "/dev/zero" was read without bound, outside the memory cap
cat >"$T/zero.lua" <<'LUA'
local dkv = require "dkv"
dkv.simulate{model = "tiny", gpu = "h200", workload = {file = "/dev/zero", format = "vidur"}}
LUA
out=$(timeout 30 "$DKV" run "$T/zero.lua" 2>&1); rc=$?
[ $rc = 1 ] || fail "workload.file = /dev/zero: exit $rc (124 = read without end): $out"
grep -q '/dev/zero:1: NUL byte at byte 0: not a text file' <<<"$out" || fail "message: $out"

# defect 15: a __tostring returning 64 MiB was printed whole (print and error)
cat >"$T/ts.lua" <<'LUA'
local big = setmetatable({}, {__tostring = function() return string.rep("x", 1 << 26) end})
print(big)
error(big)
LUA
timeout 60 "$DKV" run "$T/ts.lua" >"$T/ts.out" 2>"$T/ts.err"; rc=$?
[ $rc = 1 ] || fail "error(big): exit $rc"
n=$(wc -c <"$T/ts.out"); [ "$n" -lt 70000 ] || fail "print(big) printed $n bytes"
grep -q '\.\.\. \[67043328 more bytes of __tostring output cut\]' "$T/ts.out" || fail "print says what it cut"
n=$(wc -c <"$T/ts.err"); [ "$n" -lt 20000 ] || fail "error(big) printed $n bytes"
grep -q 'more bytes of the error message cut\]' "$T/ts.err" || fail "error says what it cut: $(head -c 300 "$T/ts.err")"
printf 'print("a", 1, nil, true, {1} ~= nil)\n' >"$T/p.lua"
out=$("$DKV" run "$T/p.lua" 2>&1) || fail "print: $out"
[ "$out" = "$(printf 'a\t1\tnil\ttrue\ttrue')" ] || fail "print of plain values: '$out'"

# defect 15: numbers that do not fit where they go are errors naming the field
sim() {   # extra-config-fields -> output of a dkv.simulate with them
    printf 'local dkv = require "dkv"\ndkv.simulate{model = "tiny", gpu = "h200",\n  workload = {kind = "fixed", n = 2, interval_s = 0.001, prompt = 64, gen = 32},\n  decode = {cache = "sparse", block_len = 16}, %s}\n' "$1" >"$T/sim.lua"
    "$DKV" run "$T/sim.lua" 2>&1
}
for v in math.huge 1e20 -1 '0/0'; do
    out=$(sim "mem = {capacity_bytes = $v}"); rc=$?
    [ $rc = 1 ] || fail "mem.capacity_bytes = $v: exit $rc: $out"
    grep -q "mem.capacity_bytes" <<<"$out" || fail "mem.capacity_bytes = $v: message: $out"
done
out=$(sim "mem = {device_capacity_bytes = math.huge}") && fail "device_capacity_bytes = inf accepted"
grep -q "mem.device_capacity_bytes" <<<"$out" || fail "message: $out"
out=$(sim "policies = {retention = {rho = -1}}"); rc=$?
[ $rc = 1 ] || fail "retention.rho = -1: exit $rc (quietly the preset's value): $out"
grep -q "policies.retention.rho.*must be in (0, 1\] (got -1)" <<<"$out" || fail "rho message: $out"
out=$(sim "policies = {retention = {rho = 0.5}}") || fail "rho = 0.5 refused: $out"

# values audit: an infinite (or absurd) duration or preset number was taken: gpu.malloc_s = math.huge spun at 100 %
# CPU, mem.malloc_s = math.huge saved NaN latencies, step_release_s = math.huge stopped the engine with an "internal
# error".  Each is an error naming the field now, within the timeout (124 = it hung).
sim4() {   # extra-config-fields -> output of a dkv.simulate of 4 fixed requests with them
    printf 'local dkv = require "dkv"\nlocal r = dkv.simulate{model = "tiny", gpu = "h200",\n  workload = {kind = "fixed", n = 4, interval_s = 0.001, prompt = 64, gen = 32},\n  decode = {cache = "dual", block_len = 16}, %s}\nassert(r.summary.latency_p99_s == r.summary.latency_p99_s and r.summary.latency_p99_s < math.huge, "p99 " .. r.summary.latency_p99_s)\n' "$1" >"$T/sim4.lua"
    timeout 30 "$DKV" run "$T/sim4.lua" 2>&1
}
while IFS='|' read -r cfg msg; do
    out=$(sim4 "$cfg"); rc=$?
    [ $rc = 1 ] || fail "$cfg: exit $rc (124 = hung, 0 = accepted): $out"
    grep -qF "sim4.lua:2: $msg" <<<"$out" || fail "$cfg: message: $out"
done <<'CASES'
gpu = {base = "rtx4090", malloc_s = math.huge}|cfg.gpu.malloc_s: must be finite (got inf)
gpu = {base = "rtx4090", free_s = math.huge}|cfg.gpu.free_s: must be finite (got inf)
gpu = {base = "rtx4090", launch_overhead_s = 1e300}|cfg.gpu.launch_overhead_s: must be in [0, 3600] (got 1.0000000000000001e+300)
gpu = {base = "rtx4090", hbm_bw = math.huge}|cfg.gpu.hbm_bw: must be finite (got inf)
gpu = {base = "h200", hbm_bytes = math.huge}|cfg.gpu.hbm_bytes: must be finite (got inf)
gpu = {base = "h200", hbm_bytes = 1e30}|cfg.gpu.hbm_bytes: must be in (0, 1.8446744073709552e+19) (got 1e+30)
mem = {malloc_s = math.huge}|cfg.mem.malloc_s: must be finite (got inf)
mem = {free_s = -math.huge}|cfg.mem.free_s: must be finite (got -inf)
mem = {kv_frac = 1e-12}|cfg: mem: the KV capacity is 0 bytes: mem.kv_frac of (gpu.hbm_bytes less the weights and mem.margin)
scheduler = {step_release_s = math.huge}|cfg.scheduler.step_release_s: must be finite (got inf)
scheduler = {step_host_s = math.huge}|cfg.scheduler.step_host_s: must be finite (got inf)
scheduler = {step_host_s = 1e308}|cfg.scheduler.step_host_s: must be in [0, 3600] (got 1e+308)
scheduler = {handover_s = math.huge}|cfg.scheduler.handover_s: must be finite (got inf)
policies = {routing = {enabled = true, setup_s = math.huge}}|cfg.policies.routing.setup_s: must be finite (got inf)
policies = {routing = {enabled = true, plain_step_s = 1e308}}|cfg.policies.routing.plain_step_s: must be in [0, 3600]
sim = {launch_overhead_s = math.huge}|cfg.sim.launch_overhead_s: must be finite (got inf)
CASES
# the largest allowed times run to a finite result
out=$(sim4 'gpu = {base = "rtx4090", malloc_s = 3600, free_s = 3600, launch_overhead_s = 3600}, scheduler = {step_host_s = 3600, step_release_s = 3600, handover_s = 3600}') \
    || fail "times of 3600 s: $out"
# dkv.execute's byte options were cast to uint64 whatever they were (1e30, inf)
for o in 'staging_bytes = 1e30|opts.staging_bytes: must be in [-1, 1.8446744073709552e+19) (got 1e+30)' \
         'host_bytes = math.huge|opts.host_bytes: must be finite (got inf)'; do
    printf 'local dkv = require "dkv"\ndkv.execute({model = "tiny", gpu = "h200", workload = {kind = "fixed", n = 1, prompt = 64, gen = 32},\n  decode = {cache = "dual", block_len = 16}}, {backend = "cpu", %s})\n' "${o%%|*}" >"$T/ex.lua"
    out=$(timeout 60 "$DKV" run "$T/ex.lua" 2>&1) && fail "dkv.execute ${o%%|*} accepted"
    grep -qF "ex.lua:2: ${o#*|}" <<<"$out" || fail "dkv.execute ${o%%|*}: message: $out"
done
printf 'local dkv = require "dkv"\ndkv.mem.new{kind = "caching", capacity = 2^30, device_malloc_s = math.huge}\n' >"$T/mm.lua"
out=$("$DKV" run "$T/mm.lua" 2>&1) && fail "dkv.mem.new device_malloc_s = inf accepted"
grep -qF "mm.lua:2: dkv.mem.new.device_malloc_s: must be finite (got inf)" <<<"$out" || fail "dkv.mem.new message: $out"

printf 'local dkv = require "dkv"\nlocal m = dkv.mem.new{kind = "caching", capacity = 2^30}\nm:tick(math.huge)\n' >"$T/tick.lua"
out=$("$DKV" run "$T/tick.lua" 2>&1); rc=$?
[ $rc = 1 ] || fail "m:tick(inf): exit $rc: $out"
grep -qE "tick\.lua:3: bad argument #1 to 'tick' \(the time must be a finite number of seconds\)" <<<"$out" || fail "tick message: $out"

# defect 15: byte totals of 2^63 or more were written as negative int64; now float64 (HDF5_SCHEMA.md)
cat >"$T/u64.lua" <<'LUA'
local dkv = require "dkv"
local r = dkv.simulate{model = "tiny", gpu = "h200",
  workload = {kind = "fixed", n = 2, interval_s = 0.001, prompt = 64, gen = 32},
  decode = {cache = "dual", block_len = 16}, mem = {device_capacity_bytes = 1.5e19, capacity_bytes = 1.2e19}}
assert(r.summary.device_capacity_bytes == 1.5e19, "summary: " .. r.summary.device_capacity_bytes)
assert(r.summary.kv_capacity_bytes > 0)
dkv.save(r, "u64")
LUA
out=$("$DKV" run "$T/u64.lua" -o "$T/u64.h5" 2>&1) || fail "capacity 1.5e19: $out"
if /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
    /usr/bin/python3 - "$T/u64.h5" <<'PY' || fail "byte totals in the file"
import sys, h5py
s = h5py.File(sys.argv[1], "r")["runs/u64/summary"].attrs
assert float(s["device_capacity_bytes"]) == 1.5e19, s["device_capacity_bytes"]
bad = [k for k, v in s.items() if not isinstance(v, (bytes, str)) and getattr(v, "size", 1) == 1 and float(v) < 0]
assert not bad, bad
PY
else
    echo "note: /usr/bin/python3 lacks h5py; the file's values are not checked"
fi
echo "bounded inputs ok"
