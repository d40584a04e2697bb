#!/usr/bin/env bash
# test_experiments.sh - every study in experiments/ (the hw_* ones have test_hw_scripts.sh) runs
# to completion, prints a table and writes a results file with at least one complete run, so a
# change that breaks an experiment fails here, not in a user's hands.  Each runs with its defaults
# except quality_frontier.lua, which executes the tiny dLLM for real on the CPU backend: every one of
# its points runs, on the 2 short prompts of tests/data/prompts_cpu.jsonl (32 generated tokens each)
# in blocks of 16, so that each request still decodes two blocks, the second on the first's cache (its
# default, 2 longer prompts of datasets/prompts/heldout2.jsonl with 64 tokens each in blocks of 32, takes
# 2.7x the CPU time: 38 s against 14); its default prompts and targets are checked to be a well-formed pair.
# The tables a study writes itself (dkv.write_run, m:write) give a unit to every field whose name says it has
# one (*_s, *_gib, *_gb, *_mib, *_bytes, *_per_s*).  A -D trace that cannot be read is an error naming it
# (only the default trace, outside the repository, falls back), fragmentation.lua's -D gen takes trace or a
# count, and dynamic_steps.lua's prompts are -D prompt tokens long even above its old 2048 cap.
set -uo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c 'import h5py' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py (apt-get install python3-h5py)"; exit 77; }
cd "$ROOT" || exit 1
names=()
for e in experiments/*.lua; do
    name=$(basename "$e" .lua)
    case "$name" in hw_*) continue ;; esac
    args=()
    [ "$name" = quality_frontier ] &&
        args=(-D prompts=tests/data/prompts_cpu.jsonl -D targets=tests/data/prompts_cpu_targets.jsonl -D block=16)
    # `dkv run "$e" -o "$T/$name.h5"`, shared with the tests that run the same experiment (test_claims.sh)
    bash tests/run_cached.sh "$T/$name.h5" "$e" "${args[@]}" >"$T/$name.txt" 2>"$T/$name.err" \
        || { rc=$?; tail -5 "$T/$name.err"; fail "$e exited $rc"; }
    [ -s "$T/$name.txt" ] || fail "$e printed no table"
    names+=("$name")
done
[ ${#names[@]} -ge 12 ] || fail "only ${#names[@]} experiments found"
# every results file holds runs, all of them complete (one python start-up for all of them); quality_frontier.lua's
# default prompts and targets: one JSON object a line each, as many targets as prompts, every prompt with its text
# and a positive gen, every target with its text
$PY - "$T" "${names[@]}" <<'PY' || fail "results files or quality_frontier.lua's default prompts (above)"
import json, re, sys, h5py
bad = 0
unitful = re.compile(r"(_s|_gib|_gb|_mib|_bytes|_per_s|_per_s_\w+)$")
s = lambda v: v.decode() if isinstance(v, bytes) else v
for name in sys.argv[2:]:
    try:
        with h5py.File("%s/%s.h5" % (sys.argv[1], name), "r") as f:
            runs = f["runs"]
            done = [n for n in runs if runs[n].attrs.get("status", b"") in (b"complete", "complete")]
            assert len(runs) > 0 and len(done) == len(runs), (len(runs), len(done))
            no_unit = ["%s/%s.%s" % (rn, t, fl) for rn, g in runs.items() if s(g.attrs.get("backend", "")) == "none"
                       for t, d in g.items() if isinstance(d, h5py.Dataset) for fl in d.dtype.names or ()
                       if unitful.search(fl) and not s(d.attrs.get("units." + fl, ""))]
            assert not no_unit, "fields without a unit: %s" % ", ".join(no_unit)
    except Exception as e:
        print("FAIL: experiments/%s.lua: results file: %r" % (name, e))
        bad += 1
rows = lambda p: [json.loads(l) for l in open(p) if l.strip()]
p, t = rows("datasets/prompts/heldout2.jsonl"), rows("datasets/prompts/heldout2_targets.jsonl")
if not (len(p) == len(t) > 0 and all(isinstance(x.get("text"), str) and x["text"] and isinstance(x.get("gen"), int)
                                     and x["gen"] > 0 for x in p) and all(isinstance(x.get("text"), str) for x in t)):
    print("FAIL: datasets/prompts/heldout2.jsonl / heldout2_targets.jsonl: not a pair of %d prompts and targets" % len(p))
    bad += 1
sys.exit(1 if bad else 0)
PY
# a mistaken -D is an error naming it, not a silent substitute
bad_d() {   # bad_d WHAT EXPERIMENT -D... : exits non-zero, names WHAT on stderr, writes no results file
    local what=$1 e=$2; shift 2
    "$DKV" run -q "$e" "$@" -o "$T/bad_d.h5" >"$T/bad_d.txt" 2>"$T/bad_d.err" && fail "$e $*: exited 0 ($(head -c 300 "$T/bad_d.txt"))"
    grep -q -- "$what" "$T/bad_d.err" || fail "$e $*: the error does not name $what: $(head -c 300 "$T/bad_d.err")"
    [ ! -e "$T/bad_d.h5" ] || fail "$e $*: wrote a results file"
}
for e in fragmentation short_requests phase_scheduler; do
    bad_d "-D trace=$T/no_such_trace.csv" "experiments/$e.lua" -D "trace=$T/no_such_trace.csv" -D n=20
done
bad_d "-D gen=foo" experiments/fragmentation.lua -D gen=foo -D n=20
bad_d "-D gen=-3" experiments/fragmentation.lua -D gen=-3 -D n=20
"$DKV" run -q experiments/dynamic_steps.lua -D prompt=3000 -D n=4 -o "$T/dynsteps_3000.h5" >/dev/null 2>"$T/dynsteps_3000.err" \
    || { cat "$T/dynsteps_3000.err"; fail "dynamic_steps.lua -D prompt=3000 -D n=4 failed"; }
$PY - "$T/dynsteps_3000.h5" <<'PY' || fail "dynamic_steps.lua -D prompt=3000: prompts are not 3000 tokens (above)"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    p = {int(x) for r in f["runs"].values() if "requests" in r for x in r["requests"]["prompt_tokens"]}
print("FAIL: prompt lengths %s" % sorted(p)) if p != {3000} else None
sys.exit(0 if p == {3000} else 1)
PY
echo "ok: ${#names[@]} experiments ran and wrote complete runs (tables with units); a wrong -D trace/gen is an error naming it"
