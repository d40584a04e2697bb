#!/usr/bin/env bash
# test_quickstart.sh - the README's first command does what it promises: the quickstart prints
# tables of computed numbers, writes results/quickstart.h5 and results/quickstart.png, and the
# README's worked example is exactly what it prints (the build folder written as build/release);
# -h/--help prints its usage.
set -uo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}" "${BUILD:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
/usr/bin/python3 -c 'import h5py, matplotlib' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py/matplotlib"; exit 77; }
# run in a copy of the layout the script expects (results/ under the root), not the real tree
mkdir -p "$T/q/scripts" "$T/q/experiments" "$T/q/datasets"
cp "$ROOT/scripts/quickstart.sh" "$ROOT/scripts/plot.py" "$ROOT/scripts/dkvresults.py" "$ROOT/scripts/script_io.py" \
    "$T/q/scripts/"
cp "$ROOT/experiments/quickstart.lua" "$T/q/experiments/"
cp -r "$ROOT/datasets/presets" "$ROOT/datasets/profiles" "$ROOT/datasets/workloads" "$T/q/datasets/"
# -h/--help: the usage on standard output, exit 0, nothing run (it said "--help/dkv is missing", exit 1)
for h in -h --help; do
    rc=0; help=$(bash "$T/q/scripts/quickstart.sh" $h 2> "$T/help.err") || rc=$?
    [ $rc = 0 ] && grep -qF "scripts/quickstart.sh [BUILD_DIR]" <<<"$help" && [ ! -s "$T/help.err" ] && [ ! -e "$T/q/results" ] ||
        fail "quickstart.sh $h: exit $rc: $help $(cat "$T/help.err")"
done
out=$(DKV_ROOT="$T/q" bash "$T/q/scripts/quickstart.sh" "$BUILD" 2>&1) || fail "quickstart: $out"
echo "$out"
grep -qE '^h200 +llada-8b +139\.8 +14\.9[0-9] +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+$' <<<"$out" || fail "budget row"
if grep -q "dkv.simulate is not built" <<<"$out"; then
    echo "note: no simulator in this build; only the budget part ran"
else
    for m in static caching blockpool; do
        grep -qE "^$m +(fcfs|phase) +[0-9]+\.[0-9]+ +[0-9]+\.[0-9]+ " <<<"$out" || fail "row for $m"
    done
fi
[ -s "$T/q/results/quickstart.h5" ] && [ -s "$T/q/results/quickstart.png" ] || fail "outputs"
info=$("$DKV" info "$T/q/results/quickstart.h5") || fail "dkv info"
grep -q "run budget" <<<"$info" || fail "dkv info lists the budget run"
want=$(awk '/^## A worked example/ { sec = 1 } sec && /^```/ { if (inb) exit; inb = 1; next } inb' "$ROOT/README.md")
[ -n "$want" ] || fail "no worked example block in README.md"
got=$(sed "s#$BUILD#build/release#g" <<<"$out")
if [ "$want" != "$got" ]; then
    diff <(echo "$want") <(echo "$got") | head -20
    fail "README.md's worked example differs from what scripts/quickstart.sh prints (re-paste it)"
fi
echo "quickstart ok"
