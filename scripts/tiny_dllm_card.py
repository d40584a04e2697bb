#!/usr/bin/python3
"""tiny_dllm_card.py - the model card's figures from a training run of scripts/train_tiny_dllm.py:
draws the loss curve (training loss and the held-out sample's masked NLL against step) into a PNG
and prints the markdown of the "Results" section of docs/MODELS.md from metrics.json and
config.json, so no number in the card is typed by hand.

    /usr/bin/python3 scripts/tiny_dllm_card.py RUN_DIR [--png docs/figures/tiny_dllm_loss.png]
"""
import argparse
import csv
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_loss(path):
    train, held = [], []
    with open(path) as f:
        for row in csv.DictReader(f):
            if row["train_loss"]:
                train.append((int(row["step"]), float(row["train_loss"])))
            if row["heldout_nll_bits"]:
                held.append((int(row["step"]), float(row["heldout_nll_bits"]), float(row["heldout_acc"])))
    return train, held


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--png", default="docs/figures/tiny_dllm_loss.png")
    a = ap.parse_args()
    with open(os.path.join(a.run, "metrics.json")) as f:
        met = json.load(f)
    with open(os.path.join(a.run, "config.json")) as f:
        cfg = json.load(f)
    train, held = read_loss(os.path.join(a.run, "loss.csv"))
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
    fig.savefig(a.png, dpi=120)
    h, u = met["heldout"], met["unigram_baseline"]
    print("| Held-out, 15 %% of bytes masked (%d masked bytes in %d windows of %d) | tiny-dllm | unigram baseline |"
          % (h["masked_bytes"], h["windows"], h["window_len"]))
    print("|---|---|---|")
    print("| masked-byte accuracy | %.1f %% | %.1f %% (always byte %d) |"
          % (100 * h["accuracy"], 100 * u["accuracy"], u["most_frequent_byte"]))
    print("| NLL, bits per byte | %.3f | %.3f (train entropy %.3f) |"
          % (h["nll_bits_per_byte"], u["heldout_cross_entropy_bits"], u["entropy_bits"]))
    print()
    print("Training: %d steps in %.0f s (stopped by %s), torch %s on %s; loss curve %s."
          % (met["steps"], met.get("train_seconds") or 0, met.get("stopped_by"), cfg.get("torch"), cfg.get("gpu"),
             a.png))


if __name__ == "__main__":
    main()
