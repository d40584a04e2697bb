#!/usr/bin/env bash
# Device call 127 (session 43): the GPU programs whose option parsing session 43 rewrote (tests/gpu/gpu_args.h:
# test_backend_run, test_multi_instances, and the microbenchmarks' one flag) still run on the H200 with good options,
# and refuse a bad one there too.  Question: does each exit 0 (the refusal: 2)?  Exit status is all that is judged
# (the benchmarks' timings are printed, not compared: the programs run side by side).
# .hwbin: build/release/tests/gpu's six programs at this commit's tree (gcc + nvcc -arch=sm_90, libcudart from the
# device), xz'd.
# there: run(command="bash datasets/hw/2026-12-05/call127/command.sh", carry=[".hwbin"], timeout_s=300)
set -u
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
(cd .hwbin && xz -d ./*.xz && chmod +x ./*)
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader | tee "$OUT/device.txt"
one() {   # name, expected exit, command...
    local name=$1 want=$2; shift 2
    local t0=$SECONDS
    timeout 200 "$@" > "$OUT/$name.log" 2>&1; local r=$?
    echo "$name: exit $r (want $want, $((SECONDS - t0)) s): $(grep -E '^(PASS|FAIL|SKIP|cuda:)' "$OUT/$name.log" | tail -n 1 | cut -c1-160)" > "$OUT/$name.sum"
    [ "$r" = "$want" ]
}
B=.hwbin
one run_smoke 0 $B/test_backend_run &
one run_llada 0 $B/test_backend_run --model llada --capacity-gib 40 --n 4 --prompt 512 --gen 128 --cache dual --block 32 --offload progressive &
one multi 0 $B/test_multi_instances &
one attn_batch 0 $B/bench_attn_batch --quick &
one reuse 0 $B/bench_reuse --quick &
one kernels 0 $B/bench_kernels --ncu &
one sel_align 0 $B/bench_sel_align --ncu &
one bad_offload 2 $B/test_backend_run --offload foo &
wait
rc=0
for f in "$OUT"/*.sum; do cat "$f"; grep -q "exit \([0-9]*\) (want \1," "$f" || rc=1; done
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.sum && rm -f ./*.log ./*.sum)
exit $rc
