#!/usr/bin/env bash
# test_limits.sh - product code keeps STYLE.md's size limits: no C function over 120 lines and no
# source file over 800 (scripts/long_functions.py over core/, sim/, cuda/, cpu/, .c and .h; CUDA
# kernels in .cu files aside).  Then shows the check failing: synthetic files with a 121-line function and
# an 801-line file are reported, and a 120-line function and an 800-line file are not.
set -uo pipefail
: "${ROOT:?}" "${T:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$(cd "$ROOT" && $PY scripts/long_functions.py) || fail "product code over the limits:
$out"
n=$(cd "$ROOT" && find core sim cuda cpu -name '*.[ch]' | wc -l)
[ "$n" -gt 100 ] || fail "only $n product source files found: the check would look at nothing"
echo "limits: no function over 120 lines, no file over 800 ($n product .c/.h files)"

# a C function of LINES lines in total (signature, braces and body)
func() {   # name lines
    printf 'int %s(int x)\n{\n' "$1"
    for ((i = 0; i < $2 - 4; i++)); do printf '    x += %d;\n' "$i"; done
    printf '    return x;\n}\n'
}
{ func ok_fn 120; func long_fn 121; } >"$T/funcs.c"
{ for ((i = 0; i < 800; i++)); do echo "/* $i */"; done; } >"$T/file800.c"
{ for ((i = 0; i < 801; i++)); do echo "/* $i */"; done; } >"$T/file801.c"
out=$($PY "$ROOT/scripts/long_functions.py" "$T/funcs.c" "$T/file800.c" "$T/file801.c"); rc=$?
echo "$out"
[ $rc = 1 ] || fail "over-long code must fail (exit $rc)"
grep -qF "$T/funcs.c:121: long_fn is 121 lines" <<<"$out" || fail "the 121-line function was not reported: $out"
grep -qF "$T/file801.c: 801 lines (file over 800)" <<<"$out" || fail "the 801-line file was not reported: $out"
grep -q 'ok_fn\|file800' <<<"$out" && fail "code within the limits was reported: $out"
[ "$(wc -l <<<"$out")" = 2 ] || fail "expected exactly 2 findings: $out"
$PY "$ROOT/scripts/long_functions.py" "$T/file800.c" >/dev/null || fail "an 800-line file failed the check"
echo "over-long code detected: ok"
