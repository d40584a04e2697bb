#!/usr/bin/env bash
# tests/run.sh BUILD_DIR - runs every dkv test and prints one closing line "N passed, N failed, N skipped".
#
#   unit   build/<mode>/tests/unit/test_*    cmocka programs (exit status = failures)
#   lua    tests/lua/test_*.lua              run with `dkv run`; a failed assert exits 1
#   e2e    tests/e2e/test_*.sh               bash; DKV, ROOT, BUILD and T (a scratch folder) are set
#   gpu    build/<mode>/tests/gpu/test_*     exit 77 (with a printed reason) when no GPU is present
#
# An exit status of 77 means "skipped" and must come with a line saying why.
# VALGRIND=1 runs the unit programs under valgrind (memcheck, errors are failures).
# ONLY=substring runs only the tests whose name contains it.
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
if [ $gpu_any = 0 ]; then
    echo "SKIP  gpu   (no GPU test programs in this build: built with cuda=no or nvcc missing)"
fi

echo
if [ $fail -gt 0 ]; then
    echo "failed:"; printf '  %s\n' "${failed[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
