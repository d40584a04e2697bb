#!/usr/bin/python3
"""gemm_splitk.py - a profile's gemm_splitk block (docs/PROFILE_FORMAT.md "gemm_splitk"; docs/COST_MODEL.md
"GEMM configurations from cuBLASLt") from cuda/bench/gemm_algo's splitk mode.

    /usr/bin/python3 scripts/gemm_splitk.py SPLITK.txt[.xz]                       # the block alone
    /usr/bin/python3 scripts/gemm_splitk.py SPLITK.txt[.xz] --profile IN.lua --name NAME -o OUT.lua

SPLITK.txt: `gemm_algo splitk`'s stdout, "s <model> <class> <N> <K> <bias> <T> <splitk> <tile id>" per GEMM
shape and warm-up row count (8, 16, ..., 8,192).  The block keeps, per shape, the row counts where the split
count changes and the count from there on (rows start at 8).  With --profile, OUT.lua is IN.lua with its name line set to
NAME, with the block added before its last closing brace and a provenance line on top; an IN.lua that
already has a gemm_splitk block is refused.  Exits 1 naming file:line on a line it cannot read, a row count
out of order, or a shape whose row counts do not start at 8."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_graft  # noqa: E402
import script_io  # noqa: E402


def die(msg):
    sys.stderr.write("gemm_splitk.py: %s\n" % msg)
    sys.exit(1)


def read(path):
    raw = script_io.read_text(path, die, packed=True)
    shapes = {}
    for i, l in enumerate(raw.splitlines(), 1):
        if not l.startswith("s "):
            continue
        f = l.split()
        if len(f) != 9:
            die("%s:%d: expected 's model class N K bias T splitk tile', got %r" % (path, i, l))
        try:
            n, k, t, sk = int(f[3]), int(f[4]), int(f[6]), int(f[7])
        except ValueError:
            die("%s:%d: a number field does not parse: %r" % (path, i, l))
        if not 1 <= sk <= 64:
            die("%s:%d: split count %d outside 1..64" % (path, i, sk))
        s = shapes.setdefault((n, k), {"model": f[1], "class": f[2], "rows": [], "splitk": [], "last": 0})
        if t <= s["last"]:
            die("%s:%d: row count %d not above the shape's previous %d" % (path, i, t, s["last"]))
        if s["last"] == 0 and t != 8:
            die("%s:%d: the shape's first row count is %d, not 8" % (path, i, t))
        s["last"] = t
        if not s["splitk"] or s["splitk"][-1] != sk:
            s["rows"].append(t)
            s["splitk"].append(sk)
    if not shapes:
        die("%s: no 's ...' lines (gemm_algo splitk's stdout?)" % path)
    return shapes


def block(shapes, src):
    out = ["  -- the K splits cuBLASLt's heuristic gives each GEMM shape by its rows' warm-up bucket (cuda/bench/gemm_algo.cu",
           "  -- splitk, %s): from `rows` on, `splitk` splits (1: none); docs/COST_MODEL.md \"GEMM configurations from cuBLASLt\"" % src,
           "  gemm_splitk = {"]
    for (n, k), s in shapes.items():
        out.append('    {model = "%s", class = "%s", n = %d, k = %d,' % (s["model"], s["class"], n, k))
        out.append("      rows = {%s}," % ", ".join(map(str, s["rows"])))
        out.append("      splitk = {%s}}," % ", ".join(map(str, s["splitk"])))
    out.append("  },")
    return "\n".join(out) + "\n"


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    src, rest = argv[0], argv[1:]
    opts = {}
    while rest:
        if rest[0] not in ("--profile", "--name", "-o") or len(rest) < 2:
            die("unknown or incomplete option %r (see --help)" % rest[0])
        opts[rest[0]] = rest[1]
        rest = rest[2:]
    shapes = read(src)
    text = block(shapes, os.path.basename(src))
    if not opts:
        sys.stdout.write(text)
        return 0
    if set(opts) != {"--profile", "--name", "-o"}:
        die("--profile, --name and -o go together")
    profile_graft.graft(die, "gemm_splitk", text, src, "gemm_splitk.py", opts["--profile"], opts["--name"], opts["-o"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
