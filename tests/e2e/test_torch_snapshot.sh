#!/usr/bin/env bash
# test_torch_snapshot.sh - scripts/torch_snapshot_to_trace.py on snapshot-shaped pickles built
# here (no torch), then `dkv replay` of the result through the caching model.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
PY=/usr/bin/python3
CONV="$ROOT/scripts/torch_snapshot_to_trace.py"
fail() { echo "FAIL: $*" >&2; exit 1; }

# A snapshot as torch.cuda.memory._dump_snapshot writes it: segments + device_traces.
# Device 0 is empty; device 1 has the history: a block allocated before the window is freed
# (dropped), three allocations, a pending free (requested then completed), an old-style free
# (completed only), segment traffic and an oom entry.
$PY - "$T" <<'EOF'
import pickle, sys
T = sys.argv[1]
MiB = 1 << 20
e = lambda action, addr=None, size=None, t=None, **kw: dict(
    {"action": action, "stream": 0, "frames": [{"filename": "x.py", "line": 1, "name": "f"}]},
    **({"addr": addr} if addr is not None else {}), **({"size": size} if size is not None else {}),
    **({"time_us": t} if t is not None else {}), **kw)
base = 0x7f3a00000000
trace = [
    e("segment_alloc", base, 20 * MiB, 1000000),
    e("free_requested", 0x7f3900000000, 4096, 1001000),     # allocated before the window
    e("free_completed", 0x7f3900000000, 4096, 1001000),
    e("alloc", base, 5 * MiB, 1002000),
    e("alloc", base + 5 * MiB, 3 * MiB, 1010000),
    e("segment_alloc", base + 64 * MiB, 2 * MiB, 1011000),
    e("alloc", base + 64 * MiB, 1000448, 1012000),
    e("free_requested", base, 5 * MiB, 1500000),             # freed while a kernel uses it
    e("free_completed", base, 5 * MiB, 1600000),
    e("oom", size=80 << 30, t=1700000, device_free=1 << 30),
    e("free_completed", base + 5 * MiB, 3 * MiB, 2000000),   # old PyTorch: completed only
    e("free_requested", base + 64 * MiB, 1000448, 2500000),
    e("free_completed", base + 64 * MiB, 1000448, 2500000),
    e("segment_free", base + 64 * MiB, 2 * MiB, 2600000),
]
snap = {"segments": [{"device": 1, "address": base, "total_size": 20 * MiB, "allocated_size": 0,
                      "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large",
                      "blocks": [{"size": 20 * MiB, "requested_size": 0, "state": "inactive"}]}],
        "device_traces": [[], trace],
        "allocator_settings": {"max_split_size": -1}}
pickle.dump(snap, open(f"{T}/snap.pickle", "wb"))
# without time_us, a second device only
pickle.dump({"segments": [], "device_traces": [[dict(action="alloc", addr=512, size=1000),
                                                 dict(action="free_requested", addr=512, size=1000)]]},
            open(f"{T}/notime.pickle", "wb"))
# malformed ones
pickle.dump([1, 2], open(f"{T}/list.pickle", "wb"))
pickle.dump({"segments": []}, open(f"{T}/nohist.pickle", "wb"))
pickle.dump({"device_traces": [[dict(action="alloc", addr=1)]]}, open(f"{T}/nosize.pickle", "wb"))
pickle.dump({"device_traces": [[dict(action="teleport", addr=1, size=2)]]}, open(f"{T}/badaction.pickle", "wb"))
import collections
pickle.dump(collections.OrderedDict(device_traces=[]), open(f"{T}/class.pickle", "wb"))
EOF

$PY "$CONV" "$T/snap.pickle" -o "$T/snap.csv" 2>"$T/conv.err"
cat "$T/snap.csv" "$T/conv.err"
grep -q "3 alloc, 3 free (1 only as free_completed), 1 oom, 1 frees of blocks allocated before the recorded window dropped" "$T/conv.err" \
    || fail "converter counts"
[ "$(grep -c ',alloc,' "$T/snap.csv")" -eq 3 ] || fail "alloc lines"
[ "$(grep -c ',free,' "$T/snap.csv")" -eq 3 ] || fail "free lines"
grep -q "^0.002,alloc,$((0x7f3a00000000)),5242880,activation," "$T/snap.csv" || fail "first alloc line (time relative to the first entry)"
grep -q "^0.5,free,$((0x7f3a00000000)),0," "$T/snap.csv" || fail "free at free_requested time"

out=$("$DKV" replay "$T/snap.csv" --mem caching --strict)
echo "$out"
# 5 MiB and 3 MiB share one 20 MiB segment; 1000448 B goes to a 2 MiB small segment
grep -Eq "allocated +0 B .* peak +9389056 B" <<<"$out" || fail "replayed peak allocated"
grep -Eq "reserved +23068672 B" <<<"$out" || fail "replayed reserved"
grep -q "free of unknown id 0, id allocated twice 0, live at end 0" <<<"$out" || fail "consistent stream"

$PY "$CONV" "$T/notime.pickle" --tag kv -o "$T/notime.csv" 2>/dev/null
grep -q "^0.0,alloc,512,1000,kv,512" "$T/notime.csv" || fail "no time_us: index clock"
grep -q "^1e-06,free,512" "$T/notime.csv" || fail "no time_us: second entry"
"$DKV" replay "$T/notime.csv" --mem blockpool -q >/dev/null || fail "replay of notime"

check_bad() {   # pickle, expected message part
    set +e
    msg=$($PY "$CONV" "$T/$1" -o "$T/x.csv" 2>&1); rc=$?
    set -e
    [ $rc -eq 1 ] || fail "$1: exit $rc"
    grep -q "$2" <<<"$msg" || fail "$1: message '$msg' lacks '$2'"
}
check_bad list.pickle "expected a dict"
check_bad nohist.pickle "no 'device_traces'"
check_bad nosize.pickle "device_traces\[0\]\[0\]: field 'size'"
check_bad badaction.pickle "unknown action 'teleport'"
check_bad class.pickle "refusing to load collections.OrderedDict"
check_bad missing.pickle "cannot read"
set +e
$PY "$CONV" "$T/snap.pickle" --device 5 -o "$T/x.csv" 2>"$T/dev.err"; rc=$?
$PY "$CONV" 2>/dev/null; rc2=$?
set -e
[ $rc -eq 1 ] && grep -q "no device 5" "$T/dev.err" || fail "--device out of range"
[ $rc2 -eq 2 ] || fail "usage exit $rc2"
# a time_us that is not a finite number is refused naming the entry (it was written as 'nan')
$PY -c 'import pickle, sys; pickle.dump({"device_traces": [[dict(action="alloc", addr=1, size=2, time_us=0.0),
    dict(action="alloc", addr=9, size=2, time_us=float(sys.argv[2]))]]}, open(sys.argv[1], "wb"))' "$T/nan.pickle" nan
check_bad nan.pickle "device_traces\[0\]\[1\]: field 'time_us' is not a finite number (nan)"
grep -q nan "$T/x.csv" 2>/dev/null && fail "a NaN time was written"
# a write that fails half-way (a file-size limit of 1 KiB; the CSV is larger) leaves the earlier TRACE.csv as it
# was, no TRACE.csv.tmp behind, and says so in one line (it left a CSV ending mid-row, with a traceback)
$PY -c 'import pickle, sys; pickle.dump({"device_traces": [[dict(action="alloc", addr=4096 * i, size=4096)
    for i in range(200)]]}, open(sys.argv[1], "wb"))' "$T/big.pickle"
cp "$T/snap.csv" "$T/keep.csv"
set +e
(ulimit -f 1; $PY "$CONV" "$T/big.pickle" -o "$T/keep.csv" 2>"$T/big.err"); rc=$?
set -e
[ $rc -eq 1 ] || fail "a failed write: exit $rc ($(cat "$T/big.err"))"
cmp -s "$T/keep.csv" "$T/snap.csv" || fail "a failed write changed the earlier CSV: $(tail -c 80 "$T/keep.csv")"
[ ! -e "$T/keep.csv.tmp" ] || fail "a failed write left keep.csv.tmp"
grep -q "keep.csv: cannot write: File too large" "$T/big.err" && ! grep -q Traceback "$T/big.err" \
    || fail "a failed write's message: $(cat "$T/big.err")"
echo "torch snapshot ok"
