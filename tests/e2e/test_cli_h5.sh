#!/usr/bin/env bash
# test_cli_h5.sh - a file written by `dkv run` read back by independent readers (h5py and
# h5dump) and checked against docs/HDF5_SCHEMA.md; `dkv info`; --shard and `dkv merge`.
set -uo pipefail
: "${DKV:?}" "${T:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c 'import h5py' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py (apt-get install python3-h5py)"; exit 77; }

cat >"$T/exp.lua" <<'LUA'
-- a sweep of three points; each shard writes its points
local dkv = require "dkv"
dkv.param("label", "", "a label (only recorded, in the runs' defines attribute)")
local points = {{rate = 0.5}, {rate = 1}, {rate = 2}}
for k, p in ipairs(points) do
  if dkv.shard.mine(k) then
    local t, b = {}, {}
    for i = 1, 1000 do t[i] = i * 0.01; b[i] = math.floor(p.rate * i * 1024) end
    dkv.write_run("sweep:rate=" .. p.rate, {
      params = {rate = p.rate, gpu = "h200"}, seed = k,
      summary = {peak_bytes = b[#b], mean_s = 0.25 * k}, units = {peak_bytes = "bytes", mean_s = "s"},
      config = {rate = p.rate, nested = {x = 1}},
      tables = {series = {columns = {time_s = t, bytes = b}, units = {time_s = "s", bytes = "bytes"},
                          docs = {bytes = "allocated"}}},
    })
  end
end
LUA
"$DKV" run "$T/exp.lua" -o "$T/all.h5" -D label=full >/dev/null || fail "dkv run"
[ -f "$T/all.h5" ] && [ ! -e "$T/all.h5.tmp" ] || fail "final file and no .tmp"

$PY - "$T/all.h5" "$T/exp.lua" <<'PYEOF' || fail "schema check (h5py)"
import sys, h5py, numpy as np, re
f = h5py.File(sys.argv[1], "r")
script = open(sys.argv[2]).read()
assert f.attrs["format"] == "dkv-results", dict(f.attrs)
assert f.attrs["format_version"] == 1
assert re.match(r"\d+\.\d+\.\d+", f.attrs["dkv_version"])
runs = f["runs"]
assert list(runs.keys()) == ["sweep:rate=0.5", "sweep:rate=1", "sweep:rate=2"], list(runs.keys())
prov_str = ["dkv_version", "git_commit", "script", "script_path", "defines", "config", "host",
            "start_time", "end_time", "status", "shard"]
iso = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
for k, name in enumerate(runs, 1):
    r = runs[name]
    for a in prov_str:
        assert isinstance(r.attrs[a], str), (name, a)
    assert r.attrs["status"] == "complete"
    assert r.attrs["script"] == script
    assert r.attrs["defines"] == "label=full"
    assert r.attrs["shard"] == "0/1"
    assert iso.match(r.attrs["start_time"]) and iso.match(r.attrs["end_time"])
    assert r.attrs["end_time"] >= r.attrs["start_time"]
    assert int(r.attrs["seed"]) == k
    assert r.attrs["config"].startswith("{nested = {x = 1}, rate = ")
    assert isinstance(r["params"], h5py.Group) and isinstance(r["summary"], h5py.Group)
    assert r["params"].attrs["gpu"] == "h200"
    assert r["summary"].attrs["units.peak_bytes"] == "bytes"
    t = r["series"]
    assert t.ndim == 1 and t.maxshape == (None,) and t.chunks is not None and t.compression == "gzip"
    assert t.dtype.names == ("bytes", "time_s")
    assert t.attrs["fields"] == "bytes,time_s"
    for fld in t.dtype.names:
        assert "units." + fld in t.attrs and "doc." + fld in t.attrs
    assert t.attrs["units.time_s"] == "s" and t.attrs["doc.bytes"] == "allocated"
    d = t[()]
    assert len(d) == 1000 and d["bytes"].dtype == np.int64 and d["time_s"].dtype == np.float64
    assert d["bytes"][-1] == r["summary"].attrs["peak_bytes"]
    assert abs(d["time_s"][9] - 0.1) < 1e-12
print("schema ok")
PYEOF

if command -v h5dump >/dev/null; then
    h5dump -H "$T/all.h5" >"$T/dump.txt" 2>&1 || fail "h5dump cannot read the file"
    grep -q 'DATASET "series"' "$T/dump.txt" || fail "h5dump: no series dataset"
    grep -q 'H5T_COMPOUND' "$T/dump.txt" || fail "h5dump: no compound type"
    grep -q 'MAXSIZE.*H5S_UNLIMITED\|( H5S_UNLIMITED )' "$T/dump.txt" || fail "h5dump: not extendible"
fi

# dkv info describes the file
out=$("$DKV" info "$T/all.h5") || fail "dkv info"
head -20 <<<"$out"   # no pipe: under pipefail, head closing early kills the writer (SIGPIPE)
grep -q "3 runs" <<<"$out" || fail "info: run count"
grep -q "run sweep:rate=2  \[complete\]" <<<"$out" || fail "info: run line"
grep -qE "peak_bytes +2048000" <<<"$out" || fail "info: summary value"
grep -q "table series: 1000 records" <<<"$out" || fail "info: table"
grep -qE "time_s +f64 +s" <<<"$out" || fail "info: field with unit"
out=$("$DKV" info "$T/all.h5" --run sweep:rate=1 --script) || fail "info --script"
grep -q 'dkv.shard.mine' <<<"$out" || fail "info --script shows the script"
"$DKV" info "$T/absent.h5" 2>/dev/null; [ $? = 1 ] || fail "info of a missing file exits 1"
echo "junk" >"$T/junk.h5"
out=$("$DKV" info "$T/junk.h5" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "not an HDF5 file" <<<"$out" || fail "info of junk: rc $rc: $out"

# shards write their own files; merge joins them; duplicates are refused
"$DKV" run "$T/exp.lua" --shard 0/2 -o "$T/s0.h5" >/dev/null || fail "shard 0"
"$DKV" run "$T/exp.lua" --shard 1/2 -o "$T/s1.h5" >/dev/null || fail "shard 1"
"$DKV" merge "$T/m.h5" "$T/s0.h5" "$T/s1.h5" || fail "merge"
$PY - "$T/s0.h5" "$T/s1.h5" "$T/m.h5" <<'PYEOF' || fail "shard/merge contents"
import sys, h5py
s0, s1, m = (h5py.File(p, "r") for p in sys.argv[1:])
assert list(s0["runs"]) == ["sweep:rate=0.5", "sweep:rate=2"], list(s0["runs"])
assert list(s1["runs"]) == ["sweep:rate=1"]
assert s0["runs/sweep:rate=2"].attrs["shard"] == "0/2"
assert sorted(m["runs"]) == ["sweep:rate=0.5", "sweep:rate=1", "sweep:rate=2"]
assert (m["runs/sweep:rate=1/series"][()] == s1["runs/sweep:rate=1/series"][()]).all()
assert m["runs/sweep:rate=1"].attrs["script"] == s1["runs/sweep:rate=1"].attrs["script"]
PYEOF
out=$("$DKV" merge "$T/dup.h5" "$T/s0.h5" "$T/all.h5" 2>&1); rc=$?
[ $rc = 1 ] || fail "merge with duplicate runs must exit 1, got $rc"
grep -q "already exists" <<<"$out" || fail "duplicate message: $out"
[ ! -e "$T/dup.h5" ] && [ ! -e "$T/dup.h5.tmp" ] || fail "a failed merge must leave no file"
# default output name with --shard
(cd "$T" && "$DKV" run "$T/exp.lua" --shard 1/2 >/dev/null) || fail "default output"
[ -f "$T/results/exp.shard1of2.h5" ] || fail "default shard output name"
echo "h5 ok"
