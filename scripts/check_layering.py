#!/usr/bin/python3
"""check_layering.py [ROOT] - every #include "<module>/..." of a module's sources is allowed by
SConstruct's MODULES table (docs/ARCHITECTURE.md, "Layers").

The build's include path is global (-Icore -I.), so a header of a module the includer may not use
would compile; this check makes that a failure.  Module M (folder F) may include the headers of M
and of every module in the closure of M's list.  cuda/ may use what its MODULES entry lists
(SConstruct adds it when nvcc is found).  Unit tests (tests/unit/test_<M>[_*].c) follow M's rule;
test_cli_* and the CLI (core/cli, the program) may include anything.  Exit 1 listing each
violation as FILE:LINE: includes "X/..." (module X), not in M's list; 2 on usage or a ROOT without SConstruct."""
import ast
import os
import re
import sys

if sys.argv[1:] in (['-h'], ['--help']):
    print(__doc__)
    sys.exit(0)
if len(sys.argv) > 2 or sys.argv[1:2] and sys.argv[1].startswith('-'):
    print('usage: check_layering.py [ROOT]  (--help: what it checks)', file=sys.stderr)
    sys.exit(2)
root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
try:
    text = open(os.path.join(root, 'SConstruct')).read()
except OSError as e:
    print('check_layering: %s: %s (ROOT: the repository)' % (os.path.join(root, 'SConstruct'), e.strerror),
          file=sys.stderr)
    sys.exit(2)

m = re.search(r'^MODULES = (\{.*?^\})', text, re.S | re.M)
if not m:
    sys.exit('check_layering: no MODULES table in SConstruct')
modules = {k: (v[0], list(v[1])) for k, v in ast.literal_eval(m.group(1)).items()}
c = re.search(r"MODULES\['cuda'\] = \('cuda', (\[.*?\])", text, re.S)
if c:
    modules['cuda'] = ('cuda', ast.literal_eval(c.group(1)))
if re.search(r"MODULES\['lua'\]\[1\]\.insert\(0, 'cuda'\)", text):
    modules['lua'][1].insert(0, 'cuda')

prefix = {os.path.basename(folder): name for name, (folder, _) in modules.items()}


def allowed(name):
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo += modules[n][1]
    return seen


INC = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
bad = []


def check(path, mod):
    ok = allowed(mod)
    with open(path, errors='replace') as fh:
        for ln, line in enumerate(fh, 1):
            mm = INC.match(line)
            if not mm or mm.group(1) not in prefix:
                continue
            used = prefix[mm.group(1)]
            if used not in ok:
                bad.append('%s:%d: includes "%s/..." (module %s), not in %s\'s list %s' %
                           (os.path.relpath(path, root), ln, mm.group(1), used, mod, sorted(modules[mod][1])))


n_files = 0
for name, (folder, _) in modules.items():
    d = os.path.join(root, folder)
    if not os.path.isdir(d):
        continue
    for f in sorted(os.listdir(d)):
        if f.endswith(('.c', '.h', '.cu', '.cuh')):
            check(os.path.join(d, f), name)
            n_files += 1
tdir = os.path.join(root, 'tests', 'unit')
for f in sorted(os.listdir(tdir)) if os.path.isdir(tdir) else []:
    mm = re.match(r'test_([a-z]+)[_.]', f)
    if f.endswith('.c') and mm and mm.group(1) in modules:
        check(os.path.join(tdir, f), mm.group(1))
        n_files += 1

if bad:
    print('\n'.join(bad))
    print('check_layering: %d include(s) break the MODULES table (SConstruct)' % len(bad))
    sys.exit(1)
print('check_layering: %d files of %d modules follow the MODULES table' % (n_files, len(modules)))
