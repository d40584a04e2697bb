#!/usr/bin/env bash
# test_gpu_args.sh - the GPU programs that take options (tests/gpu/test_backend_run, test_multi_instances;
# tests/gpu/gpu_args.h) refuse a mistake before they look for a GPU, so this runs on a machine without one: a number
# that does not parse or is out of range, a choice not in its list (before session 43 --offload, --layout, --attn
# and --model took any other word as their default), a name without its value (it was ignored), a word that is not an
# option, an unknown name: exit status 2 and one line naming the program, the option and the value.  --help prints
# the usage, exit 0.  The microbenchmarks' one optional flag is checked the same way.  CUDA builds only (the programs are not built with cuda=no: the test says so and skips).
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
G=$(dirname "$DKV")/tests/gpu
[ -x "$G/test_backend_run" ] && [ -x "$G/test_multi_instances" ] ||
    { echo "SKIP: $G has no test_backend_run / test_multi_instances (a cuda=no build)"; exit 77; }
bad() {   # program, the first line's expected text (a grep -E pattern), then its arguments
    local p=$1 want=$2; shift 2
    "$G/$p" "$@" > "$T/out" 2> "$T/err" && fail "$p $* accepted"
    local rc=$?
    [ "$rc" = 2 ] || fail "$p $*: exit $rc, not 2: $(cat "$T/err")"
    head -n 1 "$T/err" | grep -Eq "^$p: $want" || fail "$p $*: $(head -n 1 "$T/err")"
    grep -q "^usage:" "$T/err" || fail "$p $*: no usage after the error"
    [ ! -s "$T/out" ] || fail "$p $*: wrote to stdout: $(cat "$T/out")"
}
R=test_backend_run
bad $R "--n: 'abc' is not a whole number from 1 to " --n abc
bad $R "--n: '0' is not a whole number" --n 0
bad $R "--prompt: '5x' is not a whole number" --prompt 5x
bad $R "--seed: '-1' is not a whole number" --seed -1
bad $R "--offload: 'foo' is not one of none, progressive, plain" --offload foo
bad $R "--layout: 'token' is not one of tmajor, layer_major" --layout token
bad $R "--attn: 'fused' is not one of batched, per-item" --attn fused
bad $R "--model: 'llama' is not one of tiny, llada" --model llama
bad $R "--cache: decode.cache: unknown value 'spars'" --cache spars
bad $R "--rho: '0' is not a number in \(0, 1\]" --rho 0
bad $R "--rho: '1.5' is not a number in \(0, 1\]" --rho 1.5
bad $R "--capacity-gib: 'nan' is not a number" --capacity-gib nan
bad $R "--class-timing: '2' is not a whole number from 0 to 1" --class-timing 2
bad $R "--n wants a value" --gen 8 --n
bad $R "'n' is not an option" n 4
bad $R "unknown option --prompts" --prompts 64
M=test_multi_instances
bad $M "--dry-sim: '2' is not a whole number from 0 to 1" --dry-sim 2
bad $M "--capacity-mib: '-1' is not a number in \[0, " --capacity-mib -1
bad $M "--model: 'x' is not one of tiny, llada" --model x
bad $M "--gen wants a value" --gen
for p in $R $M; do
    "$G/$p" --help > "$T/help" 2>&1 || fail "$p --help: exit $?"
    grep -q "^usage:" "$T/help" && grep -q "^  $p " "$T/help" || fail "$p --help: $(cat "$T/help")"
done
# the microbenchmarks' one optional flag (gpu_args_flag): a misspelt one or a second argument is refused (before, a
# misspelt --quick ran the full benchmark)
for bf in bench_attn_batch:--quick bench_kernels:--ncu bench_reuse:--quick bench_sel_align:--ncu; do
    b=${bf%%:*} f=${bf#*:}
    [ -x "$G/$b" ] || fail "$G/$b not built"
    bad "$b" "unknown argument '${f}x'" "${f}x"
    bad "$b" "one optional argument \\($f\\), got 2" "$f" "$f"
    "$G/$b" --help > "$T/help" 2>&1 && grep -q "^  $b \\[$f\\]" "$T/help" || fail "$b --help: $(cat "$T/help")"
done
# a good option list still runs: the multi-instance set-up on simulator backends, no GPU needed
"$G/$M" --dry-sim 1 --n 8 --gen 64 > "$T/dry" 2>&1 || fail "$M --dry-sim 1 --n 8 --gen 64: $(cat "$T/dry")"
grep -q "^config: tiny, 8 requests x (64 + 64)" "$T/dry" || fail "$M's options not taken: $(head -n 1 "$T/dry")"
echo "PASS: $(grep -c '^bad ' "$0") refusals of test_backend_run and test_multi_instances, 8 of the microbenchmarks, --help of each, a good option list"
