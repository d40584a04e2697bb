#!/usr/bin/env bash
# test_layering.sh - every module's #includes follow SConstruct's MODULES table
# (scripts/check_layering.py; docs/ARCHITECTURE.md "Layers"): the tree passes, and a tree with one
# include across the layers (core/mem including an engine header) fails naming the file and line.
set -uo pipefail
: "${ROOT:?}" "${T:?}"
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$($PY "$ROOT/scripts/check_layering.py" "$ROOT") || fail "the tree breaks the layering: $out"
echo "$out"

# a copy of the tree's layout with one bad include
mkdir -p "$T/tree/core/mem" "$T/tree/core/engine" "$T/tree/tests/unit"
cp "$ROOT/SConstruct" "$T/tree/"
printf '#include "mem/mem.h"\n#include "util/status.h"\n' >"$T/tree/core/mem/ok.c"
printf '/* x */\n#include "mem/mem.h"\n#include "engine/engine.h"\n' >"$T/tree/core/mem/bad.c"
printf '#include "engine/engine.h"\n#include "mem/mem.h"\n' >"$T/tree/core/engine/ok.c"
printf '#include "engine/engine.h"\n' >"$T/tree/tests/unit/test_policy_x.c"
out=$($PY "$ROOT/scripts/check_layering.py" "$T/tree"); rc=$?
[ $rc = 1 ] || fail "a bad include must fail (exit $rc): $out"
grep -qF 'core/mem/bad.c:3: includes "engine/..." (module engine), not in mem' <<<"$out" || fail "message: $out"
grep -qF 'tests/unit/test_policy_x.c:1: includes "engine/..."' <<<"$out" || fail "test file not checked: $out"
grep -q 'ok.c' <<<"$out" && fail "a good include was reported: $out"
grep -qF '2 include(s) break' <<<"$out" || fail "count: $out"
echo "bad includes detected: ok"
