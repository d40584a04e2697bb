#!/usr/bin/env bash
# tests/run.sh BUILD_DIR - runs every dkv test and prints one closing line "N passed, N failed, N skipped".
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
# An exit status of 77 means "skipped" and must come with a line saying why.
# VALGRIND=1 runs the unit programs under valgrind (memcheck, errors are failures).
# ONLY=substring runs only the tests whose name contains it.
# KINDS="unit lua" runs only those kinds (unit, lua, e2e, gpu, fuzz); .ci/run's ASan pass uses it.
set -u
BUILD=${1:?usage: tests/run.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=$(cd "$BUILD" && pwd)
DKV="$BUILD/dkv"
export DKV ROOT BUILD
pass=0; fail=0; skip=0; failed=()
scratch=$(mktemp -d "${TMPDIR:-/tmp}/dkv-tests.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

run_one() {   # kind name command...
    local kind=$1 name=$2; shift 2
    if [ -n "${ONLY:-}" ] && [[ "$name" != *"$ONLY"* ]]; then return; fi
    if [ -n "${KINDS:-}" ] && [[ " $KINDS " != *" $kind "* ]]; then return; fi
    local log="$scratch/$kind-$(basename "$name").log"
    local t0=$SECONDS
    T="$scratch/t-$kind-$(basename "$name")"; mkdir -p "$T"; export T
    "$@" >"$log" 2>&1
    local rc=$?
    local dt=$((SECONDS - t0))
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1)); printf 'PASS  %-5s %s (%ds)\n' "$kind" "$name" "$dt"
    elif [ $rc -eq 77 ]; then
        skip=$((skip + 1)); printf 'SKIP  %-5s %s: %s\n' "$kind" "$name" "$(grep -i skip "$log" | tail -n 1)"
    else
        fail=$((fail + 1)); failed+=("$kind $name")
        printf 'FAIL  %-5s %s (exit %d)\n' "$kind" "$name" "$rc"
        sed 's/^/      | /' "$log" | tail -n 40
    fi
}

vg=()
if [ "${VALGRIND:-0}" = 1 ]; then
    vg=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
fi

for t in "$BUILD"/tests/unit/test_*; do
    [ -x "$t" ] || continue
    run_one unit "$(basename "$t")" "${vg[@]}" "$t"
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
    echo "SKIP  gpu   (no GPU test programs in this build: built with cuda=no or nvcc missing)"
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
    echo "SKIP  fuzz  (no fuzz harnesses in $fuzz_build: clang's libFuzzer runtime is missing; scons fuzz says why)"
fi

echo
if [ $fail -gt 0 ]; then
    echo "failed:"; printf '  %s\n' "${failed[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
