#!/usr/bin/env bash
# Device call 111 (session 34): the attention of unequal Reuse items, measured per class.  Call 110's nv:* points ran
# without per-class CUDA events; the rule for unequal items was changed on their step times (V1 shipped, V2 not, by the
# criterion's rule: datasets/hw/2026-12-04/call110/variants/CRITERION.md).  Question, set first: in the Reuse steps of
# a few unequal items (vi:dual,steps=32's 4-item steps, one item of ~2,465 keys; the blk=64 points' 3-6-item steps),
# is the measured attention class time nearer the shipped rule's (the uniform batch stretched by c(a_max) / c(mean),
# c affine beyond the profile) or V2's (the larger of the uniform batch and one item of the longest keys)?  Both
# predictions are computed here afterwards from the same plans; nothing is chosen on this call in this session (a
# rule chosen on it would need a fresh set to judge it).  hw_validate.lua -D set=novel with class_timing=true (CUDA
# events around every class: each costs a step ~2-3 us).
# .hwbin: call 110's (no C change in the CUDA path since call 109's build), xz'd.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-04/call111/command.sh", carry=[".hwbin"])
# post:  the :real runs' kernels tables (class times per step) against the re-simulated :sim runs
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/*.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_* .hwbin/bwcurve .hwbin/l2probe .hwbin/bench_sel_align 2> /dev/null
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
CLASS_TIMING=true STEPS="novel" DEADLINE=200 bash scripts/hw_session.sh device > "$OUT/b.log" 2>&1
echo "device steps exit $?" >> "$OUT/b.log"
tail -n 12 "$OUT/table.txt" 2> /dev/null | cut -c1-120
