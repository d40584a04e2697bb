#!/usr/bin/env bash
# Device call 36 (session 14): a fresh run set on today's backend with this session's binary, after every rule
# of session 14 was chosen on calls 10-28 (so none of them was selected on these runs): the 9 validation points
# and the 11 held-out points without class events, then the held-out points with class events (per class).
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align;
#        xz -9 .hwbin/dkv .hwbin/lib/*; the tiny model moved out of the tree for the call (docs/COMPARE.md)
# there: run(command="bash datasets/hw/2026-12-01/call36/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-01/call36
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
X=$OUT/x; mkdir -p "$X"
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
t0=$SECONDS
STEPS="validate heldout" DEADLINE=200 bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done $((SECONDS - t0)) s"
OUT=$OUT/c STEPS="heldout" CLASS_TIMING=true DEADLINE=120 bash scripts/hw_session.sh device > "$X/c.log" 2>&1
echo "heldout with class events done $((SECONDS - t0)) s"
cat "$OUT/table.txt" 2> /dev/null | tail -28 | cut -c1-110
cd "$OUT" && tar czf c.tgz c x && rm -rf c x
