#!/usr/bin/env bash
# ncu_record.sh - records Nsight Compute sets on the device machine: for each MODEL:DIR:POINT, one dkv.execute run of
# experiments/hw_validate.lua's POINT under Nsight Compute (--cache-control none: no flush between kernels, the
# forward's own L2 state; dram bytes read and written and each kernel's time), into OUT/DIR/ncu_<point>.csv with its
# run's prof_<point>.h5, then each DIR packed as OUT/DIR.tgz and the runs' logs as OUT/logs_x.tgz: what
# scripts/ncu_score.sh reads from datasets/hw/<date>/call<N> (ncu_llada.tgz, ncu_dream.tgz; a second set's
# ncu_llada_b.tgz, ncu_dream_b.tgz).  Since session 40 a device call's command.sh calls this instead of writing the
# loop again (calls 117-122 wrote it out).
#
#   bash scripts/ncu_record.sh OUT BUDGET_S MODEL:DIR:POINT...
#
# OUT: the call's $OUT (must exist); BUDGET_S: seconds this script may take (a point starts only with 50 s left, and
# runs at most 110 s, less where the budget ends first; a point skipped or cut short says so).  MODEL: a model preset
# (llada-8b, dream-7b); DIR: a folder name under OUT (letters, digits, _ and -); POINT: hw_validate.lua's point name
# (w25:dual).  One line per point goes to standard output and OUT/tests.txt: "ncu MODEL POINT exit RC S s, K kernels".
# Environment: DKV (default .hwbin/dkv), NCU (default: ncu on PATH or under /usr/local/cuda, /opt/nvidia).
# Nothing is overwritten: an OUT already holding a DIR, DIR.tgz, x or logs_x.tgz (a set recorded there) is refused
# before any point runs (a call's $OUT is fresh); each archive is written under a temporary name and renamed.
# Exit status: 0 when every point ran (each point's own exit status is in its line), 2 on a usage error.
set -u
usage() { sed -n '2,19p' "$0" >&2; exit 2; }
case ${1:-} in -h|--help) sed -n '2,19p' "$0"; exit 0 ;; esac
[ $# -ge 3 ] || usage
O=$1 budget=$2; shift 2
[ -d "$O" ] || { echo "ncu_record: OUT '$O' is not a folder" >&2; exit 2; }
[[ $budget =~ ^[0-9]+$ ]] || { echo "ncu_record: BUDGET_S '$budget' is not a whole number of seconds" >&2; exit 2; }
for mp in "$@"; do
    [[ $mp =~ ^[a-z0-9.-]+:[A-Za-z0-9_-]+:w[0-9]+:[a-z_]+$ ]] ||
        { echo "ncu_record: '$mp' is not MODEL:DIR:POINT (e.g. llada-8b:ncu_llada:w25:dual)" >&2; exit 2; }
done
for mp in "$@"; do   # what this call would write must not be there already (it would be packed, replaced or removed)
    rest=${mp#*:}; dir=${rest%%:*}
    for f in "$dir" "$dir.tgz" x logs_x.tgz; do
        [ ! -e "$O/$f" ] && [ ! -e "$O/$f.tmp" ] ||
            { echo "ncu_record: OUT '$O' already holds $f (a set recorded there): give a fresh OUT" >&2; exit 2; }
    done
done
DKV=${DKV:-.hwbin/dkv}
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -n 1)}
[ -n "$NCU" ] || { echo "ncu_record: no ncu found (set NCU=)" >&2; exit 2; }
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
X=$O/x; mkdir -p "$X"
dirs=()
start=$SECONDS
for mp in "$@"; do
    model=${mp%%:*}; rest=${mp#*:}; dir=${rest%%:*}; p=${rest#*:}
    mkdir -p "$O/$dir"; [[ " ${dirs[*]} " == *" $dir "* ]] || dirs+=("$dir")
    left=$((budget - (SECONDS - start)))
    [ $left -lt 50 ] && { echo "ncu $model $p: skipped, ${left}s left" | tee -a "$O/tests.txt"; continue; }
    lim=$((left - 15)); [ $lim -gt 110 ] && lim=110
    tag=${p/:/_}; t1=$SECONDS
    # shellcheck disable=SC2086
    timeout -k 10 $lim "$NCU" $M --log-file "$O/$dir/ncu_$tag.csv" \
        "$DKV" run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model="$model" -D point="$p" -o "$O/$dir/prof_$tag.h5" > "$X/${dir}_$tag.log" 2>&1
    rc=$? k=$(grep -c dram__bytes_read "$O/$dir/ncu_$tag.csv" 2>/dev/null)
    cut=; { [ $rc = 124 ] || [ $rc = 137 ]; } && cut=", cut at $lim s"
    echo "ncu $model $p exit $rc $((SECONDS - t1)) s, ${k:-0} kernels$cut" | tee -a "$O/tests.txt"
done
for d in "${dirs[@]}"; do (cd "$O" && tar czf "$d.tgz.tmp" "$d" && mv "$d.tgz.tmp" "$d.tgz" && rm -rf "$d"); done
(cd "$O" && tar czf logs_x.tgz.tmp x && mv logs_x.tgz.tmp logs_x.tgz && rm -rf x)
exit 0
