#!/usr/bin/python3
"""h5_summary.py FILE.h5 - a deterministic text summary of a results file, for diffing two runs.

Every group, dataset and attribute is listed in name order; a dataset prints its shape, dtype
and a SHA-256 of its bytes (plus the first values), an attribute its value.  Values that differ
between two honest runs of the same experiment are masked by exact name: provenance (commit, timestamps, host, the dkv version string) and
the engine's measured wall time (VOLATILE_NAMES), and the measured host-time columns of the step
records (VOLATILE_FIELDS: a compound dataset is hashed with those columns zeroed).  Used by
scripts/check_no_behaviour_change.sh.  Exit 1, with one line naming the file, on a file that is missing, not
HDF5 or empty (no group, dataset or attribute: a failed write would summarise as equal to another); 2 on usage."""
import hashlib
import os
import re
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (open_h5)

# exact names whose values are provenance or wall-clock measurements, not results (the run's
# provenance attributes, HDF5_SCHEMA.md; wall_s: the engine's measured wall time)
VOLATILE_NAMES = {'git_commit', 'dkv_version', 'host', 'start_time', 'end_time', 'wall_s'}
# columns of compound datasets that are measured host (CPU) wall time of each step, on every
# backend, simulator included (HDF5_SCHEMA.md, steps: host_plan_s, host_enqueue_s, host_wait_s), and
# the sampled SM clock of an executed step (sm_mhz)
VOLATILE_FIELDS = {'host_plan_s', 'host_enqueue_s', 'host_wait_s', 'sm_mhz'}


class _Volatile:
    @staticmethod
    def search(name):
        return name.split('/')[-1] in VOLATILE_NAMES


VOLATILE = _Volatile()


def fmt(v):
    if isinstance(v, bytes):
        return repr(v.decode('utf-8', 'replace'))
    if isinstance(v, np.ndarray):
        return 'array%s %s' % (v.shape, hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()[:16])
    return repr(v)


def attrs(obj, pad):
    for k in sorted(obj.attrs.keys()):
        v = obj.attrs[k]
        if VOLATILE.search(k):
            print('%s@%s = <masked>' % (pad, k))
        else:
            print('%s@%s = %s' % (pad, k, fmt(v)))


def walk(g, pad=''):
    attrs(g, pad)
    for k in sorted(g.keys()):
        o = g.get(k, getlink=False)
        if isinstance(o, h5py.Group):
            print('%s%s/' % (pad, k))
            walk(o, pad + '  ')
        else:
            d = o[()]
            if VOLATILE.search(k):
                print('%s%s %s %s <masked>' % (pad, k, o.shape, o.dtype))
            else:
                a = np.asarray(d)
                masked = sorted(VOLATILE_FIELDS & set(a.dtype.names or ()))
                if masked:
                    a = a.copy()
                    for fld in masked:
                        a[fld] = 0
                h = hashlib.sha256(np.ascontiguousarray(a).tobytes() if a.dtype.kind != 'O'
                                   else repr(a.tolist()).encode()).hexdigest()[:16]
                head = a.ravel()[:4].tolist() if a.ndim else a.tolist()
                print('%s%s %s %s sha=%s head=%s%s' % (pad, k, o.shape, o.dtype, h, head,
                                                       ' masked=%s' % ','.join(masked) if masked else ''))
            attrs(o, pad + '  ')


def die(msg):
    sys.stderr.write('h5_summary: %s\n' % msg)
    sys.exit(1)


def main(argv):
    if argv[:1] in (['-h'], ['--help']):
        print(__doc__.strip())
        return 0
    if len(argv) != 1 or argv[0].startswith('-'):
        sys.stderr.write('usage: h5_summary.py FILE.h5 (--help: what it prints)\n')
        return 2
    with script_io.open_h5(argv[0], die, need=()) as f:
        if not len(f) and not len(f.attrs):
            die('%s: an empty HDF5 file (no group, dataset or attribute)' % argv[0])
        walk(f)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
