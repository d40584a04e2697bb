#!/usr/bin/python3
"""heldout_prompts.py - the held-out prompts of experiments/quality_frontier.lua (issue 10).

Builds the tiny dLLM's corpus split with scripts/tiny_corpus.py (same seed: the documents it
holds out of training) into a temporary folder, and takes the first N held-out documents (in the
split's shuffled order) that are printable ASCII and at least PROMPT + GEN bytes long, checking
that none of them occurs in the training text.  Writes

    datasets/prompts/heldout.jsonl          {"text": first PROMPT bytes, "gen": GEN}  (the prompts)
    datasets/prompts/heldout_targets.jsonl  {"text": the next GEN bytes}             (the truth)
    datasets/prompts/heldout2*.jsonl        the first 2 of them (the frontier's CI subset)

    /usr/bin/python3 scripts/heldout_prompts.py [--n 8] [--prompt 96] [--gen 64]
"""
import json
import os
import subprocess
import sys

import script_io  # noqa: E402  (arg_parser: one-line usage errors; the script's folder is on sys.path)
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = script_io.arg_parser()
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=96)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "datasets", "prompts"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(HERE, "tiny_corpus.py"), "--out", tmp], check=True)
        held = open(os.path.join(tmp, "heldout.txt"), "rb").read().split(b"\x1e")
        train = open(os.path.join(tmp, "train.txt"), "rb").read()
    need, picked = a.prompt + a.gen, []
    for d in held:
        if len(d) < need or any(c > 126 or (c < 32 and c != 10) for c in d[:need]):
            continue
        if d[:need] in train:
            continue   # the same text also occurs in a training document
        picked.append(d[:need].decode("ascii"))
        if len(picked) == a.n:
            break
    if len(picked) < a.n:
        sys.exit("heldout_prompts: only %d held-out documents of >= %d printable bytes" % (len(picked), need))
    os.makedirs(a.out, exist_ok=True)
    for name, docs in (("heldout", picked), ("heldout2", picked[:2])):
        with open(os.path.join(a.out, name + ".jsonl"), "w") as p, \
                open(os.path.join(a.out, name + "_targets.jsonl"), "w") as t:
            for d in docs:
                p.write(json.dumps({"text": d[:a.prompt], "gen": a.gen}) + "\n")
                t.write(json.dumps({"text": d[a.prompt:]}) + "\n")
    print("heldout_prompts: %d prompts of %d + %d bytes in %s" % (len(picked), a.prompt, a.gen, a.out))


if __name__ == "__main__":
    main()
