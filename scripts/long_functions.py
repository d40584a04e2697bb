#!/usr/bin/python3
"""long_functions.py [LIMIT] [PATHS...] - C functions longer than LIMIT lines (default 120) and
source files longer than 800 lines, in product code (core/, sim/, cuda/, cpu/: .c and .h; CUDA
kernels in .cu files are left out, as STYLE.md allows).  A function is a line at column 0 that opens a body
('{' alone on the next line, or at the end of the signature) up to the '}' at column 0 that
closes it.  Prints one line per finding; exit 1 when there is one, 2 on an unknown option or a PATH that cannot be
read."""
import glob
import os
import re
import sys

if sys.argv[1:] in (['-h'], ['--help']):
    print(__doc__)
    sys.exit(0)
bad = [a for a in sys.argv[1:] if a.startswith('-')]
if bad:
    print('long_functions: unknown option %s (usage: long_functions.py [LIMIT] [PATHS...])' % bad[0], file=sys.stderr)
    sys.exit(2)
limit = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 120
paths = [a for a in sys.argv[1:] if not a.isdigit()] or \
    sorted(f for d in ('core/**', 'sim', 'cuda', 'cpu') for x in ('c', 'h')
           for f in glob.glob('%s/*.%s' % (d, x), recursive=True))
found = 0
name_re = re.compile(r'([A-Za-z_][A-Za-z_0-9]*)\s*\(')
for p in paths:
    try:
        lines = open(p, errors='replace').read().split('\n')
    except OSError as e:
        print('long_functions: %s: %s' % (p, e.strerror), file=sys.stderr)
        sys.exit(2)
    if len(lines) - 1 > 800:
        print('%s: %d lines (file over 800)' % (p, len(lines) - 1))
        found += 1
    i = 0
    while i < len(lines):
        ln = lines[i]
        starts = (ln[:1].isalpha() or ln[:1] == '_') and '(' in ln and not ln.rstrip().endswith(';') \
            and not ln.startswith(('typedef', 'struct', 'enum', 'union', 'static const', 'const ')) or \
            (ln.startswith(('static const', 'const ')) and '(' in ln and ')' in ln and '=' not in ln)
        if starts:
            j = i
            while j < len(lines) and '{' not in lines[j] and not lines[j].rstrip().endswith(';'):
                j += 1
            if j < len(lines) and '{' in lines[j] and (lines[j].startswith('{') or lines[j].rstrip().endswith('{')):
                k = j + 1
                while k < len(lines) and not lines[k].startswith('}'):
                    k += 1
                n = k - i + 1
                m = name_re.search(ln)
                if n > limit and m:
                    print('%s:%d: %s is %d lines' % (p, i + 1, m.group(1), n))
                    found += 1
                i = k + 1
                continue
        i += 1
sys.exit(1 if found else 0)
