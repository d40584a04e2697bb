#!/usr/bin/env bash
# Device call 133 (session 48): what the GPU's L2 holds of each activation buffer at the kernel boundaries of a real
# layer (the question both L2 models answer by construction and no probe has measured: which of the step's q, k, v,
# attention output and residual outlive the attention's stream and O's weight stream).  The CUDA backend's l2_flush
# diagnostic with read entries (docs/GPU.md "The L2 flush diagnostic", session 48): after the named kernel of the named
# layer, every step, the flush kernel reads the step's rows of a buffer; under Nsight Compute (--cache-control none)
# its DRAM reads are the bytes of it the L2 no longer held there.  One probe a layer, every other layer, so that a
# probe's own reads have left the L2 (the FFN's weight streams) before the next one:
#   2:qkv:qkv   q|k|v after its GEMM            12:o:qkv   q|k|v after O
#   4:rope:qkv  after the RoPE(-store)          14:o:x     O's output after O
#   6:attn:qkv  the attention's inputs after it 16:attn    the dirty bytes after the attention (the flush)
#   8:attn:att  its output after it             18:o       the dirty bytes after O (the flush)
#   10:o:att    the attention's output after O  and again at 20:attn:att, 22:o:att, 24:attn:qkv, 26:o:qkv
# Points: w20:dual (Refresh 1,920 rows, Reuse 384 rows a step) and w10:dual (Refresh 1,280, Reuse 128) of LLaDA-8B and
# Dream-7B, then LLaDA-8B's w13:dual and w8:dual (cached streams of 32 and 49 MB a layer) (hw_validate.lua, as calls 117,
# 81, 103 and 70 ran them without the diagnostic).  Reported, not judged: a
# measurement for both models' state to be compared against (no model or constant has seen it).
# .hwbin: dkv and lib built by scripts/hw_session.sh build at the commit that adds the read entries (01539ed).
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-05/call133/command.sh", carry=[".hwbin"], timeout_s=480)
# post:  tar xzf ncu.tgz; for each: /usr/bin/python3 scripts/ncu_flush.py ncu/ncu_<m>_<p>.csv SIM.h5 --point <p>
#        --flush "$SPEC" (SIM.h5: hw_validate.lua -D backend=sim -D l2_kernels=true -D model=<m> -D point=<p>)
set -u
. scripts/device_env.sh || exit 2
chmod +x .hwbin/dkv 2> /dev/null
echo "ncu: ${NCU:-none}" | tee -a "$OUT/tests.txt"
SPEC=2:qkv:qkv,4:rope:qkv,6:attn:qkv,8:attn:att,10:o:att,12:o:qkv,14:o:x,16:attn,18:o,20:attn:att,22:o:att,24:attn:qkv,26:o:qkv
echo "spec: $SPEC" >> "$OUT/tests.txt"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
mkdir -p "$OUT/ncu"
for mp in llada-8b:w20:dual dream-7b:w20:dual llada-8b:w10:dual dream-7b:w10:dual llada-8b:w13:dual llada-8b:w8:dual; do
    model=${mp%%:*}; p=${mp#*:}; tag=${model%%-*}_${p/:/_}
    left=$((440 - SECONDS)); [ $left -lt 60 ] && { echo "ncu $model $p: skipped, ${left}s left" | tee -a "$OUT/tests.txt"; continue; }
    lim=$((left - 20)); [ $lim -gt 150 ] && lim=150
    t1=$SECONDS
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/ncu/ncu_$tag.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$p" -D l2_flush="$SPEC" -o "$OUT/ncu/prof_$tag.h5" > "$OUT/ncu/$tag.log" 2>&1
    echo "ncu $model $p exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/ncu/ncu_$tag.csv" 2>/dev/null) kernels," \
        "$(grep -c flush_kernel "$OUT/ncu/ncu_$tag.csv" 2>/dev/null) flush rows" | tee -a "$OUT/tests.txt"
done
tar czf "$OUT/ncu.tgz" -C "$OUT" ncu && rm -rf "$OUT/ncu"
cat "$OUT/tests.txt"
