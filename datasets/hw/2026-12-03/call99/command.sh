#!/usr/bin/env bash
# Device call 99 (session 30): is dream:az:sparse_head's p50 cluster a property of the machine or of the run?  Its
# measured p50 falls in three clusters over 30 machines (0.90-0.92, 0.96-0.98, 1.03-1.07 s; one run set per machine so
# far), which no single prediction can pass on every machine (docs/BENCHMARKS.md "session 30").  Here one machine runs
# the validation set once (as every recorded set does before the held-out points), then the 11 held-out points four
# times back to back (each run its own process, exactly hw_session.sh's `heldout` step: -D backend=cuda -D set=heldout
# -D class_timing=false -D clock_probe=true), then dream:az:sparse_head alone three times.  .hwbin as call 98's.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call99/command.sh", carry=[".hwbin"])
# post:  runs.tgz unpacked into /tmp/c99, each runs/hoN.h5 copied to /tmp/c99/hoN/h5/heldout.h5, then
#        scripts/machine_spread.py /tmp/c99/ho1 ... /tmp/c99/ho4 (docs/BENCHMARKS.md "session 30"; this line rewritten
#        after the call: it first named scripts/p50_repeat.py, since removed as a copy of machine_spread.py)
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/*.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
R=$OUT/runs; mkdir -p "$R"; t0=$SECONDS
run() {   # name limit args...
    local n=$1 lim=$2; shift 2
    timeout -k 5 "$lim" .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D class_timing=false "$@" \
        -o "$R/$n.h5" > "$R/$n.log" 2>&1
    echo "$n exit $? ($((SECONDS - t0)) s)"
}
run val 150 -D warmup=each -D clock_probe=true
for i in 1 2 3 4; do run "ho$i" 120 -D set=heldout -D clock_probe=true; done
for i in 1 2 3; do run "pt$i" 60 -D set=heldout -D point=dream:az:sparse_head -D clock_probe=true; done
grep -h "^dream:az:sparse_head\|^az:sparse_head" "$R"/ho*.log "$R"/pt*.log | cut -c1-100
cd "$OUT" && tar czf runs.tgz runs && rm -rf runs
