#!/usr/bin/env bash
# test_replay.sh - `dkv replay`: numbers of a hand-computed trace for each manager, the HDF5
# layout, binary traces, malformed lines reported with their line number, usage errors.
set -euo pipefail
: "${DKV:?}" "${T:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$T/a.csv" <<'EOF'
# two requests; request 1 is admitted with a 1 MiB maximum
time_s,kind,id,bytes,tag,request,sub
0,request,,1048576,,1,admit
0.1,alloc,1,4096,kv,1,
0.2,alloc,2,1000000,activation,1,
0.25,kernel,,,,1,gemm
0.3,alloc,3,5242880,kv,2,
0.4,free,1,,kv,1,
0.5,free,2,,,1,
0.6,request,,,,1,finish
0.7,free,3,,,2,
EOF

# caching: 4096 -> small segment (2 MiB); 1000000 -> 1000448 in the same segment;
# 5 MiB -> large segment of 20 MiB.  Peak allocated 4096 + 1000448 + 5242880.
out=$("$DKV" replay "$T/a.csv" --mem caching -o "$T/c.h5")
echo "$out"
grep -q "9 events (3 alloc, 3 free, 3 other)" <<<"$out" || fail "event counts"
grep -Eq "allocated +0 B .* peak +6247424 B" <<<"$out" || fail "caching peak allocated"
grep -Eq "reserved +23068672 B .* peak +23068672 B" <<<"$out" || fail "caching reserved (2 + 20 MiB, cached)"
grep -q "num_alloc_retries 0, num_ooms 0" <<<"$out" || fail "pytorch counters"

# blockpool with 1 MiB blocks: 1 + 1 + 5 blocks in one 8-block chunk
out=$("$DKV" replay "$T/a.csv" --mem blockpool --block-bytes 1MiB --chunk-blocks 8 --capacity 64MiB -o "$T/b.h5")
echo "$out"
grep -Eq "allocated +0 B .* peak +7340032 B" <<<"$out" || fail "blockpool peak allocated"
grep -Eq "reserved +8388608 B" <<<"$out" || fail "blockpool reserved one chunk"
grep -q "block reuse            0.0000 (0 of 7)" <<<"$out" || fail "blockpool reuse"

# static: request 1's KV sits in its 1 MiB reservation; the rest are device allocations
out=$("$DKV" replay "$T/a.csv" --mem static -o "$T/s.h5" --run mine)
echo "$out"
grep -Eq "reserved +0 B .* peak +7291904 B" <<<"$out" || fail "static peak reserved (1 MiB + 1000448 + 5 MiB)"
grep -q "1 reserved, 0 refused, 1 returned" <<<"$out" || fail "static reservations"

$PY - "$T" <<'EOF'
import sys, h5py
T = sys.argv[1]
with h5py.File(f"{T}/c.h5") as f:
    r = f["runs/replay_caching"]
    s = r["summary"].attrs
    assert s["peak_allocated"] == 6247424, s["peak_allocated"]
    assert s["peak_reserved"] == 23068672
    assert s["units.peak_reserved"] in (b"bytes", "bytes")
    assert s["n_acquire"] == 3 and s["n_release"] == 3
    ser = r["mem_series"][:]
    assert len(ser) == 6, len(ser)                      # stride 1: one sample per manager event
    assert list(ser["allocated"]) == [4096, 4096 + 1000448, 6247424, 6247424 - 4096, 5242880, 0], ser["allocated"]
    assert abs(ser["time_s"][2] - 0.3) < 1e-12
    tags = {t["tag"].decode(): t for t in r["mem_tags"][:]}
    assert tags["kv"]["n_acquire"] == 2 and tags["activation"]["peak_allocated"] == 1000448
    assert r["params"].attrs["mem.kind"] in (b"caching", "caching")
with h5py.File(f"{T}/s.h5") as f:
    assert "mine" in f["runs"]
with h5py.File(f"{T}/b.h5") as f:
    assert f["runs/replay_blockpool/params"].attrs["mem.block_bytes"] == 1 << 20
print("hdf5 ok")
EOF

# the same trace in binary form gives the same numbers
$PY - "$T" <<'EOF'
import struct, sys
T = sys.argv[1]
kinds = {"alloc": 0, "free": 1, "kernel": 2, "xfer": 3, "phase": 4, "request": 5}
tags = {"": 0, "weights": 0, "kv": 1, "activation": 2, "logits": 3, "staging": 4}
subs = {"": 0, "admit": 1, "finish": 2, "gemm": 1}
rows = [l.strip().split(",") for l in open(f"{T}/a.csv") if l.strip() and not l.startswith("#")][1:]
with open(f"{T}/a.dkvt", "wb") as f:
    f.write(b"DKVTRACE" + struct.pack("<IIQQ", 1, 64, len(rows), 0))
    for t, k, i, b, tag, req, sub in rows:
        f.write(struct.pack("<ddQQQIIIIHBBB3x", float(t), 0.0, int(i or 0), int(b or 0), 0,
                            int(req or 0), 0, 0, 0, 0, kinds[k], tags[tag], subs[sub]))
EOF
out2=$("$DKV" replay "$T/a.dkvt" --mem caching -q)
grep -Eq "allocated +0 B .* peak +6247424 B" <<<"$out2" || fail "binary trace differs"

# malformed line: file:line and the field, exit 1
printf 'time_s,kind,id,bytes\n0,alloc,1,100\n0.1,alloc,2,12x\n' >"$T/bad.csv"
set +e
err=$("$DKV" replay "$T/bad.csv" --mem caching 2>&1); rc=$?
set -e
[ $rc -eq 1 ] || fail "malformed trace exit $rc"
grep -q "bad.csv:3: field 'bytes'" <<<"$err" || fail "malformed message: $err"

# time going backwards
printf 'time_s,kind,id,bytes\n1,alloc,1,100\n0.5,free,1,\n' >"$T/back.csv"
set +e
err=$("$DKV" replay "$T/back.csv" --mem static 2>&1); rc=$?
set -e
[ $rc -eq 1 ] && grep -q "back.csv:3: field 'time_s'" <<<"$err" || fail "time order: $rc $err"

# --strict turns anomalies into exit 1; without it they are counted
printf 'time_s,kind,id,bytes\n0,free,9,\n' >"$T/anom.csv"
grep -q "free of unknown id 1" <<<"$("$DKV" replay "$T/anom.csv" --mem static -q)" || fail "anomaly count"
set +e
"$DKV" replay "$T/anom.csv" --mem static --strict -q >/dev/null 2>&1; rc=$?
set -e
[ $rc -eq 1 ] || fail "--strict exit $rc"

# usage errors: exit 2 with a message
for args in "" "$T/a.csv" "$T/a.csv --mem vmm" "$T/a.csv --mem caching --capacity 12parsecs" \
            "$T/a.csv --mem caching --bogus 1" "$T/a.csv --mem caching --stride" \
            "$T/a.csv --mem caching --delay inf" "$T/a.csv --mem caching --delay 1e400" \
            "$T/a.csv --mem blockpool --chunk-blocks 3" \
            "$T/a.csv --mem static --chunk-blocks 8" "$T/a.csv --mem blockpool --max-split 64MiB" \
            "$T/a.csv --mem caching --no-grow"; do   # another kind's option (accepted, unread, until session 51)
    set +e
    # shellcheck disable=SC2086
    err=$("$DKV" replay $args 2>&1); rc=$?
    set -e
    [ $rc -eq 2 ] || fail "usage '$args' exit $rc"
    [ -n "$err" ] || fail "usage '$args' printed nothing"
done
set +e
err=$("$DKV" replay "$T/a.csv" --mem caching --max-split 1MiB 2>&1); rc=$?
set -e
[ $rc -eq 2 ] && grep -q "max_split_size" <<<"$err" || fail "bad max_split (a usage error since session 51): $rc $err"
grep -q "usage: dkv replay" <<<"$("$DKV" replay --help)" || fail "--help"
echo "replay ok"
