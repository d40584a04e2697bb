#!/usr/bin/env bash
# test_params.sh - declared parameters: a misspelled -D stops `dkv run` with exit 2 and a "did
# you mean" before anything is printed or written; a wrong type is exit 2; `dkv run SCRIPT --help`
# lists every parameter each shipped experiment declares, with its default and help.
set -uo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"

out=$("$DKV" run experiments/quickstart.lua -o "$T/q.h5" -D gpuu=l40s -D laod=8 2>"$T/err.txt"); rc=$?
[ $rc = 2 ] || fail "misspelled -D: exit 2, got $rc"
[ -z "$out" ] || fail "nothing printed before the check: $out"
grep -qF -- "-D gpuu=l40s: experiments/quickstart.lua has no parameter 'gpuu' (did you mean 'gpu'?)" "$T/err.txt" || fail "$(cat "$T/err.txt")"
grep -qF -- "-D laod=8: experiments/quickstart.lua has no parameter 'laod' (did you mean 'load'?)" "$T/err.txt" || fail "$(cat "$T/err.txt")"
[ ! -e "$T/q.h5" ] && [ ! -e "$T/q.h5.tmp" ] && [ ! -e "$T/q.h5.partial" ] || fail "no file after a usage error"

"$DKV" run experiments/quickstart.lua -o "$T/q.h5" -D n=abc >/dev/null 2>"$T/err.txt"; rc=$?
[ $rc = 2 ] && grep -qF -- "-D n=abc: parameter 'n' expects a whole number >= 1 (default 48)" "$T/err.txt" || fail "type: $rc $(cat "$T/err.txt")"
# a declared check (dkv.param's fourth argument, since session 51): a count that is 2.5 or 0 is a usage error naming
# the -D, not a format error or a cfg error later; 3.0 is the integer 3
for v in 2.5 0 -4; do
    "$DKV" run experiments/quickstart.lua -o "$T/q.h5" -D n=$v >/dev/null 2>"$T/err.txt"; rc=$?
    [ $rc = 2 ] && grep -qF -- "-D n=$v: parameter 'n' expects a whole number >= 1 (default 48)" "$T/err.txt" ||
        fail "-D n=$v: $rc $(cat "$T/err.txt")"
done
cat >"$T/chk.lua" <<'LUA'
local dkv = require "dkv"
local n = dkv.param("n", 8, "a count", {integer = true, min = 1})
assert(math.type(n) == "integer", math.type(n))
local ok, e = pcall(dkv.param, "m", 0, "bad default", {min = 1})
assert(not ok and e:find("the default does not pass"), e)
ok, e = pcall(dkv.param, "k", 1, "bad key", {minimum = 1})
assert(not ok and e:find("unknown check key 'minimum'"), e)
print("checks ok", n)
LUA
out=$("$DKV" run "$T/chk.lua" -D n=3.0 2>&1) && grep -q "^checks ok	3$" <<<"$out" || fail "dkv.param checks: $out"
"$DKV" run "$T/chk.lua" -D n=0.5 >/dev/null 2>"$T/err.txt"; rc=$?
[ $rc = 2 ] && grep -qF -- "-D n=0.5: parameter 'n' expects a whole number >= 1 (default 8)" "$T/err.txt" || fail "0.5: $(cat "$T/err.txt")"

# valid names behave as before
"$DKV" run experiments/quickstart.lua -q -o "$T/q.h5" -D gpu=l40s -D n=4 -D load=2 >"$T/out.txt" 2>&1 || fail "valid -D: $(cat "$T/out.txt")"
grep -q "^llada-8b on l40s: 4 requests" "$T/out.txt" || fail "valid -D took effect: $(head -20 "$T/out.txt")"

# --help of every shipped script lists what it declares (names from the source), no undeclared reads
n=0
for f in experiments/*.lua scripts/bench_sim.lua; do
    [ "$f" = experiments/hw_lib.lua ] && continue
    [ "$f" = experiments/hw_heldout_points.lua ] && continue   # data for hw_validate.lua -D set=heldout
    help=$("$DKV" run "$f" --help 2>&1) || fail "$f --help: $help"
    grep -q "^parameters of $f" <<<"$help" || fail "$f --help: $help"
    ! grep -q "not declared" <<<"$help" || fail "$f reads dkv.params without dkv.param: $help"
    for p in $(grep -oE '(dkv|hw)\.param\("[a-z_0-9]+"' "$f" | sed -E 's/.*"(.*)"/\1/' | sort -u); do
        grep -qE "^  $p +[^ ]+ +[^ ]" <<<"$help" || fail "$f --help lacks '$p' (with default and help): $help"
        n=$((n + 1))
    done
done
[ $n -gt 50 ] || fail "only $n parameters found"
grep -qE '^  load +4 +arrival rate multiplier' <<<"$("$DKV" run experiments/quickstart.lua --help)" || fail "default/help columns"
echo "params ok ($n declarations listed)"
