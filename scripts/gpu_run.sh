#!/usr/bin/env bash
# scripts/gpu_run.sh - build dkv's GPU test programs here, run them (and the sanitizers and the
# benchmark) on a GPU machine.  docs/GPU.md explains the two halves.
#
#   bash scripts/gpu_run.sh build    # here: scons release build, binaries + a safetensors sample
#                                    #       into .gpubin/ (ignored by git; carried to the device)
#   bash scripts/gpu_run.sh device   # there: tests, compute-sanitizer memcheck + racecheck,
#                                    #        bench_reuse; logs under $OUT (or ./gpu-out)
#   STEPS="tests sanitize bench" picks what `device` runs (default: all three, plus `crosscheck`).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN=.gpubin

build() {
    scons -Q -j2 variant=gpu mode=release cuda=yes build/gpu-release/tests/gpu || exit 1
    mkdir -p "$BIN"
    cp build/gpu-release/tests/gpu/test_kernels build/gpu-release/tests/gpu/test_kernels_attn \
       build/gpu-release/tests/gpu/test_forward build/gpu-release/tests/gpu/bench_reuse "$BIN"/
    # a safetensors file written by dkv's writer, for the official reader on the device to check
    scons -Q -j2 variant=gpu mode=release build/gpu-release/lib/libdkv_io.a >/dev/null || exit 1
    cat > "$BIN/st_sample.c" <<'C'
#include <stdio.h>
#include "io/safetensors.h"
int main(int argc, char **argv) {
    dkv_st_writer *w; dkv_err e = {0};
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {0.5f, -2, 3}, c[2] = {1.5f, -0.25f};
    uint64_t sa[2] = {2, 3}, sb[1] = {3}, sc[1] = {2};
    dkv_st_writer_new(&w, &e);
    dkv_st_writer_add_f32(w, "model.transformer.blocks.0.q_proj.weight", DKV_ST_F32, 2, sa, a, &e);
    dkv_st_writer_add_f32(w, "b", DKV_ST_BF16, 1, sb, b, &e);
    dkv_st_writer_add_f32(w, "c", DKV_ST_F16, 1, sc, c, &e);
    dkv_st_writer_meta(w, "format", "pt", &e);
    if (dkv_st_writer_write(w, argv[1], &e) != DKV_OK) { fprintf(stderr, "%s\n", e.msg); return 1; }
    dkv_st_writer_free(w);
    return 0;
}
C
    gcc -std=c11 -Icore -I. "$BIN/st_sample.c" -Lbuild/gpu-release/lib -ldkv_io -ldkv_ref -ldkv_model -ldkv_util -lm \
        -o "$BIN/st_sample" && "$BIN/st_sample" "$BIN/sample.safetensors" && rm -f "$BIN/st_sample" "$BIN/st_sample.c"
    ls -la "$BIN"
}

device() {
    OUT=${OUT:-$ROOT/gpu-out}
    mkdir -p "$OUT"
    export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
    if ldd "$BIN/test_kernels" | grep -q "not found"; then   # take the CUDA libraries from the Python wheels
        for d in $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, q, "lib") for p in nvidia.__path__ for q in os.listdir(p)))' 2>/dev/null); do
            LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
        done
    fi
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
    ldd "$BIN/test_kernels" | grep -E "cuda|cublas|not found" | tee -a "$OUT/device.txt"
    local steps=${STEPS:-tests sanitize crosscheck bench} rc=0
    for s in $steps; do
        case $s in
        tests)
            for t in test_kernels test_kernels_attn test_forward; do
                echo "== $t"; "$BIN/$t" 2>&1 | tee -a "$OUT/tests.log"; r=${PIPESTATUS[0]}; echo "== $t exit $r"
                [ "$r" = 0 ] || rc=1
            done ;;
        sanitize)
            for tool in memcheck racecheck; do
                for t in test_kernels test_kernels_attn test_forward; do
                    echo "== compute-sanitizer --tool $tool $t"
                    compute-sanitizer --tool "$tool" --error-exitcode 9 "$BIN/$t" > "$OUT/san.tmp" 2>&1
                    r=$?; tail -n 2 "$OUT/san.tmp"
                    if [ "$r" != 0 ]; then   # what and where, without the backtraces
                        grep -E "^========= +(Race|Invalid|Error|.*hazard|.*between|.*at .*in |.*Current Value)" "$OUT/san.tmp" | sort | uniq -c | sort -rn | head -n 12
                    fi
                    { echo "== compute-sanitizer --tool $tool $t: exit $r"; cat "$OUT/san.tmp"; } >> "$OUT/san.log"
                    rm -f "$OUT/san.tmp"; echo "== $tool $t exit $r"
                    [ "$r" = 0 ] || rc=1
                done
            done ;;
        crosscheck)
            echo "== safetensors file written by dkv, read by the official safetensors package"
            python3 -c "
from safetensors import safe_open
with safe_open('$BIN/sample.safetensors', framework='pt') as f:
    print('metadata', f.metadata())
    for k in sorted(f.keys()):
        t = f.get_tensor(k); print(k, t.dtype, tuple(t.shape), t.float().flatten().tolist())
" 2>&1 | tee "$OUT/crosscheck.log" ;;
        bench)
            echo "== bench_reuse"; "$BIN/bench_reuse" 2>&1 | tee "$OUT/bench.log"; [ "${PIPESTATUS[0]}" = 0 ] || rc=1 ;;
        esac
    done
    return $rc
}

case "${1:-}" in
build) build ;;
device) device ;;
*) echo "usage: $0 build|device" >&2; exit 2 ;;
esac
