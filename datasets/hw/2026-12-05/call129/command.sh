#!/usr/bin/env bash
# Device call 129 (session 44): the L2 probes at probe sizes no model was shaped on, to judge the line-level model
# (core/cost/cost_l2_lines.c) against the shipped per-buffer replay where neither was set (docs/COST_MODEL.md "A
# line-level L2"; CRITERION.md here, and the two models' predictions pred_D16.csv and pred_D24.csv, committed before
# the call).
# cuda/bench/l2drain.cu `order D` and `rmw D` under Nsight Compute (--cache-control none) for D = 16 and 24 MB (the
# halves 8 and 12 MB; calls 117, 118 and 123 ran D = 8): order's rehit, rehit0, dclean and chit (each in both re-read
# orders) at x = 8-40 MB, rmw's plain, rmwstream, rmwprobe, rmwboth and wwprobe at x = 8-56 MB.
# (predkc_D16.csv, predkc_D24.csv: the keep_copy variant's, CRITERION.md's second clause.)
# (predcw_D16.csv, predcw_D24.csv, predcw_after.csv: the clean_ways variant's, CRITERION.md's fourth part, session 45.)
# Then (added in session 44 after the device was refused, still before any run) `l2drain after`: 96 MB of weights read
# plainly or by a cuBLAS GEMM of 64 or 288 rows, then A and B written dirty, then a read of y = 8-48 MB: whether the
# GPU keeps a GEMM's weight lines over dirty lines written after them (CRITERION.md's third part; pred_after.csv).
# Then (added in session 46, before any run) `l2drain gout`: whether the lines a cuBLAS GEMM writes leave before older
# dirty lines (CRITERION.md's fifth part). post: scripts/l2drain_gemm.py l2drain_gout.txt l2drain_gout.csv > gout_tables.md
# post (after): /usr/bin/python3 scripts/l2drain_gemm.py l2drain_after.txt l2drain_after.csv > after_tables.md
# Back: tests.txt, raw.tgz (each run's manifest l2drain_<mode><D>.txt, ncu CSV .csv and stderr .err).
# .hwbin: l2drain alone (nvcc -O3 -arch=sm_90 cuda/bench/l2drain.cu -lcublas, built at the commit that last changed
#         this file, with the after mode), xz'd.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-05/call129/command.sh", carry=[".hwbin"], timeout_s=420)
# post:  tar xzf raw.tgz; /usr/bin/python3 scripts/l2drain.py l2drain_order<D>.txt l2drain_order<D>.csv and
#        scripts/l2drain_gemm.py l2drain_rmw<D>.txt l2drain_rmw<D>.csv (tables here), then
#        /usr/bin/python3 scripts/l2_lines_compare.py pred_D<D>.csv --order ... --rmw ... (CRITERION.md)
set -u
. scripts/device_env.sh || exit 2
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
mkdir -p "$OUT/raw"
# (session 46, before any run) the D = 16 / 24 probes are judged against the H200's models alone: on another GPU (the
# device may lend an H100, 50 MB of L2) they are not run, and after and gout are run as an exploration of that GPU
Ds="16 24"
if ! grep -q "H200" "$OUT/tests.txt"; then
    Ds=""
    echo "not an H200: the order and rmw probes at D = 16 and 24 not run (CRITERION.md's first, second and fourth parts)" |
        tee -a "$OUT/tests.txt"
fi
for D in $Ds; do
    for mode in order rmw; do
        t0=$SECONDS
        f="$OUT/raw/l2drain_$mode$D"
        timeout -k 5 150 "$NCU" $M --log-file "$f.csv" .hwbin/l2drain $mode $D > "$f.txt" 2> "$f.err"
        echo "l2drain $mode $D exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$f.txt") launches" | tee -a "$OUT/tests.txt"
        tail -2 "$f.err"
    done
done
t0=$SECONDS
f="$OUT/raw/l2drain_after"
timeout -k 5 150 "$NCU" $M --log-file "$f.csv" .hwbin/l2drain after > "$f.txt" 2> "$f.err"
echo "l2drain after exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$f.txt") launches" | tee -a "$OUT/tests.txt"
tail -2 "$f.err"
t0=$SECONDS   # session 46, before any run: the fifth part (CRITERION.md), a GEMM's output against older dirty lines
f="$OUT/raw/l2drain_gout"
timeout -k 5 150 "$NCU" $M --log-file "$f.csv" .hwbin/l2drain gout > "$f.txt" 2> "$f.err"
echo "l2drain gout exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$f.txt") launches" | tee -a "$OUT/tests.txt"
tail -2 "$f.err"
tar czf "$OUT/raw.tgz" -C "$OUT" raw && rm -rf "$OUT/raw"
cat "$OUT/tests.txt"
