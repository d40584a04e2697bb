#!/usr/bin/env bash
# Device call 44 (session 15): (a) does the step clock's sampler thread (dkv.execute sm_clock, a NVML read every
# millisecond) move the steps it measures?  The 9 in-sample points with and without it, twice each, alternating
# (off, on, off, on); (b) a fresh run set of the 11 held-out points (with sm_clock) on another machine, after
# the clock model (profile h200-20261202l) was fixed.
# here:  .hwbin built at commit e782c5d (as call 43); the tiny model moved out of the tree for the call
# there: run(command="bash datasets/hw/2026-12-02/call44/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-02/call44
#        (the held-out set; the sampler pairs: tar xzf sampler.tgz, h5/val_{off,on}{1,2}.h5)
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
S=$OUT/s; mkdir -p "$S/h5"
for k in 1 2; do
    for c in off on; do
        v=false; [ $c = on ] && v=true
        timeout 60 .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D warmup=each \
            -D class_timing=false -D sm_clock=$v -o "$S/h5/val_$c$k.h5" > "$S/val_$c$k.log" 2>&1
        echo "val sm_clock=$v ($k) exit $? $SECONDS s"
    done
done
(cd "$OUT" && tar czf sampler.tgz s && rm -rf s)
STEPS="heldout" DEADLINE=150 bash scripts/hw_session.sh device > "$OUT/heldout.log" 2>&1
echo "heldout done $SECONDS s"
