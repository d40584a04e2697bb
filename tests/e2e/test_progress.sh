#!/usr/bin/env bash
# test_progress.sh - progress bars: nothing at all on stderr when it is not a terminal; on a
# terminal (a pty from `script`), the final screen of a 5-point sweep holds the script's printed
# lines intact, one finished outer "sweep" bar, and no inner "simulate" bar (finished ones are
# cleared), although inner bars were drawn while it ran.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$T/bars.lua" <<'LUA'
local dkv = require "dkv"
for i = 1, 5 do
  local r = dkv.simulate{model = "llada-8b", gpu = "h200", seed = i,
    workload = {kind = "poisson", n = 24, rate = 8, prompt = 256, gen = 64}}
  print(string.format("point %d tok/s %.1f", i, r.summary.tokens_per_s))
  dkv.progress("sweep", i, 5)
end
LUA
"$DKV" run "$T/bars.lua" -o "$T/bars.h5" >"$T/out.txt" 2>"$T/err.txt"
[ ! -s "$T/err.txt" ] || fail "stderr is not a terminal, yet got: $(od -c "$T/err.txt" | head -5)"
[ "$(grep -c '^point [1-5] tok/s' "$T/out.txt")" -eq 5 ] || fail "stdout: $(cat "$T/out.txt")"

command -v script >/dev/null || { echo "SKIP: no script(1) for the terminal half (non-TTY half passed)"; exit 77; }
script -qec "$DKV run $T/bars.lua -o $T/bars2.h5" /dev/null >"$T/tty.raw" </dev/null || fail "dkv run under script"
/usr/bin/python3 - "$T/tty.raw" <<'PYEOF' || fail "terminal screen"
import re, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
assert "simulate" in raw and "sweep" in raw, "bars were drawn"
screen, row, col = [""], 0, 0
def put(ch):
    global col
    line = screen[row].ljust(col)
    screen[row] = line[:col] + ch + line[col + 1:]
    col += 1
i = 0
while i < len(raw):
    m = re.match(r"\x1b\[(\d*)([A-Za-z])", raw[i:])
    if m:
        n, op = int(m.group(1) or 1), m.group(2)
        if op == "K":
            screen[row] = screen[row][:col]
        elif op == "J":
            screen[row] = screen[row][:col]
            del screen[row + 1:]
        elif op == "A":
            row = max(0, row - n)
        i += m.end()
        continue
    c = raw[i]
    if c == "\r":
        col = 0
    elif c == "\n":
        row += 1
        if row == len(screen):
            screen.append("")
    else:
        put(c)
    i += 1
lines = [l.rstrip() for l in screen if l.strip()]
print("\n".join(lines))
pts = [l for l in lines if l.startswith("point")]
assert [int(l.split()[1]) for l in pts] == [1, 2, 3, 4, 5], pts
assert all(re.fullmatch(r"point \d tok/s [0-9.]+", l) for l in pts), pts      # no bar text inside
sweeps = [l for l in lines if "sweep" in l]
assert len(sweeps) == 1 and "100.0%" in sweeps[0] and "(5/5)" in sweeps[0], sweeps
assert not any("simulate" in l for l in lines), lines
print("terminal screen ok")
PYEOF
echo "progress ok"
