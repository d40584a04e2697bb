#!/usr/bin/env bash
# Device call 114 (session 35): a fresh run set to judge the refitted settle clocks (u) against t, then V3 again
# (CRITERION.md here, committed before the call): (i) the 9 in-sample, 11 held-out and 5 nv:* points without class
# events into $OUT (hw_session.sh device), (ii) the nv:* and held-out points with class events into $OUT/ct.
# .hwbin: call 113's (no change in the CUDA path since; the simulated halves are re-simulated here).
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-04/call114/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/*.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_* .hwbin/bwcurve .hwbin/l2probe .hwbin/bench_sel_align 2> /dev/null
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
VALIDATE_ARGS="-D clock_probe=true" HELDOUT_ARGS="-D clock_probe=true" NOVEL_ARGS="-D clock_probe=true" \
    STEPS="validate heldout novel" DEADLINE=240 bash scripts/hw_session.sh device > "$OUT/b.log" 2>&1
echo "device steps exit $?" >> "$OUT/b.log"
mkdir -p "$OUT/ct"
OUT="$OUT/ct" CLASS_TIMING=true HELDOUT_ARGS="" STEPS="heldout novel" DEADLINE=300 bash scripts/hw_session.sh device > "$OUT/ct/b.log" 2>&1
echo "class-event step exit $?" >> "$OUT/ct/b.log"
rm -f "$OUT/ct/logs.tgz"   # at most 8 files come back: the class-event logs stay there (b.log has the steps)
tail -n 36 "$OUT/table.txt" 2> /dev/null | cut -c1-120; tail -n 20 "$OUT/ct/table.txt" 2> /dev/null | cut -c1-120
