#!/usr/bin/python3
"""smi_segments.py - GPU clocks and power while dkv ran, per marked segment: nvidia-smi's CSV
(--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active,
utilization.gpu -lms N) and a marks file of `YYYY/MM/DD HH:MM:SS.mmm NAME_start|NAME_end` lines.
For each segment, over the busy samples (utilization >= 50 %): median / min / max SM clock, median
memory clock, median power, and the share of samples with the software power cap (reason bit 0x4)
active.

    smi_segments.py smi.csv marks.txt      (datasets/hw/2026-12-01/call22/clocks.tgz: c/smi.csv, c/marks.txt)

Exit 1, naming the file (and line), on a file that cannot be read or a marks line not of that form; 2 on usage."""
import csv
import datetime
import statistics
import sys

FMT = '%Y/%m/%d %H:%M:%S.%f'


def die(msg):
    sys.exit("smi_segments: " + msg)


def lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError as e:
        die("%s: %s" % (path, e.strerror))


def main():
    if sys.argv[1:2] in (['-h'], ['--help']):
        print(__doc__.strip())
        return
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    marks = {}
    for n, line in enumerate(lines(sys.argv[2]), 1):
        try:
            d, t, name = line.split()
            marks[name] = datetime.datetime.strptime(d + ' ' + t, FMT)
        except ValueError:
            die("%s:%d: not a mark ('YYYY/MM/DD HH:MM:SS.mmm NAME_start|NAME_end'): %r" % (sys.argv[2], n, line[:80]))
    rows = []
    for r in csv.reader(lines(sys.argv[1])):
        if not r or r[0].startswith('timestamp'):
            continue
        try:
            rows.append((datetime.datetime.strptime(r[0].strip(), FMT), float(r[1].split()[0]), float(r[2].split()[0]),
                         float(r[3].split()[0]), int(r[5].strip(), 16), float(r[6].split()[0])))
        except (ValueError, IndexError):
            continue
    if not rows:
        die("%s: no nvidia-smi sample row (timestamp, clocks.sm, clocks.mem, power.draw, temperature.gpu, "
            "throttle reasons, utilization.gpu)" % sys.argv[1])
    segs = [n[:-6] for n in marks if n.endswith('_start') and n[:-6] + '_end' in marks]
    if not segs:
        sys.exit("smi_segments: no NAME_start / NAME_end pair in " + sys.argv[2])
    for s in segs:
        a, b = marks[s + '_start'], marks[s + '_end']
        busy = [x for x in rows if a <= x[0] <= b and x[5] >= 50]
        if not busy:
            print(f"{s:10s} no busy sample")
            continue
        sm = [x[1] for x in busy]
        print(f"{s:10s} busy samples {len(busy):5d}  SM MHz median {statistics.median(sm):.0f} (min {min(sm):.0f}, max "
              f"{max(sm):.0f})  mem MHz {statistics.median(x[2] for x in busy):.0f}  power W median "
              f"{statistics.median(x[3] for x in busy):.0f}  power cap active {sum(x[4] & 4 != 0 for x in busy) / len(busy):.2f}")


if __name__ == "__main__":
    main()
