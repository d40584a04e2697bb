#!/usr/bin/python3
"""gemm_steps.py - the GEMM staircase between a profile's class-table rows (docs/COST_MODEL.md "GEMM rows between
the grid's"), from a dense sweep: `dkv profile --grid gemm --gemm-step 16 --probe` (every class GEMM of the models
given at every multiple of 16 rows to 8,192, each row's SM clock read by the probe).

    /usr/bin/python3 scripts/gemm_steps.py DENSE.lua[.xz] [--rows-of PROFILE] [--model M ...]        # the table
    /usr/bin/python3 scripts/gemm_steps.py DENSE.lua[.xz] [--rows-of PROFILE] [--model M ...] --block
    /usr/bin/python3 scripts/gemm_steps.py DENSE.lua[.xz] [--rows-of PROFILE] [--model M ...] \\
        --profile IN.lua --name NAME -o OUT.lua

Each dense row's time is first brought to one clock, t (probe_mhz / 1400)^s (s: the GEMMs' sensitivity of
PROFILE's clock block, 0 up to lo_rows, sens from hi_rows, log-linear between, as sim/sim_clock.c applies it; no
probe column: no change).  A shape's ratio at m rows is that time over the straight line between the two rows of
PROFILE's class table around m (the rows the simulator interpolates between): 1 at those rows, the staircase of
tiles and waves between them.  The table prints per shape the mean |ratio - 1| from 256 rows, its extremes and the
ratio at a few row counts real steps had.  --block prints the profile block `gemm_steps` (per shape: model, class,
n, k, beta, rows, ratio; docs/PROFILE_FORMAT.md "gemm_steps") for the shapes of the models given (default
llada-8b: the held-out model, Dream-7B, keeps the plain interpolation, as its exact shapes are not in the profile);
--profile writes IN.lua with the block added (scripts/profile_graft.py).  PROFILE (default datasets/profiles/h200-20261203s.lua,
whose class tables the shipped h200-20261203t keeps) must hold the class table of every shape written.  Exits 1
naming the file on a profile it cannot read, a shape without its table's rows, or a dense sweep with a gap.

    /usr/bin/python3 scripts/gemm_steps.py rule READS_DIR [--rows-of PROFILE] [--model M ...] [--sms N] \\
        [--check DENSE.lua[.xz] | --block | --profile IN.lua --name NAME -o OUT.lua]

rule: the staircase without timing anything, from the kernel configuration cuBLASLt runs at each warm-up row count
(READS_DIR: a `cuda/bench/gemm_algo.cu reads` run under Nsight Compute, device call 72: its kernel names give the
tile, nvjet_sm90_tst_<weight rows>x<token rows>_..., its manifest the K splits): a GEMM of T rows runs
ceil(tiles / SMS) waves of SMS tiles (tiles = ceil(N / w) ceil(T / t) splits, SMS default 132, the H200's), each
tile w t K / splits multiply-adds, so its work is that of its waves, and its ratio at T is that work over the
straight line between the class table's rows (or the generic grid's, for a shape without a table) around T.
--check prints, per shape the dense sweep holds, how far the rule's ratios are from the measured ones (from 256
rows); --block and --profile as above, for the models given (default dream-7b: the shapes whose times the profile
does not hold).  Exits 1 naming the file on a run without the models' shapes or a kernel name without a tile.

    /usr/bin/python3 scripts/gemm_steps.py lookup DENSE.lua[.xz] [--profile PROFILE] [--waves GRID.txt[.xz] SPLITK.txt[.xz]]
        [--class-ratio]

lookup: how well PROFILE (default the shipped datasets/profiles/h200-20261203t.lua) costs each shape of the dense
sweep at its table rows (256 to 8,192): the measured time over the profile's (its class table where it holds the
shape, else its generic `gemm` grid, piecewise linear in n and k between the grid's corners, as core/cost/profile.c
interpolates), the profile's time first moved from its row clock (clock.gemm_mhz of the class) to the row's probe
clock with the GEMMs' sensitivity (sim/sim_clock.c).  A model timed by its own table reads near 1 (the machines'
spread); an unprofiled model's shapes show the grid's error.  --waves: beside each grid-costed value, what the wave
rule (rule, above) says the grid's lookup should miss by: the work of the shape's waves over the same bilinear
interpolation of its corners' (cuBLASLt's tile and K splits from `gemm_algo grid`, GRID, and `gemm_algo splitk`,
SPLITK; the tile ids are cublasLtMatmulTile_t's <weight rows>x<token rows>, TILE_DIMS below), and the mean |error| of
the grid-costed cells before and after dividing by it.  --class-ratio: each grid-costed value times the class table's
own time over the grid's at the class's nearest shape in (log n, log k) and the same rows (the grid times a plain GEMM;
a class's own call has its epilogue and may take another kernel), the rule tried in session 29 and not shipped
(docs/COST_MODEL.md "GEMM rows between the grid's"; datasets/hw/2026-12-03/call91/variants/classratio.patch).  The last
line gives the grid-costed cells' mean |measured / profiled - 1|."""
import functools
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_graft  # noqa: E402
import script_io  # noqa: E402

CLASS_TABLES = ("qkv", "o", "ffn")
SHOW = (272, 400, 608, 880, 976, 1088, 1264, 1344, 1712, 2000, 2112, 2464, 2848, 3472, 4432, 5968, 7104)
REF_MHZ = 1400.0
MAX_ROWS = 8192


def die(msg):
    sys.exit("gemm_steps: " + msg)


@functools.lru_cache(maxsize=None)   # a profile is read by several of the helpers below: once
def read_text(path):
    return script_io.read_text(path, die, packed=True)


def tables(path, names=CLASS_TABLES):
    """{(table, n, k): {m: {'t': seconds, <extra>: value}}} of the tables named (the class tables by default), and the
    models the file names."""
    out, cur, extra = {}, None, []
    text = read_text(path)
    m = re.search(r'(?m)^    models = \{(.*)\},', text)
    models = [x.strip().strip('"') for x in m.group(1).split(",")] if m else []
    for no, line in enumerate(text.splitlines(), 1):
        h = re.match(r"    (\w+) = \{", line)
        if h:
            cur, extra = h.group(1), []
            continue
        if line.startswith("  copy = {"):
            break
        e = re.match(r"\s+extra = \{(.*)\},", line)
        if e:
            extra = [x.strip().strip('"') for x in e.group(1).split(",")]
            continue
        r = re.match(r"\s+\{(\d+), (\d+), (\d+), (.*)\},?$", line)
        if r and cur in names:
            try:
                v = [float(x) for x in r.group(4).split(",")]
            except ValueError:
                die("%s:%d: a row it cannot read" % (path, no))
            row = dict(zip(["t", "n_calls"] + extra, v))
            out.setdefault((cur, int(r.group(2)), int(r.group(3))), {})[int(r.group(1))] = row
    return out, models


def sens_of(path):
    """The GEMMs' sensitivity by rows from PROFILE's clock block (sim/sim_clock.c gemm_sens)."""
    m = re.search(r"gemm_sens = \{lo_rows = ([\d.]+), hi_rows = ([\d.]+), sens = ([\d.]+)\}", read_text(path))
    if not m:
        return lambda rows: 0.0
    lo, hi, s = (float(x) for x in m.groups())
    return lambda rows: 0.0 if rows <= lo else s if rows >= hi else s * math.log(rows / lo) / math.log(hi / lo)


def over_line(v, ks):
    """{m: v[m] over the straight line through v at the two knots around m} for every m of v between the first and
    the last of the sorted knots ks (each a key of v)."""
    out = {}
    for a, b in zip(ks, ks[1:]):
        for m in sorted(x for x in v if a <= x <= b):
            out[m] = v[m] / (v[a] + (v[b] - v[a]) * (m - a) / (b - a))
    return out


def ratios(dense, knots, sens):
    """{m: ratio} at every dense row between the first and last knot (knots: the profile's rows of this shape)."""
    t = {m: r["t"] * (r["probe_mhz"] / REF_MHZ) ** sens(m) if r.get("probe_mhz", 0) > 0 else r["t"]
         for m, r in dense.items()}
    ks = sorted(k for k in knots if k <= MAX_ROWS)
    missing = [k for k in ks if k not in t]
    if missing:
        die("the dense sweep lacks the profile's rows %s (use a --gemm-step that divides them)" % missing[:4])
    return over_line(t, ks)


MODEL_OF = {(12288, 4096): ("llada-8b", "qkv"), (4096, 4096): ("llada-8b", "o"), (24576, 4096): ("llada-8b", "gate_up"),
            (4096, 12288): ("llada-8b", "down"), (4608, 3584): ("dream-7b", "qkv"), (3584, 3584): ("dream-7b", "o"),
            (37888, 3584): ("dream-7b", "gate_up"), (3584, 18944): ("dream-7b", "down")}


def waves_work(n, k, rows, tile, splits, sms):
    """The multiply-adds of a GEMM's whole waves: ceil(tiles / sms) waves of sms tiles of w x t x k / splits, tiles =
    ceil(n / w) ceil(rows / t) splits (tile: w weight rows x t token rows)."""
    w, t = tile
    tiles = math.ceil(n / w) * math.ceil(rows / t) * splits
    return math.ceil(tiles / sms) * sms * w * t * k / splits


def rule_work(reads_dir, sms):
    """{(n, k): {T: the work of T rows' waves}} from a gemm_algo reads run (scripts/gemm_reads.py measure)."""
    import gemm_algo
    import gemm_reads
    out = {}
    for cls in gemm_reads.measure(reads_dir):
        for t in cls:
            tile = gemm_algo.tile_of(t["kernel"])
            if not tile:
                die("%s: %s %s T=%d: kernel %s has no tile in its name" % (reads_dir, t["model"], t["class"], t["T"],
                                                                          t["kernel"][:60]))
            out.setdefault((t["N"], t["K"]), {})[t["T"]] = waves_work(t["N"], t["K"], t["T"], tile, max(1, t["splitk"]),
                                                                      sms)
    return out


def rule_ratios(work, knots):
    """{T: the rule's ratio} at every row count of work between the first and last knot it holds."""
    return over_line(work, [k for k in sorted(knots) if k in work])


def entry(model, cls, nk, r):
    """One shape's entry of the block (its ratios at the rows r holds)."""
    ms = sorted(r)
    return ('    {model = "%s", class = "%s", n = %d, k = %d, beta = %d,\n      rows = {%s},\n      ratio = {%s}},\n'
            % (model, cls, nk[0], nk[1], 1 if cls in ("o", "down") else 0, ", ".join(str(m) for m in ms),
               ", ".join("%.4f" % r[m] for m in ms)))


def rule_parts(work, prof, generic, want, src):
    """The block's entries from the rule for the shapes of the models in want."""
    tab_of = {"qkv": "qkv", "o": "o", "gate_up": "ffn", "down": "ffn"}
    parts = []
    for nk, (model, cls) in sorted(MODEL_OF.items()):
        if model not in want or nk not in work:
            continue
        key = (tab_of[cls], nk[0], nk[1])
        parts.append(entry(model, cls, nk, rule_ratios(work[nk], sorted(prof[key]) if key in prof else generic)))
    if not parts:
        die("no shape of %s in %s" % (", ".join(want), src))
    return parts


# cublasLtMatmulTile_t ids (cublasLt.h) of the tiles cuBLASLt chose for the shapes recorded (device calls 65 and 93):
# id -> (weight rows, token rows); the same dims as the kernels' names (nvjet_sm90_tst_<w>x<t>_...) on 8,192 of 8,192
# of call 72's trials
TILE_DIMS = {}


def tile_dims():
    """The id -> dims map, from cublasLt.h where the CUDA toolkit is installed."""
    if not TILE_DIMS:
        for path in ("/usr/local/cuda/include/cublasLt.h", "/usr/include/cublasLt.h"):
            if os.path.exists(path):
                for line in open(path):
                    m = re.match(r"\s*CUBLASLT_MATMUL_TILE_(\d+)x(\d+) = (\d+),", line)
                    if m:
                        TILE_DIMS[int(m.group(3))] = (int(m.group(1)), int(m.group(2)))
                break
    if not TILE_DIMS:
        die("--waves needs cublasLt.h (the CUDA toolkit) for the tile ids")
    return TILE_DIMS


def configs(grid_txt, splitk_txt):
    """{(n, k, T): (splits, tile id)} from gemm_algo grid ("q N K T splitk tile") and splitk ("s model class N K bias
    T splitk tile") outputs."""
    out = {}
    for path, tag in ((grid_txt, "q"), (splitk_txt, "s")):
        for no, line in enumerate(read_text(path).splitlines(), 1):
            f = line.split()
            if not f or f[0] != tag:
                continue
            try:
                v = [int(x) for x in (f[1:6] if tag == "q" else f[3:5] + f[6:9])]
            except ValueError:
                die("%s:%d: a number field does not parse" % (path, no))
            out[(v[0], v[1], v[2])] = (max(1, v[3]), v[4])
    return out


def wave_work(cfg, dims, m, n, k, sms=132):
    sk, tid = cfg[(n, k, m)]
    return waves_work(n, k, m, dims[tid], sk, sms)


def between(xs, x):
    """[(knot, weight)] of x between the sorted knots xs (piecewise linear); [] outside them."""
    if not xs or x < xs[0] or x > xs[-1]:
        return []
    i = next(j for j, v in enumerate(xs) if v >= x)
    if xs[i] == x:
        return [(x, 1.0)]
    w = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
    return [(xs[i - 1], 1 - w), (xs[i], w)]


def nk_weights(ns, ks, n, k):
    """[(n corner, k corner, weight)] of (n, k) between the grid's corners (bilinear); [] outside them."""
    return [(x, y, u * v) for x, u in between(ns, n) for y, v in between(ks, k)]


def bilinear(grid, ns, ks, m, n, k):
    """The grid's value at (m, n, k), bilinear in (n, k) at a grid row m; None outside it."""
    w = nk_weights(ns, ks, n, k)
    if not w or any((m, x, y) not in grid for x, y, _ in w):
        return None
    return sum(u * grid[(m, x, y)] for x, y, u in w)


def class_ratio(own, grid, ns, ks, tab, n, k, m):
    """The class table's time over the grid's at the table's shape nearest (n, k) in (log n, log k), at m (1 where
    either is missing): the scale of datasets/hw/2026-12-03/call91/variants/classratio.patch (session 29, not shipped)."""
    shapes = [key for key in own if key[0] == tab]
    if not shapes:
        return 1.0
    ref = min(shapes, key=lambda s: math.log(s[1] / n) ** 2 + math.log(s[2] / k) ** 2)
    mine, base = own[ref].get(m, {}).get("t"), bilinear(grid, ns, ks, m, ref[1], ref[2])
    return mine / base if mine and base else 1.0


def lookup_main(argv):
    p = script_io.arg_parser(prog="gemm_steps.py lookup")
    p.add_argument("dense")
    p.add_argument("--profile", default="datasets/profiles/h200-20261203t.lua")
    p.add_argument("--waves", nargs=2, metavar=("GRID", "SPLITK"))
    p.add_argument("--class-ratio", action="store_true",
                   help="cost a grid shape by the rule tried in session 29, not shipped: the grid's value times the class "
                        "table's own time over the grid's at the class's nearest shape (call91/variants/classratio.patch)")
    a = p.parse_args(argv)
    cfg = configs(*a.waves) if a.waves else None
    dims = tile_dims() if cfg else None
    if cfg:
        unknown = sorted({tid for _, tid in cfg.values()} - set(dims))
        if unknown:
            die("--waves: cublasLt.h has no tile for ids %s (a CUDA toolkit older than the configurations')"
                % unknown[:5])
    after, grid_err = [], []
    text = read_text(a.profile)
    own, _ = tables(a.profile)
    grid = {(m, n, k): r["t"] for (_, n, k), rows in tables(a.profile, ("gemm",))[0].items() for m, r in rows.items()}
    ns, ks = sorted({x[1] for x in grid}), sorted({x[2] for x in grid})
    sens = sens_of(a.profile)
    clocks = {}
    for cls in CLASS_TABLES:
        m = re.search(r"      %s = \{rows = \{([^}]*)\},\s*mhz = \{([^}]*)\}" % cls, text)
        if m:
            clocks[cls] = ([float(x) for x in m.group(1).split(",")], [float(x) for x in m.group(2).split(",")])
    dense, _ = tables(a.dense)
    print("shape (table n k), model class | source | measured / profiled time at the profile's rows")
    for key in sorted(dense):
        tab, n, k = key
        cells = []
        for m in (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192):
            r = dense[key].get(m)
            if not r or "probe_mhz" not in r:
                continue
            if key in own and m in own[key]:
                t = own[key][m]["t"]
            else:
                t = bilinear(grid, ns, ks, m, n, k)
                if t is None:
                    continue
                if a.class_ratio:
                    t *= class_ratio(own, grid, ns, ks, tab, n, k, m)
                if cfg:
                    try:
                        rule = wave_work(cfg, dims, m, n, k) / sum(u * wave_work(cfg, dims, m, x, y)
                                                                   for x, y, u in nk_weights(ns, ks, n, k))
                    except KeyError as e:
                        die("--waves: no configuration for (n, k, rows) %s" % (e,))
            if tab in clocks:
                xs, ys = clocks[tab]
                f = sum(w * ys[xs.index(x)] for x, w in between(xs, m))
                t *= (f / r["probe_mhz"]) ** sens(m) if f > 0 else 1
            if key not in own:
                grid_err.append(abs(r["t"] / t - 1))
            if cfg and key not in own:
                after.append(abs(r["t"] / t / rule - 1))
                cells.append("%d:%.3f/%.3f" % (m, r["t"] / t, rule))
            else:
                cells.append("%d:%.3f" % (m, r["t"] / t))
        mc = MODEL_OF.get(key[1:], ("?", "?"))
        print("%-3s %5d %5d %-8s %-7s | %-5s | %s" % (tab, n, k, mc[0], mc[1], "table" if key in own else "grid",
                                                     " ".join(cells)))
    if grid_err:
        print("grid-costed cells: mean |measured / profiled - 1| %.1f %% over %d%s"
              % (100 * sum(grid_err) / len(grid_err), len(grid_err), " (--class-ratio)" if a.class_ratio else ""))
    if after:   # the same cells as grid_err's, each also divided by the wave rule's ratio
        print("grid-costed cells (measured / profiled, then / the wave rule's ratio): mean |error| %.1f %% -> %.1f %% over %d"
              % (100 * sum(grid_err) / len(grid_err), 100 * sum(after) / len(after), len(after)))


def rule_main(argv):
    p = script_io.arg_parser(prog="gemm_steps.py rule")
    p.add_argument("reads_dir")
    p.add_argument("--rows-of", default="datasets/profiles/h200-20261203s.lua", metavar="PROFILE")
    p.add_argument("--model", action="append", help="the shapes of this model in the block (default dream-7b)")
    p.add_argument("--sms", type=int, default=132)
    p.add_argument("--check", metavar="DENSE")
    p.add_argument("--block", action="store_true")
    p.add_argument("--profile", metavar="IN.lua")
    p.add_argument("--name")
    p.add_argument("-o", dest="out")
    a = p.parse_args(argv)
    if a.profile and not (a.name and a.out):
        die("--profile needs --name and -o")
    if a.sms < 1:
        die("--sms must be at least 1")
    work = rule_work(a.reads_dir, a.sms)
    prof, _ = tables(a.rows_of)
    generic = sorted({m for rows in prof.values() for m in rows})
    if a.check:
        dense, _ = tables(a.check)
        sens = sens_of(a.rows_of)
        print("shape, model class | measured mean |r - 1| from 256 rows | mean |r - rule| | correlation")
        for key in sorted(dense):
            if key[1:] not in work:
                continue
            knots = sorted(prof[key]) if key in prof else generic
            meas, rule = ratios(dense[key], knots, sens), rule_ratios(work[key[1:]], knots)
            ms = [m for m in meas if m in rule and m >= 256]
            if len(ms) < 3:
                continue
            x, y = [rule[m] for m in ms], [meas[m] for m in ms]
            mx, my = sum(x) / len(x), sum(y) / len(y)
            cov = sum((u - mx) * (v - my) for u, v in zip(x, y))
            sx, sy = math.sqrt(sum((u - mx) ** 2 for u in x)), math.sqrt(sum((v - my) ** 2 for v in y))
            mc = MODEL_OF.get(key[1:], ("?", "?"))
            print("%-3s %5d %5d %-8s %-7s | %5.2f %% | %5.2f %% | %.2f" % (
                key[0], key[1], key[2], mc[0], mc[1], 100 * sum(abs(v - 1) for v in y) / len(y),
                100 * sum(abs(u - v) for u, v in zip(x, y)) / len(y), cov / (sx * sy) if sx > 0 and sy > 0 else float("nan")))
        return
    parts = rule_parts(work, prof, generic, a.model or ["dream-7b"], a.reads_dir)
    block = ("  -- each GEMM shape's time at every warm-up row count over the straight line between the table's rows: from the\n"
             "  -- kernel's waves (cuBLASLt's tile and K splits, scripts/gemm_steps.py rule %s; no timing);\n"
             "  -- docs/COST_MODEL.md \"GEMM rows between the grid's\"\n  gemm_steps = {\n" % a.reads_dir
             + "".join(parts) + "  },\n")
    if a.block:
        sys.stdout.write(block)
        return
    profile_graft.graft(die, "gemm_steps", block, a.reads_dir, "gemm_steps.py rule", a.profile, a.name, a.out)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "rule":
        return rule_main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "lookup":
        return lookup_main(sys.argv[2:])
    p = script_io.arg_parser(description=__doc__.split("\n")[0])
    p.add_argument("dense")
    p.add_argument("--rows-of", default="datasets/profiles/h200-20261203s.lua", metavar="PROFILE")
    p.add_argument("--model", action="append", help="the shapes of this model in the block (default llada-8b)")
    p.add_argument("--rule", metavar="READS_DIR", help="also the rule's ratios (see rule) for --rule-model's shapes")
    p.add_argument("--rule-model", action="append", help="with --rule: this model's shapes from the rule (default dream-7b)")
    p.add_argument("--block", action="store_true")
    p.add_argument("--profile", metavar="IN.lua")
    p.add_argument("--name")
    p.add_argument("-o", dest="out")
    a = p.parse_args()
    if a.rule_model and not a.rule:
        die("--rule-model needs --rule READS_DIR")
    if a.profile and not (a.name and a.out):
        die("--profile needs --name and -o")
    dense, _ = tables(a.dense)
    if not dense:
        die("%s: no class-table rows (qkv, o, ffn)" % a.dense)
    prof, _ = tables(a.rows_of)
    generic = sorted({m for rows in prof.values() for m in rows})   # the rows of every table (the generic grid's)
    sens = sens_of(a.rows_of)
    want = a.model or ["llada-8b"]
    res = {}
    for key in sorted(dense):
        tab, n, k = key
        steps = sorted(dense[key])
        if any(y - x != steps[1] - steps[0] for x, y in zip(steps, steps[1:])):
            die("%s: %s %d x %d: rows not evenly spaced (a cut sweep?)" % (a.dense, tab, n, k))
        knots = sorted(prof[key]) if key in prof else generic
        res[key] = (ratios(dense[key], knots, sens), key in prof)
    if not (a.block or a.profile):
        print("shape (table n k), model class | own table | mean |r - 1| from 256 rows | min | max | ratio at rows")
        for key, (r, own) in res.items():
            big = [v for m, v in r.items() if m >= 256]
            mc = MODEL_OF.get(key[1:], ("?", "?"))
            print("%-3s %5d %5d %-8s %-7s | %-3s | %5.1f %% | %.3f | %.3f | %s" % (
                key[0], key[1], key[2], mc[0], mc[1], "yes" if own else "no",
                100 * sum(abs(v - 1) for v in big) / len(big), min(big), max(big),
                " ".join("%d:%.3f" % (m, r[m]) for m in SHOW if m in r)))
        return
    parts = []
    for key, (r, own) in res.items():
        model, cls = MODEL_OF.get(key[1:], ("", ""))
        if model not in want:
            continue
        if not own:
            die("%s has no %s table rows for %d x %d (%s): its ratio would not be against its interpolation" % (
                a.rows_of, key[0], key[1], key[2], model))
        parts.append(entry(model, cls, key[1:], r))
    if not parts:
        die("no shape of %s in %s" % (", ".join(want), a.dense))
    ruled = ""
    if a.rule:
        rm = a.rule_model or ["dream-7b"]
        if set(rm) & set(want):
            die("a model's shapes from both the sweep and the rule: %s" % ", ".join(sorted(set(rm) & set(want))))
        parts += rule_parts(rule_work(a.rule, 132), prof, generic, rm, a.rule)
        ruled = ("\n  -- and %s's from the kernels' waves (cuBLASLt's tile and K splits in %s; no timing: scripts/gemm_steps.py rule)"
                 % (", ".join(rm), a.rule))
    block = ("  -- each GEMM shape's time at every dense row over the straight line between the class table's rows, the\n"
             "  -- rows' times brought to one clock by the probe (scripts/gemm_steps.py, `dkv profile --gemm-step 16 --probe`)%s;\n"
             "  -- docs/COST_MODEL.md \"GEMM rows between the grid's\"\n"
             "  gemm_steps = {\n" % ruled + "".join(parts) + "  },\n")
    if a.block:
        sys.stdout.write(block)
        return
    profile_graft.graft(die, "gemm_steps", block, a.dense, "gemm_steps.py", a.profile, a.name, a.out)


if __name__ == "__main__":
    main()
