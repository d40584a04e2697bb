#!/usr/bin/env bash
# test_profile_block.sh - scripts/profile_block.py: a top-level block copied verbatim from one profile onto another
# (device call 139's candidate: the H200's clock block on the H100's profile), the result loads and changes what it
# should, and every refusal names the file: a SRC without the block, a BASE that has one, a key that is not a Lua
# name, an unreadable SRC; nothing written on a refusal.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"
PY=/usr/bin/python3
H200=datasets/profiles/h200-20261203t.lua H100=datasets/profiles/h100-80gb-hbm3-20261205.lua
mkdir -p "$T/root/datasets/profiles" "$T/root/datasets/presets"
cp -r datasets/presets/gpu datasets/presets/model "$T/root/datasets/presets/"
cp -r datasets/workloads "$T/root/datasets/"
$PY scripts/profile_block.py $H200 clock --profile $H100 --name h100-clktest -o "$T/root/datasets/profiles/h100-clktest.lua" \
    > "$T/ok.txt" || fail "the clock block onto the H100 profile"
out="$T/root/datasets/profiles/h100-clktest.lua"
# the block is the H200's, byte for byte; the base's rows are all there; the name is the new one
$PY - "$H200" "$H100" "$out" <<'PYEOF' || fail "the copied block or the base's rows differ"
import re, sys
src, base, out = (open(p).read() for p in sys.argv[1:4])
blk = re.search(r"(?ms)^  clock = \{\n.*?^  \},\n", src).group(0)
assert out.count(blk) == 1, "block not copied verbatim"
assert re.search(r'(?m)^  name = "h100-clktest",$', out)
body = lambda t: [l for l in t.splitlines() if l.startswith("        {")]
assert body(out) == body(base), "rows changed"
assert out.startswith("-- Provenance: h100-80gb-hbm3-20261205"), out[:200]
PYEOF
# it loads, and the clock block moves a GEMM-heavy step (the H100 profile alone has no clock model)
cat > "$T/sim.lua" <<'LUA'
local dkv = require "dkv"
local function run(p)
  return dkv.simulate{model = "llada-8b", gpu = {base = "h100", profile = p}, seed = 1,
    workload = {kind = "fixed", n = 8, interval_s = 0, prompt = 1024, gen = 64},
    decode = {cache = "dual", block_len = 32}, record = {memory_every = 0, steps = false}}.summary.sim_time_s
end
local a, b = run("h100-80gb-hbm3-20261205"), run("h100-clktest")
print(string.format("plain %.6f clock %.6f", a, b))
assert(math.abs(b / a - 1) > 0.005, "the clock block changed nothing")
LUA
cp $H100 "$T/root/datasets/profiles/"
"$DKV" run --root "$T/root" "$T/sim.lua" > "$T/sim.txt" 2>&1 || { cat "$T/sim.txt"; fail "simulating with the grafted profile"; }
refuse() {   # expected-exit message-substring args...
    local want=$1 msg=$2; shift 2
    local r=0; $PY scripts/profile_block.py "$@" > "$T/r.txt" 2>&1 || r=$?
    [ "$r" = "$want" ] && grep -q -- "$msg" "$T/r.txt" || fail "profile_block.py $*: exit $r, $(cat "$T/r.txt")"
    [ ! -e "$T/bad.lua" ] && [ ! -e "$T/bad.lua.tmp" ] || fail "profile_block.py $*: wrote something"
}
refuse 1 "$H100: no top-level gemm_steps block" $H100 gemm_steps --profile $H100 --name x -o "$T/bad.lua"
refuse 1 "$out already has a clock block" $H200 clock --profile "$out" --name x -o "$T/bad.lua"
refuse 2 "is not a Lua name" $H200 "clock = 1" --profile $H100 --name x -o "$T/bad.lua"
refuse 1 "$T/none.lua: No such file" "$T/none.lua" clock --profile $H100 --name x -o "$T/bad.lua"
refuse 2 "required" $H200 clock --profile $H100 -o "$T/bad.lua"
refuse 2 "a KEY given twice" $H200 gemm_reads gemm_reads --profile $H100 --name x -o "$T/bad.lua"
refuse 1 "$H100: no top-level nosuch block" $H100 nosuch --profile $H100 --name x -o "$T/bad.lua"
# several blocks at once (device call 141's candidate): each copied verbatim, in the order given, one provenance line
$PY scripts/profile_block.py $H200 gemm_reads gemm_store --profile $H100 --name two -o "$T/two.lua" > /dev/null ||
    fail "two blocks at once"
$PY - "$H200" "$T/two.lua" <<'PYEOF' || fail "two blocks: not verbatim, or out of order"
import re, sys
src, out = (open(p).read() for p in sys.argv[1:3])
a, b = (re.search(r"(?ms)^  %s = \{\n.*?^  \},\n" % k, src).group(0) for k in ("gemm_reads", "gemm_store"))
assert out.count(a) == 1 and out.count(b) == 1 and out.index(a) < out.index(b)
assert out.startswith("-- Provenance: h100-80gb-hbm3-20261205 ") and "gemm_reads gemm_store --profile" in out.splitlines()[0]
PYEOF
echo "ok: $(cat "$T/sim.txt")"
