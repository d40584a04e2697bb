#!/usr/bin/env bash
# test_garbage.sh - garbage is refused (issue 12, item 5): `dkv compare --calibration` checks its
# preset file (binary, garbage text, a plain preset, a misspelled field, a missing file) before any
# work; binary input echoed in a message is escaped (dkv replay, a Lua error); lenient reading
# says how many lines it skipped and which, on stderr and in the run's provenance.
set -uo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"
# every byte of a file is text: UTF-8, no control characters but newline and tab
is_text() { $PY -c '
import sys, unicodedata
b = open(sys.argv[1], "rb").read()
s = b.decode("utf-8")                       # raises on invalid UTF-8
bad = [c for c in s if unicodedata.category(c) == "Cc" and c not in "\n\t"]
sys.exit(1 if bad else 0)' "$1"; }

# a results file to compare (real = sim: the comparison itself is not the point here)
cat >"$T/run.lua" <<'LUA'
local dkv = require "dkv"
local r = dkv.simulate{model = "llada-8b", gpu = "h200", workload = {kind = "fixed", n = 2, interval_s = 0, prompt = 64, gen = 32}}
dkv.save(r, "x")
LUA
"$DKV" run "$T/run.lua" -q -o "$T/r.h5" >/dev/null || fail "run"

# 3000 random bytes (a fixed seed: the same file every run), a NUL among them
$PY -c 'import random, sys; random.seed(12); sys.stdout.buffer.write(b"\x8b\x1f\x01" + bytes(random.randrange(256) for _ in range(3000)) + b"\0")' >"$T/random_bytes.bin"
printf 'return {\n  base = "h200",\n  hbm_bw = = 3,\n}\n' >"$T/syntax.lua"
printf -- '-- a preset, not fitted\nreturn {base = "h200", name = "mine"}\n' >"$T/plain.lua"
printf -- '-- Fitting inputs.\n--   input 1: x\nreturn {base = "h200", hbm_bww = 1}\n' >"$T/typo.lua"
check() {   # file expected-message
    out=$("$DKV" compare "$T/r.h5" "$T/r.h5" --calibration "$1" 2>&1 >/dev/null); rc=$?
    [ $rc = 1 ] || fail "--calibration $1: exit 1, got $rc: $out"
    grep -qF -- "$2" <<<"$out" || fail "--calibration $1: expected '$2' in: $out"
}
check "$T/random_bytes.bin" "random_bytes.bin:"
check "$T/random_bytes.bin" "not a text file"
check "$T/syntax.lua" "syntax.lua:3:"
check "$T/plain.lua" "has no '-- Fitting inputs.' section: not a preset written by dkv calibrate"
check "$T/typo.lua" "unknown field 'hbm_bww' (did you mean 'hbm_bw'?)"
check "$T/missing.lua" "missing.lua: cannot open"
check datasets/presets/gpu/h200.lua "not a preset written by dkv calibrate"
# the shipped calibrated preset passes the check (this run's workload was not used to fit it)
"$DKV" compare "$T/r.h5" "$T/r.h5" --calibration datasets/presets/gpu/h200-calibrated.lua >"$T/ok.txt" 2>&1 \
    || fail "h200-calibrated.lua refused: $(cat "$T/ok.txt")"

# binary input echoed in messages is escaped
"$DKV" replay "$T/random_bytes.bin" --mem static >/dev/null 2>"$T/replay.txt"; rc=$?
[ $rc = 1 ] || fail "replay of binary: exit $rc"
is_text "$T/replay.txt" || fail "dkv replay echoed raw bytes: $(head -c 300 "$T/replay.txt" | od -c)"
grep -q '\\x' "$T/replay.txt" || fail "escapes: $(cat "$T/replay.txt")"
printf 'error("bad \\1\\2\\255 caf\\195\\169")\n' >"$T/binerr.lua"
"$DKV" run "$T/binerr.lua" -o "$T/b.h5" >/dev/null 2>"$T/binerr.txt"
is_text "$T/binerr.txt" || fail "a Lua error echoed raw bytes"
grep -qF 'bad \x01\x02\xff café' "$T/binerr.txt" || fail "escaped message: $(cat "$T/binerr.txt")"

# lenient reading reports what it skipped
{ echo "TIMESTAMP,ContextTokens,GeneratedTokens"
  echo "2023-11-16 18:15:46.68,374,44"
  echo "garbage"
  echo "2023-11-16 18:15:50.50,396,109"
  echo "2023-11-16 18:15:51.00,x,3"
  printf '2023-11-16 18:15:52.00,100,\001\002\n'
  echo "2023-11-16 18:15:53.00,100,5"
  echo "bad"; echo "bad"; echo "bad"; } >"$T/len.csv"
cat >"$T/len.lua" <<LUA
local dkv = require "dkv"
dkv.save(dkv.simulate{model = "llada-8b", gpu = "h200", workload = {file = "$T/len.csv", lenient = true}}, "len")
LUA
"$DKV" run "$T/len.lua" -q -o "$T/len.h5" >/dev/null 2>"$T/len.txt" || fail "lenient run: $(cat "$T/len.txt")"
grep -qF "cfg.workload: lenient reading of $T/len.csv skipped 6 malformed lines (lines 3, 5, 6, 8, 9, ...)" "$T/len.txt" \
    || fail "lenient message: $(cat "$T/len.txt")"
$PY - "$T/len.h5" <<'PYEOF' || fail "provenance"
import sys, h5py
c = h5py.File(sys.argv[1], "r")["runs/len"].attrs["config"]
c = c.decode() if isinstance(c, bytes) else c
assert "skipped = 6" in c and "skipped_lines = {3, 5, 6, 8, 9}" in c, c
PYEOF
# not lenient: the first bad line is the error
sed -i 's/, lenient = true//' "$T/len.lua"
out=$("$DKV" run "$T/len.lua" -q -o "$T/len2.h5" 2>&1); [ $? = 1 ] && grep -q "len.csv:3:" <<<"$out" || fail "strict: $out"
echo "garbage refused"
