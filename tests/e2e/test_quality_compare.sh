#!/usr/bin/env bash
# test_quality_compare.sh - the CPU-against-CUDA quality frontier's post-processing without a GPU,
# on STAND-INS: two real CPU runs of experiments/quality_frontier.lua (one point, the 2 prompts of
# tests/data/prompts_cpu.jsonl; the second with -D bf16_activations=true) where the second stands
# in for the CUDA run.  scripts/quality_compare.py must label it STAND-IN, print each backend's
# figures as the files hold them and CUDA - CPU, refuse runs of other prompts and files without
# the table; `scripts/gpu_run.sh post-score` must read a stand-in device folder (score.tgz with the
# stand-in frontier and the GPU test's real output here: its SKIP line), print the comparison and
# the test's verdict lines, plot, and exit 1 for the skipped GPU test.  -D keep_going: a point made
# to fail (an injected error in a copy of the script) is printed FAILED, left out and listed, and a
# failing reference point stops the sweep.  -D backend=cuda without a GPU stops at the device
# probe; -D bf16_activations with backend=cuda is refused.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}" "${BUILD:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"
$PY -c 'import h5py, matplotlib' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py or matplotlib"; exit 77; }

A=(-D prompts=tests/data/prompts_cpu.jsonl -D targets=tests/data/prompts_cpu_targets.jsonl)
"$DKV" run experiments/quality_frontier.lua "${A[@]}" -D only=none -o "$T/cpu.h5" > "$T/cpu.txt"
# the stand-in also asks for point dual, made to fail (a copy of the script with an injected error):
# -D keep_going=true prints it FAILED, leaves it out and lists it in params.failed
sed 's|^local function both_runs(p) .*|local function both_runs(p) if p.name == "dual" then error("injected\\nmore") end|' \
    experiments/quality_frontier.lua > "$T/qf_inject.lua"
grep -q 'error("injected' "$T/qf_inject.lua" || fail "injection"
"$DKV" run "$T/qf_inject.lua" "${A[@]}" -D only=dual -D keep_going=true -D bf16_activations=true \
    -o "$T/standin.h5" > "$T/standin.txt"
grep -q "STAND-IN for CUDA" "$T/standin.txt" || fail "the emulated run does not say it is a stand-in"
grep -qE "^dual +FAILED: .*injected$" "$T/standin.txt" || fail "keep_going: the FAILED line: $(cat "$T/standin.txt")"
sed 's|^local function both_runs(p) .*|local function both_runs(p) if p.name == "none" then error("no ref") end|' \
    experiments/quality_frontier.lua > "$T/qf_none.lua"
if err=$("$DKV" run "$T/qf_none.lua" "${A[@]}" -D only=dual -D keep_going=true -o "$T/x.h5" 2>&1); then
    fail "a failing reference point (none) must stop the sweep even with keep_going"
fi
grep -q "no ref" <<<"$err" || fail "none's error: $err"

out=$($PY scripts/quality_compare.py "$T/cpu.h5" "$T/standin.h5")
echo "$out"
grep -q "against STAND-IN for CUDA (a CPU run, bf16-emulated activations)" <<<"$out" || fail "no STAND-IN label"
grep -q "^criterion per point" <<<"$out" || fail "no criterion line before the table"
# the row of point none: the files' own figures, and CUDA - CPU
want=$($PY - "$T/cpu.h5" "$T/standin.h5" <<'PY'
import sys, h5py
a, b = (h5py.File(p, "r")["runs/quality/points"][()][0] for p in sys.argv[1:3])
print("none %d %d %.3f %.3f %+.3f %.4f %.4f %+.4f %.4f %.4f %+.4f" % (
    a["peak_kv_bytes"], a["peak_host_bytes"], a["agreement"], b["agreement"], b["agreement"] - a["agreement"],
    a["bits_per_byte"], b["bits_per_byte"], b["bits_per_byte"] - a["bits_per_byte"],
    a["accuracy"], b["accuracy"], b["accuracy"] - a["accuracy"]))
PY
)
got=$(grep -E "^none " <<<"$out" | awk '{print $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12}')
[ "$got" = "$want" ] || fail "row none: got '$got', want '$want'"
grep -qE "^1 of 1 points within the tolerances" <<<"$out" || fail "verdict count"
grep -q "^FAILED in the CUDA run (-D keep_going: left out of its tables): dual" <<<"$out" || fail "failed points"
md=$($PY scripts/quality_compare.py "$T/cpu.h5" "$T/standin.h5" --md)   # whole, then grep (no early close: pipefail)
grep -q "^| none | 0 | 0 |" <<<"$md" || fail "markdown row"
# a run of another block length (the stand-in's params edited), and a file without the frontier,
# are errors naming the field / the table
cp "$T/standin.h5" "$T/b16.h5"
$PY -c 'import sys, h5py; h5py.File(sys.argv[1], "r+")["runs/quality/params"].attrs["block"] = 16' "$T/b16.h5"
if err=$($PY scripts/quality_compare.py "$T/cpu.h5" "$T/b16.h5" 2>&1); then fail "other block accepted"; fi
grep -q "differ in params.block" <<<"$err" || fail "block mismatch message: $err"
echo 'local dkv = require "dkv"; dkv.write_run("other", {params = {x = 1}})' > "$T/other.lua"
"$DKV" run "$T/other.lua" -o "$T/other.h5" > /dev/null
if err=$($PY scripts/quality_compare.py "$T/cpu.h5" "$T/other.h5" 2>&1); then fail "non-frontier accepted"; fi
grep -q "other.h5 (CUDA file) has no run 'quality'" <<<"$err" || fail "missing-table message: $err"
# the experiment's own checks
if err=$("$DKV" run experiments/quality_frontier.lua -D backend=cuda -D only=dual -o "$T/c.h5" 2>&1); then
    echo "a GPU is present: the CUDA frontier ran"
else
    grep -q "no CUDA device" <<<"$err" || fail "backend=cuda without a GPU: $err"
fi
if err=$("$DKV" run experiments/quality_frontier.lua -D backend=cuda -D bf16_activations=true -o "$T/c.h5" 2>&1); then
    fail "bf16_activations with backend=cuda accepted"
fi
grep -q "backend=cpu only" <<<"$err" || fail "bf16_activations message: $err"
if err=$("$DKV" run experiments/quality_frontier.lua -D backend=gpu -o "$T/c.h5" 2>&1); then fail "backend=gpu accepted"; fi
grep -q "'gpu' (cpu or cuda)" <<<"$err" || fail "backend message: $err"

# gpu_run.sh post-score on a stand-in device folder (what device-score returns)
mkdir -p "$T/dev" "$T/w"
echo "STAND-IN (no GPU here): a CPU run with bf16 activations as frontier_cuda.h5" > "$T/dev/device.txt"
cp "$T/standin.h5" "$T/w/frontier_cuda.h5"
{ cat "$T/standin.txt"; echo "== frontier cuda exit 0 (1 s)"; } > "$T/w/frontier_cuda.log"
if [ -x "$BUILD/tests/gpu/test_backend_score" ]; then
    set +e
    "$BUILD/tests/gpu/test_backend_score" dual > "$T/w/score_dual.log" 2>&1; r=$?
    set -e
else    # not built (no nvcc, as on CI): what the test prints on a machine without a GPU, its SKIP and exit 77
    echo "SKIP: no CUDA device (stand-in: test_backend_score not built here)" > "$T/w/score_dual.log"; r=77
fi
echo "== test_backend_score dual exit $r (0 s)" >> "$T/w/score_dual.log"
tar -czf "$T/dev/score.tgz" -C "$T/w" .
set +e
post=$(RES="$T/res" bash scripts/gpu_run.sh post-score "$T/dev" "$T/cpu.h5" 2>&1); pr=$?
set -e
echo "$post"
grep -q "^device: STAND-IN" <<<"$post" || fail "post: device line"
grep -q "against STAND-IN for CUDA" <<<"$post" || fail "post: comparison"
[ -s "$T/res/compare.md" ] && [ -s "$T/res/quality_frontier_cuda.png" ] || fail "post: compare.md or the plot missing"
if [ "$r" = 0 ]; then
    [ "$pr" = 0 ] || fail "post: the GPU test passed, yet post-score exited $pr"
else    # a skipped (77: no GPU here) or failed GPU test fails the device call, and a skip is reported
    [ "$r" != 77 ] || grep -q "^SKIP: no CUDA device" <<<"$post" || fail "post: the GPU test's SKIP line"
    [ "$pr" = 1 ] || fail "post: GPU test exit $r must fail the device call (post-score exit $pr)"
fi
rm "$T/res/frontier_cuda.h5" "$T/dev/score.tgz"
if RES="$T/res2" bash scripts/gpu_run.sh post-score "$T/dev" "$T/cpu.h5" 2>/dev/null; then fail "post without score.tgz"; fi
echo "ok: quality_compare and post-score on stand-ins"
