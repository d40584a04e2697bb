#!/usr/bin/env bash
# scripts/gpu_run.sh - build dkv's GPU test programs here, run them (and the sanitizers and the
# benchmark) on a GPU machine.  docs/GPU.md explains the two halves.
#
#   bash scripts/gpu_run.sh build    # here: scons release build, binaries + a safetensors sample
#                                    #       into .gpubin/ (ignored by git; carried to the device)
#   bash scripts/gpu_run.sh device   # there: tests, compute-sanitizer memcheck + racecheck,
#                                    #        bench_reuse; logs under $OUT (or ./gpu-out)
#   STEPS="tests sanitize bench" picks what `device` runs (default: all three, plus `crosscheck`).
#   bash scripts/gpu_run.sh --help   # this text and the commands (each command is described in this script)
# A relative path given to a command (post-score's FILES_AT, CPU.h5 and RES) is taken from the folder the script
# is run from (it then works in the repository root).
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

# ---- the CUDA backend (issue 5): engine + backend tests, sanitizer, measurements, dkv.execute
# here:  bash scripts/gpu_run.sh build-backend      (binaries + the dkv program and its libraries
#                                                   into .execbin/, ignored by git, carried)
# there: run(command="bash scripts/gpu_run.sh device-backend", carry=[".execbin"])
#        BENCH=0 skips the measurements; logs under $OUT (backend.log, san_backend.log, bench.log)
EXB=.execbin

build_backend() {
    scons -Q -j2 variant=exec mode=release cuda=yes build/exec-release/tests/gpu build/exec-release/dkv || exit 1
    rm -rf "$EXB"; mkdir -p "$EXB/lib"
    cp build/exec-release/tests/gpu/test_backend build/exec-release/tests/gpu/test_backend_lowrank \
       build/exec-release/tests/gpu/test_backend_run build/exec-release/dkv "$EXB"/
    # the dkv program's shared libraries that a bare CUDA image may lack (not libc, libstdc++, CUDA)
    ldd build/exec-release/dkv | awk '$3 ~ /^\// {print $3}' | grep -v -E "libc\.so|libm\.so|libstdc|libgcc_s|libpthread|libdl\.so|librt\.so|libresolv|ld-linux|cuda|cublas" \
        | while read -r l; do cp -L "$l" "$EXB/lib/"; done
    du -sh "$EXB"
}

device_backend() {
    OUT=${OUT:-$ROOT/gpu-out}
    mkdir -p "$OUT"
    export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/device.txt"
    local rc=0 hard=0 r   # hard: a crash, a sanitizer error or a failed smoke run (no measurements then)
    for t in test_backend test_backend_lowrank test_backend_run; do
        echo "== $t"; "$EXB/$t" 2>&1 | tee -a "$OUT/backend.log"; r=${PIPESTATUS[0]}; echo "== $t exit $r"
        [ "$r" = 0 ] || rc=1
        { [ "$r" = 0 ] || [ "$r" = 1 ]; } || hard=1
        [ "$t" = test_backend_run ] && [ "$r" != 0 ] && hard=1
    done
    for t in test_backend test_backend_lowrank; do
        echo "== compute-sanitizer --tool memcheck $t"
        timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$EXB/$t" > "$OUT/san.tmp" 2>&1
        r=$?; tail -n 3 "$OUT/san.tmp"
        [ "$r" = 0 ] || grep -E "^========= +(Invalid|Error|.*at .*in )" "$OUT/san.tmp" | sort | uniq -c | sort -rn | head -n 12
        { echo "== memcheck $t: exit $r"; cat "$OUT/san.tmp"; } >> "$OUT/san_backend.log"; rm -f "$OUT/san.tmp"
        echo "== memcheck $t exit $r"; [ "$r" = 0 ] || { rc=1; hard=1; }
    done
    echo "== dkv run tests/lua/test_execute.lua (dkv.execute through Lua)"
    LD_LIBRARY_PATH="$ROOT/$EXB/lib:$LD_LIBRARY_PATH" "$EXB/dkv" run tests/lua/test_execute.lua -o "$OUT/execute.h5" 2>&1 \
        | tee -a "$OUT/backend.log"
    r=${PIPESTATUS[0]}; echo "== test_execute.lua exit $r"; [ "$r" = 0 ] || rc=1   # a failed assert fails the call
    if [ "$hard" != 0 ] || [ "${BENCH:-1}" = 0 ]; then return $rc; fi
    local B="$EXB/test_backend_run" L="--model llada --capacity-gib 40"
    bench() { echo "== test_backend_run $*"; timeout "${BENCH_LIMIT:-150}" "$B" "$@" 2>&1 | tee -a "$OUT/bench.log" | grep -E "^(cuda|sim|kernel|FAIL)"; }
    bench $L --n 32 --prompt 512 --gen 256 --cache sparse --block 32 --rho 0.5
    bench $L --n 1 --prompt 512 --gen 256 --cache sparse --block 32 --rho 0.5
    bench $L --n 8 --prompt 512 --gen 256 --cache sparse --block 32 --rho 0.5
    bench $L --n 4 --prompt 512 --gen 128 --cache dual --block 32 --offload none
    bench $L --n 4 --prompt 512 --gen 128 --cache dual --block 32 --offload progressive
    bench $L --n 32 --prompt 1024 --gen 256 --cache sparse --block 32 --rho 0.5
    bench $L --n 32 --prompt 512 --gen 256 --cache sparse --block 32 --rho 0.5 --class-timing 0
    bench $L --n 32 --prompt 2048 --gen 256 --cache sparse --block 32 --rho 0.5
    return $rc
}

# ---- batched attention + fused RoPE/KV store (issue 5 speed; docs/perf_notes.md, "perf2")
# here:  bash scripts/gpu_run.sh build-perf     (test and bench programs into .perf2bin/, ignored, carried)
# there: run(command="bash scripts/gpu_run.sh device-perf", carry=[".perf2bin"], timeout_s=200)
#        correctness first (test_kernels_attn, test_forward, test_backend), then the 32-request
#        sparse run batched, bench_reuse --quick, the same run per item; a table last; logs in $OUT
PB=.perf2bin

build_perf() {
    scons -Q -j2 variant=perf2 mode=release cuda=yes build/perf2-release/tests/gpu || exit 1
    rm -rf "$PB"; mkdir -p "$PB"
    for t in test_kernels_attn test_forward test_backend test_backend_run bench_reuse; do
        cp build/perf2-release/tests/gpu/$t "$PB"/
    done
    du -sh "$PB"
}

device_perf() {
    OUT=${OUT:-$ROOT/gpu-out}
    mkdir -p "$OUT"
    export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/device.txt"
    local rc=0 ok=1 r t0 tab="$OUT/table.txt"
    : > "$tab"
    for t in test_kernels_attn test_forward test_backend; do
        t0=$SECONDS; timeout 60 "$PB/$t" > "$OUT/$t.log" 2>&1; r=$?
        grep -E "^FAIL" "$OUT/$t.log" | head -n 12
        printf "%-18s exit %-3s %3s PASS %3s FAIL  %3ss\n" "$t" "$r" "$(grep -c '^PASS' "$OUT/$t.log")" \
            "$(grep -c '^FAIL' "$OUT/$t.log")" "$((SECONDS - t0))" | tee -a "$tab"
        [ "$r" = 0 ] || { rc=1; ok=0; }
    done
    grep -E "attention batch|batch ==" "$OUT/test_kernels_attn.log" | cut -c1-150
    local L="--model llada --capacity-gib 40 --n 32 --prompt 512 --gen 256 --cache sparse --block 32 --rho 0.5"
    run32() {   # $1: batched | per-item
        t0=$SECONDS; timeout "$2" "$PB/test_backend_run" $L --attn "$1" > "$OUT/run32_$1.log" 2>&1; r=$?
        grep -E "^(cuda|sim|kernel)" "$OUT/run32_$1.log" | cut -c1-400
        printf "32x(512+256) sparse %-8s exit %-3s %s  (%ss)\n" "$1" "$r" \
            "$(grep -oE '[0-9.]+ tokens/s, [0-9]+ steps, mean step [0-9.]+ ms' "$OUT/run32_$1.log" | head -n 1)" \
            "$((SECONDS - t0))" | tee -a "$tab"
        grep -oE "attention [0-9.]+ s \([0-9]+%, [0-9]+ launches\)" "$OUT/run32_$1.log" | sed 's/^/    /' | tee -a "$tab"
    }
    if [ "$ok" = 1 ] || [ "${FORCE:-0}" = 1 ]; then
        run32 batched 70
        t0=$SECONDS; timeout 50 "$PB/bench_reuse" --quick > "$OUT/bench.log" 2>&1; r=$?
        echo "bench_reuse --quick exit $r ($((SECONDS - t0))s)" | tee -a "$tab"
        grep -E "^(dual|fused|SUMMARY)|Refresh|Reuse step" "$OUT/bench.log" | cut -c1-160 | tee -a "$tab"
        run32 per-item 55
    fi
    echo; echo "==== table"; cat "$tab"
    return $rc
}

# ---- quality on the trained tiny dLLM (issue 10): CUDA vs core/ref, FP8 KV, low-rank rebuild
# here:  bash scripts/gpu_run.sh build-quality     (scons -j2; 6 programs into build/qbin/,
#                                                  ignored by git as all of build/, carried)
# there: run(command="bash scripts/gpu_run.sh device-quality", carry=["build/qbin"])
#        ~40-70 s: most of it core/ref on the CPU (test_backend_tiny); each program under
#        timeout LIMIT (90 s); ONLY="test_backend_tiny ..." runs a subset; SAN=1 adds memcheck
#        of test_backend_lossy, SAN_FP8=1 of test_backend_fp8's kernels.
#        Logs under $OUT (quality.log).  The model and prompts come from the working tree.
QB=build/qbin

build_quality() {
    scons -Q -j2 build/release/tests/gpu || exit 1
    rm -rf "$QB"; mkdir -p "$QB"
    cp build/release/tests/gpu/test_backend_tiny build/release/tests/gpu/test_backend_lossy \
       build/release/tests/gpu/test_backend_lowrank build/release/tests/gpu/test_backend \
       build/release/tests/gpu/test_backend_fp8 build/release/tests/gpu/test_kernels_attn "$QB"/
    du -sh "$QB"
}

device_quality() {
    OUT=${OUT:-$ROOT/gpu-out}
    mkdir -p "$OUT"
    export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
    local rc=0 r t0
    for t in ${ONLY:-test_backend_fp8 test_backend_lossy test_backend_lowrank test_backend test_backend_tiny}; do
        t0=$SECONDS
        echo "== $t"; timeout "${LIMIT:-90}" "$QB/$t" 2>&1 | tee -a "$OUT/quality.log"; r=${PIPESTATUS[0]}
        echo "== $t exit $r ($((SECONDS - t0)) s)" | tee -a "$OUT/quality.log"
        [ "$r" = 0 ] || rc=1
    done
    if [ "${SAN:-0}" = 1 ]; then
        echo "== compute-sanitizer --tool memcheck test_backend_lossy"
        timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 "$QB/test_backend_lossy" > "$OUT/san.log" 2>&1
        r=$?; tail -n 3 "$OUT/san.log"; echo "== memcheck exit $r"; [ "$r" = 0 ] || rc=1
    fi
    if [ "${SAN_FP8:-0}" = 1 ]; then   # the FP8 kernels (store, attention, gather, reorder, decompress)
        echo "== compute-sanitizer --tool memcheck test_backend_fp8 kernels"
        timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$QB/test_backend_fp8" kernels > "$OUT/san_fp8.log" 2>&1
        r=$?; tail -n 3 "$OUT/san_fp8.log"; echo "== memcheck fp8 exit $r"; [ "$r" = 0 ] || rc=1
    fi
    grep -E "^(FAIL|PASS:|FAIL:)|agreement|FP8 vs bf16|rel-L2|fp8 block|same capacity|same blocks|cudaMemGetInfo|offload ratio" "$OUT/quality.log" | cut -c1-200
    return $rc
}

# ---- CPU against CUDA with trajectory replay (issue 10; docs/CPU.md "CPU against CUDA")
# here:  bash scripts/gpu_run.sh build-agree   (hw_session.sh's static dkv + test_backend_tiny into
#        build/agree_bin, OpenBLAS gzipped: ~23 MB, ignored by git as all of build/, carried)
# there: run(command="bash scripts/gpu_run.sh device-agree", carry=["build/agree_bin"])
#        test_backend_tiny all (core/ref teacher-forced, every cache mode) and
#        experiments/hw_cpu_agreement.lua, one process per cache mode, all in parallel, each under
#        timeout LIMIT (200 s); raw logs and HDF5 under $OUT, summary lines printed.
AB=build/agree_bin

build_agree() {
    bash scripts/hw_session.sh build >/dev/null || exit 1
    scons -Q -j2 build/release/tests/gpu/test_backend_tiny || exit 1
    rm -rf "$AB"; mkdir -p "$AB/lib"
    cp .hwbin/dkv build/release/tests/gpu/test_backend_tiny "$AB"/
    for l in .hwbin/lib/*; do gzip -c "$l" > "$AB/lib/$(basename "$l").gz"; done
    rm -rf .hwbin   # untracked (not ignored) in a worktree: it would travel with the tree
    du -sh "$AB"
}

device_agree() {
    OUT=${OUT:-$ROOT/gpu-out}
    mkdir -p "$OUT"
    local LIB=/tmp/agree_lib L=${LIMIT:-200} m rc=0
    mkdir -p "$LIB"
    for l in "$AB"/lib/*.gz; do gunzip -c "$l" > "$LIB/$(basename "$l" .gz)"; done
    export LD_LIBRARY_PATH="$LIB:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
    ( t0=$SECONDS; timeout "$L" "$AB/test_backend_tiny" all > "$OUT/tiny.log" 2>&1
      echo "== test_backend_tiny exit $? ($((SECONDS - t0)) s)" >> "$OUT/tiny.log" ) &
    for m in ${MODES:-none prefix dual sparse_head sparse_shared}; do
        ( t0=$SECONDS; timeout "$L" "$AB/dkv" run experiments/hw_cpu_agreement.lua -D modes="$m" \
              -o "$OUT/agree_$m.h5" > "$OUT/agree_$m.log" 2>&1
          echo "== agree $m exit $? ($((SECONDS - t0)) s)" >> "$OUT/agree_$m.log" ) &
    done
    # the sparse modes on test_backend_tiny's prompts and schedule (32 generated, 8 steps a block)
    ( t0=$SECONDS; timeout "$L" "$AB/dkv" run experiments/hw_cpu_agreement.lua -D modes=sparse_head,sparse_shared,sparse_measured \
          -D prompts=datasets/workloads/tiny_prompts.jsonl -D gen=32 -D steps=8 -o "$OUT/agree_tinyprompts.h5" \
          > "$OUT/agree_tinyprompts.log" 2>&1
      echo "== agree tinyprompts exit $? ($((SECONDS - t0)) s)" >> "$OUT/agree_tinyprompts.log" ) &
    wait
    grep -hE "criterion|agreement|PASS|FAIL|differs|mismatch|== " "$OUT"/tiny.log "$OUT"/agree_*.log | cut -c1-260
    grep -q "exit 0" "$OUT/tiny.log" || rc=1
    for m in "$OUT"/agree_*.log; do grep -q "exit 0" "$m" || rc=1; done
    return $rc
}

# ---- selection replay of the sparse modes (issue 10; docs/CPU.md "Selection replay")
# here:  bash scripts/gpu_run.sh build-agree
# there: run(command="OUT=$OUT bash scripts/gpu_run.sh device-ties", carry=["build/agree_bin"])
#        (~1.5-2.5 min: everything in parallel, each under timeout LIMIT (170 s)): test_backend_tiny
#        sparse-head sparse-shared sparse-measured (core/ref replaying the GPU's selections) and
#        experiments/hw_cpu_agreement.lua for sparse_head and sparse_shared on the held-out prompts
#        and on test_backend_tiny's prompts and schedule.  Comes back: $OUT/ties.tgz (every log and
#        HDF5) and $OUT/summary.txt (the verdict lines).  Without a GPU the experiment's stand-in
#        runs and test_backend_tiny skips (the post-processing check).
device_ties() {
    OUT=${OUT:-$ROOT/gpu-out}
    local W=$OUT/ties L=${LIMIT:-170} LIB=/tmp/agree_lib rc=0 m f
    mkdir -p "$W" "$LIB"
    for f in "$AB"/lib/*.gz; do gunzip -c "$f" > "$LIB/$(basename "$f" .gz)"; done
    export LD_LIBRARY_PATH="$LIB:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$W/device.txt" 2>&1 ||
        echo "no nvidia-smi" > "$W/device.txt"
    ( t0=$SECONDS; timeout "$L" "$AB/test_backend_tiny" sparse-head sparse-shared sparse-measured > "$W/tiny.log" 2>&1
      echo "== test_backend_tiny exit $? ($((SECONDS - t0)) s)" >> "$W/tiny.log" ) &
    for m in sparse_head sparse_shared; do
        ( t0=$SECONDS; timeout "$L" "$AB/dkv" run experiments/hw_cpu_agreement.lua -D modes="$m" \
              -o "$W/agree_$m.h5" > "$W/agree_$m.log" 2>&1
          echo "== agree $m exit $? ($((SECONDS - t0)) s)" >> "$W/agree_$m.log" ) &
    done
    ( t0=$SECONDS; timeout "$L" "$AB/dkv" run experiments/hw_cpu_agreement.lua -D modes=sparse_head,sparse_shared \
          -D prompts=datasets/workloads/tiny_prompts.jsonl -D gen=32 -D steps=8 -o "$W/agree_tinyprompts.h5" \
          > "$W/agree_tinyprompts.log" 2>&1
      echo "== agree tinyprompts exit $? ($((SECONDS - t0)) s)" >> "$W/agree_tinyprompts.log" ) &
    wait
    { cat "$W/device.txt"
      grep -hE "criterion|selection replay|token replay|PASS|FAIL|SKIP|differs|mismatch|== " "$W"/tiny.log \
          "$W"/agree_*.log | cut -c1-400; } > "$OUT/summary.txt"
    grep -qE "exit 0 " "$W/tiny.log" || rc=1   # on the device machine a skip (77: no usable GPU) is a failed call
    for f in "$W"/agree_*.log; do grep -q "exit 0 " "$f" || rc=1; done
    tar czf "$OUT/ties.tgz" -C "$OUT" ties && rm -rf "$W"
    cat "$OUT/summary.txt"
    echo "device-ties: rc $rc"
    return $rc
}

# ---- FP8 KV stored as e4m3 bytes on the device (session 11; docs/GPU.md "Lossy policies")
# here:  bash scripts/gpu_run.sh build-fp8    (build-quality and build-agree: build/qbin, build/agree_bin)
# there: run(command="bash scripts/gpu_run.sh device-fp8", carry=["build/qbin", "build/agree_bin"], timeout_s=300)
#        ~2 min: test_backend_fp8, test_backend_lossy, test_kernels_attn, test_backend (each under
#        LIMIT, 100 s), memcheck of test_backend_fp8's kernels (SAN_FP8=0 skips it), then, alone on
#        the GPU, the CPU backend against the CUDA backend with FP8 KV (hw_cpu_agreement.lua modes
#        dual and dual_fp8 on tiny_prompts, 32 generated, 8 steps a block).  Logs under $OUT.
build_fp8() {
    build_quality
    build_agree
}

device_fp8() {
    OUT=${OUT:-$ROOT/gpu-out}
    mkdir -p "$OUT"
    local rc=0 LIB=/tmp/agree_lib t0
    ONLY="${ONLY:-test_backend_fp8 test_backend_lossy test_kernels_attn test_backend}" LIMIT=${LIMIT:-100} \
        SAN_FP8=${SAN_FP8:-1} device_quality || rc=1
    mkdir -p "$LIB"
    for l in "$AB"/lib/*.gz; do gunzip -c "$l" > "$LIB/$(basename "$l" .gz)"; done
    t0=$SECONDS
    LD_LIBRARY_PATH="$LIB:$LD_LIBRARY_PATH" timeout "${LIMIT:-100}" "$AB/dkv" run experiments/hw_cpu_agreement.lua \
        -D modes=dual,dual_fp8 -D prompts=datasets/workloads/tiny_prompts.jsonl -D gen=32 -D steps=8 \
        -o "$OUT/agree_fp8.h5" > "$OUT/agree_fp8.log" 2>&1
    echo "== agree dual,dual_fp8 exit $? ($((SECONDS - t0)) s)" >> "$OUT/agree_fp8.log"
    grep -E "criterion|PASS|FAIL|mismatch|== " "$OUT/agree_fp8.log" | cut -c1-260
    grep -q "exit 0" "$OUT/agree_fp8.log" || rc=1
    ! grep -q "FAIL" "$OUT/agree_fp8.log" || rc=1
    return $rc
}

# ---- held-out scoring on the CUDA backend (issue 10: quality_frontier.lua -D backend=cuda, docs/GPU.md
# "Held-out scoring")
# here:  bash scripts/gpu_run.sh build-score   (build-agree's static dkv + test_backend_score into
#        build/score_bin, the shared libraries gzipped; ignored by git as all of build/, carried)
# there: run(command="bash scripts/gpu_run.sh device-score", carry=["build/score_bin"], timeout_s=300)
#        in parallel, each under timeout LIMIT (200 s): experiments/quality_frontier.lua -D full=true
#        -D backend=cuda -D keep_going=true (a failing point is listed, not fatal), and
#        tests/gpu/test_backend_score one process per configuration
#        (CONFS), and tests/gpu/test_backend_lowrank (the range finder; range_finder.log);
#        FRONTIER_ONLY=a,b runs only those frontier points (and none: -D only);
#        $OUT gets device.txt, summary.txt and score.tgz (frontier_cuda.h5 and every log)
# here:  RES=DIR bash scripts/gpu_run.sh post-score FILES_AT CPU.h5
#        (CPU.h5: the same frontier with -D backend=cpu -D full=true, run here) unpacks score.tgz into
#        RES (default results/score), prints the GPU test's verdicts, scripts/quality_compare.py
#        CPU.h5 frontier_cuda.h5 (also as RES/compare.md) and plots RES/quality_frontier_cuda.png.
#        FILES_AT/score.tgz and CPU.h5 are checked, and a RES that is not empty (results already
#        there) is refused (exit 2), before anything is written; compare.txt and compare.md are
#        written under a temporary name and renamed, and a failed quality_compare.py fails post-score.
SB=build/score_bin
SCORE_CONFS="none prefix dual sparse-head sparse-shared lowrank fp8"

build_score() {
    bash scripts/hw_session.sh build >/dev/null || exit 1
    scons -Q -j2 build/release/tests/gpu/test_backend_score build/release/tests/gpu/test_backend_lowrank || exit 1
    rm -rf "$SB"; mkdir -p "$SB/lib"
    cp .hwbin/dkv build/release/tests/gpu/test_backend_score build/release/tests/gpu/test_backend_lowrank "$SB"/
    # the test's own libraries (OpenBLAS and its runtime) are dkv's too: .hwbin/lib has them
    for l in .hwbin/lib/*; do gzip -c "$l" > "$SB/lib/$(basename "$l").gz"; done
    rm -rf .hwbin   # untracked (not ignored) in a worktree: it would travel with the tree
    du -sh "$SB"
}

device_score() {
    OUT=${OUT:-$ROOT/gpu-out}
    mkdir -p "$OUT"
    local LIB=/tmp/score_lib L=${LIMIT:-200} W=/tmp/score_work c rc=0
    rm -rf "$W"; mkdir -p "$LIB" "$W"
    for l in "$SB"/lib/*.gz; do gunzip -c "$l" > "$LIB/$(basename "$l" .gz)"; done
    export LD_LIBRARY_PATH="$LIB:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
    ( t0=$SECONDS; timeout "$L" "$SB/dkv" run experiments/quality_frontier.lua -D full=true -D backend=cuda \
          -D keep_going=true ${FRONTIER_ONLY:+-D only=$FRONTIER_ONLY} -o "$W/frontier_cuda.h5" \
          > "$W/frontier_cuda.log" 2>&1
      echo "== frontier cuda exit $? ($((SECONDS - t0)) s)" >> "$W/frontier_cuda.log" ) &
    if [ -x "$SB/test_backend_lowrank" ]; then   # the range finder itself (rank deficiency included)
        ( t0=$SECONDS; timeout "$L" "$SB/test_backend_lowrank" > "$W/range_finder.log" 2>&1
          echo "== test_backend_lowrank exit $? ($((SECONDS - t0)) s)" >> "$W/range_finder.log" ) &
    fi
    for c in ${CONFS:-$SCORE_CONFS}; do
        ( t0=$SECONDS; timeout "$L" "$SB/test_backend_score" "$c" > "$W/score_$c.log" 2>&1
          echo "== test_backend_score $c exit $? ($((SECONDS - t0)) s)" >> "$W/score_$c.log" ) &
    done
    wait
    { cat "$W/frontier_cuda.log"; grep -hE "criterion|^(PASS|FAIL|SKIP)|== " "$W"/score_*.log | cut -c1-400
      [ -f "$W/range_finder.log" ] && grep -hE "^--|^(PASS|FAIL|SKIP)|== " "$W/range_finder.log" | cut -c1-400; } \
        | tee "$OUT/summary.txt"
    tar -czf "$OUT/score.tgz" -C "$W" .
    grep -q "exit 0" "$W/frontier_cuda.log" || rc=1
    [ ! -f "$W/range_finder.log" ] || grep -q "exit 0 " "$W/range_finder.log" || rc=1
    for c in "$W"/score_*.log; do grep -q "exit 0 " "$c" || rc=1; done
    return $rc
}

post_score() {
    [ $# = 2 ] || { echo "usage: [RES=DIR] gpu_run.sh post-score FILES_AT CPU.h5" >&2; return 2; }
    local dir cpu res PY=/usr/bin/python3 rc=0 r
    dir=$(here "$1"); cpu=$(here "$2")
    if [ -n "${RES:-}" ]; then res=$(here "$RES"); else res=results/score; fi
    [ -f "$dir/score.tgz" ] || { echo "post-score: $dir/score.tgz is missing (the device call's files)" >&2; return 1; }
    [ -f "$cpu" ] || { echo "post-score: CPU.h5 $cpu: no such file" >&2; return 1; }
    if [ -e "$res" ] && { [ ! -d "$res" ] || [ -n "$(ls -A "$res")" ]; }; then
        echo "post-score: RES $res already holds results (it would be overwritten): give another RES=" >&2; return 2
    fi
    mkdir -p "$res" && tar -xzf "$dir/score.tgz" -C "$res" || return 1
    [ -f "$dir/device.txt" ] && { echo "device: $(head -n 1 "$dir/device.txt")"; cp "$dir/device.txt" "$res/"; }
    echo "== tests/gpu/test_backend_score (criteria in each line)"
    local n_logs=0
    for f in "$res"/score_*.log; do
        [ -f "$f" ] || continue
        n_logs=$((n_logs + 1))
        grep -hE "criterion|^(PASS|FAIL|SKIP)|== test_backend_score" "$f" | cut -c1-400
        grep -q "exit 0 " "$f" || rc=1
    done
    [ "$n_logs" -gt 0 ] || { echo "post-score: no score_*.log in $dir/score.tgz" >&2; rc=1; }
    echo "== the CUDA frontier"
    grep -E "== frontier" "$res/frontier_cuda.log" || true
    if [ ! -s "$res/frontier_cuda.h5" ]; then
        echo "post-score: frontier_cuda.h5 missing from score.tgz (the run failed: $res/frontier_cuda.log)" >&2
        tail -n 5 "$res/frontier_cuda.log" >&2
        return 1
    fi
    $PY scripts/quality_compare.py "$cpu" "$res/frontier_cuda.h5" | tee "$res/compare.txt.tmp"
    r=${PIPESTATUS[0]}   # quality_compare.py's status, not tee's
    if [ "$r" != 0 ]; then
        rm -f "$res/compare.txt.tmp"; echo "post-score: scripts/quality_compare.py failed (exit $r)" >&2; return 1
    fi
    mv "$res/compare.txt.tmp" "$res/compare.txt" || return 1
    if ! $PY scripts/quality_compare.py "$cpu" "$res/frontier_cuda.h5" --md > "$res/compare.md.tmp"; then
        rm -f "$res/compare.md.tmp"; echo "post-score: scripts/quality_compare.py --md failed" >&2; return 1
    fi
    mv "$res/compare.md.tmp" "$res/compare.md" || return 1
    $PY scripts/plot_quality_frontier.py "$res/frontier_cuda.h5" "$res/quality_frontier_cuda.png" || rc=1
    return $rc
}

# ---- the CUDA low-rank path after the fetch fix (issue 10; docs/GPU.md "Lossy policies")
# here:  bash scripts/gpu_run.sh build-lowrank   (build-score, plus test_backend_lossy; the
#        executables gzipped so that build/score_bin and the tree fit the device call's carry)
#        PREFIX_LOSSY=path adds that build of test_backend_lossy as test_backend_lossy_prefix (a
#        build of an earlier tree: shows whether the test can fail)
# there: run(command="bash scripts/gpu_run.sh device-lowrank", carry=["build/score_bin"], timeout_s=330)
#        in parallel, each under timeout LIMIT (240 s): device-score (the whole CUDA frontier,
#        test_backend_score per configuration, test_backend_lowrank), test_backend_lossy (and its
#        _prefix build), experiments/hw_cpu_agreement.lua -D modes=dual_lowrank on test_backend_tiny's
#        prompts and schedule and on the held-out prompts.  Comes back: summary.txt, score.tgz
#        (post-score reads it), lowrank.tgz (every other log and HDF5), device.txt.
build_lowrank() {
    build_score
    scons -Q -j2 build/release/tests/gpu/test_backend_lossy || exit 1
    cp build/release/tests/gpu/test_backend_lossy "$SB"/
    [ -z "${PREFIX_LOSSY:-}" ] || cp "$PREFIX_LOSSY" "$SB/test_backend_lossy_prefix"
    for f in "$SB"/dkv "$SB"/test_backend_*; do gzip -9f "$f"; done
    du -sh "$SB"
}

device_lowrank() {
    OUT=${OUT:-$ROOT/gpu-out}
    mkdir -p "$OUT"
    local W=/tmp/lowrank_work L=${LIMIT:-240} f rc=0 p
    rm -rf "$W"; mkdir -p "$W"
    for f in "$SB"/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
    chmod +x "$SB"/dkv "$SB"/test_backend_*
    for p in test_backend_lossy test_backend_lossy_prefix; do
        [ -x "$SB/$p" ] || continue
        ( t0=$SECONDS; LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} timeout "$L" "$SB/$p" > "$W/$p.log" 2>&1
          echo "== $p exit $? ($((SECONDS - t0)) s)" >> "$W/$p.log" ) &
    done
    ( export LD_LIBRARY_PATH="/tmp/score_lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
      mkdir -p /tmp/score_lib; for f in "$SB"/lib/*.gz; do gunzip -c "$f" > "/tmp/score_lib/$(basename "$f" .gz)"; done
      t0=$SECONDS; timeout "$L" "$SB/dkv" run experiments/hw_cpu_agreement.lua -D modes=dual_lowrank \
          -D prompts=datasets/workloads/tiny_prompts.jsonl -D gen=32 -D steps=8 -o "$W/agree_lowrank_tiny.h5" \
          > "$W/agree_lowrank_tiny.log" 2>&1
      echo "== agree dual_lowrank tiny_prompts exit $? ($((SECONDS - t0)) s)" >> "$W/agree_lowrank_tiny.log"
      t0=$SECONDS; timeout "$L" "$SB/dkv" run experiments/hw_cpu_agreement.lua -D modes=dual_lowrank \
          -o "$W/agree_lowrank_heldout.h5" > "$W/agree_lowrank_heldout.log" 2>&1
      echo "== agree dual_lowrank heldout exit $? ($((SECONDS - t0)) s)" >> "$W/agree_lowrank_heldout.log" ) &
    LIMIT=$L device_score || rc=1
    wait
    { grep -hE "^(PASS|FAIL|SKIP)|== |tiny dual" "$W"/test_backend_lossy*.log | cut -c1-400
      grep -hE "criterion|PASS|FAIL|mismatch|== " "$W"/agree_*.log | cut -c1-400; } | tee -a "$OUT/summary.txt"
    grep -q "exit 0 " "$W/test_backend_lossy.log" || rc=1
    for f in "$W"/agree_*.log; do grep -q "exit 0 " "$f" || rc=1; ! grep -q "FAIL" "$f" || rc=1; done
    tar -czf "$OUT/lowrank.tgz" -C "$W" .
    echo "device-lowrank: rc $rc"
    return $rc
}

usage() {
    echo "usage: $0 build|device|build-backend|device-backend|build-perf|device-perf|build-quality|device-quality|build-agree|device-agree|device-ties|build-fp8|device-fp8|build-score|device-score|post-score|build-lowrank|device-lowrank"
}

case "${1:-}" in
build) build ;;
device) device ;;
build-backend) build_backend ;;
device-backend) device_backend ;;
build-perf) build_perf ;;
device-perf) device_perf ;;
build-quality) build_quality ;;
device-quality) device_quality ;;
build-agree) build_agree ;;
device-agree) device_agree ;;
device-ties) device_ties ;;
build-fp8) build_fp8 ;;
device-fp8) device_fp8 ;;
build-score) build_score ;;
device-score) device_score ;;
build-lowrank) build_lowrank ;;
device-lowrank) device_lowrank ;;
post-score) shift; post_score "$@" ;;
-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; echo; usage ;;
*) usage >&2; exit 2 ;;
esac
