#!/usr/bin/python3
"""profile_graft.py - a profile with one more optional block: the shared end of scripts/gemm_splitk.py and
scripts/gemm_reads.py (docs/PROFILE_FORMAT.md).  Not a command: graft() is imported.

graft(die, key, block, src, script, profile, name, out): OUT is PROFILE with its top-level name line set to
NAME, BLOCK (the Lua text of `key = {...},`) added before its last closing brace, and a provenance line on
top naming the base, SRC and the command (`/usr/bin/python3 scripts/SCRIPT SRC --profile PROFILE --name NAME
-o ...`); written through OUT.tmp and renamed, so nothing is left half-written.  A PROFILE that already has
the block, or no `  name = "..."` line, is refused through die(message)."""
import os
import re


def graft(die, key, block, src, script, profile, name, out):
    try:
        base = open(profile).read()
    except OSError as e:
        die("%s: %s" % (profile, e.strerror))
    if re.search(r"(?m)^  %s = \{" % re.escape(key), base):
        die("%s already has a %s block" % (profile, key))
    m = re.search(r'(?m)^  name = "([^"]*)",$', base)
    if not m:
        die("%s: no top-level name = \"...\" line (a dkv profile?)" % profile)
    old = os.path.basename(profile)
    old = old[:-4] if old.endswith(".lua") else old
    base = base[:m.start()] + '  name = "%s",' % name + base[m.end():]
    i = base.rstrip().rfind("}")
    text = ("-- Provenance: %s (its header below) plus the `%s` block from %s (docs/PROFILE_FORMAT.md \"%s\"; "
            "written by `/usr/bin/python3 scripts/%s %s --profile %s --name %s -o ...`); no row added or replaced.\n"
            % (old, key, src, key, script, src, profile, name) + base[:i] + block + base[i:])
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
