#!/usr/bin/env bash
# test_experiments.sh - every study in experiments/ (the hw_* ones have test_hw_scripts.sh) runs
# to completion, prints a table and writes a results file with at least one complete run, so a
# change that breaks an experiment fails here, not in a user's hands.
set -uo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c 'import h5py' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py (apt-get install python3-h5py)"; exit 77; }
cd "$ROOT" || exit 1
n=0
for e in experiments/*.lua; do
    name=$(basename "$e" .lua)
    case "$name" in hw_*) continue ;; esac
    out="$T/$name.h5"
    # `dkv run "$e" -o "$out"`, shared with the tests that run the same experiment (test_claims.sh)
    bash tests/run_cached.sh "$out" "$e" >"$T/$name.txt" 2>"$T/$name.err" || { rc=$?; tail -5 "$T/$name.err"; fail "$e exited $rc"; }
    [ -s "$T/$name.txt" ] || fail "$e printed no table"
    $PY - "$out" "$name" <<'PY' || fail "$e: results file"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    runs = f["runs"]
    done = [n for n in runs if runs[n].attrs.get("status", b"") in (b"complete", "complete")]
    assert len(runs) > 0 and len(done) == len(runs), (sys.argv[2], len(runs), len(done))
PY
    n=$((n + 1))
done
[ $n -ge 12 ] || fail "only $n experiments found"
echo "ok: $n experiments ran and wrote complete runs"
