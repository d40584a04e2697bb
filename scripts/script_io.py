"""script_io.py - the edges the analysis scripts share: an output written whole or not at all, and an HDF5 input
opened or refused in one line that names it.  Not a command: the functions below are imported (each script puts
its own folder on sys.path, so it still runs from anywhere).

replacing(path, mode="w", inputs=()): a context manager giving a file to write PATH's new contents to.  They go to
    PATH.tmp in the same folder, renamed over PATH only when the block ends without an error; on an error (a full
    disk, a file-size limit, an exception half-way) PATH is left as it was and PATH.tmp is removed, and the error
    propagates (the caller names the file).  An existing PATH keeps its permissions; a symbolic link is written
    through.  Refused before anything is written, as an OSError whose strerror says why (the callers print "PATH:
    cannot write: <why>"): PATH the same file as one of INPUTS (the command would replace what it reads), and a
    PATH.tmp that already exists (another run's, or a user's file: it is never overwritten nor removed).
write_text(path, text, inputs=()): replacing(path, inputs=inputs) with TEXT written.
arg_parser(**kw): argparse.ArgumentParser(allow_abbrev=False, **kw) whose usage errors (an unknown option, a missing
    or bad value) are one stderr line, "PROG: MESSAGE (try --help)", exit 2, as the scripts' own errors are, instead of
    argparse's usage line plus message; its subparsers are the same kind.
open_h5(path, die, need=("runs",)): h5py.File(PATH, "r") whose root holds every group of NEED; otherwise
    die(message), message one line naming PATH: "no such file", "a folder, not a file", "not an HDF5 file (file
    signature not found)", "no group 'runs' (not a dkv results file)".  DIE is the script's own: it prints its name
    and the message and exits with the script's status for a bad input; it does not return.
group(parent, name, where, die): PARENT[NAME] when it is a group, else die("WHERE: no group 'NAME'").
table(parent, name, where, die, fields=()): the compound dataset PARENT[NAME] read whole, holding every field of
    FIELDS, else die("WHERE: no table 'NAME'" | "WHERE: 'NAME' is not a table (a compound dataset)" |
    "WHERE: table 'NAME' has no field 'F'").
read_text(path, die, packed=False): the text of file PATH (UTF-8), else die(message), one line naming PATH: "no such
    file", "a folder, not a file", "not a text file (not UTF-8 at byte N)", or the system's reason ("Permission
    denied").  PACKED: a PATH ending in .gz or .xz is read through gzip or lzma ("not a gzip file (...)", "not an xz
    file (...)").
out_dir(path, die): check before any work that the folder an output PATH goes to exists and is a folder, else
    die("PATH: cannot write: no folder DIR"), so that a long run does not end in a traceback at its last step.
new_files(prog, paths): exits 2 with "PROG: PATH exists: not overwritten (...)" for the first of PATHS that exists,
    or "PROG: PATH: cannot write: no folder DIR": for writers of stand-in data, which must never replace a file
    (it may be a measurement).
figure_path(path): the file matplotlib's savefig writes for PATH: PATH itself, or PATH.png when PATH has no
    extension (savefig appends its default format's): what a script must name when it says what it wrote.
unknown_options(prog, args, known=(), takes=()): exits 2 with "PROG: unknown option 'X' (try --help)" on stderr for
    the first argument of ARGS that starts with '-' (not '-' alone, nor a number) and is neither in KNOWN (flags) nor
    TAKES (options that take a value, whose value is skipped).  For the scripts that read their own argv, so that a
    misspelled option is not taken for a file name.
"""
import argparse
import contextlib
import errno
import os
import re
import stat
import sys


@contextlib.contextmanager
def replacing(path, mode="w", inputs=()):
    real = os.path.realpath(path)
    for i in inputs:
        if i and os.path.exists(i) and os.path.exists(real) and os.path.samefile(i, real):
            raise OSError(errno.EINVAL, "it is also this command's input %s: give another output" % i)
    tmp = real + ".tmp"
    try:
        f = open(tmp, mode.replace("w", "x"))   # exclusive: an existing PATH.tmp is someone's, not ours to clobber
    except FileExistsError:
        raise OSError(errno.EEXIST, "%s exists (left by an earlier run?): it is not overwritten; move it away" % tmp)
    try:
        with f:
            yield f
        if os.path.exists(real):
            os.chmod(tmp, stat.S_IMODE(os.stat(real).st_mode))
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path, text, inputs=()):
    with replacing(path, inputs=inputs) as f:
        f.write(text)


def _why(e):
    """the reason of an h5py open error, without its prefix: 'file signature not found', 'Permission denied'"""
    if isinstance(e, OSError) and e.errno:
        return os.strerror(e.errno)
    m = re.search(r"\(([^()]*)\)\s*$", str(e))
    return m.group(1) if m else str(e)


def open_h5(path, die, need=("runs",)):
    import h5py
    if not os.path.exists(path):
        die("%s: no such file" % path)
    if os.path.isdir(path):
        die("%s: a folder, not a file" % path)
    try:
        f = h5py.File(path, "r")
    except (OSError, ValueError) as e:
        die("%s: not an HDF5 file (%s)" % (path, _why(e)))
    for g in need:
        if g not in f or not isinstance(f[g], h5py.Group):
            f.close()
            die("%s: no group '%s'%s" % (path, g, " (not a dkv results file)" if g == "runs" else ""))
    return f


def group(parent, name, where, die):
    import h5py
    if not isinstance(parent, h5py.Group) or name not in parent or not isinstance(parent[name], h5py.Group):
        die("%s: no group '%s'" % (where, name))
    return parent[name]


def table(parent, name, where, die, fields=()):
    import h5py
    if not isinstance(parent, h5py.Group) or name not in parent:
        die("%s: no table '%s'" % (where, name))
    d = parent[name]
    if not isinstance(d, h5py.Dataset) or d.dtype.names is None:
        die("%s: '%s' is not a table (a compound dataset)" % (where, name))
    for c in fields:
        if c not in d.dtype.names:
            die("%s: table '%s' has no field '%s'" % (where, name, c))
    return d[()]


def read_text(path, die, packed=False):
    if not os.path.exists(path):
        die("%s: no such file" % path)
    if os.path.isdir(path):
        die("%s: a folder, not a file" % path)
    kind = ""
    try:
        if packed and path.endswith(".gz"):
            import gzip
            kind, f = "a gzip", gzip.open(path, "rt", encoding="utf-8")
        elif packed and path.endswith(".xz"):
            import lzma
            kind, f = "an xz", lzma.open(path, "rt", encoding="utf-8")
        else:
            f = open(path, encoding="utf-8")
        with f:
            return f.read()
    except UnicodeDecodeError as e:
        die("%s: not a text file (not UTF-8 at byte %d)" % (path, e.start))
    except (EOFError, ImportError) as e:
        die("%s: not %s file (%s)" % (path, kind or "a text", e or "truncated"))
    except OSError as e:
        if kind and not e.errno:   # gzip.BadGzipFile, lzma.LZMAError (an Exception, below) carry no errno
            die("%s: not %s file (%s)" % (path, kind, e))
        die("%s: %s" % (path, e.strerror or e))
    except Exception as e:   # lzma.LZMAError
        if kind:
            die("%s: not %s file (%s)" % (path, kind, e))
        raise


def out_dir(path, die):
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        die("%s: cannot write: no folder %s" % (path, os.path.dirname(path) or d))


def _number(a):
    try:
        float(a)
        return True
    except ValueError:
        return False


def unknown_options(prog, args, known=(), takes=()):
    i = 0
    while i < len(args):
        a = args[i]
        if a in takes:
            i += 2
            continue
        if a.startswith("-") and a != "-" and a not in known and not _number(a):
            sys.stderr.write("%s: unknown option '%s' (try --help)\n" % (prog, a))
            sys.exit(2)
        i += 1


def new_files(prog, paths):
    def stop(msg):
        sys.stderr.write("%s: %s\n" % (prog, msg))
        sys.exit(2)
    for p in paths:
        if os.path.lexists(p):
            stop("%s exists: not overwritten (a stand-in writes new files only; move it away)" % p)
        out_dir(p, stop)


def figure_path(path):
    return path if os.path.splitext(path)[1] else path + ".png"


class _OneLine(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write("%s: %s (try --help)\n" % (self.prog, message))
        sys.exit(2)


def arg_parser(**kw):
    kw.setdefault("allow_abbrev", False)
    return _OneLine(**kw)
