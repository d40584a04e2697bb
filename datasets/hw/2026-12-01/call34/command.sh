#!/usr/bin/env bash
# Device call 34 (session 14): the batched attention kernel's clusters resident at once (cudaOccupancyMaxActiveClusters,
# dkv profile's new attn_waves) and the attention rows of a head configuration no profile holds (24 / 4 x 128, the
# synthetic preset root/datasets/presets/model/h24.lua, beside the generic 32 / 8 and 32 / 4 of the same run): the
# check of the simulator's launch-geometry rule for another head configuration (docs/COST_MODEL.md "Attention of
# another head configuration").  Then test_kernels_attn (the attention launch's config refactor, the clusters query)
# and test_kernels.
# here:  bash scripts/hw_session.sh build; rm .hwbin/bwcurve .hwbin/test_multi_instances .hwbin/bench_sel_align;
#        cp build/hw-release/tests/gpu/test_kernels{,_attn} .hwbin; xz -9 .hwbin/dkv .hwbin/lib/* .hwbin/test_*;
#        the tiny model moved out of the tree for the call (docs/COMPARE.md "The carry limit")
# there: run(command="bash datasets/hw/2026-12-01/call34/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz .hwbin/test_kernels.xz .hwbin/test_kernels_attn.xz
chmod +x .hwbin/dkv .hwbin/test_kernels .hwbin/test_kernels_attn
export LD_LIBRARY_PATH="$PWD/.hwbin/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv,noheader > "$OUT/device.txt"
D=datasets/hw/2026-12-01/call34
timeout 240 .hwbin/dkv profile --grid attn --root "$D/root" --model h24 -o "$OUT/profile_attn_h24.lua" --deadline 200 \
    > "$OUT/profile_attn_h24.log" 2>&1
echo "== profile exit $?"; grep "clusters at once" "$OUT/profile_attn_h24.log"; tail -n 2 "$OUT/profile_attn_h24.log"
for t in test_kernels_attn test_kernels; do
    s=$SECONDS; timeout 150 .hwbin/$t > "$OUT/$t.log" 2>&1; echo "== $t exit $? ($((SECONDS - s)) s)" | tee -a "$OUT/$t.log"
    grep -E "^FAIL|clusters" "$OUT/$t.log" | head -8
done
