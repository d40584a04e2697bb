#!/usr/bin/env bash
# scripts/attn_bench.sh - the batched attention of dual-Reuse steps on the GPU in the profile's pool
# setting and the engine's, item counts the profile does not measure, unequal items, and the GPU's state
# after a long Refresh step (tests/gpu/bench_attn_batch.c; docs/COST_MODEL.md, "Attention of batched
# Reuse steps against the instrumented runs").
#
#   bash scripts/attn_bench.sh build            # here: builds the bench into build/attn_bench/ (carried)
#   bash scripts/attn_bench.sh device           # there: runs it (~1 min on an H200), SM clocks and power
#                                               # sampled beside it; $OUT/attn_bench.log, clocks.csv
#   bash scripts/attn_bench.sh post LOG [OUT.md] # here: the tables (scripts/attn_bench.py)
#   bash scripts/attn_bench.sh standin DIR      # here: post on a STAND-IN log (tests the tables, no GPU)
#   bash scripts/attn_bench.sh --help           # this text
#
# Device call (one): run(command="bash scripts/attn_bench.sh device", carry=["build/attn_bench"],
#                        timeout_s=300)
# A relative LOG, OUT.md or DIR is taken from the folder the script is run from; post checks LOG first.
set -u
CALLER=$PWD   # relative paths given to the script are the caller's: here() resolves them after the cd
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
here() {   # PATH: unchanged when absolute or when the caller is in the root, else under the caller's folder
    case $1 in
    /*|'') printf '%s\n' "$1" ;;
    *) if [ "$CALLER" = "$ROOT" ]; then printf '%s\n' "$1"; else printf '%s\n' "$CALLER/$1"; fi ;;
    esac
}
BIN=build/attn_bench

case "${1:-}" in
build)
    scons -Q -j2 variant=gpu mode=release cuda=yes build/gpu-release/tests/gpu/bench_attn_batch || exit 1
    mkdir -p "$BIN" && cp build/gpu-release/tests/gpu/bench_attn_batch "$BIN"/ && ls -la "$BIN" ;;
device)
    OUT=${OUT:-$ROOT/gpu-out}
    mkdir -p "$OUT"
    export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
    if ldd "$BIN/bench_attn_batch" | grep -q "not found"; then   # the CUDA libraries from the Python wheels
        for d in $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, q, "lib") for p in nvidia.__path__ for q in os.listdir(p)))' 2>/dev/null); do
            LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
        done
    fi
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$OUT/device.txt"
    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 50 \
        > "$OUT/clocks.csv" 2>&1 &
    smi=$!
    timeout 240 "$BIN/bench_attn_batch" ${QUICK:+--quick} > "$OUT/attn_bench.log" 2> "$OUT/attn_bench.err"
    rc=$?
    kill "$smi" 2>/dev/null
    tail -n 3 "$OUT/attn_bench.log"; cat "$OUT/attn_bench.err"
    python3 scripts/attn_bench.py "$OUT/attn_bench.log" -o "$OUT/attn_bench.md" > /dev/null 2>&1 || echo "(post here failed: run it here)"
    echo "bench_attn_batch exit $rc"; exit $rc ;;
post)
    [ $# = 2 ] || [ $# = 3 ] || { echo "usage: attn_bench.sh post LOG [OUT.md]" >&2; exit 2; }
    log=$(here "$2")
    [ -f "$log" ] || { echo "attn_bench post: LOG $log: no such file" >&2; exit 2; }
    /usr/bin/python3 scripts/attn_bench.py "$log" ${3:+-o "$(here "$3")"} ;;
standin)
    [ $# = 2 ] || { echo "usage: attn_bench.sh standin DIR" >&2; exit 2; }
    d=$(here "$2")
    mkdir -p "$d" && /usr/bin/python3 scripts/attn_bench.py --standin "$d/attn_bench.log" \
        && /usr/bin/python3 scripts/attn_bench.py "$d/attn_bench.log" -o "$d/attn_bench.md" ;;
-h|--help)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" ;;
*)
    echo "usage: $0 build | device | post LOG [OUT.md] | standin DIR" >&2; exit 2 ;;
esac
