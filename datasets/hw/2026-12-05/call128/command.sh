#!/usr/bin/env bash
# Device call 128 (session 43): one fresh Nsight Compute set, kept unscored, with two sparse points a model.
# Why: the twenty-ninth trial (datasets/hw/2026-12-04/call122/CRITERION_part29.md) found the selection's reads
# (kv_gather) biased and moved them, but the unseen sets hold one sparse point a model each (c122b's w32:sparse,
# c123's w34:sparse): a follow-up on the selection needs more sparse points no choice has seen.
# Set c128: hw_validate.lua's w35:dual, w35:sparse and w36:sparse (6 x (576 + 32) and 12 x (192 + 32): Refresh steps
# of 3,648 and 2,688 rows, Reuse steps of 192 and 384) of LLaDA-8B and Dream-7B (scripts/ncu_record.sh).
# Rule (as calls 122 and 123): c128 is not scored, under any replay, before a trial's criterion names it; it is named
# in scripts/ncu_score.sh's REPEATS after the call (so that `ncu_score.sh OUT c128` can score it then), not in its
# default list.
# Back: tests.txt, ncu_llada.tgz, ncu_dream.tgz, logs_x.tgz.
# .hwbin: dkv and lib built by scripts/hw_session.sh build at this commit's parent (hw_validate.lua with w35 and w36),
#         xz'd; the other programs of that build left out.
# here:  datasets/hw moved out of the tree for the call (the 64 MiB carry), this file put back
# there: run(command="bash datasets/hw/2026-12-05/call128/command.sh", carry=[".hwbin"], timeout_s=480)
set -u
. scripts/device_env.sh || exit 2
bash scripts/ncu_record.sh "$OUT" 420 llada-8b:ncu_llada:w35:dual dream-7b:ncu_dream:w35:dual \
    llada-8b:ncu_llada:w35:sparse dream-7b:ncu_dream:w35:sparse llada-8b:ncu_llada:w36:sparse dream-7b:ncu_dream:w36:sparse
echo "ncu_record exit $?" | tee -a "$OUT/tests.txt"
cat "$OUT/tests.txt"
