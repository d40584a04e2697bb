#!/usr/bin/env bash
# test_shell_scripts.sh - the mistakes of the helper shell scripts no other test runs, without a GPU or a build:
#   scripts/gpu_run.sh post-score: a failed scripts/quality_compare.py fails it (only tee's status was read) and
#     leaves no compare.txt or compare.md; a RES already holding results is refused, its files kept (they were
#     emptied); relative FILES_AT, CPU.h5 and RES are the caller's (the script cds to the root); a missing CPU.h5
#     is named before RES is made;
#   scripts/check_no_behaviour_change.sh: -h/--help is usage (exit 0; --help was taken as the base ref and
#     OUT/base-src removed), and a BASE_REF that is not a commit is refused before OUT is made or touched;
#   scripts/attn_bench.sh post: a relative LOG is the caller's (Python's FileNotFoundError), a missing one named;
#   scripts/trial.sh: its argument mistakes, and --judge's guard (a patch or criterion not committed, a set the
#     criterion does not name), each before anything is built or written;
#   -h/--help of each: usage on standard output, exit 0.
set -uo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT" || exit 1

# --help and -h: the usage on standard output, nothing on standard error, exit 0 (check_no_behaviour_change.sh: below)
for sw in "gpu_run.sh|usage: scripts/gpu_run.sh build|device|" "attn_bench.sh|bash scripts/attn_bench.sh post LOG"; do
    s=${sw%%|*}
    for h in -h --help; do
        rc=0; out=$(bash "scripts/$s" $h 2> "$T/e") || rc=$?
        [ $rc = 0 ] && grep -qF "${sw#*|}" <<<"$out" && [ ! -s "$T/e" ] ||
            fail "$s $h: exit $rc, standard output '${out:0:200}', standard error '$(cat "$T/e")'"
    done
done

# ---- gpu_run.sh post-score on a stand-in device folder whose frontier is not HDF5 (quality_compare.py fails)
mkdir -p "$T/fa" "$T/w"
echo "== frontier cuda exit 0 (1 s)" > "$T/w/frontier_cuda.log"
echo "not HDF5" > "$T/w/frontier_cuda.h5"
printf 'PASS stand-in\n== test_backend_score dual exit 0 (0 s)\n' > "$T/w/score_dual.log"
tar -czf "$T/fa/score.tgz" -C "$T/w" .
echo "not HDF5" > "$T/cpu.h5"
# a failed comparison fails post-score by its own status, and no compare.txt or compare.md is left
rc=0; RES="$T/r1" bash scripts/gpu_run.sh post-score "$T/fa" "$T/cpu.h5" > "$T/o1" 2> "$T/e1" || rc=$?
[ $rc = 1 ] && grep -q "^post-score: scripts/quality_compare.py failed (exit [1-9]" "$T/e1" ||
    fail "post-score with a failing quality_compare.py: exit $rc: $(cat "$T/e1")"
[ -f "$T/r1/frontier_cuda.h5" ] && [ -z "$(find "$T/r1" -name 'compare*')" ] || fail "a failed comparison left: $(ls "$T/r1")"
# a RES already holding results: refused (exit 2) before anything is written, its files as they were
mkdir -p "$T/r2"; echo old > "$T/r2/compare.txt"; echo old > "$T/r2/compare.md"
rc=0; RES="$T/r2" bash scripts/gpu_run.sh post-score "$T/fa" "$T/cpu.h5" > /dev/null 2> "$T/e2" || rc=$?
[ $rc = 2 ] && grep -q "^post-score: RES $T/r2 already holds results" "$T/e2" ||
    fail "post-score into a RES holding results: exit $rc: $(cat "$T/e2")"
[ "$(ls "$T/r2" | tr '\n' ' ')" = "compare.md compare.txt " ] && [ "$(cat "$T/r2/compare.txt" "$T/r2/compare.md")" = "old
old" ] || fail "post-score changed a RES holding results: $(ls -l "$T/r2")"
# relative FILES_AT, CPU.h5 and RES from another folder: the caller's (it said fa/score.tgz is missing)
rc=0; (cd "$T" && RES=r3 bash "$ROOT/scripts/gpu_run.sh" post-score fa cpu.h5) > /dev/null 2> "$T/e3" || rc=$?
[ $rc = 1 ] && [ -f "$T/r3/frontier_cuda.h5" ] && grep -q "quality_compare.py failed" "$T/e3" ||
    fail "post-score with relative paths from T: exit $rc: $(cat "$T/e3")"
# a missing CPU.h5 is named before RES is made
rc=0; RES="$T/r4" bash scripts/gpu_run.sh post-score "$T/fa" "$T/nope.h5" > /dev/null 2> "$T/e4" || rc=$?
[ $rc = 1 ] && grep -q "^post-score: CPU.h5 $T/nope.h5: no such file" "$T/e4" && [ ! -e "$T/r4" ] ||
    fail "post-score without CPU.h5: exit $rc, RES $(ls -d "$T/r4" 2>&1): $(cat "$T/e4")"

# ---- check_no_behaviour_change.sh: OUT/base-src survives --help and a base that is not a commit (an option was
# taken as the ref: `git rev-parse --help` / `--bogus` exit 0, and base-src was removed before the archive failed)
mkdir -p "$T/cn/base-src"; echo keep > "$T/cn/base-src/keep"
for h in -h --help; do
    rc=0; out=$(bash scripts/check_no_behaviour_change.sh $h "$T/cn" 2> "$T/e") || rc=$?
    [ $rc = 0 ] && grep -qF "check_no_behaviour_change.sh [BASE_REF] [OUT]" <<<"$out" && [ -f "$T/cn/base-src/keep" ] ||
        fail "check_no_behaviour_change.sh $h: exit $rc, base-src $(ls "$T/cn/base-src" 2>&1): ${out:0:200} $(cat "$T/e")"
done
for ref in --bogus no-such-ref; do
    rc=0; bash scripts/check_no_behaviour_change.sh "$ref" "$T/cn" > "$T/o" 2> "$T/e" || rc=$?
    [ $rc = 2 ] && grep -qF "check_no_behaviour_change: BASE_REF '$ref' is not a commit" "$T/e" &&
        [ -f "$T/cn/base-src/keep" ] ||
        fail "check_no_behaviour_change.sh $ref: exit $rc, base-src $(ls "$T/cn/base-src" 2>&1): $(cat "$T/o" "$T/e")"
done
rc=0; bash scripts/check_no_behaviour_change.sh no-such-ref "$T/cn2" > /dev/null 2>&1 || rc=$?
[ $rc = 2 ] && [ ! -e "$T/cn2" ] || fail "check_no_behaviour_change.sh no-such-ref: exit $rc, made OUT: $(ls -d "$T/cn2" 2>&1)"

# ---- attn_bench.sh post: a relative LOG (and OUT.md) from another folder; a missing LOG named, exit 2
/usr/bin/python3 scripts/attn_bench.py --standin "$T/ab.log" > /dev/null || fail "attn_bench.py --standin"
rc=0; (cd "$T" && bash "$ROOT/scripts/attn_bench.sh" post ab.log ab.md) > "$T/o" 2> "$T/e" || rc=$?
[ $rc = 0 ] && [ -s "$T/ab.md" ] || fail "attn_bench.sh post ab.log ab.md from T: exit $rc: $(tail -n 3 "$T/e")"
rc=0; (cd "$T" && bash "$ROOT/scripts/attn_bench.sh" post nosuch.log) > "$T/o" 2> "$T/e" || rc=$?
[ $rc = 2 ] && [ "$(cat "$T/e")" = "attn_bench post: LOG $T/nosuch.log: no such file" ] ||
    fail "attn_bench.sh post nosuch.log: exit $rc: $(cat "$T/e")"
# ---- trial.sh (session 43): the mistakes it refuses before it builds or scores anything, OUT_DIR never made; with
# --judge, a patch or criterion that is not committed as it is, or a set the criterion does not name (the rule that a
# criterion is committed before any score of it is read)
P=datasets/hw/2026-12-04/call122/part29.patch C=datasets/hw/2026-12-04/call122/CRITERION_part29.md
for h in -h --help; do
    rc=0; out=$(bash scripts/trial.sh $h 2> "$T/e") || rc=$?
    [ $rc = 0 ] && grep -qF "bash scripts/trial.sh PATCH VAR=VALUE OUT_DIR [--judge CRITERION.md SET...]" <<<"$out" &&
        [ "$(tail -n 1 <<<"$out")" = "switch unset moves a score (the patch is not a switch), or --judge's files are not committed; 2 on a usage error." ] &&
        [ ! -s "$T/e" ] || fail "trial.sh $h: exit $rc: ${out:0:200} $(cat "$T/e")"
done
echo "not a patch" > "$T/p.patch"; echo "c123" > "$T/crit.md"; mkdir -p "$T/tr_exists"
trial_refuses() {   # exit status, message (grep -F), arguments...
    local want=$1 msg=$2; shift 2
    rc=0; (cd "$T" && bash "$ROOT/scripts/trial.sh" "$@") > "$T/o" 2> "$T/e" || rc=$?
    [ $rc = "$want" ] && grep -qF -- "$msg" "$T/e" || fail "trial.sh $*: exit $rc (want $want): $(cat "$T/o" "$T/e")"
    [ ! -e "$T/tr_out" ] || fail "trial.sh $*: made OUT_DIR"
}
trial_refuses 2 "PATCH, VAR=VALUE and OUT_DIR expected" p.patch X=1
trial_refuses 2 "'lower=1' is not VAR=VALUE" p.patch lower=1 tr_out
trial_refuses 2 "'X' is not VAR=VALUE" p.patch X tr_out
trial_refuses 2 "no patch file $T/nosuch.patch" nosuch.patch X=1 tr_out
trial_refuses 2 "$T/tr_exists exists: give a new OUT_DIR" p.patch X=1 tr_exists
trial_refuses 2 "unknown argument '--judges'" p.patch X=1 tr_out --judges crit.md c123
trial_refuses 2 "--judge wants a criterion file and at least one set" p.patch X=1 tr_out --judge crit.md
# (the cases name a set no score holds, c999, so that a broken guard stops at the set's name, not at a score)
echo "c999" >> "$T/crit.md"
trial_refuses 1 "--judge: $T/p.patch is not committed as it is" p.patch X=1 tr_out --judge crit.md c999
trial_refuses 1 "--judge: $T/crit.md is not committed as it is" "$ROOT/$P" X=1 tr_out --judge crit.md c999
trial_refuses 2 "--judge: unknown set 'c999'" "$ROOT/$P" X=1 tr_out --judge "$ROOT/$C" c999
trial_refuses 1 "--judge: the criterion $ROOT/$C does not name set c118" "$ROOT/$P" X=1 tr_out --judge "$ROOT/$C" c118
echo "ok: gpu_run.sh post-score, check_no_behaviour_change.sh, attn_bench.sh, trial.sh"
