#!/usr/bin/env bash
# scripts/quickstart.sh [BUILD_DIR] - what `scons quickstart` runs: the quickstart experiment
# (prints its tables, writes results/quickstart.h5), then its figure (results/quickstart.png).
# BUILD_DIR (default build/release) holds dkv; -h/--help prints this text.
set -eu
case ${1:-} in -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; esac
[ $# -le 1 ] || { echo "usage: scripts/quickstart.sh [BUILD_DIR]" >&2; exit 2; }
BUILD=${1:-build/release}
cd "$(dirname "$0")/.."
if [ ! -x "$BUILD/dkv" ]; then
    echo "quickstart: $BUILD/dkv is missing (build it with: scons)" >&2
    exit 1
fi
mkdir -p results
"$BUILD/dkv" run experiments/quickstart.lua -o results/quickstart.h5
/usr/bin/python3 scripts/plot.py results/quickstart.h5 -o results/quickstart.png --runs : --run blockpool:phase
echo "quickstart: results/quickstart.h5 (see: $BUILD/dkv info results/quickstart.h5), results/quickstart.png"
