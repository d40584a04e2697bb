#!/usr/bin/env bash
# test_cli_errors.sh - exit codes and messages of `dkv`: --help/--version, usage errors (exit 2),
# script errors with file:line (exit 1), bad preset fields named, a traceback on runtime errors.
set -uo pipefail
: "${DKV:?}" "${T:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect RC PATTERN -- command...   (pattern grepped in stdout+stderr)
    local want=$1 pat=$2; shift 3
    local out rc
    out=$("$@" 2>&1); rc=$?
    [ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want; output: $out"
    grep -qE -- "$pat" <<<"$out" || fail "'$*' output lacks /$pat/: $out"
}

expect 0 '^usage: dkv <command>' -- "$DKV" --help
expect 0 'run SCRIPT.lua' -- "$DKV" -h
expect 0 '^dkv [0-9]+\.[0-9]+\.[0-9]+ \((git [0-9a-f]+|unknown)\)' -- "$DKV" --version
expect 0 'Lua 5\.4' -- "$DKV" --version
expect 0 '\-\-shard i/N' -- "$DKV" run --help
expect 0 'usage: dkv info' -- "$DKV" info --help
expect 0 'usage: dkv merge' -- "$DKV" merge --help

# usage errors: exit 2, message on stderr
expect 2 'usage: dkv' -- "$DKV"
expect 2 "unknown command or option '--frobnicate'" -- "$DKV" --frobnicate
expect 2 "unknown option '--bogus'" -- "$DKV" run --bogus x.lua
expect 2 'no script given' -- "$DKV" run
expect 2 '-D expects name=value' -- "$DKV" run x.lua -D novalue
expect 2 "-D n is given twice \('n=1', then 'n=2'\)" -- "$DKV" run x.lua -D n=1 -D n=2
expect 2 '--shard expects i/N' -- "$DKV" run x.lua --shard 3/3
expect 2 '--shard expects i/N' -- "$DKV" run x.lua --shard 1
expect 2 '--mem-limit expects a size' -- "$DKV" run x.lua --mem-limit lots
for v in nan inf 1e30 -1; do   # not sizes (nan and inf ran with no cap until session 51)
    expect 2 "--mem-limit expects a size such as 512M or 4G, got '$v'" -- "$DKV" run x.lua --mem-limit "$v"
done
expect 2 'needs a value' -- "$DKV" run x.lua -o
expect 2 "unknown option '-x'" -- "$DKV" info -x f.h5
expect 2 'usage: dkv merge' -- "$DKV" merge only.h5
out=$("$DKV" run --bogus x.lua 2>/dev/null) || true
[ -z "$out" ] || fail "usage errors must go to stderr, got stdout: $out"

# script errors: exit 1 with file:line
printf 'local x = 1\nlocal y = = 2\n' >"$T/syntax.lua"
expect 1 "syntax\.lua:2: unexpected symbol near '='" -- "$DKV" run "$T/syntax.lua" -o "$T/s.h5"
printf 'local function f()\n  error("boom")\nend\nf()\n' >"$T/rt.lua"
expect 1 'rt\.lua:2: boom' -- "$DKV" run "$T/rt.lua" -o "$T/r.h5"
expect 1 'stack traceback:' -- "$DKV" run "$T/rt.lua" -o "$T/r.h5"
expect 1 'rt\.lua:4: in main chunk' -- "$DKV" run "$T/rt.lua" -o "$T/r.h5"
expect 1 'cannot open' -- "$DKV" run "$T/absent.lua"
[ ! -e "$T/s.h5" ] || fail "a script that wrote nothing must not leave a results file"

# bad preset fields: the error names the field and the script line
cat >"$T/preset.lua" <<'LUA'
local dkv = require "dkv"
local ok = pcall(dkv.preset.gpu, "h200")
assert(ok)
dkv.preset.gpu{base = "h200", hbm_bww = 80 * 2^30}
LUA
expect 1 "preset\.lua:4: gpu: unknown field 'hbm_bww' \(did you mean 'hbm_bw'\?\)" -- "$DKV" run "$T/preset.lua"
printf 'local dkv = require "dkv"\ndkv.budget({base = "llada-8b", n_heads = 0}, "h200")\n' >"$T/preset2.lua"
expect 1 'preset2\.lua:2: model\.n_heads: must be >= 1 \(got 0\)' -- "$DKV" run "$T/preset2.lua"
printf 'local dkv = require "dkv"\ndkv.preset.model("lada-8b")\n' >"$T/preset3.lua"
expect 1 "unknown model preset 'lada-8b' \(did you mean 'llada-8b'\?" -- "$DKV" run "$T/preset3.lua"

# a script that is a folder, or holds a NUL byte (the loader would stop there): errors, nothing run
mkdir -p "$T/folder.lua"
expect 1 'folder\.lua: is a directory, not a file' -- "$DKV" run "$T/folder.lua" -o "$T/f.h5"
printf 'print("before")\n\0print("after")\n' >"$T/nul.lua"
expect 1 'nul\.lua:2: a NUL byte at offset 16: not a text file' -- "$DKV" run "$T/nul.lua" -o "$T/f.h5"
out=$("$DKV" run "$T/nul.lua" 2>/dev/null) || true
[ -z "$out" ] || fail "a script with a NUL byte must not run any of it, printed: $out"
expect 1 ': is a directory, not a file' -- "$DKV" replay "$T/folder.lua" --mem caching

# the sandbox: no io, no os.execute, no loadfile
printf 'assert(io == nil and os.execute == nil and loadfile == nil and dofile == nil)\nprint("sandbox ok")\n' >"$T/sb.lua"
expect 0 '^sandbox ok$' -- "$DKV" run "$T/sb.lua"
printf 'io.open("/etc/passwd")\n' >"$T/io.lua"
expect 1 "io\.lua:1: attempt to index a nil value \(global 'io'\)" -- "$DKV" run "$T/io.lua"

# -D values reach dkv.params, numbers converted
printf 'local p = require("dkv").params\nprint(p.n + 1, math.type(p.n), p.s, p.f)\n' >"$T/params.lua"
expect 0 '^4	integer	abc	true$' -- "$DKV" run "$T/params.lua" -D n=3 -Ds=abc -D f=true
echo "cli errors ok"
