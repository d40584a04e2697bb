#!/usr/bin/env bash
# Device call 33 (session 13): the GPU tests the warming backend touches (every backend now warms its GEMM
# kernels at begin, keeps every plan, idles 0.2 s): test_multi_instances (k instances on one GPU),
# test_backend, test_backend_run, test_backend_fp8, test_backend_lossy, test_kernels; commit 2267388.
# here:  mkdir build/regress; cp build/release/tests/gpu/{those} build/regress; xz -9 build/regress/*;
#        the tiny model moved out of the tree for the call (docs/COMPARE.md "The carry limit")
# there: run(command="bash datasets/hw/2026-12-01/call33/command.sh", carry=["build/regress"])
set -u
R=build/regress
for f in $R/*.xz; do
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi
done
chmod +x $R/*
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader > $OUT/r/device.txt
for t in ${ONLY:-test_kernels test_multi_instances test_backend test_backend_run test_backend_fp8 test_backend_lossy}; do
    s=$SECONDS; timeout 200 $R/$t > $OUT/r/$t.log 2>&1; echo "== $t exit $? ($((SECONDS - s)) s)" >> $OUT/r/$t.log
    grep -E "^FAIL|^PASS:|^FAIL:" $OUT/r/$t.log | tail -3; tail -1 $OUT/r/$t.log
done
cd $OUT && tar czf r.tgz r && rm -rf r
# Ran twice: r_first.tgz, all six with the tiny model moved out (test_backend_fp8 and test_backend_lossy need it:
# their kernel checks passed, then exit 1 at "cannot open" the model), then r_second.tgz:
# ONLY="test_backend_fp8 test_backend_lossy" with the model in the tree and only those two binaries carried.
# Every test 0 failures: test_kernels, test_multi_instances, test_backend, test_backend_run (first), test_backend_fp8,
# test_backend_lossy (second).
# r_review.tgz: after the review commit 95677fe (plan_destroy, warm_x_bytes), ONLY="test_kernels test_backend":
# 0 failures each.
