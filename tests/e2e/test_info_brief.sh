#!/usr/bin/env bash
# test_info_brief.sh - `dkv info --brief` and `--json` on a 100-run sweep (10 arrival rates x 10
# offload thresholds): at most 110 lines, one line per run, exactly the two swept parameters as
# columns, metrics equal to the file's summaries; --json is valid JSON whose values equal the
# file's; --run NAME picks one run; a missing run and --script with --brief are errors.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c 'import h5py' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py"; exit 77; }

cat >"$T/sweep100.lua" <<'LUA'
local dkv = require "dkv"
for i = 1, 10 do
  for j = 0, 9 do
    local r = dkv.simulate{model = "llada-8b", gpu = "h200", seed = 3,
      workload = {kind = "poisson", n = 4, rate = i, prompt = 128, gen = 32},
      decode = {cache = "dual", block_len = 32}, record = {memory_every = 0},
      policies = {offload = {mode = "progressive", t1 = j / 10, t2 = 0.95}}}
    dkv.save(r, string.format("p:rate=%d,t1=%.1f", i, j / 10))
  end
end
LUA
"$DKV" run "$T/sweep100.lua" -o "$T/s100.h5" >/dev/null
out=$("$DKV" info --brief "$T/s100.h5")
n=$(wc -l <<<"$out")
echo "$out" | head -4
[ "$n" -le 110 ] || fail "--brief printed $n lines for 100 runs"
"$DKV" info --json "$T/s100.h5" >"$T/s100.json"
$PY - "$T/s100.h5" "$out" "$T/s100.json" <<'PYEOF' || fail "brief/json contents"
import json, sys, h5py
path, out, js = sys.argv[1], sys.argv[2].splitlines(), sys.argv[3]
assert out[0].endswith("100 runs; differing: policies.offload.t1, workload.rate"), out[0]
head = out[1].split()
assert head[:4] == ["run", "backend", "offload.t1", "workload.rate"], head
rows = {l.split()[0]: l.split() for l in out[2:]}
with h5py.File(path, "r") as f:
    names = list(f["runs"])
    assert sorted(rows) == sorted(names) and len(out) == 2 + len(names), (len(rows), len(out))
    for name in names:
        r, s = rows[name], f["runs"][name]["summary"].attrs
        c = f["runs"][name]["config"].attrs
        assert r[1] == "sim" and float(r[3]) == c["workload.rate"] and float(r[2]) == round(c["policies.offload.t1"], 6), r
        assert abs(float(r[4]) - s["tokens_per_s"]) <= 0.05 + 1e-9, (r, s["tokens_per_s"])
        assert abs(float(r[6]) - s["latency_p99_s"]) <= 0.0005 + 1e-12, (r, s["latency_p99_s"])
        assert r[-1] == "%d/%d" % (s["n_done"], s["n_requests"]), r
    d = json.load(open(js))
    assert d["differing"] == ["policies.offload.t1", "workload.rate"], d["differing"]
    assert [x["name"] for x in d["runs"]] == names
    for x in d["runs"]:
        g = f["runs"][x["name"]]
        for k, v in g["summary"].attrs.items():
            if k.startswith("units."):
                assert x["units"][k[6:]] == v, k
            elif v == v:
                assert x["summary"][k] == v, (k, x["summary"][k], v)
            else:
                assert x["summary"][k] is None, k
        for k, v in g["config"].attrs.items():
            got = x["config"][k]
            assert (got == v.tolist()) if hasattr(v, "tolist") and not isinstance(v, str) else got == v, (k, got, v)
        assert x["attributes"]["backend"] == "sim" and x["tables"]["requests"] == 4, x["tables"]
print("brief and json ok")
PYEOF
one=$("$DKV" info --brief "$T/s100.h5" --run "p:rate=3,t1=0.5")
[ "$(wc -l <<<"$one")" -eq 3 ] && grep -q "^p:rate=3,t1=0.5 " <<<"$one" || fail "--run: $one"
"$DKV" info --json --brief --run "p:rate=3,t1=0.5" "$T/s100.h5" | $PY -c '
import json, sys
d = json.load(sys.stdin)
assert len(d["runs"]) == 1 and sorted(d["runs"][0]["config"]) == ["policies.offload.t1", "workload.rate"], d
assert "tokens_per_s" in d["runs"][0]["summary"] and "n_steps" not in d["runs"][0]["summary"]' || fail "--json --brief --run"
rc=0; "$DKV" info --brief --run nope "$T/s100.h5" >/dev/null 2>"$T/err" || rc=$?
[ $rc -eq 1 ] && grep -q "has no run 'nope'" "$T/err" || fail "missing run: rc $rc $(cat "$T/err")"
rc=0; "$DKV" info --brief --script "$T/s100.h5" >/dev/null 2>"$T/err" || rc=$?
[ $rc -eq 2 ] || fail "--brief --script: rc $rc"
# a run without an engine (dkv.write_run: backend none, no presets, seed 0) beside a simulated one:
# empty origin strings and the provenance seed are not differences
cat >"$T/mixed.lua" <<'LUA'
local dkv = require "dkv"
dkv.save(dkv.simulate{model = "llada-8b", gpu = "h200", seed = 9,
  workload = {kind = "poisson", n = 2, rate = 2, prompt = 64, gen = 32}}, "sim")
dkv.write_run("plain", {summary = {x = 1}})
LUA
"$DKV" run "$T/mixed.lua" -o "$T/mixed.h5" >/dev/null
m=$("$DKV" info --brief "$T/mixed.h5")
head -1 <<<"$m" | grep -q "2 runs; differing: none$" || fail "mixed file: $(head -1 <<<"$m")"
grep -qE "^plain +none +- " <<<"$m" && grep -qE "^sim +sim +[0-9]" <<<"$m" || fail "mixed rows: $m"
echo "info --brief ok: $n lines for 100 runs"
