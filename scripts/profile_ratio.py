#!/usr/bin/python3
"""profile_ratio.py - two dkv profiles (docs/PROFILE_FORMAT.md) compared row by row: for every kernel
table, the ratio B / A of the `seconds` column over the shapes (key fields) both hold; prints per table
the number of shapes, the median and the 10th / 90th percentiles, and the median over all rows.

    profile_ratio.py A.lua B.lua

Reads the files as text (the writer's layout: `    name = {`, `      fields = {...},`, one row per line).
Exit 1, naming the file, on a file that cannot be read or holds no such table; 2 on usage (--help: exit 0)."""
import re
import statistics
import sys


def die(msg):
    sys.exit("profile_ratio: " + msg)


def load(path):
    tabs, cur, nf = {}, None, None
    try:
        fh = open(path, errors="replace")
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    for line in fh:
        m = re.match(r'\s{4}(\w+) = \{', line)
        if m:
            cur, nf = m.group(1), None
            tabs[cur] = {}
            continue
        m = re.match(r'\s+fields = \{(.*)\},', line)
        if m and cur:
            nf = len(m.group(1).split(','))
            continue
        m = re.match(r'\s+\{([-0-9.e, ]+)\},?\s*$', line)
        if m and cur and nf:
            v = [float(x) for x in m.group(1).split(',')]
            tabs[cur][tuple(v[:nf])] = v[nf]
    if not any(tabs.values()):
        die("%s: no kernel table in the writer's layout (`    name = {`, `      fields = {...},`, one `{...},` row "
            "a line): not a profile `dkv profile` wrote?" % path)
    return tabs


def main():
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    a, b = load(sys.argv[1]), load(sys.argv[2])
    every = []
    for t in sorted(set(a) & set(b)):
        r = sorted(b[t][k] / a[t][k] for k in b[t] if k in a[t] and a[t][k] > 0)
        if not r:
            continue
        every += r
        print(f"{t:14s} shapes {len(r):5d}  B/A median {statistics.median(r):.4f}  p10 {r[len(r) // 10]:.4f}  "
              f"p90 {r[9 * len(r) // 10]:.4f}")
    if not every:
        sys.exit("profile_ratio: no shape in both files")
    print(f"all rows {len(every)}: median {statistics.median(every):.4f}")


if __name__ == "__main__":
    main()
