#!/usr/bin/env bash
# The start-level trial of session 28 (docs/COST_MODEL.md "GEMM rows between the grid's", its last paragraph; not
# shipped): build dkv with start.patch (an optional clock.start block: a busy period, a run's first step or one after
# the GPU idled idle_s, runs its first hold_s of work at mhz, then follows as before), write the candidate profile v
# (the shipped t with start = {mhz = 1670, hold_s = 0.06, idle_s = 0.05}: 1,670 MHz the mean first-step probe clock of
# calls 79 and 81 at 256 rows or more, `scripts/clock_model.py first`; 0.06 s call 87's hold) and post every run set
# with the held-out points under it (PROFILE= posts: their "shipped h200" rows are t, their "profile" rows v).
#   bash datasets/hw/2026-12-03/call91/variants/start.sh OUT      # ~10 min on 2 cores; OUT must not exist
#   /usr/bin/python3 scripts/summary_counts.py --per-set OUT/v_call*
set -eu
O=${1:?usage: start.sh OUT}
[ -e "$O" ] && { echo "start.sh: $O exists" >&2; exit 2; }
mkdir -p "$O"
W=$O/tree
git worktree add -q --detach "$W" HEAD
(cd "$W" && git apply datasets/hw/2026-12-03/call91/variants/start.patch && scons -Q -j2 mode=release build/release/dkv > /dev/null)
sed 's/^\(    settle = {rows = {64, 128, 256, 512, 1024, 2048, 4096, 16384}, mhz = {[^}]*}, other_mhz = 1900},\)$/\1\n    start = {mhz = 1670, hold_s = 0.06, idle_s = 0.05},/' \
    datasets/profiles/h200-20261203t.lua | sed 's/^  name = "h200-20261203t",$/  name = "h200-20261203v",/' > "$O/v.lua"
for c in 40 42 44 45 46 48 50 51 52 53 54 55 60 61 62 63 78 79 81 84 85 89 90 91; do
    d=$(ls -d datasets/hw/2026-12-0?/call$c | head -1)
    PROFILE=$O/v.lua DKV=$W/build/release/dkv RES=$O/v_call$c bash scripts/hw_session.sh post "$d" > "$O/v_call$c.log" 2>&1
done
git worktree remove --force "$W"
