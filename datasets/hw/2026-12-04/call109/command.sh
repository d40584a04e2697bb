#!/usr/bin/env bash
# Device call 109 (session 34): the CUDA path at this session's head.  Since call 107 (built at cfaaefc) the L2
# flush's size rule moved into cuda/fill.cu (dkv_cuda_l2_flush_bytes, ad50c21: "no behaviour change", never run on a
# GPU).  Question, set first: do the GPU tests (test_backend, test_backend_lowrank, test_backend_run, test_profile,
# test_multi_instances, test_execute.lua) still pass, and does the validation set (the 9 in-sample and 11 held-out
# points, scripts/hw_session.sh device) meet every target it met on call 107 (all but dream:az:sparse_head's p50 on
# that machine)?  A 34th run set for issue 9.
# .hwbin: scripts/hw_session.sh build at commit a772b89, plus test_backend, test_backend_lowrank, test_backend_run and
# test_profile from build/hw-release/tests/gpu, l2drain, xz'd.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-04/call109/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/s109 bash scripts/hw_session.sh post datasets/hw/2026-12-04/call109, then
#        /usr/bin/python3 scripts/summary_counts.py /tmp/s109
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
X=$OUT/x; mkdir -p "$X"
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" STEPS="validate heldout" DEADLINE=200 \
    bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done $((SECONDS - t0)) s" | tee -a "$OUT/tests.txt"
cd "$OUT" && tar czf tests_logs.tgz x_*.log x_memory.lua x/b.log 2> /dev/null; rm -rf x_* x
cat "$OUT/tests.txt"; cat "$OUT/table.txt" 2> /dev/null | tail -28 | cut -c1-110
