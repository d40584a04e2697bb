#!/usr/bin/python3
"""tiny_corpus.py - builds the English byte corpus of the tiny dLLM (issue 10) from Debian packages
installed by scripts/deps.sh, read from their installed paths:

    fortunes      /usr/share/games/fortunes/*      one document per fortune (between '%' lines)
    wordnet-base  /usr/share/wordnet/data.*        one document per synset: "words: gloss"
    dict-gcide    /usr/share/dictd/gcide.dict.dz   one document per dictionary entry (via gcide.index)

Writes (the folder is git-ignored; never commit it):
    .corpus/train.txt, .corpus/heldout.txt   documents separated by the byte 0x1E (record
                                             separator; train_tiny_dllm.py maps it to the end token)
    .corpus/manifest.json                    package versions, document and byte counts, sha256

The held-out set is ~2 % of the documents of every source, drawn with a fixed seed (split by
document, never inside one).  Control bytes other than newline and tab are dropped; runs of
spaces are collapsed; GCIDE's "[1913 Webster]"-style source tags are removed.  The dictionary
part is capped (--gcide-mb) so the corpus stays well under 40 MB (it travels to the GPU machine).

    /usr/bin/python3 scripts/tiny_corpus.py [--out .corpus] [--seed 1234]
    /usr/bin/python3 scripts/tiny_corpus.py --overlap      # held-out documents also in train.txt

The split is by document, but the packages repeat a little text (the same fortune in two files):
--overlap counts the held-out documents that occur verbatim in train.txt, and those whose first
60 bytes open a training document, without rewriting anything.
"""
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import sys

import script_io  # noqa: E402  (arg_parser: one-line usage errors; the script's folder is on sys.path)

SEP = b"\x1e"
FORTUNES = "/usr/share/games/fortunes"
WORDNET = "/usr/share/wordnet"
GCIDE_DICT = "/usr/share/dictd/gcide.dict.dz"
GCIDE_INDEX = "/usr/share/dictd/gcide.index"
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

CTRL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
SPACES = re.compile(rb"[ \t]+")
TAG = re.compile(rb"^\s*\[(?:[0-9]{4} Webster|PJC|Century Dict\.|WordNet [0-9.]+|[A-Za-z0-9 .,]+)\]\s*$")


def die(msg):
    sys.exit("tiny_corpus: " + msg)


def clean(doc):
    doc = CTRL.sub(b"", doc.replace(b"\r\n", b"\n"))
    lines = [SPACES.sub(b" ", ln).strip() for ln in doc.split(b"\n")]
    out, blank = [], False
    for ln in lines:
        if not ln:
            blank = bool(out)
            continue
        if blank:
            out.append(b"")
            blank = False
        out.append(ln)
    return b"\n".join(out)


def fortunes():
    if not os.path.isdir(FORTUNES):
        die("%s is missing: install the Debian package 'fortunes' (scripts/deps.sh)" % FORTUNES)
    docs = []
    for name in sorted(os.listdir(FORTUNES)):
        p = os.path.join(FORTUNES, name)
        if name.endswith(".dat") or os.path.islink(p) or not os.path.isfile(p):
            continue
        with open(p, "rb") as f:
            for d in re.split(rb"(?m)^%\s*$", f.read()):
                d = clean(d)
                if d:
                    docs.append(d)
    return docs


def wordnet():
    docs = []
    for pos in ("noun", "verb", "adj", "adv"):
        p = os.path.join(WORDNET, "data." + pos)
        if not os.path.isfile(p):
            die("%s is missing: install the Debian package 'wordnet-base' (scripts/deps.sh)" % p)
        with open(p, "rb") as f:
            for lineno, line in enumerate(f, 1):
                if line.startswith(b"  "):
                    continue   # the licence header
                head, bar, gloss = line.partition(b" | ")
                fields = head.split()
                if not bar or len(fields) < 4:
                    die("%s:%d: not a WordNet data line" % (p, lineno))
                n = int(fields[3], 16)
                words = [w.replace(b"_", b" ") for w in fields[4:4 + 2 * n:2]]
                words = [re.sub(rb"\([a-z]+\)$", b"", w) for w in words]
                d = clean(b", ".join(words) + b": " + gloss.strip())
                if d:
                    docs.append(d)
    return docs


def b64num(s):
    v = 0
    for ch in s:
        v = v * 64 + B64.index(ch)
    return v


def gcide(cap_bytes, rng):
    for p in (GCIDE_DICT, GCIDE_INDEX):
        if not os.path.isfile(p):
            die("%s is missing: install the Debian package 'dict-gcide' (scripts/deps.sh)" % p)
    data = gzip.open(GCIDE_DICT).read()
    spans = set()
    with open(GCIDE_INDEX, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                die("%s:%d: expected 3 tab-separated fields" % (GCIDE_INDEX, lineno))
            if parts[0].startswith("00-database") or parts[0].startswith("00database"):
                continue
            spans.add((b64num(parts[1]), b64num(parts[2])))
    docs = []
    for off, n in sorted(spans):
        raw = data[off:off + n]
        d = clean(b"\n".join(ln for ln in raw.split(b"\n") if not TAG.match(ln)))
        if d:
            docs.append(d)
    total = sum(len(d) + 1 for d in docs)
    kept = len(docs)
    if total > cap_bytes:   # a seeded sample of whole entries, in dictionary order
        idx = list(range(len(docs)))
        rng.shuffle(idx)
        keep, size = set(), 0
        for i in idx:
            if size + len(docs[i]) + 1 > cap_bytes:
                continue
            keep.add(i)
            size += len(docs[i]) + 1
        docs = [d for i, d in enumerate(docs) if i in keep]
    return docs, {"entries_available": kept, "bytes_available": total}


def version(pkg):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def write(path, docs):
    blob = SEP.join(docs)
    with open(path + ".tmp", "wb") as f:
        f.write(blob)
    os.replace(path + ".tmp", path)
    return {"bytes": len(blob), "documents": len(docs), "sha256": hashlib.sha256(blob).hexdigest()}


def overlap(folder):
    with open(os.path.join(folder, "train.txt"), "rb") as f:
        train = f.read().split(SEP)
    with open(os.path.join(folder, "heldout.txt"), "rb") as f:
        held = f.read().split(SEP)
    full = set(train)
    heads = set(d[:60] for d in train if len(d) >= 60)
    same = [d for d in held if d in full]
    head = [d for d in held if len(d) >= 60 and d[:60] in heads]
    total = sum(map(len, held))
    print("tiny_corpus: %s: %d held-out documents (%d bytes): %d verbatim in train.txt (%d bytes, %.3f %%); "
          "%d open like a training document (first 60 bytes; %d bytes, %.3f %%)"
          % (folder, len(held), total, len(same), sum(map(len, same)), 100.0 * sum(map(len, same)) / total,
             len(head), sum(map(len, head)), 100.0 * sum(map(len, head)) / total))


def main():
    ap = script_io.arg_parser(description="builds .corpus/ for scripts/train_tiny_dllm.py")
    ap.add_argument("--out", default=".corpus")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--heldout", type=float, default=0.02, help="fraction of documents held out")
    ap.add_argument("--gcide-mb", type=float, default=10.0, help="cap on the dictionary part, MB")
    ap.add_argument("--overlap", action="store_true", help="report held-out text also in train.txt, then stop")
    a = ap.parse_args()
    if a.overlap:
        return overlap(a.out)
    rng = random.Random(a.seed)
    sources = {"fortunes": (fortunes(), {}), "wordnet-base": (wordnet(), {}),
               "dict-gcide": gcide(int(a.gcide_mb * 1e6), random.Random(a.seed + 1))}
    train, held, man = [], [], {"seed": a.seed, "heldout_fraction": a.heldout, "separator": "0x1e",
                                 "sources": {}}
    for name, (docs, extra) in sources.items():
        h = [rng.random() < a.heldout for _ in docs]
        tr = [d for d, x in zip(docs, h) if not x]
        he = [d for d, x in zip(docs, h) if x]
        train += tr
        held += he
        man["sources"][name] = dict(extra, package_version=version(name), documents=len(docs),
                                    train_documents=len(tr), heldout_documents=len(he),
                                    train_bytes=sum(map(len, tr)), heldout_bytes=sum(map(len, he)))
    rng.shuffle(train)
    rng.shuffle(held)
    os.makedirs(a.out, exist_ok=True)
    man["train"] = write(os.path.join(a.out, "train.txt"), train)
    man["heldout"] = write(os.path.join(a.out, "heldout.txt"), held)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    print("tiny_corpus: %s: train %d docs %.1f MB, held-out %d docs %.2f MB" % (
        a.out, man["train"]["documents"], man["train"]["bytes"] / 1e6, man["heldout"]["documents"],
        man["heldout"]["bytes"] / 1e6))


if __name__ == "__main__":
    main()
