#!/usr/bin/env bash
# ncu_model_bytes.sh - HBM bytes per kernel class, counted against Nsight Compute, for validation points
# profiled with a model other than the shipped validation set's (e.g. Dream-7B, device call 56:
# `-D model=dream-7b`), from the profiled runs themselves (no unprofiled twin needed: bytes do not depend
# on the profiler's slowdown).  Each ncu_<point>.csv is imported into a copy of its prof_<point>.h5
# (`dkv ncu-import`), the copies merged, the same points simulated (hw_validate.lua -D backend=sim with
# the model, with the L2 replay's kernels for scripts/ncu_layer.py), and scripts/ncu_bytes.py prints the table
# (docs/BENCHMARKS.md "HBM bytes per kernel class").
#
#   DKV=build/release/dkv bash scripts/ncu_model_bytes.sh DIR MODEL OUT_DIR
#
# DIR: a folder with ncu_<w>_<cache>.csv and prof_<w>_<cache>.h5 (call 56's ncu_dream.tgz unpacked);
# MODEL: the model preset the points ran with; OUT_DIR: new folder for real.h5, sim.h5, ncu_bytes.md.
# SIM_ARGS (since session 48): more hw_validate.lua options for the simulated points, words split on blanks (e.g.
# "-D l2_mib=50" for a set recorded on an H100).
set -euo pipefail
[ $# = 3 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
D=$1 MODEL=$2 O=$3
DKV=${DKV:-build/release/dkv}
[ -d "$D" ] || { echo "ncu_model_bytes: no folder $D" >&2; exit 2; }
[ -e "$O" ] && { echo "ncu_model_bytes: $O exists: give a new OUT_DIR" >&2; exit 2; }
mkdir -p "$O/p" "$O/s"
reals=() sims=()
read -ra sim_args <<< "${SIM_ARGS:-}"
for csv in "$D"/ncu_*.csv; do
    [ -f "$csv" ] || { echo "ncu_model_bytes: no ncu_*.csv in $D" >&2; exit 2; }
    tag=$(basename "$csv" .csv); tag=${tag#ncu_}; p=${tag/_/:}
    [ -f "$D/prof_$tag.h5" ] || { echo "ncu_model_bytes: $csv has no prof_$tag.h5 beside it" >&2; exit 2; }
    cp "$D/prof_$tag.h5" "$O/p/$tag.h5" && chmod u+w "$O/p/$tag.h5"
    "$DKV" ncu-import "$csv" "$O/p/$tag.h5" --run "val:$p:real" --replace > "$O/p/$tag.log"
    "$DKV" run experiments/hw_validate.lua -D backend=sim -D l2_kernels=true -D model="$MODEL" -D point="$p" "${sim_args[@]}" -o "$O/s/$tag.h5" \
        > "$O/s/$tag.log" 2>&1 || { echo "ncu_model_bytes: simulating $p failed ($O/s/$tag.log)" >&2; exit 1; }
    reals+=("$O/p/$tag.h5") sims+=("$O/s/$tag.h5")
done
"$DKV" merge "$O/real.h5" "${reals[@]}" > /dev/null
"$DKV" merge "$O/sim.h5" "${sims[@]}" > /dev/null
/usr/bin/python3 scripts/ncu_bytes.py "$O/real.h5" "$O/sim.h5" -o "$O/ncu_bytes.md"
