#!/usr/bin/env bash
# ncu_points.sh - on the device machine: Nsight Compute over validation points, one process a point, inside a deadline
# (the loop device calls 117-122 and 135 each wrote into their command.sh; since session 48).  Run from the repository
# root there, after `. scripts/device_env.sh` (which sets NCU and starts $OUT/tests.txt).
#
#   bash scripts/ncu_points.sh DEADLINE_S MODEL:DIR:POINT... [-- HW_VALIDATE_OPTION...]
#
# DEADLINE_S: seconds of the call's clock ($SECONDS of this script's start is 0) by which the last point must end; a
# point is skipped (and said so) when fewer than 50 s are left, else bounded by the time left less 15 s (at most
# 110 s).  MODEL:DIR:POINT: the model preset, the folder under $OUT for its ncu_<point>.csv and prof_<point>.h5 (the
# point's ':' made '_'), the hw_validate.lua point, e.g. llada-8b:ncu_llada:w20:dual.  Options after -- go to
# hw_validate.lua (e.g. -D l2_flush=...).  Each point appends "ncu MODEL POINT exit RC S s, K kernels" to
# $OUT/tests.txt (and prints it); its output goes to $OUT/x/DIR_POINT.log.
# Environment: OUT (a folder), NCU (Nsight Compute), DKV_BIN (default .hwbin/dkv), NCU_CACHE (--cache-control, default
# none), NCU_METRICS (default dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum).
# Exit status: 0 (a point's own failure is its tests.txt line, as in the calls before); 2 on a usage error (nothing run).
set -uo pipefail
usage() { sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; }   # the comment lines on top
case ${1:-} in -h|--help) usage; exit 0 ;; esac
bad() { echo "ncu_points: $*" >&2; exit 2; }
[ -n "${OUT:-}" ] && [ -d "$OUT" ] || bad "\$OUT ('${OUT:-}') is not a folder"
[ -n "${NCU:-}" ] || bad "\$NCU is not set (source scripts/device_env.sh first)"
[[ ${1:-} =~ ^[1-9][0-9]*$ ]] || bad "DEADLINE_S '${1:-}' is not a whole number of seconds (--help)"
deadline=$1; shift
points=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    [[ $1 =~ ^[a-z0-9.-]+:[A-Za-z0-9_.-]+:[a-z0-9]+:[a-z_]+[a-z0-9_,=.]*$ ]] || bad "'$1' is not MODEL:DIR:POINT (--help)"
    points+=("$1"); shift
done
[ ${#points[@]} -gt 0 ] || bad "no MODEL:DIR:POINT given (--help)"
[ "${1:-}" = -- ] && shift
DKV_BIN=${DKV_BIN:-.hwbin/dkv}
M="--csv --clock-control none --cache-control ${NCU_CACHE:-none} --target-processes all"
M+=" --metrics ${NCU_METRICS:-dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum}"
mkdir -p "$OUT/x"
for mp in "${points[@]}"; do
    model=${mp%%:*} rest=${mp#*:}; dir=${rest%%:*} p=${rest#*:}; tag=${p/:/_}
    mkdir -p "$OUT/$dir"
    left=$((deadline - SECONDS))
    if [ $left -lt 50 ]; then
        echo "ncu $model $p: skipped, ${left}s left" | tee -a "$OUT/tests.txt"
        continue
    fi
    lim=$((left - 15)); [ $lim -gt 110 ] && lim=110
    t1=$SECONDS
    # shellcheck disable=SC2086
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/$dir/ncu_$tag.csv" \
        "$DKV_BIN" run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model="$model" -D point="$p" "$@" -o "$OUT/$dir/prof_$tag.h5" > "$OUT/x/${dir}_$tag.log" 2>&1
    rc=$?
    echo "ncu $model $p exit $rc $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/$dir/ncu_$tag.csv" 2> /dev/null) kernels" |
        tee -a "$OUT/tests.txt"
done
exit 0
