#!/usr/bin/env bash
# repost_sets.sh - every held-out validation run set re-posted by the dkv at hand, then counted: the command behind
# every "over the N run sets" figure of docs/BENCHMARKS.md and docs/CLAIMS.md (issue 9).
#
#   [DKV=build/release/dkv] [JOBS=2] bash scripts/repost_sets.sh OUT_DIR [SET...]
#   bash scripts/repost_sets.sh --list
#
# SET: a device call's folder under datasets/hw, as DATE/callN (call 92's run set is its b/ folder: 2026-12-03/call92/b);
# default: every set in SETS below (the run sets with held-out points recorded since the held-out points took their
# present form, 2026-12-02).  Each set goes to OUT_DIR/callN through `scripts/hw_session.sh post` (about 25 s each on
# one core; JOBS sets at once).  A set whose OUT_DIR/callN/summary.md exists is kept, so an interrupted run resumes
# where it stopped; a set whose post failed leaves OUT_DIR/callN.log and no summary.md, and is named at the end (exit 1).
# A folder OUT_DIR/callN without summary.md (an interrupted post, or anything else of that name) is moved aside to
# OUT_DIR/callN.aside.K before the set is posted again, never deleted.
# Then `scripts/summary_counts.py` over OUT_DIR/call*/ (every set posted there, also earlier ones).
#
# A trial variant is scored the same way from its worktree (its scripts and datasets), e.g. a profile edited there:
#   git worktree add /tmp/wt HEAD; (edit /tmp/wt); cd /tmp/wt && DKV=... bash scripts/repost_sets.sh /tmp/qX
# The environment passes through to dkv (a trial switch in a trial build: DKV_T_...=1).
set -uo pipefail
SETS=(
    2026-12-02/call40 2026-12-02/call42 2026-12-02/call44 2026-12-02/call45 2026-12-02/call46 2026-12-02/call48
    2026-12-02/call50 2026-12-02/call51 2026-12-02/call52 2026-12-02/call53 2026-12-02/call54 2026-12-02/call55
    2026-12-02/call60 2026-12-02/call61 2026-12-02/call62 2026-12-02/call63 2026-12-02/call78 2026-12-02/call79
    2026-12-02/call81 2026-12-03/call84 2026-12-03/call85 2026-12-03/call89 2026-12-03/call90 2026-12-03/call91
    2026-12-03/call92/b 2026-12-03/call94 2026-12-03/call95 2026-12-03/call96 2026-12-03/call97 2026-12-03/call98
    2026-12-03/call100 2026-12-03/call101 2026-12-04/call107 2026-12-04/call109 2026-12-04/call110 2026-12-04/call112
    2026-12-04/call113 2026-12-04/call114 2026-12-04/call115 2026-12-04/call116 2026-12-04/call117 2026-12-04/call118
    2026-12-04/call119
)   # a new run set is added here, in call order
PY=/usr/bin/python3
help() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; }   # the header comment
usage() { help >&2; exit 2; }
[ $# -ge 1 ] || usage
case $1 in
    -h|--help) help; exit 0 ;;
    --list) printf '%s\n' "${SETS[@]}"; exit 0 ;;
    -*) echo "repost_sets: unknown option $1" >&2; usage ;;
esac
O=$1; shift
DKV=${DKV:-build/release/dkv}
JOBS=${JOBS:-2}
[ -x "$DKV" ] || { echo "repost_sets: no dkv at $DKV (set DKV=)" >&2; exit 2; }
DKV=$(cd "$(dirname "$DKV")" && pwd)/$(basename "$DKV")
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "repost_sets: JOBS must be a positive integer, got '$JOBS'" >&2; exit 2; }
sets=("$@"); [ ${#sets[@]} -gt 0 ] || sets=("${SETS[@]}")
name() { local s=${1%/b}; echo "${s##*/}"; }   # 2026-12-03/call92/b -> call92
declare -A seen
for s in "${sets[@]}"; do
    [ -d "datasets/hw/$s" ] || { echo "repost_sets: no run set datasets/hw/$s (run from the repository root; --list)" >&2; exit 2; }
    [[ $(name "$s") =~ ^call[0-9]+$ ]] || { echo "repost_sets: '$s' is not DATE/callN[/b]" >&2; exit 2; }
    [ -z "${seen[$(name "$s")]:-}" ] || { echo "repost_sets: $(name "$s") given twice" >&2; exit 2; }
    seen[$(name "$s")]=1
done
mkdir -p "$O" || exit 2
O=$(cd "$O" && pwd)
n=${#sets[@]}
echo "repost_sets: $n run sets into $O, $JOBS at a time (dkv $DKV)"
one() {   # SET INDEX: post one set unless done; one progress line
    local s=$1 i=$2 c t0=$SECONDS
    c=$(name "$s")
    if [ -f "$O/$c/summary.md" ]; then echo "[$i/$n] $c: kept (summary.md exists)"; return 0; fi
    if [ -e "$O/$c" ]; then   # an earlier post that did not finish, or another folder of that name: kept aside
        local k=1
        while [ -e "$O/$c.aside.$k" ]; do k=$((k + 1)); done
        mv "$O/$c" "$O/$c.aside.$k" || { echo "[$i/$n] $c: FAILED (cannot move $O/$c aside)"; return 0; }
        echo "[$i/$n] $c: $O/$c has no summary.md: moved aside to $c.aside.$k"
    fi
    if DKV="$DKV" RES="$O/$c" bash scripts/hw_session.sh post "datasets/hw/$s" > "$O/$c.log" 2>&1 && [ -f "$O/$c/summary.md" ]; then
        echo "[$i/$n] $c: posted ($((SECONDS - t0)) s)"
    else
        rm -f "$O/$c/summary.md"
        echo "[$i/$n] $c: FAILED ($O/$c.log)"
    fi
}
i=0
for s in "${sets[@]}"; do
    i=$((i + 1))
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    one "$s" "$i" &
done
wait
failed=()
for s in "${sets[@]}"; do [ -f "$O/$(name "$s")/summary.md" ] || failed+=("$s"); done
posted=(); for d in "$O"/call*/; do [ -f "$d/summary.md" ] && posted+=("$d"); done   # not the .aside folders
[ ${#posted[@]} -gt 0 ] && { $PY scripts/summary_counts.py "${posted[@]}" || failed+=("summary_counts.py"); }
if [ ${#failed[@]} -gt 0 ]; then echo "repost_sets: failed: ${failed[*]}" >&2; exit 1; fi
