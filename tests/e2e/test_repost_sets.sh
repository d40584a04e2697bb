#!/usr/bin/env bash
# test_repost_sets.sh - scripts/repost_sets.sh, the command behind every "over the N run sets" figure: its list names
# run sets that exist (each with its archived runs), one set posts and counts, a second run keeps what is done, and bad
# input is a usage error that names it, with nothing written.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"
S=scripts/repost_sets.sh

# the list: every entry a folder with its archived results
bash $S --list > "$T/list.txt"
[ "$(wc -l < "$T/list.txt")" -ge 42 ] || fail "--list: $(wc -l < "$T/list.txt") sets"
while read -r s; do
    ls "datasets/hw/$s"/hw_h5*.tgz > /dev/null 2>&1 || fail "--list: datasets/hw/$s has no hw_h5*.tgz"
done < "$T/list.txt"

# one set (the newest): posted, then counted; the held-out counts line names its 11 point rows
last=$(tail -1 "$T/list.txt")
DKV="$DKV" JOBS=1 bash $S "$T/q" "$last" > "$T/one.txt" 2>&1 || { cat "$T/one.txt"; fail "one set"; }
c=$(basename "${last%/b}")
[ -f "$T/q/$c/summary.md" ] || fail "no $T/q/$c/summary.md"
grep -q "^\[1/1\] $c: posted" "$T/one.txt" || fail "progress line: $(cat "$T/one.txt")"
grep -Eq "^shipped h200, held out +step [0-9]+, p50 [0-9]+, p99 [0-9]+, tok/s [0-9]+, mem [0-9]+ \(of 11 point rows\)" "$T/one.txt" \
    || fail "counts: $(cat "$T/one.txt")"
# again: kept, not re-posted (an interrupted run resumes)
touch -d '2000-01-01' "$T/q/$c/summary.md"
DKV="$DKV" bash $S "$T/q" "$last" > "$T/again.txt" 2>&1 || fail "again: $(cat "$T/again.txt")"
grep -q "^\[1/1\] $c: kept" "$T/again.txt" && [ "$(date -r "$T/q/$c/summary.md" +%Y)" = 2000 ] || fail "not kept: $(cat "$T/again.txt")"
# a folder of the set's name without summary.md (an interrupted post, or someone's files) is moved aside, not deleted
# (until session 51 it was rm -rf'd)
mkdir -p "$T/q2/$c" && echo precious > "$T/q2/$c/notes.txt"
DKV="$DKV" JOBS=1 bash $S "$T/q2" "$last" > "$T/aside.txt" 2>&1 || { cat "$T/aside.txt"; fail "aside"; }
grep -q "has no summary.md: moved aside to $c.aside.1" "$T/aside.txt" || fail "aside message: $(cat "$T/aside.txt")"
[ "$(cat "$T/q2/$c.aside.1/notes.txt")" = precious ] && [ -f "$T/q2/$c/summary.md" ] || fail "aside: not kept, or not posted"

# bad input: exit 2, the message names what, nothing written
for args in "$T/bad 2026-12-04/call999" "$T/bad 2026-12-04" "$T/bad $last $last" "--bogus"; do
    set +e
    # shellcheck disable=SC2086
    DKV="$DKV" bash $S $args > /dev/null 2> "$T/err.txt"; rc=$?
    set -e
    [ $rc = 2 ] && grep -q "^repost_sets: " "$T/err.txt" || fail "'$args': exit $rc, $(cat "$T/err.txt")"
    [ ! -e "$T/bad" ] || fail "'$args' wrote $T/bad"
done
grep -q "unknown option --bogus" "$T/err.txt" || fail "--bogus: $(cat "$T/err.txt")"
set +e
DKV="$DKV" JOBS=0 bash $S "$T/bad" "$last" > /dev/null 2> "$T/err.txt"; rc=$?
DKV=/nonexistent bash $S "$T/bad" "$last" > /dev/null 2> "$T/err2.txt"; rc2=$?
set -e
[ $rc = 2 ] && grep -q "JOBS must be a positive integer, got '0'" "$T/err.txt" || fail "JOBS=0: $rc $(cat "$T/err.txt")"
[ $rc2 = 2 ] && grep -q "no dkv at /nonexistent" "$T/err2.txt" || fail "DKV=/nonexistent: $rc2 $(cat "$T/err2.txt")"
[ ! -e "$T/bad" ] || fail "a refused run wrote $T/bad"
echo ok
