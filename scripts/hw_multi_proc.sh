#!/usr/bin/env bash
# scripts/hw_multi_proc.sh - k separate `dkv run` processes of one configuration on one GPU (no MPS):
# issue 11's ground truth for "instances" (docs/GPU.md, "Several instances on one GPU").
#
#   bash scripts/hw_multi_proc.sh K OUT.h5 [-D name=value ...]
#
# Starts K processes of experiments/hw_multi_proc.lua at once (process i: -D proc=i), each serving
# the requests a simulated run routes to instance i, with a common start time (-D start_at, Unix
# seconds, START_DELAY s from now (default 4 + K): every process loads, warms up and then waits for
# it, so their clocks share one zero); waits for all; merges their files into OUT.h5 (dkv merge):
# runs mproc:<op>:k=K:p<i>:real and :device.  Exit status: 0 when every process succeeded.
# -D op=arrive (the Poisson workload): the whole workload's arrivals are listed once (-D
# list_arrivals=1) and process i gets its share (ids i, i + K, ...) as a Vidur trace with -D offset =
# its first arrival (a trace's times count from its first row: hw_multi_proc.lua).
# DKV: the dkv binary (default build/release/dkv); LIMIT (default 120 s; timeout(1)'s DURATION) bounds each process;
# a START_DELAY that is not a whole number of seconds, or a LIMIT timeout(1) cannot take, is a usage error (exit 2).
# Without a GPU the processes simulate their shares (runs :sim), which tests the merge.
# The processes' logs go to OUT.log (OUT.h5 less .h5, plus .log); an OUT.h5 or OUT.log already there is refused
# (exit 2) before anything runs, and the log is written under a temporary name and renamed.
set -u
usage="usage: hw_multi_proc.sh K OUT.h5 [-D name=value ...]"
case ${1:-} in -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; esac
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
K=$1
OUTH5=$2
shift 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DKV=${DKV:-$ROOT/build/release/dkv}
[ -x "$DKV" ] || { echo "hw_multi_proc: no dkv at $DKV (set DKV=)" >&2; exit 2; }
[[ "$K" =~ ^[1-9][0-9]*$ ]] || { echo "hw_multi_proc: K must be a positive integer, got '$K'" >&2; exit 2; }
[[ "${START_DELAY:-0}" =~ ^[0-9]+$ ]] ||
    { echo "hw_multi_proc: START_DELAY must be a whole number of seconds, got '$START_DELAY'" >&2; exit 2; }
[[ "${LIMIT:-120}" =~ ^([0-9]+([.][0-9]*)?|[.][0-9]+)[smhd]?$ ]] ||
    { echo "hw_multi_proc: LIMIT must be a duration timeout(1) takes (120, 2.5m), got '$LIMIT'" >&2; exit 2; }
[ -e "$OUTH5" ] && { echo "hw_multi_proc: $OUTH5 exists" >&2; exit 2; }
LOG=${OUTH5%.h5}.log
[ -e "$LOG" ] && { echo "hw_multi_proc: $LOG exists (the processes' logs would replace it)" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT   # the processes' files go with it, whatever ends the script
OP=b1
for a in "$@"; do [[ "$a" == op=* ]] && OP=${a#op=}; done
extra=()
for ((i = 0; i < K; i++)); do extra[$i]=""; done
if [ "$OP" = arrive ]; then   # each process's share of the Poisson arrivals as a Vidur trace
    (cd "$ROOT" && "$DKV" run experiments/hw_multi_proc.lua -D list_arrivals=1 "$@" -o "$T/arrivals.h5") > "$T/arrivals.txt" 2>&1 \
        || { echo "hw_multi_proc: listing the arrivals failed:"; tail -n 5 "$T/arrivals.txt"; rm -rf "$T"; exit 1; }
    for ((i = 0; i < K; i++)); do
        echo "arrived_at,num_prefill_tokens,num_decode_tokens" > "$T/p$i.csv"
        awk -v k="$K" -v i="$i" '$1 == "arrival" && $2 % k == i {print $3 "," $4 "," $5}' "$T/arrivals.txt" >> "$T/p$i.csv"
        off=$(awk -v k="$K" -v i="$i" '$1 == "arrival" && $2 % k == i {print $3; exit}' "$T/arrivals.txt")
        [ -n "$off" ] || { echo "hw_multi_proc: process $i of $K gets no arrival ($T/arrivals.txt)"; rm -rf "$T"; exit 1; }
        extra[$i]="-D trace=$T/p$i.csv -D offset=$off"
    done
fi
START=$(( $(date +%s) + ${START_DELAY:-$((4 + K))} ))
pids=()
for ((i = 0; i < K; i++)); do
    # shellcheck disable=SC2086  # extra[i] is "-D trace=FILE -D offset=S" (no spaces inside)
    (cd "$ROOT" && exec timeout -k 5 "${LIMIT:-120}" "$DKV" run experiments/hw_multi_proc.lua -D k="$K" -D proc="$i" \
        -D start_at="$START" ${extra[$i]} "$@" -o "$T/p$i.h5") > "$T/p$i.log" 2>&1 &
    pids+=($!)
done
rc=0
for ((i = 0; i < K; i++)); do
    wait "${pids[$i]}"; r=$?   # its status read before anything else sets $?
    [ $r = 0 ] || { rc=1; echo "hw_multi_proc: process $i failed (exit $r):"; tail -n 5 "$T/p$i.log"; }
    grep -h "^hw_multi_proc " "$T/p$i.log"
done
files=()
for ((i = 0; i < K; i++)); do [ -s "$T/p$i.h5" ] && files+=("$T/p$i.h5"); done
if [ ${#files[@]} -gt 0 ]; then
    "$DKV" merge "$OUTH5" "${files[@]}" || rc=1
else
    rc=1
fi
{ cat "$T"/p*.log > "$LOG.tmp" 2>/dev/null && mv "$LOG.tmp" "$LOG"; } ||
    { rm -f "$LOG.tmp"; rc=1; echo "hw_multi_proc: could not write $LOG"; }
rm -rf "$T"
exit $rc
