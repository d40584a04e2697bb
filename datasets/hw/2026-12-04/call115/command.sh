#!/usr/bin/env bash
# Device call 115 (session 36): the low-rank compressor warmed at begin (cuda/arena.c bk_compressor_warm, with
# warm_gemms; docs/COST_MODEL.md "Cold shapes"), judged by CRITERION.md here (committed before the call):
# (i) test_backend (its new check "compressor warmed at begin") and tests/lua/test_execute.lua;
# (ii) a fresh run set: the 9 in-sample, 11 held-out and 5 nv:* points with probe clocks (hw_session.sh device),
#      the 39th set of issue 9;
# (iii) A/B on the same machine: the held-out point bg:dual+prog alone, one process each, with -D
#      warm_compressor=true and false (ab_on, ab_off; then ab_on2 again), into ab.tgz.
# .hwbin: scripts/hw_session.sh build at this commit (dkv) plus test_backend from build/hw-release/tests/gpu, xz'd.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-04/call115/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/s115 bash scripts/hw_session.sh post datasets/hw/2026-12-04/call115;
#        A/B: tar xzf datasets/hw/2026-12-04/call115/ab.tgz -C /tmp/ab115, then
#        /usr/bin/python3 datasets/hw/2026-12-04/call115/ab_steps.py /tmp/ab115
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/*.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_* 2> /dev/null
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
date -u +%Y-%m-%dT%H:%M:%SZ >> "$OUT/device.txt"
t0=$SECONDS
timeout -k 5 150 .hwbin/test_backend > "$OUT/x_test_backend.log" 2>&1; r=$?
echo "test_backend exit $r ($((SECONDS - t0)) s): $(tail -n 1 "$OUT/x_test_backend.log")" | tee -a "$OUT/tests.txt"
grep -E "compressor|offload|projections|FAIL" "$OUT/x_test_backend.log" | head -20 >> "$OUT/tests.txt"
timeout -k 5 60 .hwbin/dkv run tests/lua/test_execute.lua -o "$OUT/x_execute.h5" > "$OUT/x_test_execute.log" 2>&1
echo "test_execute.lua exit $? ($((SECONDS - t0)) s): $(tail -n 1 "$OUT/x_test_execute.log")" | tee -a "$OUT/tests.txt"
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" NOVEL_ARGS="-D clock_probe=true" \
    STEPS="validate heldout novel" DEADLINE=240 bash scripts/hw_session.sh device > "$OUT/b.log" 2>&1
echo "device steps exit $? ($((SECONDS - t0)) s)" | tee -a "$OUT/tests.txt"
for ab in on:true off:false on2:true; do
    d=$OUT/ab/ab_${ab%%:*}; mkdir -p "$d"
    timeout -k 5 60 .hwbin/dkv run experiments/hw_validate.lua -D set=heldout -D backend=cuda -D point=bg:dual+prog \
        -D clock_probe=true -D warm_compressor=${ab#*:} -o "$d/heldout.h5" > "$d/run.log" 2>&1
    echo "ab_${ab%%:*} (warm_compressor=${ab#*:}) exit $? ($((SECONDS - t0)) s)" | tee -a "$OUT/tests.txt"
done
cd "$OUT" && tar czf ab.tgz ab && tar czf tests_logs.tgz x_*.log 2> /dev/null; rm -rf x_* ab
cat "$OUT/tests.txt"; tail -n 40 "$OUT/table.txt" 2> /dev/null | cut -c1-110
