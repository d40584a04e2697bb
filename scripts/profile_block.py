#!/usr/bin/python3
"""profile_block.py - a profile with top-level blocks copied verbatim from another profile (docs/PROFILE_FORMAT.md):
blocks measured or fitted on one GPU carried to another GPU's profile, e.g. the H200's `clock` block onto the H100's
(device call 139's criterion, docs/COST_MODEL.md "A second GPU's clock").

    /usr/bin/python3 scripts/profile_block.py SRC.lua KEY [KEY...] --profile BASE.lua --name NAME -o OUT.lua

OUT is BASE with its top-level name set to NAME and SRC's `KEY = {...},` blocks (each from its line `  KEY = {` to the
first line `  },`, or `  KEY = {...},` on one line), in the order given, added before BASE's closing brace, under one
provenance line naming both and this command (scripts/profile_graft.py's renamed(); written through OUT.tmp and
renamed).  No row added or replaced.  Exits 1 naming the file: SRC or BASE unreadable, SRC without a KEY block, BASE
that has one already, BASE without a top-level name line; 2 on a usage error (argparse: a KEY that is not a Lua name,
or one given twice)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_graft  # noqa: E402
import script_io  # noqa: E402  (arg_parser: one-line usage errors)


def die(msg):
    sys.exit("profile_block: " + msg)


def block_of(src, key):
    try:
        text = open(src).read()
    except OSError as e:
        die("%s: %s" % (src, e.strerror))
    one = re.search(r"(?m)^  %s = \{.*\},\n" % re.escape(key), text)
    if one and one.group(0).count("{") == one.group(0).count("}"):
        return one.group(0)
    m = re.search(r"(?ms)^  %s = \{\n.*?^  \},\n" % re.escape(key), text)
    if not m:
        die("%s: no top-level %s block (a line '  %s = {' closed by '  },')" % (src, key, key))
    return m.group(0)


def main():
    p = script_io.arg_parser(description="copy a top-level block of one dkv profile onto another")
    p.add_argument("src", metavar="SRC.lua")
    p.add_argument("keys", metavar="KEY", nargs="+")
    p.add_argument("--profile", required=True, metavar="BASE.lua")
    p.add_argument("--name", required=True)
    p.add_argument("-o", dest="out", required=True, metavar="OUT.lua")
    a = p.parse_args()
    for k in a.keys:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            p.error("KEY '%s' is not a Lua name" % k)
    if len(set(a.keys)) != len(a.keys):
        p.error("a KEY given twice: %s" % " ".join(a.keys))
    try:
        base = open(a.profile).read()
    except OSError as e:
        die("%s: %s" % (a.profile, e.strerror))
    blocks = ""
    for k in a.keys:
        if re.search(r"(?m)^  %s = \{" % re.escape(k), base):
            die("%s already has a %s block" % (a.profile, k))
        blocks += "  -- `%s` copied verbatim from %s (scripts/profile_block.py)\n" % (k, a.src) + block_of(a.src, k)
    names = ", ".join("`%s`" % k for k in a.keys)
    head = ("-- Provenance: %s (its header below) plus the %s block%s from %s (docs/PROFILE_FORMAT.md; written by "
            "`/usr/bin/python3 scripts/profile_block.py %s %s --profile %s --name %s -o ...`); no row added or replaced.\n"
            % (profile_graft.base_name(a.profile), names, "s" if len(a.keys) > 1 else "", a.src, a.src,
               " ".join(a.keys), a.profile, a.name))
    i = base.rstrip().rfind("}")
    profile_graft.renamed(die, base[:i] + blocks + base[i:], a.profile, a.name, head, a.out)
    print("profile_block: %s = %s + the %s block%s of %s" % (a.out, a.profile, names, "s" if len(a.keys) > 1 else "",
                                                             a.src))


if __name__ == "__main__":
    main()
