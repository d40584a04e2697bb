#!/usr/bin/python3
"""ncu_flush_summary.py - scripts/ncu_flush.py's tables of a run, one line per probe: what the L2 held of each buffer
(its read entries) and the dirty bytes (its flushes), at the run's first step (step 0: on the validation points a
Refresh of every prompt) and as the mean over the later steps (the Reuse steps there), beside the buffer's MB
(docs/GPU.md "The L2 flush diagnostic"; device call 133).

    /usr/bin/python3 scripts/ncu_flush_summary.py FLUSH.md [FLUSH.md...]

FLUSH.md: the output of scripts/ncu_flush.py; the section's name is the file's, less a leading "flush_" and ".md".
Exits 1 naming the file when it cannot be read or holds no step 0 or no later step, 2 on a usage error."""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402


def die(msg, code=1):
    sys.stderr.write("ncu_flush_summary.py: %s\n" % msg)
    sys.exit(code)


def cells(line):
    return [x.strip() for x in line.strip().strip("|").split("|")]


def summary(path):
    held, size, dirty, rows = collections.defaultdict(dict), {}, collections.defaultdict(dict), {}
    rep = collections.defaultdict(dict)   # the replay's held MB, where the table gives it
    lines = script_io.read_text(path, die).splitlines()
    for line in lines:
        c = cells(line)
        if not c[0].isdigit():
            continue
        s = int(c[0])
        if len(c) in (6, 8):   # a read entry: step, layer:point, buffer, rows, buffer MB, held MB [, replay's, diff]
            key = c[1] + ":" + c[2]
            held[key][s], size[key, s], rows[s] = float(c[5]), float(c[4]), int(c[3])
            if len(c) == 8 and c[6] != "-":
                rep[key][s] = float(c[6])
        elif len(c) == 5:   # a flush: step, layer:point, GPU dirty MB, replay dirty MB, difference
            dirty[c[1]][s] = (float(c[2]), float(c[3]))
    steps = sorted(set(rows) | {s for d in dirty.values() for s in d})
    later = [s for s in steps if s > 0]
    if 0 not in steps or not later:
        die("%s: no step 0 and later steps of ncu_flush.py rows" % path)
    name = os.path.basename(path)
    name = name[len("flush_"):] if name.startswith("flush_") else name
    name = name[:-3] if name.endswith(".md") else name
    out = ["### %s: step 0 %s rows, steps %s: %s rows" % (name, rows.get(0, "?"), ",".join(map(str, later)),
                                                          "/".join(str(rows.get(s, "?")) for s in later)),
           "", "| probe | step 0: held / buffer MB (replay) | later steps: held / buffer MB (mean; replay) |", "|---|---|---|"]
    layer = lambda k: int(k.split(":")[0])
    mean = lambda v: sum(v) / len(v)
    for k in sorted(held, key=layer):
        r0 = " (%.2f)" % rep[k][0] if 0 in rep[k] else ""
        rl = [rep[k][s] for s in later if s in rep[k]]
        out.append("| %s | %.2f / %.2f%s | %.2f / %.2f%s |" % (k, held[k].get(0, float("nan")), size.get((k, 0), 0), r0,
                   mean([held[k][s] for s in later if s in held[k]]), size.get((k, later[0]), 0),
                   "; %.2f" % mean(rl) if rl else ""))
    for k in sorted(dirty, key=layer):
        out.append("| %s dirty (GPU; replay) | %.2f; %.2f | %.2f; %.2f |" % (
            k, dirty[k][0][0], dirty[k][0][1], mean([dirty[k][s][0] for s in later if s in dirty[k]]),
            mean([dirty[k][s][1] for s in later if s in dirty[k]])))
    return "\n".join(out)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    script_io.unknown_options("ncu_flush_summary.py", argv)
    print("\n\n".join(summary(p) for p in argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
