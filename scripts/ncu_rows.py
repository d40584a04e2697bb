"""ncu_rows.py - a benchmark's launch manifest and the per-kernel rows of an `ncu --csv` log, for the scripts that
pair the two (scripts/l2probe.py, scripts/l2drain.py)."""
import csv
import sys

import script_io

UNITS = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9,
         "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "ns": 1e-9, "us": 1e-6, "ms": 1e-3}


def bare_name(name):
    """a kernel's name without its return type and arguments: "void read_kernel(const uint4 *, ...)" -> read_kernel
    ("" for an empty name)"""
    parts = name.split("(")[0].split()
    return parts[-1] if parts else ""


def read_ncu(path, metrics, die):
    """The kernels of ncu CSV log PATH in launch order, each {"name": its Kernel Name, "line": its first row's line,
    metric: value in bytes or seconds for each of METRICS}; die(message) on a missing header, kernel ID, metric or
    an unknown unit or value"""
    lines = script_io.read_text(path, die).splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        die("%s: no ncu CSV header (a line starting with \"ID\")" % path)
    rows, order = {}, []
    for j, r in enumerate(csv.DictReader(lines[start:]), start + 2):
        try:
            k = int(r["ID"])
        except (KeyError, ValueError, TypeError):
            die("%s:%d: no kernel ID" % (path, j))
        if k not in rows:
            rows[k] = {"name": r.get("Kernel Name", ""), "line": j}
            order.append(k)
        m = r.get("Metric Name")
        if m in metrics:
            unit = r.get("Metric Unit", "byte")
            if unit not in UNITS:
                die("%s:%d: unit %r of %s not known" % (path, j, unit, m))
            try:
                rows[k][m] = float(r["Metric Value"].replace(",", "")) * UNITS[unit]
            except ValueError:
                die("%s:%d: %s value %r does not parse" % (path, j, m, r["Metric Value"]))
    for k in order:
        for m in metrics:
            if m not in rows[k]:
                die("%s:%d: kernel %d has no %s" % (path, rows[k]["line"], k, m))
    return [rows[k] for k in order]


def read_manifest(path, fields, die, what):
    """The launch lines of manifest PATH ("k <n> <field>...": FIELDS, (name, type) pairs after n), each a dict with n,
    the fields and "line"; launches numbered 0, 1, ... in order; die(message) otherwise (WHAT names the program)"""
    out = []
    lines = script_io.read_text(path, die).splitlines()
    for i, l in enumerate(lines, 1):
        if not l.startswith("k "):
            continue
        f = l.split()
        if len(f) != 2 + len(fields):
            die("%s:%d: expected %d fields (k n %s), got %d" % (path, i, 2 + len(fields), " ".join(n for n, _ in fields),
                                                                len(f)))
        try:
            d = {"n": int(f[1]), "line": i}
            d.update((n, t(v)) for (n, t), v in zip(fields, f[2:]))
        except ValueError:
            die("%s:%d: a number field does not parse: %r" % (path, i, l))
        out.append(d)
        if d["n"] != len(out) - 1:
            die("%s:%d: launch %d out of order (expected %d)" % (path, i, d["n"], len(out) - 1))
    if not out:
        die("%s: no launch lines ('k ...'): not %s's output?" % (path, what))
    return out


def cli(argv, doc, n_pos, names, die):
    """(ARGV's N_POS positional arguments, {option: value}) for a script whose usage is DOC: N_POS arguments, then
    options among NAMES, each with a value.  -h / --help prints DOC and exits 0; fewer arguments print it to stderr
    and exit 2; an unknown or incomplete option is die()'d."""
    helped = argv[:1] in (["-h"], ["--help"])
    if len(argv) < n_pos or helped:
        print(doc.strip(), file=sys.stdout if helped else sys.stderr)
        sys.exit(0 if helped else 2)
    opts, rest = {}, argv[n_pos:]
    while rest:
        if rest[0] not in names or len(rest) < 2:
            die("unknown or incomplete option %r (see --help)" % rest[0])
        opts[rest[0]] = rest[1]
        rest = rest[2:]
    return argv[:n_pos], opts
