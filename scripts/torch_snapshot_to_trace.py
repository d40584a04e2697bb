#!/usr/bin/python3
"""torch_snapshot_to_trace.py - convert a PyTorch CUDA memory snapshot into a dkv trace CSV.

    /usr/bin/python3 scripts/torch_snapshot_to_trace.py SNAPSHOT.pickle -o TRACE.csv
    dkv replay TRACE.csv --mem caching        # or static, blockpool

SNAPSHOT.pickle is what torch.cuda.memory._dump_snapshot(path) writes after
torch.cuda.memory._record_memory_history(): a dict with "segments" and "device_traces", the
latter one list of trace entries per device.  Each entry is a dict with "action" and, depending
on it, "addr", "size", "stream", "time_us", "frames".  The converter reads it with the standard
pickle module (no torch needed; only plain containers are accepted, any class reference in the
file is refused) and maps actions to trace events (docs/TRACE_FORMAT.md):

    alloc           -> alloc  id = addr, bytes = size, aux = addr
    free_requested  -> free   id = addr (the caller's release)
    free_completed  -> free   only if no free_requested came first (older PyTorch records only
                              this one); otherwise skipped
    segment_alloc, segment_free, segment_map, segment_unmap, snapshot -> skipped (the
                              allocator's own device traffic; dkv's managers model it)
    oom             -> skipped, counted (the replayed manager decides for itself)

Frees of addresses allocated before the recorded window (the history is a ring buffer) are
dropped and counted, so the replay sees a consistent stream.  time_us, when present, becomes
time_s relative to the first entry; without it the entry index times 1 us is used (a time_us that is not a
finite number, NaN or inf, is refused).  TRACE.csv is written through TRACE.csv.tmp and renamed once complete,
so a failed write leaves no CSV ending mid-row (and an existing TRACE.csv as it was).
Exit status: 0 ok, 1 bad input (message names the entry) or a failed write, 2 usage.
"""
import io
import math
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (replacing: TRACE.csv written whole or not at all)

TAGS = ("weights", "kv", "activation", "logits", "staging")


class _PlainUnpickler(pickle.Unpickler):
    """Loads only built-in containers and scalars: a snapshot needs nothing else."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            "refusing to load %s.%s: a memory snapshot holds only dicts, lists, strings and numbers"
            % (module, name))


class BadInput(Exception):
    pass


def load_snapshot(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BadInput("%s: cannot read: %s" % (path, e.strerror))
    try:
        snap = _PlainUnpickler(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as e:
        raise BadInput("%s: not a readable pickle: %s" % (path, e))
    if not isinstance(snap, dict):
        raise BadInput("%s: expected a dict with 'device_traces', got %s" % (path, type(snap).__name__))
    if "device_traces" not in snap:
        raise BadInput("%s: no 'device_traces' key (was _record_memory_history() enabled?); keys: %s"
                       % (path, ", ".join(sorted(map(str, snap)))))
    traces = snap["device_traces"]
    if not isinstance(traces, list) or not all(isinstance(t, list) for t in traces):
        raise BadInput("%s: 'device_traces' must be a list of lists of entries" % path)
    return snap


def convert(snap, device, tag, path):
    """Returns (rows, counts): rows are (time_s, kind, id, bytes, tag, aux)."""
    traces = snap["device_traces"]
    if device is None:
        device = next((i for i, t in enumerate(traces) if t), None)
        if device is None:
            raise BadInput("%s: every device trace is empty" % path)
    if device < 0 or device >= len(traces):
        raise BadInput("%s: no device %d (the snapshot has %d device traces)" % (path, device, len(traces)))
    entries = traces[device]
    counts = {"alloc": 0, "free": 0, "oom": 0, "skipped": 0, "free_before_window": 0,
              "free_completed_only": 0}
    live = {}            # addr -> True once freed by free_requested but not completed
    dropped = set()      # addrs allocated before the window whose free_completed may follow
    rows = []
    t0 = None
    last = 0.0
    for i, e in enumerate(entries):
        where = "%s: device_traces[%d][%d]" % (path, device, i)
        if not isinstance(e, dict):
            raise BadInput("%s: expected a dict, got %s" % (where, type(e).__name__))
        action = e.get("action")
        if not isinstance(action, str):
            raise BadInput("%s: field 'action' missing or not a string" % where)
        if "time_us" in e:
            tu = e["time_us"]
            if not isinstance(tu, (int, float)) or isinstance(tu, bool) or not math.isfinite(tu):
                raise BadInput("%s: field 'time_us' is not a finite number (%r)" % (where, tu))
            t0 = tu if t0 is None else t0
            t = max((tu - t0) / 1e6, last)     # keep time order even if clocks jitter
        else:
            t = max(i / 1e6, last)
        last = t
        if action in ("alloc", "free_requested", "free_completed", "oom"):
            for key in ("addr", "size") if action == "alloc" else ("addr",) if action != "oom" else ("size",):
                v = e.get(key)
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    raise BadInput("%s: field '%s' missing or not a non-negative integer (action %s)"
                                   % (where, key, action))
        if action == "alloc":
            if e["size"] == 0:
                counts["skipped"] += 1
                continue
            live[e["addr"]] = False
            dropped.discard(e["addr"])
            rows.append((t, "alloc", e["addr"], e["size"], tag, e["addr"]))
            counts["alloc"] += 1
        elif action in ("free_requested", "free_completed"):
            a = e["addr"]
            if a not in live:
                if action == "free_completed" and a in dropped:
                    dropped.discard(a)           # second half of a dropped free
                    continue
                counts["free_before_window"] += 1
                if action == "free_requested":
                    dropped.add(a)
                continue
            if action == "free_completed" and live[a]:
                del live[a]                      # already freed when requested
                continue
            if action == "free_completed":
                counts["free_completed_only"] += 1
                del live[a]
            else:
                live[a] = True
            rows.append((t, "free", a, 0, tag, a))
            counts["free"] += 1
        elif action == "oom":
            counts["oom"] += 1
        elif action in ("segment_alloc", "segment_free", "segment_map", "segment_unmap", "snapshot"):
            counts["skipped"] += 1
        else:
            raise BadInput("%s: unknown action '%s'" % (where, action))
    # a free_requested address reallocated before its free_completed: the dict entry was
    # overwritten by the alloc, which is what the replay needs.
    return rows, counts


def write_csv(rows, out):
    out.write("# converted by scripts/torch_snapshot_to_trace.py\n")
    out.write("time_s,kind,id,bytes,tag,aux\n")
    for t, kind, ident, nbytes, tag, aux in rows:
        out.write("%r,%s,%d,%d,%s,%d\n" % (t, kind, ident, nbytes, tag, aux))


def main(argv):
    ap = script_io.arg_parser(description=__doc__.split("\n")[0],
                                 epilog="see the module docstring and docs/TRACE_FORMAT.md")
    ap.add_argument("snapshot", help="pickle written by torch.cuda.memory._dump_snapshot")
    ap.add_argument("-o", "--output", help="trace CSV to write (default: stdout)")
    ap.add_argument("--device", type=int, default=None,
                    help="which device's trace (default: the first non-empty one)")
    ap.add_argument("--tag", default="activation", choices=TAGS,
                    help="tag of every allocation (PyTorch does not know; default activation)")
    args = ap.parse_args(argv)
    try:
        snap = load_snapshot(args.snapshot)
        rows, counts = convert(snap, args.device, args.tag, args.snapshot)
    except BadInput as e:
        print("torch_snapshot_to_trace: %s" % e, file=sys.stderr)
        return 1
    if args.output:
        try:
            with script_io.replacing(args.output, inputs=(args.snapshot,)) as f:   # through TRACE.csv.tmp: a failure leaves no half CSV
                write_csv(rows, f)
        except OSError as e:
            print("torch_snapshot_to_trace: %s: cannot write: %s" % (args.output, e.strerror), file=sys.stderr)
            return 1
    else:
        write_csv(rows, sys.stdout)
    print("torch_snapshot_to_trace: %d alloc, %d free (%d only as free_completed), %d oom, "
          "%d frees of blocks allocated before the recorded window dropped, %d entries skipped"
          % (counts["alloc"], counts["free"], counts["free_completed_only"], counts["oom"],
             counts["free_before_window"], counts["skipped"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
