#!/usr/bin/env bash
# Device call 30 (session 13): Nsight Compute (--cache-control none) on two validation points never profiled,
# w3:dual and w1:prefix, a fresh check of helper h13w's L2 write rules (docs/COST_MODEL.md "Writes per class").
# here:  .hwbin of call 29 (commit b41d921; xz-compressed); datasets/models/tiny-dllm/model.safetensors moved out
#        of the tree for the call (the 64 MiB carry limit, docs/COMPARE.md)
# there: run(command="bash datasets/hw/2026-12-01/call30/command.sh", carry=[".hwbin"])
set -u
unxz_all() { for f in "$@"; do [ -f "$f" ] || continue
    if command -v xz > /dev/null; then xz -d -f "$f"
    else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$f" && rm -f "$f"; fi; done; }
unxz_all .hwbin/dkv.xz .hwbin/lib/*.xz
chmod +x .hwbin/dkv
STEPS="check ncu" NCU_CACHE=none NCU_POINTS="w3:dual w1:prefix" NCU_LIMIT=70 DEADLINE=200 bash scripts/hw_session.sh device
