#!/usr/bin/env bash
# test_startup.sh - a dkv process that does not use the GPU does not load cuBLAS: the CUDA build
# resolves cuBLAS and cuBLASLt at the backend's first use (cuda/cublas_dl.c), because loading
# libcublasLt cost every dkv start about 0.4 s (the suite starts dkv about 700 times).  Checked from
# the binary (no libcublas* among its needed libraries; it defines the entry points itself) and from
# the loader (`dkv --version` and a simulation open no libcublas*).  SKIP in a build without CUDA.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v nm >/dev/null && command -v readelf >/dev/null || { echo "SKIP: nm / readelf (binutils) missing"; exit 77; }
syms=$(nm "$DKV")   # (not piped into grep -q: pipefail would see nm's SIGPIPE)
grep -q " T dkv_cublas_open$" <<<"$syms" || { echo "SKIP: dkv built without CUDA (no cuda/cublas_dl.c in it)"; exit 77; }

needed=$(readelf -d "$DKV" | grep NEEDED)
grep -q "libcudart" <<<"$needed" || fail "dkv does not link libcudart: is this the CUDA build? $needed"
! grep -q "libcublas" <<<"$needed" || fail "dkv links cuBLAS at start again: $(grep libcublas <<<"$needed")"
for f in cublasLtMatmul cublasLtMatmulAlgoGetHeuristic cublasCreate_v2 cublasGemmEx; do
    grep -q " T $f$" <<<"$syms" || fail "dkv does not define $f (cuda/cublas_dl.c)"
done

# the loader's own account of what a process opens
LD_DEBUG=files "$DKV" --version >"$T/version.txt" 2>"$T/ld.txt" || fail "dkv --version failed"
grep -q "^dkv " "$T/version.txt" || fail "dkv --version printed no version line"
grep -q "libcudart" "$T/ld.txt" || fail "LD_DEBUG=files shows no library loads (cannot check): $(head -3 "$T/ld.txt")"
! grep -q "libcublas" "$T/ld.txt" || fail "dkv --version loaded cuBLAS: $(grep -m2 libcublas "$T/ld.txt")"
cat >"$T/sim.lua" <<'LUA'
local dkv = require "dkv"
local r = dkv.simulate{model = "llada-8b", gpu = "h200", workload = {kind = "fixed", n = 2, prompt = 64, gen = 32},
  decode = {cache = "dual", block_len = 32}}
print("steps", r.steps)
LUA
LD_DEBUG=files "$DKV" run "$T/sim.lua" >"$T/sim.txt" 2>"$T/ld2.txt" || { cat "$T/sim.txt" "$T/ld2.txt" | tail -5; fail "simulation failed"; }
! grep -q "libcublas" "$T/ld2.txt" || fail "a simulation loaded cuBLAS"
echo "ok: no cuBLAS loaded by --version or a simulation; the CUDA build defines its entry points"
