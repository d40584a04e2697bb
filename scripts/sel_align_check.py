#!/usr/bin/python3
"""sel_align_check.py - the sparse selection at unaligned key counts (issue 9, session 13): a profile's
kv_gather rows off the multiples of 32 (`dkv profile --grid select` since session 13) checked against
device call 24's measured selection per layer (datasets/hw/2026-12-01/call24/sel.tgz, sel/sel.txt:
experiments/hw_select_keys.lua, real with per-class events).  docs/COST_MODEL.md "Unaligned key counts".

  /usr/bin/python3 scripts/sel_align_check.py NEW.lua [-o DIR] [--dkv build/release/dkv]
      [--base datasets/profiles/h200-20261201g.lua] [--sel datasets/hw/2026-12-01/call24/sel.tgz]
      [--event-us 1.5]
  /usr/bin/python3 scripts/sel_align_check.py --standin OUT.lua [--base ...]

NEW.lua: the profile the device wrote (only its kernels.kv_gather table is used).  Steps: (1) the
isolated ratios t(anchor + c) / t(anchor) of NEW's rows per head configuration and alignment class c;
(2) the base profile with its kv_gather table replaced by NEW's, under a scratch root (DIR/root); (3)
experiments/hw_select_keys.lua re-simulated (-D backend=sim -D warmup=each) under the base profile as
shipped and under the merged one; (4) per point, simulated against measured less EVENT_US per selection
(the class event before each selection: one kv_gather segment of 5 launches, docs/COST_MODEL.md), and the
verdict.  Criterion (stated before any number): PASS when the merged profile's simulated kv_gather per
selection is within 5 % of the measured less the event at 833, 836 and 840 keys for LLaDA-8B and
Dream-7B (six points).  Also printed, not judged: the other eight points, the base profile's errors, and
the unaligned excess t(k) / t(832) - 1 simulated against measured.

--standin OUT.lua writes a STAND-IN profile (provenance.measured = false, NOT a measurement) to rehearse
this script: the base's kv_gather rows, the anchors interpolated in (log keys, log t) between them, and
anchor + c at fixed factors (c = 1: 1.17, 2: 1.15, 4: 1.05, 8: 1.0, 16: 1.01) on every time column.
"""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys

import script_io  # noqa: E402  (arg_parser: one-line usage errors; the script's folder is on sys.path)
import tarfile

SEL_ALIGN = 32
ANCHORS = (384, 768, 1536, 3072)
OFFS = (1, 2, 4, 8, 16)
STANDIN_FACTOR = {1: 1.17, 2: 1.15, 4: 1.05, 8: 1.0, 16: 1.01}
CHECK_KEYS = (833, 836, 840)
TOL = 0.05


def die(msg):
    sys.stderr.write("sel_align_check: %s\n" % msg)
    sys.exit(2)


def kv_gather_block(text, where):
    """(start, end) character offsets of the `    kv_gather = {` ... `    },` block."""
    m = re.search(r"^    kv_gather = \{\n", text, re.M)
    if not m:
        die("%s: no kernels.kv_gather table" % where)
    e = re.compile(r"^    \},?\n", re.M).search(text, m.end())
    if not e:
        die("%s: kernels.kv_gather is not closed by a line '    },'" % where)
    return m.start(), e.end()


def parse_block(block, where):
    """fields, extra, rows (lists of floats) of a kv_gather block."""
    f = re.search(r'fields = \{([^}]*)\}', block)
    x = re.search(r'extra = \{([^}]*)\}', block)
    if not f:
        die("%s: kv_gather has no fields" % where)
    fields = re.findall(r'"([^"]+)"', f.group(1))
    extra = re.findall(r'"([^"]+)"', x.group(1)) if x else []
    rows = []
    for ln, line in enumerate(block.split("\n"), 1):
        m = re.match(r"^\s+\{([-0-9.eE+, ]+)\},?\s*$", line)
        if m:
            r = [float(v) for v in m.group(1).split(",")]
            if len(r) != len(fields) + 2 + len(extra):
                die("%s: kv_gather row (block line %d): %d values, want %d" % (where, ln, len(r),
                                                                             len(fields) + 2 + len(extra)))
            rows.append(r)
    for need in ("rows", "keys", "heads", "kv_heads", "head_dim"):
        if need not in fields:
            die("%s: kv_gather.fields lacks '%s'" % (where, need))
    return fields, extra, rows


def sim_col(fields, extra):
    """the column the simulator costs kv_gather from (a warm table: stream_s, else warm_s, else seconds)"""
    for name in ("stream_s", "warm_s"):
        if name in extra:
            return len(fields) + 2 + extra.index(name)
    return len(fields)


def groups(fields, rows):
    g = {}
    for r in rows:
        key = tuple(r[fields.index(k)] for k in ("rows", "heads", "kv_heads", "head_dim"))
        g.setdefault(key, {})[r[fields.index("keys")]] = r
    return g


def print_ratios(fields, extra, rows):
    c = sim_col(fields, extra)
    name = (fields + ["seconds", "launches"] + extra)[c]
    print("1. isolated selection, t(anchor + c) / t(anchor) from the profile's %s (rows, heads, kv_heads, head_dim):"
          % name)
    n = 0
    for key, byk in sorted(groups(fields, rows).items()):
        anchors = sorted(k for k in byk if k % SEL_ALIGN == 0 and any(k + o in byk for o in OFFS))
        for a in anchors:
            cells = ["+%d %.3f" % (o, byk[a + o][c] / byk[a][c]) for o in OFFS if a + o in byk]
            print("   %-22s keys %5d: %s" % ("/".join("%g" % v for v in key), a, "  ".join(cells)))
            n += 1
    if n == 0:
        die("the new profile's kv_gather has no unaligned rows beside an aligned partner: not a session-13 "
            "`dkv profile --grid select`")


def fmt_row(r):
    return "        {" + ", ".join("%.6g" % v for v in r) + "},"


def standin(base_path, out_path):
    text = open(base_path).read()
    s, e = kv_gather_block(text, base_path)
    fields, extra, rows = parse_block(text[s:e], base_path)
    ki, keep = fields.index("keys"), fields.index("keep") if "keep" in fields else None
    if any(int(r[ki]) % 32 for r in rows):
        die("%s: its kv_gather table already has rows off the multiples of 32; a stand-in adds its own: give "
            "--base a profile without them (e.g. datasets/profiles/h200-20261201g.lua)" % base_path)
    tcols = [len(fields)] + [len(fields) + 2 + i for i in range(len(extra))]
    out = list(rows)
    for key, byk in sorted(groups(fields, rows).items()):
        ks = sorted(byk)
        for a in ANCHORS:
            lo = max([k for k in ks if k <= a], default=None)
            hi = min([k for k in ks if k >= a], default=None)
            if lo is None or hi is None:
                continue
            w = 0.0 if hi == lo else math.log(a / lo) / math.log(hi / lo)
            base = list(byk[lo])
            for c in tcols:
                y0, y1 = byk[lo][c], byk[hi][c]
                base[c] = math.exp(math.log(y0) + w * (math.log(y1) - math.log(y0))) if y0 > 0 and y1 > 0 else y0
            for o in (0,) + OFFS:
                r = list(base)
                r[ki] = a + o
                if keep is not None:
                    r[keep] = (a + o - 32) // 2
                for c in tcols:
                    if r[c] > 0 and o:
                        r[c] *= STANDIN_FACTOR[o]
                if a not in byk or o:
                    out.append(r)
    block = text[s:e]
    head = block[:block.index("rows = {")] + "rows = {\n"
    new = head + "\n".join(fmt_row(r) for r in out) + "\n      },\n    },\n"
    text = text[:s] + new + text[e:]
    text = text.replace("measured = true", "measured = false", 1)
    text = ("-- STAND-IN profile (sel_align_check.py --standin): %s with hand-made kv_gather rows at unaligned key "
            "counts, NOT a measurement\n" % base_path) + text
    open(out_path, "w").write(text)
    print("sel_align_check: wrote %s (STAND-IN: %d kv_gather rows, %d added)" % (out_path, len(out),
                                                                                 len(out) - len(rows)))


def read_table(txt, where):
    """{point: {keys, align, sim_us, real_us}} from hw_select_keys's printed table"""
    out = {}
    for line in txt.splitlines():
        m = re.match(r"^(\S+:\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$", line)
        if m:
            num = lambda v: None if v == "-" else float(v)  # noqa: E731
            out[m.group(1)] = {"keys": int(m.group(2)), "align": int(m.group(3)), "n": int(m.group(4)),
                               "sim_us": num(m.group(5)), "real_us": num(m.group(6))}
    if not out:
        die("%s: no hw_select_keys table" % where)
    return out


def simulate(dkv, root, h5, log):
    cmd = [dkv, "run"] + (["--root", root] if root else []) + \
          ["experiments/hw_select_keys.lua", "-D", "backend=sim", "-D", "warmup=each", "-o", h5]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    open(log, "w").write(r.stdout)
    if r.returncode != 0:
        die("%s failed (exit %d): see %s" % (" ".join(cmd), r.returncode, log))
    return read_table(r.stdout, log)


def preset_profile_name():
    m = re.search(r'^\s*profile = "([^"]+)"', open("datasets/presets/gpu/h200.lua").read(), re.M)
    if not m:
        die("datasets/presets/gpu/h200.lua names no profile")
    return m.group(1)


def main():
    ap = script_io.arg_parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("new", nargs="?")
    ap.add_argument("--standin")
    ap.add_argument("--base", default=None)
    ap.add_argument("--sel", default="datasets/hw/2026-12-01/call24/sel.tgz")
    ap.add_argument("--dkv", default="build/release/dkv")
    ap.add_argument("--event-us", type=float, default=1.5)
    ap.add_argument("-o", "--out", default="/tmp/sel_align_check")
    a = ap.parse_args()
    if not os.path.isdir("datasets/presets"):
        die("run from the project root")
    pname = preset_profile_name()
    base = a.base or "datasets/profiles/%s.lua" % pname
    if a.standin:
        standin(base, a.standin)
        return 0
    if not a.new:
        die("give the new profile (NEW.lua) or --standin OUT.lua")
    for f in (a.new, base, a.sel, a.dkv):
        if not os.path.exists(f):
            die("%s: no such file" % f)
    if os.path.exists(a.out):
        die("%s exists: give another -o" % a.out)
    new_text = open(a.new).read()
    s, e = kv_gather_block(new_text, a.new)
    fields, extra, rows = parse_block(new_text[s:e], a.new)
    if "STAND-IN" in new_text or "measured = false" in new_text:
        print("STAND-IN DATA: %s is not a measurement" % a.new)
    print_ratios(fields, extra, rows)

    # 2. the base profile with NEW's kv_gather table, under a scratch root
    root = os.path.join(a.out, "root")
    os.makedirs(os.path.join(root, "datasets"))
    shutil.copytree("datasets/presets", os.path.join(root, "datasets/presets"))
    os.makedirs(os.path.join(root, "datasets/profiles"))
    btext = open(base).read()
    bs, be = kv_gather_block(btext, base)
    merged = ("-- sel_align_check.py: %s with kernels.kv_gather from %s\n" % (base, a.new)) + \
        btext[:bs] + new_text[s:e] + btext[be:]
    open(os.path.join(root, "datasets/profiles/%s.lua" % pname), "w").write(merged)
    os.symlink(os.path.abspath("experiments"), os.path.join(root, "experiments"))

    # 3. re-simulation under the shipped profile and the merged one; 4. against call 24
    old = simulate(a.dkv, None, os.path.join(a.out, "sim_base.h5"), os.path.join(a.out, "sim_base.txt"))
    new = simulate(a.dkv, root, os.path.join(a.out, "sim_new.h5"), os.path.join(a.out, "sim_new.txt"))
    with tarfile.open(a.sel) as t:
        m = t.extractfile("sel/sel.txt")
        if m is None:
            die("%s: no sel/sel.txt" % a.sel)
        real = read_table(m.read().decode(), a.sel + ":sel/sel.txt")
    ev = a.event_us
    print("\n2. per selection and layer (us): real = call 24 with class events, real' = real - %.1f (the event);"
          % ev)
    print("   err = sim / real' - 1; excess = t(keys) / t(832 keys) - 1 of the same model")
    print("   %-14s %5s %5s %7s %7s %7s %7s %7s %7s %8s %8s" % ("point", "keys", "align", "real", "real'", "sim_g",
                                                                "err_g", "sim_new", "err_new", "exc_real",
                                                                "exc_sim"))
    verdict, n_checked = True, 0
    for p, r in real.items():
        if p not in old or p not in new or r["real_us"] is None:
            die("point %s: missing from a re-simulation or without a measurement" % p)
        model = p.split(":")[0]
        ref = real.get(model + ":832")
        rc = r["real_us"] - ev
        eg, en = old[p]["sim_us"] / rc - 1, new[p]["sim_us"] / rc - 1
        xr = rc / (ref["real_us"] - ev) - 1 if ref else float("nan")
        xs = new[p]["sim_us"] / new[model + ":832"]["sim_us"] - 1 if model + ":832" in new else float("nan")
        judged = r["keys"] in CHECK_KEYS
        if judged:
            n_checked += 1
            verdict &= abs(en) <= TOL
        print("   %-14s %5d %5d %7.1f %7.1f %7.1f %+6.1f%% %7.1f %+6.1f%% %+7.1f%% %+7.1f%%%s" % (
            p, r["keys"], r["align"], r["real_us"], rc, old[p]["sim_us"], 100 * eg, new[p]["sim_us"], 100 * en,
            100 * xr, 100 * xs, "  *" if judged else ""))
    if n_checked != 2 * len(CHECK_KEYS):
        die("expected %d judged points (833, 836, 840 keys x 2 models), found %d" % (2 * len(CHECK_KEYS), n_checked))
    print("\ncriterion: |err_new| <= %.0f %% at the points marked * (833, 836, 840 keys, both models): %s"
          % (100 * TOL, "PASS" if verdict else "FAIL"))
    print("(files: %s: sim_base.txt, sim_new.txt, root/datasets/profiles/%s.lua = the merged profile)"
          % (a.out, pname))
    return 0


if __name__ == "__main__":
    sys.exit(main())
