#!/usr/bin/env bash
# test_safe_output.sh - a results file is never destroyed by a failure (docs/RELIABILITY.md):
# a failed or interrupted `dkv run` leaves the old file byte-identical and keeps its completed
# runs in X.h5.partial; SIGKILL at several moments leaves X.h5.tmp, which the next run moves aside
# (never deletes); `dkv merge` refuses an existing OUT without --force/--append; a full disk and a
# read-only folder give a clear error, the old file intact, no crash and no false run count.
set -uo pipefail
: "${DKV:?}" "${T:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c 'import h5py' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py (apt-get install python3-h5py)"; exit 77; }
mounts=()
cleanup() { for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done; }
trap cleanup EXIT

# complete runs of a file, read by h5py (independent of dkv); -1 when it cannot be read
complete() {
    $PY - "$1" <<'PYEOF' 2>/dev/null || echo -1
import sys, h5py
n = 0
with h5py.File(sys.argv[1], "r") as f:
    for name in f["runs"]:
        try:                      # the run being written when a disk filled may be unreadable
            n += f["runs"][name].attrs["status"] == "complete"
        except (KeyError, OSError):
            pass
print(n)
PYEOF
}

# N runs; a run every ~0.05-0.2 s; -D fail_at=K raises an error before run K
cat >"$T/exp.lua" <<'LUA'
local dkv = require "dkv"
local n = dkv.param("n", 3, "runs to write")
local fail_at = dkv.param("fail_at", 0, "raise an error before this run (0: never)")
local work = dkv.param("work", 0, "busy-loop iterations between runs")
local big = dkv.param("big", 0, "random values added to each run's table")
for i = 1, n do
  if i == fail_at then error("failing on purpose before run " .. i) end
  local s = 0
  for k = 1, work do s = s + k % 7 end
  local t = {}
  for k = 1, 2000 + big do t[k] = k <= 2000 and k * i or math.random() end
  dkv.write_run("run" .. i, {summary = {i = i, s = s}, tables = {v = {x = t}}})
end
LUA

# 1. success writes X; a failed re-run leaves X byte-identical and keeps its runs in X.partial
"$DKV" run "$T/exp.lua" -q -o "$T/x.h5" -D n=7 || fail "first run"
[ "$(complete "$T/x.h5")" = 7 ] || fail "x.h5 holds 7 runs"
cp "$T/x.h5" "$T/x0.h5"
out=$("$DKV" run "$T/exp.lua" -q -o "$T/x.h5" -D n=7 -D fail_at=4 2>&1); rc=$?
[ $rc = 1 ] || fail "failed run exits 1, got $rc: $out"
cmp -s "$T/x.h5" "$T/x0.h5" || fail "a failed re-run changed x.h5"
grep -qF "3 completed runs kept in $T/x.h5.partial; '$T/x.h5' is unchanged" <<<"$out" || fail "message: $out"
[ "$(complete "$T/x.h5.partial")" = 3 ] || fail "x.h5.partial holds the 3 completed runs"
[ ! -e "$T/x.h5.tmp" ] || fail "no .tmp after a failed run"
# a second failure does not overwrite the first .partial
out=$("$DKV" run "$T/exp.lua" -q -o "$T/x.h5" -D n=7 -D fail_at=3 2>&1)
grep -qF "2 completed runs kept in $T/x.h5.partial.2" <<<"$out" || fail "second partial: $out"
[ "$(complete "$T/x.h5.partial")" = 3 ] || fail "first partial kept"
# a failure before any run completed keeps nothing and says so
out=$("$DKV" run "$T/exp.lua" -q -o "$T/x.h5" -D fail_at=1 2>&1)
grep -qF "no run was completed ('$T/x.h5' is unchanged)" <<<"$out" || fail "no-run message: $out"
cmp -s "$T/x.h5" "$T/x0.h5" || fail "x.h5 changed"
echo "failed re-run: ok"

# 2. SIGINT, SIGTERM and SIGKILL at several moments of a run of 40 runs
wait_tmp() { for _ in $(seq 1 300); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
# until process $1 catches signal $2 (its SigCgt mask in /proc): a background job of a
# non-interactive shell starts with SIGINT ignored, and a signal sent while the dynamic loader still
# runs (~0.3 s with the CUDA libraries) would be lost or meet the default action
wait_caught() {
    local bit=$(( $(kill -l "$2") - 1 )) m
    for _ in $(seq 1 3000); do
        m=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
        [ -n "$m" ] && (( (16#$m >> bit) & 1 )) && return 0
        sleep 0.01
    done
    return 1
}
for sig in INT TERM KILL; do
    for moment in start first later; do
        d="$T/$sig-$moment"; mkdir -p "$d"; cp "$T/x0.h5" "$d/x.h5"
        "$DKV" run "$T/exp.lua" -q -o "$d/x.h5" -D n=40 -D work=3000000 >/dev/null 2>"$d/err.txt" &
        pid=$!
        case $moment in
            start) if [ $sig = KILL ]; then sleep 0.05   # usually before the first run
                   else wait_caught $pid $sig || fail "SIG$sig: handler never installed"; fi ;;
            first) wait_tmp "$d/x.h5.tmp" || fail "$sig/$moment: no .tmp" ;;
            later) wait_tmp "$d/x.h5.tmp" || fail "$sig/$moment: no .tmp"; sleep 1 ;;
        esac
        kill -$sig $pid; wait $pid; rc=$?
        cmp -s "$d/x.h5" "$T/x0.h5" || fail "$sig/$moment: x.h5 changed"
        if [ $sig != KILL ]; then   # SIGINT, SIGTERM (Slurm's time limit): stopped cleanly
            [ $rc = 1 ] || fail "SIG$sig/$moment: exit 1, got $rc: $(cat "$d/err.txt")"
            [ ! -e "$d/x.h5.tmp" ] || fail "SIG$sig/$moment: .tmp left"
            [ "$moment" = start ] || grep -q "interrupted (SIG$sig)" "$d/err.txt" || fail "SIG$sig/$moment: $(cat "$d/err.txt")"
            if [ -e "$d/x.h5.partial" ]; then
                n=$(grep -oE 'interrupted; [0-9]+ completed runs? kept in' "$d/err.txt" | grep -oE '[0-9]+')
                [ -n "$n" ] && [ "$(complete "$d/x.h5.partial")" = "$n" ] || fail "SIG$sig/$moment: count: $(cat "$d/err.txt")"
            else
                grep -qE 'interrupted; no run was completed' "$d/err.txt" \
                    || fail "SIG$sig/$moment: message: $(cat "$d/err.txt")"
            fi
        else
            [ $rc = 137 ] || fail "SIGKILL/$moment: exit 137, got $rc"
            # the next run with the same -o moves the killed run's file aside, never deletes it
            had_tmp=0; [ -e "$d/x.h5.tmp" ] && had_tmp=1 && n0=$(complete "$d/x.h5.tmp")
            out=$("$DKV" run "$T/exp.lua" -q -o "$d/x.h5" -D n=2 2>&1) || fail "re-run after SIGKILL: $out"
            if [ $had_tmp = 1 ]; then
                grep -qF "'$d/x.h5.tmp' was left by an earlier run that did not finish" <<<"$out" || fail "leftover message: $out"
                grep -qE "kept (in|as) $d/x.h5.partial" <<<"$out" || fail "leftover named: $out"
                [ "$(complete "$d/x.h5.partial")" = "$n0" ] || fail "SIGKILL/$moment: leftover runs lost"
                echo "SIGKILL/$moment: $n0 complete runs were in the killed run's file"
            fi
            [ "$(complete "$d/x.h5")" = 2 ] || fail "re-run after SIGKILL writes x.h5"
        fi
        echo "SIG$sig at $moment: ok"
    done
done

# a second dkv run with the same -o while the first is writing leaves the first's file alone
# (libhdf5 holds a lock on a file it writes; HDF5_USE_FILE_LOCKING=FALSE would turn that off)
if [ "${HDF5_USE_FILE_LOCKING:-TRUE}" != FALSE ]; then
    d="$T/twice"; mkdir -p "$d"
    "$DKV" run "$T/exp.lua" -q -o "$d/x.h5" -D n=40 -D work=3000000 >/dev/null 2>"$d/err1.txt" &
    pid=$!
    wait_tmp "$d/x.h5.tmp" || fail "twice: no .tmp"
    out=$("$DKV" run "$T/exp.lua" -q -o "$d/x.h5" -D n=2 2>&1); rc=$?
    [ $rc = 1 ] && grep -qF "'$d/x.h5.tmp' is being written by another process" <<<"$out" || fail "twice: $rc $out"
    kill -INT $pid; wait $pid; rc=$?
    # the first run, interrupted, stops as any interrupted run does (exit 1; its completed runs kept, or none)
    [ $rc = 1 ] || fail "twice: the first run exited $rc after SIGINT: $(cat "$d/err1.txt")"
    n=$(grep -oE 'interrupted; [0-9]+ completed runs? kept in' "$d/err1.txt" | grep -oE '[0-9]+')
    if [ -n "$n" ]; then
        [ "$(complete "$d/x.h5.partial")" = "$n" ] || fail "twice: the first run's runs: $(cat "$d/err1.txt")"
    else
        grep -qE 'interrupted; no run was completed' "$d/err1.txt" || fail "twice: the first run's message: $(cat "$d/err1.txt")"
    fi
    echo "a second run with the same -o: refused, the first kept ${n:-0} runs"
fi

# 3. dkv merge refuses an existing OUT; --force replaces it, --append adds to it
"$DKV" run "$T/exp.lua" -q -o "$T/a.h5" -D n=2 || fail "a.h5"
cp "$T/x0.h5" "$T/m.h5"
out=$("$DKV" merge "$T/m.h5" "$T/a.h5" 2>&1); rc=$?
[ $rc = 2 ] || fail "merge onto an existing file: exit 2, got $rc"
grep -q -- '--force' <<<"$out" || fail "merge message names --force: $out"
cmp -s "$T/m.h5" "$T/x0.h5" || fail "refused merge changed m.h5"
out=$("$DKV" merge --append "$T/m.h5" "$T/a.h5" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "already exists" <<<"$out" || fail "append of duplicate names: exit 1, got $rc: $out"
cmp -s "$T/m.h5" "$T/x0.h5" || fail "failed append changed m.h5"
"$DKV" run "$T/exp.lua" -q -o "$T/b.h5" -D n=1 || fail "b.h5"
$PY - "$T/b.h5" <<'PYEOF' || fail "rename b's run"
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    f["runs"].move("run1", "extra")
PYEOF
"$DKV" merge --append "$T/m.h5" "$T/b.h5" >/dev/null || fail "merge --append"
[ "$(complete "$T/m.h5")" = 8 ] || fail "append: 7 + 1 runs"
"$DKV" merge --force "$T/m.h5" "$T/a.h5" >/dev/null || fail "merge --force"
[ "$(complete "$T/m.h5")" = 2 ] || fail "force: 2 runs"
out=$("$DKV" merge --force --append "$T/m.h5" "$T/a.h5" 2>&1); [ $? = 2 ] || fail "--force --append: exit 2"
echo "merge: ok"

# 4. a full disk: a 1 MiB tmpfs when mounting is permitted, else a 1 MiB file size limit
full="$T/full"; mkdir -p "$full"
if mount -t tmpfs -o size=1m tmpfs "$full" 2>/dev/null; then
    mounts+=("$full"); how="a 1 MiB tmpfs"; limit=()
else
    how="ulimit -f 1024 (EFBIG; mount -t tmpfs is not permitted here)"
fi
"$DKV" run "$T/exp.lua" -q -o "$full/x.h5" -D n=2 || fail "small run on $how"
cp "$full/x.h5" "$T/full0.h5"
on_full() {   # runs a command on the full disk (the file size limit applies to it alone)
    if [ "$how" = "a 1 MiB tmpfs" ]; then "$@"; else (trap '' XFSZ; ulimit -f 1024; "$@"); fi
}
claim_ok() {  # a "N completed runs kept in F" claim is checked with h5py
    local n f
    n=$(grep -oE '[0-9]+ completed runs? kept in [^; ]*' <<<"$1") || return 0
    f=${n#* kept in }; n=${n%% *}
    [ "$(complete "$f")" = "$n" ] || fail "full disk: claimed $n completed runs in $f, h5py reads $(complete "$f"): $1"
}
# (a) runs that fill the disk little by little: stopped before a write fails, runs kept intact
out=$(on_full "$DKV" run "$T/exp.lua" -q -o "$full/x.h5" -D n=400 2>&1); rc=$?
echo "full disk via $how, small runs: exit $rc"
[ $rc = 1 ] || fail "full disk ($how): exit 1 (no crash), got $rc: $out"
grep -qE 'not enough space|file size limit' <<<"$out" || fail "full disk: the message names the cause: $out"
cmp -s "$full/x.h5" "$T/full0.h5" || fail "full disk: the old file changed"
grep -qE '[0-9]+ completed runs kept in' <<<"$out" || fail "full disk: completed runs kept: $out"
claim_ok "$out"
rm -f "$full"/x.h5.partial*
# (b) one run larger than the room left: the write fails inside libhdf5
out=$(on_full "$DKV" run "$T/exp.lua" -q -o "$full/x.h5" -D n=3 -D big=300000 2>&1); rc=$?
echo "full disk via $how, one run too large: exit $rc"
[ $rc = 1 ] || fail "full disk, large run ($how): exit 1 (no crash), got $rc: $out"
grep -qE 'No space left on device|File too large|not enough space|file size limit' <<<"$out" || fail "large run: cause: $out"
cmp -s "$full/x.h5" "$T/full0.h5" || fail "large run: the old file changed"
claim_ok "$out"
rm -f "$full"/x.h5.partial*
# merge on a full disk: refused before libhdf5 is asked to copy, nothing left behind
"$DKV" run "$T/exp.lua" -q -o "$T/big.h5" -D n=400 || fail "big.h5"
out=$(on_full "$DKV" merge --force "$full/x.h5" "$T/big.h5" 2>&1); rc=$?
[ $rc = 1 ] || fail "merge on a full disk: exit 1, got $rc: $out"
grep -qE 'not enough space|file size limit' <<<"$out" || fail "merge full-disk message: $out"
cmp -s "$full/x.h5" "$T/full0.h5" || fail "merge on a full disk changed the old file"
[ ! -e "$full/x.h5.tmp" ] || fail "merge on a full disk left a .tmp"
echo "full disk ($how): ok"

# 5. a read-only folder: refused before the script runs, nothing changed
ro="$T/ro"; mkdir -p "$ro"; cp "$T/x0.h5" "$ro/x.h5"
if [ "$(id -u)" != 0 ]; then
    chmod 555 "$ro"; how="chmod 555"; runner=()
elif mount -t tmpfs -o size=4m tmpfs "$ro" 2>/dev/null && mounts+=("$ro") && cp "$T/x0.h5" "$ro/x.h5" \
        && mount -o remount,ro "$ro" 2>/dev/null; then
    how="a read-only tmpfs"; runner=()
elif command -v setpriv >/dev/null && chmod 555 "$ro" && chmod o+rx "$T" "$(dirname "$T")"; then
    how="chmod 555 and setpriv to uid 65534"; runner=(setpriv --reuid=65534 --regid=65534 --clear-groups)
else
    echo "SKIP: read-only folder: neither a non-root user, a read-only mount nor setpriv is available"; exit 77
fi
out=$("${runner[@]}" "$DKV" run "$T/exp.lua" -q -o "$ro/x.h5" -D n=2 2>&1); rc=$?
echo "read-only folder via $how: exit $rc"
[ $rc = 1 ] || fail "read-only folder ($how): exit 1, got $rc: $out"
grep -qF "cannot write results to '$ro/x.h5'" <<<"$out" || fail "read-only message: $out"
cmp -s "$ro/x.h5" "$T/x0.h5" || fail "read-only: the old file changed"
# an output path that is not a results file is never replaced (until session 51, -o onto notes, the script itself
# or a trace replaced it with HDF5): run, compare and replay refuse a folder or a file that is not HDF5 before any
# work, exit 2, the file byte for byte as it was; timeline replaces only a JSON trace
printf 'require("dkv").write_run("w", {summary = {a = 1}})\n' >"$T/w.lua"
"$DKV" run "$T/w.lua" -o "$T/w.h5" -q || fail "writing w.h5"
echo "precious notes" >"$T/notes.txt"
cp "$T/w.lua" "$T/w0.lua"
mkdir -p "$T/outdir"
for args in "run $T/w.lua -o $T/notes.txt" "run $T/w.lua -o $T/w.lua" "compare $T/w.h5 $T/w.h5 -o $T/notes.txt" \
            "replay $ROOT/datasets/workloads/azure_sample.csv --mem caching -o $T/notes.txt" \
            "timeline $T/w.h5 -o $T/notes.txt"; do
    out=$("$DKV" $args 2>&1); rc=$?
    [ $rc = 2 ] || fail "'dkv $args' onto a file that is not its output's kind: exit 2, got $rc: $out"
    grep -qE "exists and is not (a results file dkv may replace|a JSON trace)" <<<"$out" || fail "message: $out"
done
[ "$(cat "$T/notes.txt")" = "precious notes" ] || fail "notes.txt was replaced"
cmp -s "$T/w.lua" "$T/w0.lua" || fail "the script was replaced"
out=$("$DKV" run "$T/w.lua" -o "$T/outdir" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "outdir is a folder" <<<"$out" || fail "-o a folder: exit 2 and named before any work, got $rc: $out"
"$DKV" run "$T/w.lua" -o "$T/w.h5" -q || fail "an existing results file is replaced, as documented"
echo "safe output ok"
