#!/usr/bin/env bash
# Device call 105 (session 32): the dirty bytes the GPU's L2 holds at each point of a layer, against the replay's.
# The kernel-by-kernel records (docs/COST_MODEL.md "Kernel by kernel") give each kernel's write-back, so only the
# differences of the dirty level along a layer; the absolute level is what the replay's bound (21.0 MB, fitted;
# 28-30 MB measured alone) decides.  dkv.execute's new l2_flush diagnostic (docs/GPU.md "The L2 flush diagnostic")
# reads twice the L2 after chosen kernels; under Nsight Compute (--cache-control none, every kernel profiled as in
# calls 3-104) that flush_kernel's DRAM writes are the dirty bytes held there.  Staggered: one point per layer, three
# layers apart (3:norm, 6:qkv, 9:rope, 12:attn, 15:o, 18:ffn_norm, 21:gate_up, 24:swiglu, 27:down), so the two layers
# after a flush refill the L2 as the replay's two warm layers do; two single-point runs check that (12:attn alone,
# 15:o alone).  Points: w10:dual (4 x (288 + 32): a Refresh of 1,280 rows, Reuse of 128) and w13:dual (3 x (640 + 32):
# 2,016 and 96) for both models.
# Questions and criteria, set first (this file is committed before the call):
#  (a) does staggering change what is measured?  The single-point runs' 12:attn and 15:o within 1 MB of the
#      staggered run's, step by step: staggering holds; else only the single points are read.
#  (b) the hypothesis from the kernel-by-kernel reading of LLaDA-8B's w10:dual Refresh: the GPU holds about 10 MB more
#      dirty than the replay through the layer and its O projection keeps its output dirty.  Supported if the GPU's
#      dirty bytes after O exceed the replay's by at least 5 MB in that step; refuted if they are within 3 MB of the
#      replay's at every point of that step (then the misses are not in how much is held dirty).
# Nothing here is fitted: the replay is unchanged; the numbers say where a later rule would have to act.
# .hwbin: scripts/hw_session.sh build at this commit (dkv with l2_flush) + l2drain, xz'd as before.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-03/call105/command.sh", carry=[".hwbin"])
# post:  for each OUT/flush/<model>_<point>_<tag>.csv: /usr/bin/python3 scripts/ncu_flush.py CSV SIM.h5 --point P
#        --flush SPEC, SIM.h5 from hw_validate.lua -D backend=sim -D l2_kernels=true -D model=M -D point=P
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda-*/bin/ncu 2>/dev/null | head -1)
echo "ncu: ${NCU:-none}"
X=$OUT/x; mkdir -p "$X" "$OUT/flush"
# smoke: the option runs at all (no ncu)
t0=$SECONDS
timeout -k 5 60 .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D point=w1:dual \
    -D l2_flush=3:attn,6:o -o "$X/smoke.h5" > "$X/smoke.log" 2>&1
echo "smoke exit $? $((SECONDS - t0)) s: $(tail -1 "$X/smoke.log")"
M="--csv --clock-control none --cache-control none --target-processes all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"
S=3:norm,6:qkv,9:rope,12:attn,15:o,18:ffn_norm,21:gate_up,24:swiglu,27:down
for run in llada-8b:w10:dual:stag:$S dream-7b:w10:dual:stag:$S llada-8b:w10:dual:attn:12:attn llada-8b:w10:dual:o:15:o \
           llada-8b:w13:dual:stag:$S dream-7b:w13:dual:stag:$S; do
    model=${run%%:*}; r=${run#*:}; w=${r%%:*}; r=${r#*:}; c=${r%%:*}; r=${r#*:}; tag=${r%%:*}; spec=${r#*:}
    left=$((560 - SECONDS)); [ $left -lt 50 ] && { echo "ncu $model $w:$c $tag: skipped, ${left}s left"; continue; }
    lim=$((left - 15)); [ $lim -gt 120 ] && lim=120
    t1=$SECONDS; f=${model}_${w}_${c}_$tag
    timeout -k 10 $lim "$NCU" $M --log-file "$OUT/flush/$f.csv" \
        .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=false -D warm_gemms=false \
        -D model=$model -D point="$w:$c" -D l2_flush="$spec" -o "$X/$f.h5" > "$X/$f.log" 2>&1
    echo "ncu $f ($spec) exit $? $((SECONDS - t1)) s, $(grep -c dram__bytes_read "$OUT/flush/$f.csv" 2>/dev/null) kernels, $(grep -c 'flush_kernel.*dram__bytes_write' "$OUT/flush/$f.csv" 2>/dev/null) flushes"
done
cd "$OUT" && tar czf flush.tgz flush && rm -rf flush && tar czf x.tgz x && rm -rf x
