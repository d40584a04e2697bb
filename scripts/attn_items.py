#!/usr/bin/python3
"""attn_items.py - the attention class of Reuse steps by their item count: measured (a run with class events,
dkv.execute class_timing = true) against one or more simulations of the same points, the steps paired where every
file has the same plan (items and query rows), each class event's cost (1.5 us a launch, docs/COMPARE.md) taken off the
measured time (docs/COST_MODEL.md "Attention of unequal items").

    /usr/bin/python3 scripts/attn_items.py REAL.h5 SIM.h5 [SIM.h5...] [--point P ...]

REAL.h5 holds <point>:real runs with kernels tables (e.g. device call 111's novel.h5 in hw_h5.tgz); each SIM.h5 the
<point>:sim runs (`dkv run experiments/hw_validate.lua -D backend=sim -D set=novel -o SIM.h5`).  Default points: the
nv:* points of hw_validate.lua -D set=novel; --point (repeatable) names others.  Exits 2 on a missing file or run.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402

POINTS = ['nv:vi:dual,steps=32', 'nv:az:dual,blk=64', 'nv:az:sparse_head,blk=64', 'nv:dream:az:dual,blk=64',
          'nv:az:prefix,blk=16']
EV = 1.5e-6
args = sys.argv[1:]
if args[:1] in (['-h'], ['--help']):
    print(__doc__.strip())
    sys.exit(0)
def die(msg):
    print("attn_items.py: " + msg, file=sys.stderr)
    sys.exit(2)
picked = []
while '--point' in args:
    i = args.index('--point')
    if i + 1 >= len(args):
        die("--point needs a point name (e.g. nv:vi:dual,steps=32)")
    picked.append(args[i + 1])
    del args[i:i + 2]
POINTS = picked or POINTS
script_io.unknown_options("attn_items.py", args)
if len(args) < 2 or args[0] in ('-h', '--help'):
    print(__doc__.strip(), file=sys.stderr if len(args) < 2 else sys.stdout)
    sys.exit(2 if len(args) < 2 else 0)
real_f, sims = args[0], args[1:]
def table(run, name, fields):
    """the table NAME of RUN ((path, run name, its group)), holding FIELDS, else exit 2 naming the file and run"""
    return script_io.table(run[2], name, "%s: run %s" % run[:2], die, fields)
def cls(run, kind):
    k = table(run, 'kernels', ('kind', 'step_index', 'time_s', 'n_launches'))
    out = {}
    for x in k[k['kind'] == kind]:
        i = int(x['step_index']); out[i] = out.get(i, 0) + x['time_s'] - EV * x['n_launches']
    return out
files = {}   # each file opened once
def run(path, name):
    if path not in files:
        files[path] = script_io.open_h5(path, die)
    if name not in files[path]['runs']:
        die("%s: no run %s" % (path, name))
    return path, name, script_io.group(files[path]['runs'], name, "%s: runs" % path, die)
STEPS = ('n_items', 'q_tokens', 'n_refresh')
for pt in POINTS:
    R = run(real_f, pt + ':real'); rs = table(R, 'steps', STEPS); ra = cls(R, 1)
    S = [run(f, pt + ':sim') for f in sims]
    sa = [cls(s, 1) for s in S]; ss = [table(s, 'steps', STEPS) for s in S]
    g = {}
    for i in range(min(len(rs), min(len(x) for x in ss))):
        if any(x['n_items'][i] != rs['n_items'][i] or x['q_tokens'][i] != rs['q_tokens'][i] for x in ss): continue
        if rs['n_refresh'][i] > 0: continue
        key = int(rs['n_items'][i])
        g.setdefault(key, []).append([ra.get(i, np.nan)] + [a.get(i, np.nan) for a in sa])
    print(pt, '(Reuse attention per step, ms: measured, then each sim and its error)')
    for key in sorted(g):
        v = np.array(g[key]) * 1e3
        m = v[:, 0].mean()
        print('  %2d items n=%2d  meas %6.3f  ' % (key, len(v), m) + '  '.join('%6.3f (%+5.1f%%)' % (v[:, j].mean(), 100 * (v[:, j].mean() / m - 1)) for j in range(1, v.shape[1])))
