#!/usr/bin/python3
"""profile_graft.py - a profile with one more optional block: the shared end of scripts/gemm_splitk.py and
scripts/gemm_reads.py (docs/PROFILE_FORMAT.md).  Not a command: graft() and renamed() are imported.

graft(die, key, block, src, script, profile, name, out): OUT is PROFILE with its top-level name line set to
NAME, BLOCK (the Lua text of `key = {...},`) added before its last closing brace, and a provenance line on
top naming the base, SRC and the command (`/usr/bin/python3 scripts/SCRIPT SRC --profile PROFILE --name NAME
-o ...`); written through OUT.tmp and renamed, so nothing is left half-written.  A PROFILE that already has
the block, or no `  name = "..."` line, is refused through die(message).

renamed(die, base, profile, name, head, out): the end graft() shares with scripts/clock_model.py block --into: BASE,
the text of PROFILE, with its top-level name line set to NAME (refused through die() without one), written to OUT
after the provenance line HEAD, through OUT.tmp and renamed (scripts/script_io.py's write_text: a failed write
leaves OUT as it was and no OUT.tmp).  base_name(PROFILE): its file name without .lua, the
base a provenance line names."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402  (write_text: through OUT.tmp, renamed when whole)


def base_name(profile):
    old = os.path.basename(profile)
    return old[:-4] if old.endswith(".lua") else old


def renamed(die, base, profile, name, head, out):
    m = re.search(r'(?m)^  name = "([^"]*)",$', base)
    if not m:
        die("%s: no top-level name = \"...\" line (a dkv profile?)" % profile)
    base = base[:m.start()] + '  name = "%s",' % name + base[m.end():]
    try:
        script_io.write_text(out, head + base)
    except OSError as e:
        die("%s: cannot write: %s" % (out, e.strerror))


def graft(die, key, block, src, script, profile, name, out):
    try:
        base = open(profile).read()
    except OSError as e:
        die("%s: %s" % (profile, e.strerror))
    if re.search(r"(?m)^  %s = \{" % re.escape(key), base):
        die("%s already has a %s block" % (profile, key))
    i = base.rstrip().rfind("}")
    head = ("-- Provenance: %s (its header below) plus the `%s` block from %s (docs/PROFILE_FORMAT.md \"%s\"; "
            "written by `/usr/bin/python3 scripts/%s %s --profile %s --name %s -o ...`); no row added or replaced.\n"
            % (base_name(profile), key, src, key, script, src, profile, name))
    renamed(die, base[:i] + block + base[i:], profile, name, head, out)
