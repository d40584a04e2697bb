#!/usr/bin/env bash
# tests/run.sh BUILD_DIR - runs every dkv test and prints one closing line
# "N passed (N with a part skipped), N failed, N skipped".
#
#   unit   build/<mode>/tests/unit/test_*    cmocka programs (exit status = failures)
#   lua    tests/lua/test_*.lua              run with `dkv run`; a failed assert exits 1
#   e2e    tests/e2e/test_*.sh               bash; DKV, ROOT, BUILD and T (a scratch folder) are set
#   gpu    build/<mode>/tests/gpu/test_*     exit 77 (with a printed reason) when no GPU is present
#   fuzz   build/fuzz/tests/fuzz/fuzz_*      libFuzzer harnesses (scons fuzz): each replays its
#                                            tests/fuzz/regress/<name>/* inputs, then fuzzes for
#                                            FUZZ_SECONDS (default 10) from tests/fuzz/corpus/<name>;
#                                            a crash, leak, sanitizer report or timeout fails it, and
#                                            the input is kept in build/fuzz/crashes/.  A SKIP line
#                                            when clang's libFuzzer was missing.  FUZZ_SECONDS=0: replay only.
#
# An exit status of 77 means "skipped" and must come with a line saying why.  A passing test that skips a part
# prints a line starting "SKIP" (e2e) or "skip: " before cmocka's skip() (unit): shown under its PASS line, counted.
# VALGRIND=1 runs the unit programs under valgrind (memcheck, errors are failures).
# ONLY=substring runs only the tests whose name contains it.
# KINDS="unit lua" runs only those kinds (unit, lua, e2e, gpu, fuzz); .ci/run's ASan pass uses it.
# OPENBLAS_NUM_THREADS is 1 unless set (below: OpenBLAS's idle workers would spin in every dkv process).
# JOBS=N runs up to N tests at a time (default: the number of CPUs, at most 4; JOBS=1: one by one).
#   Each test has its own log and scratch folder; the lines are printed in the order below, each
#   when its test (and every test before it) has finished, with its wall and CPU time (user + sys
#   of the test and its children).  The slowest tests are started first (SLOW, below).
set -u
BUILD=${1:?usage: tests/run.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=$(cd "$BUILD" && pwd)
DKV="$BUILD/dkv"
export DKV ROOT BUILD
# dkv links OpenBLAS's pthread build for the CPU backend, which runs it on one thread (cpu/cpu_backend.c), but the
# library starts a pool of idle workers in every process that spin for a while (`dkv compare` of one pair: 0.26 ->
# 0.13 s CPU with one thread; test_hw_scripts.sh alone: 158 -> 102 s CPU, the spinning taking an idle core; in the
# whole suite, where the cores are busy, sys time 182 -> 175 s).  One thread from the start, unless the caller says
# otherwise; no result depends on it.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
pass=0; fail=0; skip=0; partial=0; failed=()
scratch=$(mktemp -d "${TMPDIR:-/tmp}/dkv-tests.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
run_t0=$SECONDS
JOBS=${JOBS:-$(n=$(nproc 2>/dev/null || echo 1); echo $((n > 4 ? 4 : n)))}
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "tests/run.sh: JOBS=$JOBS is not a positive integer" >&2; exit 2; }
# An experiment run by several tests is run once per tests/run.sh: tests/run_cached.sh, keyed by
# its command line, in this folder (tests that share a run wait for it under a lock).
DKV_RUN_CACHE="$scratch/run-cache"; mkdir -p "$DKV_RUN_CACHE"; export DKV_RUN_CACHE
# started first, longest first (measured CPU time; the order of the printed lines does not change)
SLOW=(e2e:tests/e2e/test_experiments.sh e2e:tests/e2e/test_hw_scripts.sh e2e:tests/e2e/test_claims.sh
      lua:tests/lua/test_cpu_execute.lua unit:test_io_tiny_dllm lua:tests/lua/test_cpu_follow.lua
      e2e:tests/e2e/test_cli_limits.sh)

# the queue: kind, name and command (%q-quoted) of each selected test, in printing order
q_kind=(); q_name=(); q_cmd=()
selected() {   # kind name: whether ONLY and KINDS let this test run
    { [ -z "${ONLY:-}" ] || [[ "$2" == *"$ONLY"* ]]; } && { [ -z "${KINDS:-}" ] || [[ " $KINDS " == *" $1 "* ]]; }
}
run_one() {   # kind name command...
    local kind=$1 name=$2; shift 2
    selected "$kind" "$name" || return 0
    q_kind+=("$kind"); q_name+=("$name"); q_cmd+=("$(printf '%q ' "$@")")
}
note() {   # a line printed in its place in the queue (not a test)
    q_kind+=(note); q_name+=("$1"); q_cmd+=("")
    : >"$scratch/res.$((${#q_kind[@]} - 1))"
}

cpu_of_times() {   # the second line of `times` (children user, sys: 0m1.234s 0m0.100s) -> seconds
    local u s
    u=$(sed -n 2p <<<"$1" | awk '{print $1}'); s=$(sed -n 2p <<<"$1" | awk '{print $2}')
    awk -v u="$u" -v s="$s" 'function sec(x, m) { m = x; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", x); sub(/s$/, "", x); return m * 60 + x }
        BEGIN { printf "%.1f", sec(u) + sec(s) }'
}

start_test() {   # index: runs test i in the background; its result lands in $scratch/res.i
    local i=$1 kind=${q_kind[$1]} name=${q_name[$1]}
    local log="$scratch/$kind-$(basename "$name").log"
    (
        T="$scratch/t-$kind-$(basename "$name")"; mkdir -p "$T"; export T
        t0=$EPOCHREALTIME
        eval "${q_cmd[$i]}" >"$log" 2>&1 </dev/null
        rc=$?
        dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
        times >"$scratch/times.$i"
        echo "$rc $dt $(cpu_of_times "$(cat "$scratch/times.$i")")" >"$scratch/res.$i.tmp"
        mv "$scratch/res.$i.tmp" "$scratch/res.$i"
    ) &
}

next=0
report() {   # prints the finished tests at the head of the queue, in order
    local rc dt cpu kind name log
    while [ "$next" -lt "${#q_kind[@]}" ] && [ -f "$scratch/res.$next" ]; do
        kind=${q_kind[$next]}; name=${q_name[$next]}; log="$scratch/$kind-$(basename "$name").log"
        read -r rc dt cpu <"$scratch/res.$next" || rc=note
        if [ "$kind" = note ]; then
            echo "$name"
        elif [ "$rc" -eq 0 ]; then
            pass=$((pass + 1)); printf 'PASS  %-5s %s (%ss, %ss CPU)\n' "$kind" "$name" "$dt" "$cpu"
            # a part of a passing test that did not run (an e2e "SKIP ..." line, a cmocka skip() and the reason
            # printed before it) is shown under its PASS line and counted, so that no check is skipped unseen
            parts=$(grep -E '^(SKIP|skip: |\[  SKIPPED \] test)' "$log" | awk '!seen[$0]++' | head -n 8)
            if [ -n "$parts" ]; then
                partial=$((partial + 1)); sed 's/^/      | /' <<<"$parts"
            fi
        elif [ "$rc" -eq 77 ]; then
            skip=$((skip + 1)); printf 'SKIP  %-5s %s: %s\n' "$kind" "$name" "$(grep -i skip "$log" | tail -n 1)"
        else
            fail=$((fail + 1)); failed+=("$kind $name")
            printf 'FAIL  %-5s %s (exit %d, %ss, %ss CPU)\n' "$kind" "$name" "$rc" "$dt" "$cpu"
            sed 's/^/      | /' "$log" | tail -n 40
        fi
        next=$((next + 1))
    done
}

run_queue() {   # runs the queued tests, JOBS at a time, SLOW ones first; prints in queue order
    local order=() i s started=()
    for s in "${SLOW[@]}"; do
        for i in "${!q_kind[@]}"; do
            [ "${q_kind[$i]}:${q_name[$i]}" = "$s" ] && { order+=("$i"); started[$i]=1; }
        done
    done
    for i in "${!q_kind[@]}"; do [ -n "${started[$i]:-}" ] || [ "${q_kind[$i]}" = note ] || order+=("$i"); done
    for i in "${order[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; report; done
        start_test "$i"
    done
    wait
    report
}

vg=()
if [ "${VALGRIND:-0}" = 1 ]; then
    vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
fi

for t in "$BUILD"/tests/unit/test_*; do
    [ -x "$t" ] || continue
    run_one unit "$(basename "$t")" "${vg[@]}" "$t"
done
for src in tests/unit/test_*.c; do   # a unit test SConstruct left out of this build (test_cuda_*: cuda=no) is said
    b=$(basename "$src" .c)
    [ -x "$BUILD/tests/unit/$b" ] || ! selected unit "$b" ||
        note "SKIP  unit  $b (not in this build: its module is not built here, e.g. cuda=no or nvcc missing)"
done
if [ -x "$DKV" ]; then
    for t in tests/lua/test_*.lua; do
        [ -f "$t" ] || continue
        run_one lua "$t" "$DKV" run "$t" -o "$scratch/$(basename "$t" .lua).h5"
    done
fi
for t in tests/e2e/test_*.sh; do
    [ -f "$t" ] || continue
    run_one e2e "$t" bash "$t"
done
gpu_any=0
for t in "$BUILD"/tests/gpu/test_*; do
    [ -x "$t" ] || continue
    gpu_any=1
    run_one gpu "$(basename "$t")" "$t"
done
if [ $gpu_any = 0 ] && [[ " ${KINDS:-gpu} " == *" gpu "* ]]; then
    note "SKIP  gpu   (no GPU test programs in this build: built with cuda=no or nvcc missing)"
fi

fuzz_build=${FUZZ_BUILD:-$ROOT/build/fuzz}
fuzz_one() {   # binary name
    local bin=$1 n=$2 reg=()
    for f in "tests/fuzz/regress/$n"/*; do [ -f "$f" ] && reg+=("$f"); done
    if [ ${#reg[@]} -gt 0 ]; then
        echo "replaying ${#reg[@]} regression input(s) of tests/fuzz/regress/$n"
        "$bin" -error_exitcode=1 -timeout=60 -timeout_exitcode=1 "${reg[@]}" || return 1
    fi
    [ "${FUZZ_SECONDS:-10}" -gt 0 ] || return 0
    mkdir -p "$T/corpus" "$fuzz_build/crashes"
    "$bin" -max_total_time="${FUZZ_SECONDS:-10}" -timeout=60 -rss_limit_mb=2048 -error_exitcode=1 -timeout_exitcode=1 \
        -print_final_stats=1 -artifact_prefix="$fuzz_build/crashes/$n-" "$T/corpus" "tests/fuzz/corpus/$n"
}
fuzz_any=0
for t in "$fuzz_build"/tests/fuzz/fuzz_*; do
    [ -x "$t" ] && [[ "$t" != *.o ]] || continue
    fuzz_any=1
    b=$(basename "$t")
    run_one fuzz "$b" fuzz_one "$t" "${b#fuzz_}"
done
if [ $fuzz_any = 0 ] && [[ " ${KINDS:-fuzz} " == *" fuzz "* ]]; then
    note "SKIP  fuzz  (no fuzz harnesses in $fuzz_build: clang's libFuzzer runtime is missing; scons fuzz says why)"
fi
run_queue

echo
echo "tests/run.sh: $JOBS at a time, $((SECONDS - run_t0)) s"
if [ $fail -gt 0 ]; then
    echo "failed:"; printf '  %s\n' "${failed[@]}"
fi
echo "$pass passed ($partial with a part skipped), $fail failed, $skip skipped"
[ $fail -eq 0 ]
