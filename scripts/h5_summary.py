#!/usr/bin/python3
"""h5_summary.py FILE.h5 - a deterministic text summary of a results file, for diffing two runs.

Every group, dataset and attribute is listed in name order; a dataset prints its shape, dtype
and a SHA-256 of its bytes (plus the first values), an attribute its value.  Values that differ
between two honest runs of the same experiment are masked by exact name: provenance (commit, timestamps, host, the dkv version string) and
the engine's measured wall time (VOLATILE_NAMES), and the measured host-time columns of the step
records (VOLATILE_FIELDS: a compound dataset is hashed with those columns zeroed).  Used by
scripts/check_no_behaviour_change.sh."""
import hashlib
import re
import sys

import h5py
import numpy as np

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


with h5py.File(sys.argv[1], 'r') as f:
    walk(f)
