#!/usr/bin/env bash
# test_execute.sh - `dkv run` of a script calling dkv.execute on a machine without a GPU: exit
# status 1, one error line naming the script position and the cause ("dkv.execute: no CUDA
# device (<reason>)"), no output file left behind.  Skipped (77) where a GPU is usable.
set -uo pipefail
: "${DKV:?}" "${T:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$T/ex.lua" <<'LUA'
local dkv = require "dkv"
local r = dkv.execute{model = {base = "tiny", name = "tiny-d64", hidden = 128, n_heads = 2, n_kv_heads = 1, head_dim = 64},
  gpu = "h200", workload = {kind = "fixed", n = 2, prompt = 64, gen = 32}, decode = {cache = "sparse", block_len = 16}}
dkv.save(r, "execute")
print("executed")
LUA
out=$("$DKV" run "$T/ex.lua" -o "$T/ex.h5" 2>"$T/err")
rc=$?
if [ $rc -eq 0 ] && grep -q "^executed" <<<"$out"; then
    echo "SKIP: a CUDA device is usable here (dkv.execute ran)"
    exit 77
fi
cat "$T/err"
[ $rc -eq 1 ] || fail "exit status $rc, expected 1"
grep -q "ex.lua:[0-9]*: dkv.execute: no CUDA device (" "$T/err" || fail "message must name the position and the cause"
grep -q "executed" <<<"$out" && fail "the script went on after the error"
[ -e "$T/ex.h5" ] && fail "an output file was left behind"
echo "PASS"
