#!/usr/bin/env bash
# test_docs_lua.sh - every ```lua block of docs/LUA_API.md runs with `dkv run` and succeeds
# (blocks fenced as ```lua norun are shown, not run).  Keeps the manual honest.
set -uo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
doc="$ROOT/docs/LUA_API.md"
[ -f "$doc" ] || fail "missing $doc"
n=$(awk -v dir="$T" '
    /^```lua[ \t]*$/ { inb = 1; k++; f = sprintf("%s/ex%02d.lua", dir, k); printf "" > f; start = NR; next }
    /^```/ && inb    { inb = 0; close(f); next }
    inb              { print > f }
    END              { print k + 0 }' "$doc")
[ "$n" -gt 0 ] || fail "no lua examples found"
for f in "$T"/ex*.lua; do
    out=$(cd "$ROOT" && "$DKV" run "$f" -o "$T/$(basename "$f" .lua).h5" 2>&1) || { cat "$f"; fail "example $(basename "$f"): $out"; }
done
echo "$n examples ran"
