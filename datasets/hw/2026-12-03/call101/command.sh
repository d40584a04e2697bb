#!/usr/bin/env bash
# Device call 101 (session 31): do the KV pool's strided addresses push dirty lines out of an L2 far from full?
# The replay's write placement misses where small kernels write back (Dream-7B's store and attention at 32-64 rows)
# although call 90 showed contiguous traffic under the L2's size writes nothing back.  A token's row of one layer
# (1 KB on Dream-7B) lies a slot apart from the next token's in the t-major pool (56 KB on Dream-7B, 512 KB on
# LLaDA-8B).  cuda/bench/l2drain.cu's strided kinds under Nsight Compute (--cache-control none): sread<S> (after a
# contiguous dirty probe of 1 or 8 MB, a read of 0.5-8 MB as 1 KB chunks S KB apart; S = 1 is the contiguous
# control) and swrite<S> (the probe written as 1 KB chunks S KB apart).  Question, set first: does a strided read
# write back dirty lines where the contiguous read of the same bytes writes none (>= 0.1 MB more at any x), or a
# strided write write back part of itself where a contiguous one does not?  Then the validation points once more.
# .hwbin as call 100's plus l2drain (nvcc -O3 -arch=sm_90 cuda/bench/l2drain.cu -o .hwbin/l2drain).
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call101/command.sh", carry=[".hwbin"])
# post:  /usr/bin/python3 scripts/l2drain.py datasets/hw/2026-12-03/call101/l2drain.txt datasets/hw/2026-12-03/call101/l2drain.csv
#        DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-03/call101
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/*.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_* .hwbin/bwcurve .hwbin/l2probe .hwbin/l2drain .hwbin/bench_sel_align 2> /dev/null
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
t0=$SECONDS
timeout 200 "$NCU" --csv --clock-control none --cache-control none --target-processes all \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    --log-file "$OUT/l2drain.csv" .hwbin/l2drain > "$OUT/l2drain.txt" 2> "$OUT/l2drain.err"
echo "l2drain exit $? $((SECONDS - t0)) s, $(grep -c '^k ' "$OUT/l2drain.txt") launches"
tail -2 "$OUT/l2drain.err"
python3 scripts/l2drain.py "$OUT/l2drain.txt" "$OUT/l2drain.csv" 2>&1 | sed -n '/### sread1$/,$p' | head -80
X=$OUT/x; mkdir -p "$X"
t0=$SECONDS
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" STEPS="validate heldout" DEADLINE=170 \
    bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done after $((SECONDS - t0)) s"
tail -n 4 "$OUT/table.txt" 2> /dev/null | cut -c1-120
cd "$OUT" && tar czf x.tgz x && rm -rf x
