#!/usr/bin/env bash
# test_hw_carry.sh - scripts/hw_carry.sh (a device call's tree without datasets/hw) on a tree of its own: `out` leaves
# only the named calls' command.sh and stashes the rest; `back` restores every stashed file, keeps a file the call's
# tree gained (a command.sh written after `out`) and one it changed (as FILE.carried), and names them; the refusals
# (a second `out`, `back` with none out or from another tree, a folder without command.sh or outside datasets/hw)
# move nothing; --help and a usage error.
set -uo pipefail
: "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
S=$ROOT/scripts/hw_carry.sh
export HW_CARRY_STASH=$T/stash
R=$T/repo
mkdir -p "$R/datasets/hw/d1/call1" "$R/datasets/hw/d1/call2" "$R/datasets/hw/d2/call3/raw" && cd "$R" || fail "setup"
echo "echo one" > datasets/hw/d1/call1/command.sh
echo "raw data" > datasets/hw/d1/call1/raw.tgz
echo "echo two" > datasets/hw/d1/call2/command.sh
echo "deep" > datasets/hw/d2/call3/raw/x.csv
before=$(find datasets/hw -type f | sort | xargs md5sum)

# refusals before anything moves
bash "$S" out datasets/hw/d2/call3 > "$T/o" 2> "$T/e"; [ $? = 1 ] && grep -q "has no command.sh" "$T/e" || fail "no command.sh: $(cat "$T/e")"
bash "$S" out elsewhere/call1 > "$T/o" 2> "$T/e"; [ $? = 1 ] && grep -q "not a folder under datasets/hw" "$T/e" ||
    fail "outside datasets/hw: $(cat "$T/e")"
bash "$S" back > "$T/o" 2> "$T/e"; [ $? = 1 ] && grep -q "no stash out" "$T/e" || fail "back with none out: $(cat "$T/e")"
bash "$S" out > /dev/null 2>&1; [ $? = 2 ] || fail "out without a folder: not a usage error"
[ "$(find datasets/hw -type f | sort | xargs md5sum)" = "$before" ] && [ ! -e "$T/stash" ] || fail "a refusal moved something"

# out: the call's command.sh alone
bash "$S" out datasets/hw/d1/call1/ > "$T/o" 2> "$T/e" || fail "out: $(cat "$T/e")"
[ "$(find datasets/hw -type f)" = "datasets/hw/d1/call1/command.sh" ] || fail "out left: $(find datasets/hw -type f)"
grep -q "^carried: datasets/hw/d1/call1/command.sh$" "$T/o" || fail "out output: $(cat "$T/o")"
bash "$S" status | grep -q "^out: $T/stash, from $R$" || fail "status: $(bash "$S" status)"
bash "$S" out datasets/hw/d1/call1 > "$T/o" 2> "$T/e"; [ $? = 1 ] && grep -q "a stash is out already" "$T/e" ||
    fail "a second out: $(cat "$T/e")"
(mkdir -p "$T/other/datasets/hw" && cd "$T/other" && bash "$S" back > "$T/o" 2> "$T/e"; [ $? = 1 ]) &&
    grep -q "was taken from $R, not $T/other" "$T/e" || fail "back from another tree: $(cat "$T/e")"

# the call's tree gains a file and changes one; back keeps both and restores the rest
mkdir -p datasets/hw/d1/call4 && echo "echo four" > datasets/hw/d1/call4/command.sh
echo "echo one, edited" > datasets/hw/d1/call1/command.sh
bash "$S" back > "$T/o" 2> "$T/e" || fail "back: $(cat "$T/e")"
grep -q "^kept: datasets/hw/d1/call4/command.sh (new in the carried tree)$" "$T/o" &&
    grep -q "^kept: datasets/hw/d1/call1/command.sh.carried (differs" "$T/o" || fail "back output: $(cat "$T/o")"
[ "$(cat datasets/hw/d1/call4/command.sh)" = "echo four" ] && [ "$(cat datasets/hw/d1/call1/command.sh)" = "echo one" ] &&
    [ "$(cat datasets/hw/d1/call1/command.sh.carried)" = "echo one, edited" ] || fail "back: the files"
[ "$(find datasets/hw -type f ! -name '*.carried' ! -path '*/call4/*' | sort | xargs md5sum)" = "$before" ] ||
    fail "back did not restore every stashed file"
[ ! -e "$T/stash" ] && bash "$S" status | grep -q "^none out" || fail "the stash stayed"
bash "$S" --help | grep -q "hw_carry.sh out DIR" || fail "--help"
bash "$S" bogus > /dev/null 2>&1; [ $? = 2 ] || fail "an unknown command: not a usage error"
echo "hw_carry: ok"
