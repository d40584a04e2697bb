#!/usr/bin/env bash
# Device call 132 (session 48): calls 130 (l2drain pool) and 131 (l2drain stride) on an H200, the GPU the line model's
# constants are for (both ran on H100s in session 47).  Same binary as call 129's H200 run (.hwbin/l2drain at e46a448).
# there: run(command="bash datasets/hw/2026-12-05/call132/command.sh", carry=[".hwbin"], timeout_s=300)
# post:  tar xzf ps.tgz; /usr/bin/python3 scripts/l2drain_gemm.py ps/l2drain_<mode>.txt ps/l2drain_<mode>.csv
set -u
. scripts/device_env.sh || exit 2
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
mkdir -p "$OUT/ps"
for mode in pool stride; do
    t0=$SECONDS
    f="$OUT/ps/l2drain_$mode"
    timeout -k 5 150 "$NCU" $M --log-file "$f.csv" .hwbin/l2drain $mode > "$f.txt" 2> "$f.err"
    echo "l2drain $mode exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$f.txt") launches" | tee -a "$OUT/tests.txt"
    tail -2 "$f.err"
done
tar czf "$OUT/ps.tgz" -C "$OUT" ps && rm -rf "$OUT/ps"
