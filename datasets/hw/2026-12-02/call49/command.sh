#!/usr/bin/env bash
# Device call 49 (session 16): is the per-head sparse selection's excess at az:sparse_head's first selecting
# step (kv_gather +3.5 ms over the simulator in call 45's class events, 186 us a layer at 1,264 keys against
# 77) a first use in the process or a steady in-step cost?  The held-out point az:sparse_head alone, with class
# events, in three processes: the default warm-up (one small execution first), -D warmup=each (the point's own
# configuration first: every shape it meets already used), and -D warmup=false (nothing first).
# here:  .hwbin of call 48 (commit dd02441's code); the tiny model moved out of the tree for the call
# there: run(command="bash datasets/hw/2026-12-02/call49/command.sh", carry=[".hwbin"])
# post:  tar xzf s.tgz; /usr/bin/python3 scripts/class_errors.py-style pairing of s/h5/<mode>.h5 against a
#        re-simulation (`dkv run experiments/hw_validate.lua -D set=heldout -D point=az:sparse_head -D backend=sim`)
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
S=$OUT/s; mkdir -p "$S/h5"
for w in true each false; do
    timeout 90 .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D set=heldout -D point=az:sparse_head \
        -D warmup=$w -D class_timing=true -o "$S/h5/$w.h5" > "$S/$w.log" 2>&1
    echo "warmup=$w exit $? $SECONDS s"
done
(cd "$OUT" && tar czf s.tgz s && rm -rf s)
