#!/usr/bin/env bash
# test_fit_host.sh - scripts/fit_host.py recovers base_s and per_item_s from per-step host records
# (synthetic runs with a known rule plus noise), ignores runs that are not ':real' or do not match
# --runs, writes the two terms into a profile's host table leaving the rest of the file as it was,
# and stops with a message on a file without usable runs.
set -uo pipefail
: "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"
PY=/usr/bin/python3
$PY - "$T/runs.h5" <<'PYEOF' || fail "synthetic file"
import sys, h5py, numpy as np
rng = np.random.default_rng(1)
dt = np.dtype([("index", "<u8"), ("n_items", "<u4"), ("host_plan_s", "<f8")])
with h5py.File(sys.argv[1], "w") as f:
    for name, base, per in (("a:real", 5e-6, 1.5e-6), ("b:real", 5e-6, 1.5e-6), ("c:sim", 1.0, 1.0), ("skip:real", 1.0, 1.0)):
        n = rng.integers(1, 9, 400)
        st = np.zeros(400, dt)
        st["index"], st["n_items"] = np.arange(400), n
        st["host_plan_s"] = base + per * n + rng.normal(0, 1e-7, 400)
        f.create_dataset("runs/%s/steps" % name, data=st)
PYEOF
out=$($PY scripts/fit_host.py --runs '^(a|b|c):' "$T/runs.h5") || fail "fit: $out"
echo "$out" | head -1
$PY - "$out" <<'PYEOF' || fail "fitted terms: $out"
import re, sys
m = re.search(r"host_plan_s = (\S+) s \+ (\S+) s x items over (\d+) steps of (\d+) runs", sys.argv[1])
b, p, n, r = float(m.group(1)), float(m.group(2)), int(m.group(3)), int(m.group(4))
assert (n, r) == (800, 2), (n, r)          # c:sim is not ':real', skip:real does not match --runs
assert abs(b - 5e-6) < 1e-7 and abs(p - 1.5e-6) < 2e-8, (b, p)
PYEOF
cp datasets/profiles/h200-20261201c.lua "$T/p.lua"
$PY scripts/fit_host.py --runs '^(a|b):' --write "$T/p.lua" --source "synthetic" "$T/runs.h5" >/dev/null || fail "write"
grep -q '^  host = {base_s = 5\.0[0-9]*e-06, per_item_s = 1\.[45][0-9]*e-06, per_launch_s = ' "$T/p.lua" || fail "host line: $(grep '^  host = ' "$T/p.lua")"
grep -q "fitted by scripts/fit_host.py from 800 steps of 2 dkv.execute runs (synthetic" "$T/p.lua" || fail "source comment"
[ "$(diff <(grep -v -e '^  host = ' -e 'fit_host.py' "$T/p.lua") <(grep -v -e '^  host = ' -e 'fit_host.py' datasets/profiles/h200-20261201c.lua) | wc -l)" = 0 ] \
    || fail "the rest of the profile changed"
# the file already had a fitted host line (h200-20261201c): its note is replaced, not stacked
[ "$(grep -c 'fitted by scripts/fit_host.py' "$T/p.lua")" = 1 ] || fail "fit notes: $(grep -c 'fitted by scripts/fit_host.py' "$T/p.lua")"
if err=$($PY scripts/fit_host.py --runs '^nothing' "$T/runs.h5" 2>&1); then fail "no usable run accepted"; fi
grep -q "fit_host: no ':real' run with host_plan_s" <<<"$err" || fail "message: $err"
# refused in one line, without a traceback: a --runs that is not a regular expression and --source without --write
# (exit 2: it was silently ignored), runs whose steps all have n_items 0 (exit 1: nothing to fit)
one_line() {   # expected-status expected-message command...
    local want=$1 msg=$2 rc; shift 2
    err=$("$@" 2>&1); rc=$?
    [ "$rc" = "$want" ] || fail "$*: exit $rc, not $want: $err"
    [ "$(wc -l <<<"$err")" = 1 ] && grep -qF -- "$msg" <<<"$err" || fail "$*: message: $err"
}
one_line 2 "fit_host: --runs '(': not a regular expression" $PY scripts/fit_host.py --runs '(' "$T/runs.h5"
one_line 2 "fit_host: --source names the files in the profile's comment: it needs --write" \
    $PY scripts/fit_host.py --source synthetic "$T/runs.h5"
$PY -c 'import sys, h5py, numpy as np
st = np.zeros(5, [("index", "<u8"), ("n_items", "<u4"), ("host_plan_s", "<f8")])
h5py.File(sys.argv[1], "w").create_dataset("runs/z:real/steps", data=st)' "$T/zero.h5" || fail "zero-items file"
one_line 1 "fit_host: no step with n_items > 0 in the 1 ':real' run(s) with host_plan_s of $T/zero.h5" \
    $PY scripts/fit_host.py "$T/zero.h5"
# --write goes through PROFILE.lua.tmp: a write that fails (a file-size limit below the profile's size) leaves the
# profile as it was and no .tmp (it left the profile truncated, with a traceback)
cp "$T/p.lua" "$T/before.lua"
err=$(ulimit -f 64; $PY scripts/fit_host.py --runs '^(a|b):' --write "$T/p.lua" "$T/runs.h5" 2>&1 >/dev/null); rc=$?
[ $rc = 1 ] || fail "a failed --write: exit $rc: $err"
grep -qxF "fit_host: $T/p.lua: cannot write: File too large (the profile is unchanged)" <<<"$err" || fail "a failed --write: $err"
cmp -s "$T/p.lua" "$T/before.lua" || fail "a failed --write changed the profile ($(wc -c <"$T/p.lua") bytes)"
[ ! -e "$T/p.lua.tmp" ] || fail "a failed --write left p.lua.tmp"
echo ok
