#!/usr/bin/env bash
# scripts/hw_multi_proc.sh - k separate `dkv run` processes of one configuration on one GPU (no MPS):
# issue 11's ground truth for "instances" (docs/GPU.md, "Several instances on one GPU").
#
#   bash scripts/hw_multi_proc.sh K OUT.h5 [-D name=value ...]
#
# Starts K processes of experiments/hw_multi_proc.lua at once (process i: -D proc=i), each serving
# the requests a simulated run routes to instance i, with a common start time (-D start_at, Unix
# seconds, START_DELAY s from now (default 12): every process loads, warms up and then waits for
# it, so their clocks share one zero); waits for all; merges their files into OUT.h5 (dkv merge):
# runs mproc:<op>:k=K:p<i>:real and :device.  Exit status: 0 when every process succeeded.
# DKV: the dkv binary (default build/release/dkv); LIMIT (default 120 s) bounds each process.
# Without a GPU the processes simulate their shares (runs :sim), which tests the merge.
set -u
K=${1:?usage: hw_multi_proc.sh K OUT.h5 [-D name=value ...]}
OUTH5=${2:?usage: hw_multi_proc.sh K OUT.h5 [-D name=value ...]}
shift 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DKV=${DKV:-$ROOT/build/release/dkv}
[ -x "$DKV" ] || { echo "hw_multi_proc: no dkv at $DKV (set DKV=)" >&2; exit 2; }
[[ "$K" =~ ^[1-9][0-9]*$ ]] || { echo "hw_multi_proc: K must be a positive integer, got '$K'" >&2; exit 2; }
[ -e "$OUTH5" ] && { echo "hw_multi_proc: $OUTH5 exists" >&2; exit 2; }
T=$(mktemp -d)
START=$(( $(date +%s) + ${START_DELAY:-12} ))
pids=()
for ((i = 0; i < K; i++)); do
    (cd "$ROOT" && exec timeout -k 5 "${LIMIT:-120}" "$DKV" run experiments/hw_multi_proc.lua -D k="$K" -D proc="$i" \
        -D start_at="$START" "$@" -o "$T/p$i.h5") > "$T/p$i.log" 2>&1 &
    pids+=($!)
done
rc=0
for ((i = 0; i < K; i++)); do
    wait "${pids[$i]}" || { rc=1; echo "hw_multi_proc: process $i failed (exit $?):"; tail -n 5 "$T/p$i.log"; }
    grep -h "^hw_multi_proc " "$T/p$i.log"
done
files=()
for ((i = 0; i < K; i++)); do [ -s "$T/p$i.h5" ] && files+=("$T/p$i.h5"); done
if [ ${#files[@]} -gt 0 ]; then
    "$DKV" merge "$OUTH5" "${files[@]}" || rc=1
else
    rc=1
fi
cat "$T"/p*.log > "${OUTH5%.h5}.log" 2>/dev/null
rm -rf "$T"
exit $rc
