#!/usr/bin/env bash
# test_h5_malformed.sh - malformed results files given to dkv info (issue 12, defect 14): what dkv
# checks before libhdf5 reads the file (core/io/h5_check.c) gives a clear error, at once, for a
# FIFO, a truncated file, a superblock dkv cannot read and a root group header outside the file;
# a file from a newer dkv is refused by name.  docs/RELIABILITY.md lists what is left to libhdf5.
set -uo pipefail
: "${DKV:?}" "${T:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
$PY -c 'import h5py' 2>/dev/null || { echo "SKIP: /usr/bin/python3 lacks h5py (apt-get install python3-h5py)"; exit 77; }

printf 'local dkv = require "dkv"\ndkv.write_run("a", {summary = {x = 1}, tables = {t = {v = {1, 2, 3}}}})\n' >"$T/w.lua"
"$DKV" run "$T/w.lua" -o "$T/good.h5" >/dev/null 2>&1 || fail "writing the sample file"
"$DKV" info "$T/good.h5" >/dev/null || fail "dkv info of a good file"
size=$(stat -c %s "$T/good.h5")

expect() {   # file regex: dkv info fails with exit 1 within 20 s and a message matching regex
    local out rc
    out=$(timeout 20 "$DKV" info "$1" 2>&1); rc=$?
    [ $rc = 1 ] || fail "$1: exit $rc (124 = hung): $out"
    grep -qE "$2" <<<"$out" || fail "$1: message '$out' does not match '$2'"
}
patch() {   # out offset hexbytes: a copy of good.h5 with bytes replaced at offset
    $PY - "$T/good.h5" "$T/$1" "$2" "$3" <<'PYEOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
off, new = int(sys.argv[3]), bytes.fromhex(sys.argv[4])
b[off:off + len(new)] = new
open(sys.argv[2], "wb").write(b)
PYEOF
}
# the good file's superblock is version 0 with 8-byte addresses (what the offsets below assume)
$PY - "$T/good.h5" <<'PYEOF' || fail "sample superblock layout changed"
import sys, struct
b = open(sys.argv[1], "rb").read(96)
assert b[:8] == b"\x89HDF\r\n\x1a\n" and b[8] == 0 and b[13] == 8 and b[14] == 8, b[:16]
assert struct.unpack_from("<Q", b, 40)[0] == len(open(sys.argv[1], "rb").read())
PYEOF

mkfifo "$T/fifo"
expect "$T/fifo" 'fifo: not a regular file'
expect "$T" 'not a regular file'
head -c $((size / 2)) "$T/good.h5" >"$T/trunc.h5"
expect "$T/trunc.h5" "trunc.h5: truncated: the HDF5 superblock says $size bytes, the file has $((size / 2))"
head -c 40 "$T/good.h5" >"$T/stub.h5"
expect "$T/stub.h5" 'stub.h5: HDF5 superblock cut short \(40 bytes\)'
patch ver.h5 8 09
expect "$T/ver.h5" 'ver.h5: HDF5 superblock version 9 \(libhdf5 1.10 reads 0 to 3\)'
patch addr.h5 13 04
expect "$T/addr.h5" 'addr.h5: HDF5 file with 4-byte addresses and 8-byte lengths'
patch eof.h5 40 ffffffffffffffff
expect "$T/eof.h5" 'eof.h5: HDF5 superblock without a valid end-of-file address'
patch root.h5 64 00ffffff00000000
expect "$T/root.h5" 'root.h5: HDF5 root group header at address 4294967040 lies outside the file'
root=$($PY -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(72), 64)[0])' "$T/good.h5")
patch ohdr.h5 "$root" 07
expect "$T/ohdr.h5" "ohdr.h5: no HDF5 object header at the root group's address $root"
truncate -s 1G "$T/sparse.h5"
expect "$T/sparse.h5" 'sparse.h5: not an HDF5 file \(no HDF5 signature in its 1073741824 bytes\)'
rm -f "$T/sparse.h5"
printf 'hello' >"$T/junk.h5"
expect "$T/junk.h5" 'not an HDF5 file'

# after libhdf5 opened it: a file from a newer dkv, and a format_version that is not a number
cp "$T/good.h5" "$T/newer.h5"
$PY -c 'import h5py,sys; f=h5py.File(sys.argv[1],"r+"); f.attrs["format_version"]=99' "$T/newer.h5"
expect "$T/newer.h5" 'newer.h5: format_version 99 \(this dkv reads version 1: written by a newer dkv\)'
cp "$T/good.h5" "$T/verstr.h5"
$PY -c 'import h5py,sys; f=h5py.File(sys.argv[1],"r+"); f.attrs["format_version"]="one"' "$T/verstr.h5"
expect "$T/verstr.h5" 'verstr.h5: root attribute format_version is not an integer'

# a user block before the superblock (signature at 512) is still an HDF5 file
$PY - "$T/ub.h5" <<'PYEOF'
import sys, h5py
f = h5py.File(sys.argv[1], "w", userblock_size=512)
f.attrs["format"] = "dkv-results"
f.create_group("runs")
PYEOF
out=$("$DKV" info "$T/ub.h5" 2>&1) || fail "file with a user block: $out"
grep -q '0 runs' <<<"$out" || fail "user block: $out"
echo "malformed HDF5 ok"
