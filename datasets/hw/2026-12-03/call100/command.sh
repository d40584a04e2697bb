#!/usr/bin/env bash
# Device call 100 (session 31): dkv no longer links cuBLAS and cuBLASLt; cuda/cublas_dl.c loads them at the CUDA
# backend's first use (dkv_cuda_ctx_new), because loading libcublasLt cost every dkv start ~0.4 s.  So, on the GPU:
# (t) the backend's tests (test_backend, test_backend_lowrank, test_backend_run: outputs against the CPU reference;
# test_profile; test_multi_instances) and dkv.execute through Lua, all now reaching cuBLAS through the loader;
# (m) `dkv profile --grid memory` against the shipped profile's memory block (the libraries now load after the
# context exists: libraries_bytes 73,400,320 and blas_handle_bytes 67,108,864 in h200-20261203t must not move);
# (s) the start-up time of `dkv --version` here; then (x) the 9 in-sample and 11 held-out validation points with
# the step probe (device memory against cudaMemGetInfo: peaks must not move), one more validation run set.
# .hwbin from `scripts/hw_session.sh build` at this change, the test_backend* and test_profile programs copied in
# from build/hw-release.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call100/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-03/call100
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/*.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_* .hwbin/bwcurve .hwbin/l2probe .hwbin/bench_sel_align 2> /dev/null
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
t0=$SECONDS
for t in test_backend test_backend_lowrank test_backend_run test_profile test_multi_instances; do
    timeout -k 5 120 ".hwbin/$t" > "$OUT/x_$t.log" 2>&1; r=$?
    echo "$t exit $r ($((SECONDS - t0)) s): $(tail -n 1 "$OUT/x_$t.log")" | tee -a "$OUT/tests.txt"
done
timeout -k 5 60 .hwbin/dkv run tests/lua/test_execute.lua -o "$OUT/x_execute.h5" > "$OUT/x_test_execute.log" 2>&1
echo "test_execute.lua exit $? ($((SECONDS - t0)) s): $(tail -n 1 "$OUT/x_test_execute.log")" | tee -a "$OUT/tests.txt"
timeout -k 5 60 .hwbin/dkv profile -o "$OUT/x_memory.lua" --grid memory > "$OUT/x_memory.log" 2>&1
echo "profile --grid memory exit $? ($((SECONDS - t0)) s)" | tee -a "$OUT/tests.txt"
grep -A2 "memory = " "$OUT/x_memory.lua" | tee -a "$OUT/tests.txt"
for i in 1 2 3; do /usr/bin/time -f "dkv --version: %e s wall %U user %S sys" .hwbin/dkv --version > /dev/null 2>> "$OUT/tests.txt"; done
LD_DEBUG=files .hwbin/dkv --version 2>&1 | grep -c "libcublas" | sed 's/^/libcublas lines loading dkv --version: /' >> "$OUT/tests.txt"
X=$OUT/x; mkdir -p "$X"
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" STEPS="validate heldout" DEADLINE=200 \
    bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done $((SECONDS - t0)) s" | tee -a "$OUT/tests.txt"
cd "$OUT" && tar czf tests_logs.tgz x_*.log x_memory.lua x/b.log 2> /dev/null; rm -rf x_* x
cat "$OUT/tests.txt"; cat "$OUT/table.txt" 2> /dev/null | tail -28 | cut -c1-110
