#!/usr/bin/env bash
# Device call 50 (session 16): the backend's scores warm-up for the sparse cache (cuda/backend.c warm_scores:
# dkv_bk_scores at every key count 1..max_L before the first step; call 49 found the per-head selection's
# first use of a key count at 2-4 ms).
# (a) tests/gpu/bench_scores_warm: the first-call excess at 8 key counts before and after the warm-up loop,
#     and the loop's time, for 32 / 32 and 28 / 4 heads; test_backend_score (the selection's scores
#     against the CPU backend's; test_backend left out: the 64 MiB carry limit);
# (b) a fresh run set: the 9 in-sample and the 11 held-out points (sm_clock on, no class events);
# (c) az:sparse_head alone with class events, default warm-up (as call 49's first process).
# here:  bash scripts/hw_session.sh build; test_backend_score, bench_scores_warm built in variant
#        hw and copied into .hwbin; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align;
#        xz -9 -T2 the binaries and .hwbin/lib/*; the tiny model moved out of the tree for the call
# there: run(command="bash datasets/hw/2026-12-02/call50/command.sh", carry=[".hwbin"])
# post:  DKV=$PWD/build/release/dkv RES=/tmp/X bash scripts/hw_session.sh post datasets/hw/2026-12-02/call50
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/test_backend_score.xz .hwbin/bench_scores_warm.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv .hwbin/test_backend_score .hwbin/bench_scores_warm
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
X=$OUT/x; mkdir -p "$X/h5"
t0=$SECONDS
timeout 60 .hwbin/bench_scores_warm > "$X/bench_scores_warm.log" 2>&1; echo "bench exit $? $((SECONDS - t0)) s"
cat "$X/bench_scores_warm.log" | cut -c1-300
timeout 100 .hwbin/test_backend_score > "$X/test_backend_score.log" 2>&1; echo "test_backend_score exit $? $((SECONDS - t0)) s"
grep -hE "^(FAIL|PASS)" "$X/test_backend_score.log" | tail -6
STEPS="validate heldout" DEADLINE=200 bash scripts/hw_session.sh device > "$X/b.log" 2>&1
echo "validate/heldout done $((SECONDS - t0)) s"
timeout 60 .hwbin/dkv run experiments/hw_validate.lua -D backend=cuda -D half=real -D set=heldout -D point=az:sparse_head \
    -D class_timing=true -o "$X/h5/sparse_head_ct.h5" > "$X/sparse_head_ct.log" 2>&1; echo "class events exit $? $((SECONDS - t0)) s"
grep -A14 "^point" "$OUT/table.txt" 2> /dev/null | tail -13 | cut -c1-110
cd "$OUT" && tar czf x.tgz x && rm -rf x
