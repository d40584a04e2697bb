#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [NAME...] - runs the libFuzzer harnesses of tests/fuzz for SECONDS each
# (default 600), FUZZ_JOBS at a time (default 2), and prints one line per harness: executions,
# coverage (libFuzzer's cov: edges and ft: features) and the result.  docs/RELIABILITY.md
# ("Fuzzing") quotes its output.
#
#   scripts/fuzz.sh 600                  every harness, 10 minutes each
#   scripts/fuzz.sh 60 safetensors ncu   two of them, a minute each
#   scripts/fuzz.sh 300 results:1200     NAME:SECONDS gives one harness its own budget
#   FUZZ_RUNS=1000000 scripts/fuzz.sh 1800   each stops after 1 million executions, or 30 minutes
#
# The growing corpus is kept in build/fuzz/corpus/<name> (seeded from tests/fuzz/corpus/<name>,
# which stays small and committed), logs in FUZZ_LOGS (default build/fuzz/logs), and a crashing
# input in build/fuzz/crashes/<name>-crash-<sha1>: copy it to tests/fuzz/regress/<name>/ with the
# fix, and tests/run.sh replays it from then on.  Exit status 1 when any harness failed.
set -u
cd "$(dirname "$0")/.."
secs=${1:-600}
shift || true
jobs=${FUZZ_JOBS:-2}
logs=${FUZZ_LOGS:-build/fuzz/logs}
scons -Q -j2 cuda=no fuzz >/dev/null || { echo "fuzz: scons fuzz failed" >&2; exit 1; }
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for f in tests/fuzz/fuzz_*.c; do n=$(basename "$f" .c); names+=("${n#fuzz_}"); done
fi
mkdir -p "$logs" build/fuzz/crashes
one() {
    local n=${1%%:*} secs=$secs
    [[ "$1" == *:* ]] && secs=${1##*:}
    local bin=build/fuzz/tests/fuzz/fuzz_$n
    [ -x "$bin" ] || { echo "fuzz: $bin missing (is clang's libFuzzer installed? scons fuzz says)"; return 1; }
    mkdir -p "build/fuzz/corpus/$n"
    local t0=$SECONDS
    local runs=()
    [ -n "${FUZZ_RUNS:-}" ] && runs=(-runs="$FUZZ_RUNS")
    "$bin" -max_total_time="$secs" "${runs[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="build/fuzz/crashes/$n-" "build/fuzz/corpus/$n" "tests/fuzz/corpus/$n" >"$logs/$n.log" 2>&1
    local rc=$?
    local last execs
    last=$(grep -E '^#[0-9]+' "$logs/$n.log" | tail -n 1)
    execs=$(grep -E '^stat::number_of_executed_units:' "$logs/$n.log" | awk '{print $2}')
    printf '%-12s %s execs in %ds, %s %s, %s\n' "$n" "${execs:-?}" $((SECONDS - t0)) \
        "$(echo "$last" | grep -oE 'cov: [0-9]+')" "$(echo "$last" | grep -oE 'ft: [0-9]+')" \
        "$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc, see $logs/$n.log)")"
    return $rc
}
fail=0
running=0
for n in "${names[@]}"; do
    one "$n" &
    running=$((running + 1))
    if [ $running -ge "$jobs" ]; then
        wait -n || fail=1
        running=$((running - 1))
    fi
done
while [ $running -gt 0 ]; do
    wait -n || fail=1
    running=$((running - 1))
done
exit $fail
