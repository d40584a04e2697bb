#!/usr/bin/env bash
# check_no_behaviour_change.sh [BASE_REF] [OUT]  - proves a refactor changes no result.
#
# Builds BASE_REF (default: the last main merged into this branch, `git merge-base HEAD main`,
# so only this branch's own changes are compared) from a `git archive` copy in OUT/base-src, and
# the working tree (build/check-release, cuda=no) here; runs every
# experiments/*.lua present in both trees from its own tree with `dkv run ... -o`, capturing
# stdout; summarises every HDF5 file of both sides with this tree's scripts/h5_summary.py (wall
# times, the steps' measured host-time columns, commits and timestamps masked); then diffs the
# printed output and the summaries.  Exit 0 = identical.
#
#   bash scripts/check_no_behaviour_change.sh                          # vs the last merged main
#   bash scripts/check_no_behaviour_change.sh 3cd3128 /tmp/refactor-check
#   bash scripts/check_no_behaviour_change.sh --help                   # this text
#
# BASE_REF must name a commit (git rev-parse --verify BASE_REF^{commit}), checked before anything in OUT
# is created or removed: anything else (an option, a tree, no such ref) is an error, exit 2.  A relative
# OUT is taken from the folder the script is run from.
#
# The base side is cached (OUT/base/.done names the commit), so a re-run only redoes the head.
# Experiments that MEASURE the machine (the CPU backend's wall-clock step times: cpu_speed,
# quality_frontier, hw_cpu_agreement) differ in their timing columns between any two runs, even of
# one build; compare their counts and quality columns, not their times.
set -u
case ${1:-} in -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; esac
[ $# -le 2 ] || { echo "usage: check_no_behaviour_change.sh [BASE_REF] [OUT]  (--help: what it does)" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ge 1 ]; then
    BASE=$1
else
    BASE=$(git -C "$ROOT" merge-base HEAD main) ||
        { echo "check_no_behaviour_change: no merge-base of HEAD and main: give BASE_REF" >&2; exit 2; }
fi
OUT=${2:-/tmp/refactor-check}
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac   # run_side cds into each tree
JOBS=${JOBS:-2}
# the base a commit before anything is made or removed (`git rev-parse --help` exits 0: --help was taken as the ref)
base_sha=$(git -C "$ROOT" rev-parse --verify --quiet "$BASE^{commit}") ||
    { echo "check_no_behaviour_change: BASE_REF '$BASE' is not a commit" >&2; exit 2; }
mkdir -p "$OUT"

# Lines of printed output that measure the machine (wall clock), not the experiment.
# Paths: each side runs in its own tree and writes under OUT/<side>.
norm() {
    sed -E -e 's/[0-9]+(\.[0-9]+)? ?(s|ms) (process |engine )?wall/<wall>/g' \
           -e 's/wall[ =:]+[0-9.]+ ?(s|ms)?/wall <masked>/g' \
           -e 's#'"$OUT"'/base-src#TREE#g' -e 's#'"$ROOT"'#TREE#g' \
           -e 's#'"$OUT"'/(base|head)#OUT#g' "$1"
}

run_side() {   # side tree dkv
    local side=$1 tree=$2 dkv=$3 o="$OUT/$1"
    rm -rf "$o"; mkdir -p "$o"
    for e in "$tree"/experiments/*.lua; do
        local n; n=$(basename "$e" .lua)
        [ "$n" = hw_lib ] && continue                      # a library, not an experiment
        [ -f "$ROOT/experiments/$n.lua" ] && [ -f "$OUT/base-src/experiments/$n.lua" ] || continue
        (cd "$tree" && "$dkv" run "experiments/$n.lua" -o "$o/$n.h5" >"$o/$n.stdout" 2>"$o/$n.stderr")
        echo "exit $?" >>"$o/$n.stdout"
    done
}

# Experiments read ../shared/datasets (the Azure trace) relative to their tree when it is there, so the base tree
# (OUT/base-src) must see the same ../shared as this one: OUT/shared links to it (left alone if OUT/shared is
# something else).  Without it, base fell back to the shipped sample where head read the trace (session 30).
stag=none
if [ -d "$ROOT/../shared" ]; then
    [ -e "$OUT/shared" ] || ln -s "$(cd "$ROOT/../shared" && pwd)" "$OUT/shared"
    [ "$(cd "$OUT/shared" 2>/dev/null && pwd -P)" = "$(cd "$ROOT/../shared" && pwd -P)" ] && stag=shared ||
        echo "note: $OUT/shared is not $ROOT/../shared: the base tree's experiments may read other inputs" >&2
fi
if [ "$(cat "$OUT/base/.done" 2>/dev/null)" != "$base_sha $stag" ]; then
    rm -rf "$OUT/base-src"; mkdir -p "$OUT/base-src"
    git -C "$ROOT" archive "$base_sha" | tar -x -C "$OUT/base-src" || exit 2
    (cd "$OUT/base-src" && scons -Q -j"$JOBS" cuda=no build/release/dkv >"$OUT/base-build.log" 2>&1) ||
        { echo "base build failed: $OUT/base-build.log"; exit 2; }
    run_side base "$OUT/base-src" "$OUT/base-src/build/release/dkv"
    echo "$base_sha $stag" >"$OUT/base/.done"
fi

(cd "$ROOT" && scons -Q -j"$JOBS" cuda=no variant=check build/check-release/dkv >"$OUT/head-build.log" 2>&1) ||
    { echo "head build failed: $OUT/head-build.log"; exit 2; }
run_side head "$ROOT" "$ROOT/build/check-release/dkv"

# both sides summarised now, by this tree's h5_summary.py (a cached base is summarised alike)
for h in "$OUT"/base/*.h5 "$OUT"/head/*.h5; do
    [ -f "$h" ] && /usr/bin/python3 "$ROOT/scripts/h5_summary.py" "$h" >"$h.sum" 2>&1
done
for f in "$OUT"/base/*.stdout "$OUT"/head/*.stdout; do norm "$f" >"${f%.stdout}.out"; done
status=0
for f in "$OUT"/base/*.out "$OUT"/base/*.h5.sum; do
    g="$OUT/head/$(basename "$f")"
    if ! diff -q "$f" "$g" >/dev/null 2>&1; then
        echo "DIFFERS: $(basename "$f")"; diff "$f" "$g" | head -n 20; status=1
    fi
done
n=$(ls "$OUT"/base/*.out | wc -l); m=$(ls "$OUT"/base/*.h5.sum 2>/dev/null | wc -l)
[ $status -eq 0 ] && echo "identical: $n experiments' printed output, $m HDF5 summaries ($BASE vs working tree)"
exit $status
