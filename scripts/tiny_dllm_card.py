#!/usr/bin/python3
"""tiny_dllm_card.py - the model card's figures from a training run of scripts/train_tiny_dllm.py:
draws the loss curve (training loss and the held-out sample's masked NLL against step) into a PNG
and prints the markdown of the "Results" section of docs/MODELS.md from metrics.json and
config.json, so no number in the card is typed by hand.

    /usr/bin/python3 scripts/tiny_dllm_card.py RUN_DIR [--png docs/figures/tiny_dllm_loss.png]

Exit 1, with one line naming the file (and the field), when RUN_DIR lacks metrics.json, config.json or loss.csv or
one of them is not what train_tiny_dllm.py writes.
"""
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import script_io  # noqa: E402


def die(msg):
    sys.exit("tiny_dllm_card: " + msg)


def read_json(path, need):
    """the JSON object of PATH holding every key of NEED ({key: its keys, or None}), each a number (not a bool)"""
    try:
        d = json.loads(script_io.read_text(path, die))
    except ValueError as e:
        die("%s: not JSON (%s)" % (path, e))
    number = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)
    for k, sub in need.items():
        if not isinstance(d, dict) or k not in d:
            die("%s: no field '%s'" % (path, k))
        if sub is None and not number(d[k]):
            die("%s: field '%s' is not a number (%s)" % (path, k, json.dumps(d[k])[:40]))
        for k2 in sub or ():
            if not isinstance(d[k], dict) or k2 not in d[k]:
                die("%s: no field '%s.%s'" % (path, k, k2))
            if not number(d[k][k2]):
                die("%s: field '%s.%s' is not a number (%s)" % (path, k, k2, json.dumps(d[k][k2])[:40]))
    return d


def read_loss(path):
    train, held = [], []
    try:
        rd = csv.DictReader(script_io.read_text(path, die).splitlines())
        for c in ("step", "train_loss", "heldout_nll_bits", "heldout_acc"):
            if c not in (rd.fieldnames or []):
                die("%s: no column '%s'" % (path, c))
        for row in rd:
            try:
                if row["train_loss"]:
                    train.append((int(row["step"]), float(row["train_loss"])))
                if row["heldout_nll_bits"]:
                    held.append((int(row["step"]), float(row["heldout_nll_bits"]), float(row["heldout_acc"])))
            except (TypeError, ValueError):
                die("%s:%d: a value that is not a number" % (path, rd.line_num))
    except csv.Error as e:
        die("%s: not a CSV file (%s)" % (path, e))
    return train, held


def main():
    ap = script_io.arg_parser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("run")
    ap.add_argument("--png", default="docs/figures/tiny_dllm_loss.png")
    a = ap.parse_args()
    if not os.path.isdir(a.run):
        die("%s: %s" % (a.run, "not a folder (RUN_DIR: train_tiny_dllm.py's --out)" if os.path.exists(a.run)
                        else "no such folder"))
    met = read_json(os.path.join(a.run, "metrics.json"), {
        "steps": None, "heldout": ("masked_bytes", "windows", "window_len", "accuracy", "nll_bits_per_byte"),
        "unigram_baseline": ("accuracy", "most_frequent_byte", "heldout_cross_entropy_bits", "entropy_bits")})
    cfg = read_json(os.path.join(a.run, "config.json"), {})
    if met.get("train_seconds") is not None and not isinstance(met["train_seconds"], (int, float)):
        die("%s: field 'train_seconds' is not a number" % os.path.join(a.run, "metrics.json"))
    train, held = read_loss(os.path.join(a.run, "loss.csv"))
    # the card's text is made before the PNG is written: a bad value refuses the run with nothing written
    h, u = met["heldout"], met["unigram_baseline"]
    card = "\n".join((
        "| Held-out, 15 %% of bytes masked (%d masked bytes in %d windows of %d) | tiny-dllm | unigram baseline |"
        % (h["masked_bytes"], h["windows"], h["window_len"]),
        "|---|---|---|",
        "| masked-byte accuracy | %.1f %% | %.1f %% (always byte %d) |"
        % (100 * h["accuracy"], 100 * u["accuracy"], u["most_frequent_byte"]),
        "| NLL, bits per byte | %.3f | %.3f (train entropy %.3f) |"
        % (h["nll_bits_per_byte"], u["heldout_cross_entropy_bits"], u["entropy_bits"]),
        "",
        "Training: %d steps in %.0f s (stopped by %s), torch %s on %s; loss curve %s."
        % (met["steps"], met.get("train_seconds") or 0, met.get("stopped_by"), cfg.get("torch"), cfg.get("gpu"),
           a.png)))
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    if train:
        ax.plot([s for s, _ in train], [v for _, v in train], lw=0.8, label="training loss (nats, LLaDA 1/t-weighted)")
    if held:
        ax.plot([s for s, _, _ in held], [v for _, v, _ in held], "o-", ms=3,
                label="held-out sample: masked NLL, bits/byte (15 % masked)")
    ax.set_xlabel("step")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("tiny-dllm, %s steps, seed %s" % (met.get("steps"), cfg.get("seed")), fontsize=9)
    os.makedirs(os.path.dirname(a.png) or ".", exist_ok=True)
    fig.tight_layout()
    try:
        fig.savefig(a.png, dpi=120)
    except (OSError, ValueError) as e:
        die("%s: cannot write: %s" % (a.png, e))
    print(card)


if __name__ == "__main__":
    main()
