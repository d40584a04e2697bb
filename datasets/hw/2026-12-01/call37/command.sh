#!/usr/bin/env bash
# Device call 37 (session 14): the SM clock and power beside each kind of work, for the power-state question of
# docs/COST_MODEL.md "Which profile (j or k)" (large GEMMs 6-16 % faster inside steps than profiled, Reuse
# attention 9-12 % slower): nvidia-smi sampled every 10 ms while dkv profile times the class GEMMs, then the
# attention, and while held-out points run (mc:dual,long; dream:az:sparse_head; vi:dual,b=1) and the in-sample
# points.  Marks (date +%Y/%m/%d %H:%M:%S.%3N NAME_start|_end) for scripts/smi_segments.py.
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align;
#        xz -9 .hwbin/dkv .hwbin/lib/*; the tiny model moved out of the tree for the call (docs/COMPARE.md)
# there: run(command="bash datasets/hw/2026-12-01/call37/command.sh", carry=[".hwbin"])
# post:  tar xzf clocks.tgz; /usr/bin/python3 scripts/smi_segments.py c/smi.csv c/marks.txt
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
C=$OUT/c; mkdir -p "$C"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$C/device.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active,utilization.gpu \
    --format=csv -lms 10 > "$C/smi.csv" 2> "$C/smi.err" &
SMI=$!
mark() { echo "$(date +%Y/%m/%d\ %H:%M:%S.%3N) $1" >> "$C/marks.txt"; }
D=.hwbin/dkv
sleep 2
mark profile_gemm_start; timeout 90 $D profile --grid gemm -o "$C/p_gemm.lua" --deadline 60 > "$C/p_gemm.log" 2>&1; mark profile_gemm_end
sleep 2
mark profile_attn_start; timeout 60 $D profile --grid attn -o "$C/p_attn.lua" --deadline 40 > "$C/p_attn.log" 2>&1; mark profile_attn_end
sleep 2
for p in mc:dual,long dream:az:sparse_head vi:dual,b=1; do
    n=${p//[:,=]/_}
    mark "ho_${n}_start"
    timeout 60 $D run experiments/hw_validate.lua -D backend=cuda -D set=heldout -D point="$p" -D class_timing=false \
        -o "$C/ho_$n.h5" > "$C/ho_$n.log" 2>&1
    mark "ho_${n}_end"; sleep 2
done
mark val_start
timeout 60 $D run experiments/hw_validate.lua -D backend=cuda -D warmup=each -D class_timing=false -o "$C/val.h5" > "$C/val.log" 2>&1
mark val_end
sleep 1; kill $SMI
cd "$OUT" && tar czf clocks.tgz c && rm -rf c
