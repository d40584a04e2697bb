#!/usr/bin/env bash
# trial.sh - one trial of the L2 replay (issue 9's HBM bytes per class), the project's way (docs/COST_MODEL.md "The
# soft edge"): the patch built in a worktree of HEAD behind an environment switch; with the switch unset it must give
# the shipped scores line for line and every table byte for byte; then the gate sets scored with the switch set, and
# what moved.  Sets no criterion has named yet (the unseen ones) are scored only with --judge, and only when the
# patch and the criterion are committed and the criterion names each set: the rule that a trial's criterion is
# committed before any score of it is read.
#
#   bash scripts/trial.sh PATCH VAR=VALUE OUT_DIR [--judge CRITERION.md SET...]
#
# PATCH: a `git diff` the worktree of HEAD takes (git apply).  VAR=VALUE: the switch the patch reads (VAR a name of
# capitals, digits and _).  OUT_DIR (must not exist) gets base/, off/ and trial/ (scripts/ncu_score.sh's OUT_DIRs over
# the default sets: the shipped dkv at build/release/dkv or $DKV, the patched one with the switch unset, and set),
# and with --judge base_judge/ and trial_judge/ over the SETs (scripts/ncu_score.sh's set names, e.g. c123); and
# summary.txt, what is printed: each score's "all sets" line, the classes (scripts/ncu_cells.py --by-class), the
# cells closer and further and the cells that crossed the 5 % band (scripts/ncu_sign.py --flips).  The verdict is the
# criterion's, read from those lines; this script states none.  JOBS as ncu_score.sh's.  About 4 minutes on 2 cores
# (a build and three scores), 1 more per --judge.  Exit status: 0; 1 when a step fails (its message names it), the
# switch unset moves a score (the patch is not a switch), or --judge's files are not committed; 2 on a usage error.
set -uo pipefail
usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "trial.sh: $*" >&2; exit 1; }
case ${1:-} in -h|--help) usage; exit 0 ;; esac
[ $# -ge 3 ] || { echo "trial.sh: PATCH, VAR=VALUE and OUT_DIR expected (--help)" >&2; exit 2; }
CALLER=$PWD
ROOT=$(cd "$(dirname "$0")/.." && pwd)
here() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$CALLER/$1" ;; esac; }
PATCH=$(here "$1") SW=$2 O=$(here "$3")
shift 3
CRIT= JUDGE=()
if [ $# -gt 0 ]; then
    [ "$1" = --judge ] || { echo "trial.sh: unknown argument '$1' (--help)" >&2; exit 2; }
    [ $# -ge 3 ] || { echo "trial.sh: --judge wants a criterion file and at least one set" >&2; exit 2; }
    CRIT=$(here "$2"); shift 2; JUDGE=("$@")
fi
[[ $SW =~ ^[A-Z][A-Z0-9_]*=.+$ ]] || { echo "trial.sh: '$SW' is not VAR=VALUE (VAR of capitals, digits and _)" >&2; exit 2; }
[ -f "$PATCH" ] || { echo "trial.sh: no patch file $PATCH" >&2; exit 2; }
[ -e "$O" ] && { echo "trial.sh: $O exists: give a new OUT_DIR" >&2; exit 2; }
cd "$ROOT" || exit 1
DKV=$(here "${DKV:-$ROOT/build/release/dkv}")
[ -x "$DKV" ] || die "no shipped dkv at $DKV (scons mode=release, or DKV=)"
committed() {   # FILE: tracked by git and unchanged in the working tree
    local rel
    rel=$(realpath --relative-to="$ROOT" "$1") || return 1
    [[ $rel != ../* ]] && git ls-files --error-unmatch -- "$rel" > /dev/null 2>&1 && git diff --quiet HEAD -- "$rel"
}
if [ -n "$CRIT" ]; then
    [ -f "$CRIT" ] || die "--judge: no criterion file $CRIT"
    committed "$PATCH" || die "--judge: $PATCH is not committed as it is (commit the patch before any score of it)"
    committed "$CRIT" || die "--judge: $CRIT is not committed as it is (commit the criterion before any score of it)"
    known=" $(sed -n 's/^ALL=(\([^)]*\)).*/\1/p; s/^REPEATS=(\([^)]*\)).*/\1/p' scripts/ncu_score.sh | tr '\n' ' ') "
    for s in "${JUDGE[@]}"; do
        [[ $known == *" $s "* ]] || { echo "trial.sh: --judge: unknown set '$s' (scripts/ncu_score.sh's:$known)" >&2; exit 2; }
        grep -qw -- "$s" "$CRIT" || die "--judge: the criterion $CRIT does not name set $s"
    done
fi
WT=$(mktemp -d "${TMPDIR:-/tmp}/dkv-trial.XXXXXX")
cleanup() { git -C "$ROOT" worktree remove --force "$WT" > /dev/null 2>&1; rm -rf "$WT"; }
trap cleanup EXIT
git worktree add -q --detach "$WT" HEAD || die "git worktree add failed"
git -C "$WT" apply "$PATCH" || die "the patch does not apply to HEAD ($(git rev-parse --short HEAD))"
mkdir -p "$O"
exec > >(tee "$O/summary.txt") 2>&1
echo "trial: $(basename "$PATCH") with $SW, worktree of $(git rev-parse --short HEAD); $(date -u +%Y-%m-%dT%H:%M:%SZ)"
(cd "$WT" && scons -Q -j2 mode=release build/release/dkv > "$O/build.log" 2>&1) || die "the patched build failed ($O/build.log)"
score() {   # NAME TREE DKV [ENV...] -- [SET...]: scripts/ncu_score.sh into OUT_DIR/NAME, run in TREE (DKV's own)
    local name=$1 tree=$2 dkv=$3; shift 3
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    (cd "$tree" && env "${envs[@]}" DKV="$dkv" bash scripts/ncu_score.sh "$O/$name" "$@" > "$O/$name.log" 2>&1) ||
        die "scripts/ncu_score.sh for $name failed ($O/$name.log)"
    printf '%-12s %s\n' "$name" "$(grep '^all sets' "$O/$name.log" | sed 's/^all sets *//')"
}
score base "$ROOT" "$DKV" --
score off "$WT" "$WT/build/release/dkv" --
# the switch unset must be the shipped replay: the printed lines and every table
diff <(sed "s#$O/base#OUT#g" "$O/base.log") <(sed "s#$O/off#OUT#g" "$O/off.log") > /dev/null ||
    die "with $SW unset the patched build's scores differ from the shipped ones ($O/base.log, $O/off.log)"
while read -r t; do
    cmp -s "$O/base/$t" "$O/off/$t" || die "with $SW unset $t differs from the shipped one: the patch is not a switch"
done < "$O/base/tables.txt"
echo "switch unset: the shipped scores, line for line, every table byte for byte"
score trial "$WT" "$WT/build/release/dkv" "$SW" --
by_class() { /usr/bin/python3 scripts/ncu_cells.py --by-class $(sed "s#^#$1/#" "$1/tables.txt"); }
echo; echo "by class, shipped:"; by_class "$O/base"
echo; echo "by class, trial:"; by_class "$O/trial"
echo; /usr/bin/python3 scripts/ncu_sign.py "$O/base" "$O/trial" --flips
if [ ${#JUDGE[@]} -gt 0 ]; then
    echo; echo "judgement sets (${JUDGE[*]}), criterion $(realpath --relative-to="$ROOT" "$CRIT") at $(git rev-parse --short HEAD):"
    score base_judge "$ROOT" "$DKV" -- "${JUDGE[@]}"
    score trial_judge "$WT" "$WT/build/release/dkv" "$SW" -- "${JUDGE[@]}"
    /usr/bin/python3 scripts/ncu_sign.py "$O/base_judge" "$O/trial_judge" --flips
fi
