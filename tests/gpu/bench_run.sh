#!/usr/bin/env bash
# tests/gpu/bench_run.sh - on the GPU machine: the kernel tests, the benchmark, then the
# sanitizers on the kernel tests, from binaries built elsewhere and carried in $BIN (default
# .perfbin).  Logs under $OUT; a short table last.  STEPS picks a subset: "tests bench san".
#   here:  build (see docs/GPU.md "Performance"), copy the 4 programs into .perfbin/
#   there: run(command="bash tests/gpu/bench_run.sh", carry=[".perfbin"])
set -u
BIN=${BIN:-.perfbin}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
rc=0
for s in ${STEPS:-tests bench san}; do
    case $s in
    tests)
        for t in test_kernels test_kernels_attn test_forward; do
            timeout 90 "$BIN/$t" > "$OUT/$t.log" 2>&1; r=$?
            grep -E "^FAIL|^     " "$OUT/$t.log" | head -n 20
            echo "== $t exit $r: $(grep -c '^PASS' "$OUT/$t.log") PASS, $(grep -c '^FAIL' "$OUT/$t.log") FAIL"
            [ "$r" = 0 ] || rc=1
        done ;;
    bench)
        timeout ${BENCH_LIMIT:-200} "$BIN/bench_reuse" > "$OUT/bench.log" 2>&1; r=$?
        echo "== bench_reuse exit $r"; [ "$r" = 0 ] || { rc=1; tail -n 5 "$OUT/bench.log"; } ;;
    san)
        for tool in memcheck racecheck; do
            for t in test_kernels test_kernels_attn; do
                timeout ${SAN_LIMIT:-60} compute-sanitizer --tool $tool --error-exitcode 9 "$BIN/$t" > "$OUT/san_${tool}_${t}.log" 2>&1
                r=$?; echo "== $tool $t exit $r: $(tail -n 1 "$OUT/san_${tool}_${t}.log")"
                [ "$r" = 0 ] || grep -E "^========= +(Race|Invalid|Error|.*hazard|.*at .*in )" "$OUT/san_${tool}_${t}.log" | sort | uniq -c | sort -rn | head -n 6
            done
        done ;;
    esac
done
[ -f "$OUT/bench.log" ] && { echo; grep -vE "^ +gemm .*T=768" "$OUT/bench.log" | tail -n 60; }
exit $rc
