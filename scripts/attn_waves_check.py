#!/usr/bin/python3
"""attn_waves_check.py - the simulator's two rules for the attention of a head configuration a profile
does not hold, checked on one that a profile run measured beside its reference (docs/COST_MODEL.md
"Attention of another head configuration"):

    /usr/bin/python3 scripts/attn_waves_check.py PROFILE.lua --heads 24 --kv-heads 4 [--ref-heads 32 --ref-kv-heads 4]

Every Reuse-like row of the target (q_rows < kv_tokens; mode 0: items of 32 queries, mode 3: items of 64)
is predicted from the reference's rows of the same run, as sim/sim_profile.c does:
  roofline: the reference at the same q_rows, times the ratio of the two rooflines (the rule before);
  waves:    the reference's launch with the target's key splits S and waves W (W = ceil(clusters /
            attn_waves[S])), its tile count nearest the target's clusters (the rule since session 14).
Each row's value is max(stream_s, seconds - (warm_s - stream_s)), the column the simulator costed attention
from when this check was made (session 14 then costed the flushed tables from their median: docs/COST_MODEL.md
"Flushed tables without the back-to-back correction").  Prints the
mean |error| and bias of each rule per mode, and the rows where they differ most.  Needs the profile's
attn_waves (dkv profile since session 14; device call 34: datasets/hw/2026-12-01/call34/profile_attn_h24.lua).
"""
import math
import re
import sys

import script_io  # noqa: E402  (arg_parser: one-line usage errors; the script's folder is on sys.path)

N_SMS, FLOPS, BW = 132, 790e12, 4292e9   # datasets/presets/gpu/h200.lua


def costed(sec, warm, stream):
    return max(stream, sec - (warm - stream))


def load(path, value=costed, prog="attn_waves_check"):
    """the profile's attention rows {(heads, kv_heads, head_dim, mode, q_rows, kv_tokens): value(seconds,
    warm_s, stream_s)} and its attn_waves {(head_dim, group): clusters by splits 1-8}; exits with "PROG: PATH: ..."
    on a file it cannot read or use"""
    try:
        text = open(path, errors="replace").read()
    except OSError as e:
        sys.exit("%s: %s: %s" % (prog, path, e.strerror))
    m = re.search(r"\n    attn = \{(.*?)\n    \},", text, re.S)
    if not m:
        sys.exit("%s: %s: no kernels.attn table" % (prog, path))
    rows = {}
    for r in re.finditer(r"\{([-0-9.e+, ]+)\}", m.group(1)):
        v = [float(x) for x in r.group(1).split(",")]
        if len(v) < 13:
            continue
        q, a, h, hk, d, md, sec, _, _, _, _, warm, stream = v[:13]
        rows[(h, hk, d, md, q, a)] = value(sec, warm, stream)
    w = re.search(r"attn_waves = \{(.*?)\n  \},", text, re.S)
    if not w:
        sys.exit("%s: %s: no attn_waves (a profile from before session 14)" % (prog, path))
    waves = {}
    for e in re.finditer(r"head_dim = (\d+), group = (\d), clusters = \{([\d, ]+)\}", w.group(1)):
        waves[(int(e.group(1)), int(e.group(2)))] = [int(x) for x in e.group(3).split(",")]
    return rows, waves


def splits(base, amax):
    target = 2.0 * N_SMS
    s = 1 if base >= target else math.ceil(target / base)
    return max(1, min(s, 8, math.ceil(amax / 16)))


def roof(q, a, h, hk, d):
    items = math.ceil(q / 32) if q < a else q / a
    tf = 4 * q * a * h * d / FLOPS
    tb = 2 * (2 * q * h * d + items * a * 2 * hk * d) / BW
    return max(tf, tb)


def lookup_q(rows, key, q, a):
    """the reference at q rows and a keys: exact, else log-log between the measured q at that a"""
    if key + (q, a) in rows:
        return rows[key + (q, a)]
    qs = sorted(x[4] for x in rows if x[:4] == key and x[5] == a and x[4] < a)
    lo = [x for x in qs if x < q]
    hi = [x for x in qs if x > q]
    if not lo or not hi:
        return None
    q0, q1 = lo[-1], hi[0]
    t0, t1 = rows[key + (q0, a)], rows[key + (q1, a)]
    return math.exp(math.log(t0) + math.log(q / q0) / math.log(q1 / q0) * (math.log(t1) - math.log(t0)))


def main():
    ap = script_io.arg_parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--heads", type=float, required=True)
    ap.add_argument("--kv-heads", type=float, required=True)
    ap.add_argument("--ref-heads", type=float, default=32)
    ap.add_argument("--ref-kv-heads", type=float, default=4)
    ap.add_argument("--head-dim", type=float, default=128)
    a = ap.parse_args()
    rows, waves = load(a.profile)
    H, Hk, rh, rk, D = a.heads, a.kv_heads, a.ref_heads, a.ref_kv_heads, a.head_dim
    worst = []
    for md in (0, 3):
        tile, group = (32, 0) if md == 0 else (64, 1)
        cl = waves.get((int(D), group))
        errs = {"roofline": [], "waves": []}
        for (h, hk, d, m, q, kv), t in sorted(rows.items()):
            if (h, hk, d, m) != (H, Hk, D, md) or q >= kv:
                continue
            ref = (rh, rk, D, md)
            t_same = lookup_q(rows, ref, q, kv)
            if t_same is None:
                continue
            p_roof = t_same * roof(q, kv, H, Hk, D) / roof(q, kv, rh, rk, D)
            tiles = math.ceil(q / tile)
            S = splits(H * tiles, kv)
            W = math.ceil(H * tiles / cl[S - 1])
            best = None
            for n in range(1, 4 * tiles + 65):
                if splits(rh * n, kv) == S and math.ceil(rh * n / cl[S - 1]) == W:
                    d_ = abs(rh * n - H * tiles)
                    if best is None or d_ < best[0]:
                        best = (d_, n)
            p_wave = lookup_q(rows, ref, best[1] * tile, kv) if best else None
            if p_wave is None:
                p_wave = p_roof
            e_r, e_w = p_roof / t - 1, p_wave / t - 1
            errs["roofline"].append(e_r)
            errs["waves"].append(e_w)
            worst.append((abs(e_r) - abs(e_w), md, q, kv, tiles, S, W, t, e_r, e_w))
        for rule, e in errs.items():
            if e:
                print("mode %d %-8s rows %3d  mean |error| %5.1f %%  bias %+5.1f %%  within 5 %%: %d" % (
                    md, rule, len(e), 100 * sum(map(abs, e)) / len(e), 100 * sum(e) / len(e),
                    sum(abs(x) <= 0.05 for x in e)))
    worst.sort(key=lambda x: -abs(x[0]))
    print("largest differences (mode, q_rows, kv_tokens, tiles, S, W, measured us, roofline, waves):")
    for x in worst[:12]:
        print("  %d %5d %5d %3d %d %d %8.1f  %+6.1f %%  %+6.1f %%" % (x[1], x[2], x[3], x[4], x[5], x[6], 1e6 * x[7],
                                                                    100 * x[8], 100 * x[9]))


if __name__ == "__main__":
    main()
