#!/usr/bin/python3
"""tiny_dllm_numpy.py - a numpy port of train_tiny_dllm.py's forward (the model core/ref runs), the
safetensors reading/writing it needs, and two commands:

  standin OUT_DIR [--seed S]   writes a small random stand-in of the tiny dLLM: model.safetensors
                               (bf16, LLaDA names) and check.safetensors (float32 logits of this
                               numpy forward at 8 positions of 3 snippets), the files
                               tests/unit/test_ref_tiny.c checks core/ref against.  The committed
                               fixture tests/data/tiny-dllm-standin/ is made by
                               /usr/bin/python3 scripts/tiny_dllm_numpy.py standin tests/data/tiny-dllm-standin
  generate MODEL_DIR TEXT [GEN [STEPS]]
                               decodes GEN bytes (default 64) after the prompt TEXT with LLaDA's
                               low-confidence remasking: blocks of 32 left to right, each in STEPS
                               steps (default 32) that unmask the most confident masked positions
                               (argmax over the whole vocabulary); no cache.  A slow float32
                               reference of what the backends decode, for reading.
  verify MODEL_DIR             recomputes the logits of MODEL_DIR/check.safetensors (written by
                               train_tiny_dllm.py with torch) with this numpy forward and prints
                               the largest difference: a convention mismatch between the torch
                               model and this port (and so core/ref) shows here.

Architecture (core/ref/ref.h): x = wte[tok]; per layer h = RMSNorm(x)*attn_norm; q,k,v = h W^T;
rotate-half RoPE on q, k; bidirectional attention, GQA (query head h reads KV head h // (H/Hkv)),
scale 1/sqrt(D); x += attn Wo^T; h = RMSNorm(x)*ff_norm; x += (SiLU(h Wgate^T) * (h Wup^T)) Wdown^T;
logits = (RMSNorm(x)*ln_f) Whead^T.  Computed in float64 from the stored (bf16) weights.
"""
import json
import struct
import sys

import numpy as np

MASK_ID, END_ID, VOCAB = 256, 257, 264


# ------------------------------------------------------------------ safetensors


def bf16_round(a):
    """float32 -> the float32 value of its bf16 rounding (round to nearest even)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, float array, "BF16"|"F32")."""
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    blobs, off = [], 0
    for name, a, dt in tensors:
        a = np.ascontiguousarray(a, dtype=np.float32)
        b = (bf16_round(a).view(np.uint32) >> 16).astype("<u2").tobytes() if dt == "BF16" else a.astype("<f4").tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        raw = data[base + b:base + end]
        if e["dtype"] == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif e["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        else:
            raise SystemExit("%s: tensor %s: dtype %s not handled here" % (path, name, e["dtype"]))
        out[name] = a.reshape(e["shape"]).astype(np.float32)
    return out, meta


# ------------------------------------------------------------------ forward


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, theta):
    """x (T, H, D), rotate-half at positions 0..T-1."""
    T, _, D = x.shape
    half = D // 2
    inv = theta ** (-2.0 * np.arange(half) / D)
    a = np.arange(T)[:, None] * inv[None, :]
    c, s = np.cos(a)[:, None, :], np.sin(a)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def forward(W, tok, head_dim, theta, eps):
    """Logits (T, V) in float64; W maps LLaDA names to arrays."""
    p = "model.transformer."
    x = W[p + "wte.weight"].astype(np.float64)[np.asarray(tok)]
    T = x.shape[0]
    i = 0
    while p + "blocks.%d.q_proj.weight" % i in W:
        b = {k[len(p + "blocks.%d." % i):]: v.astype(np.float64) for k, v in W.items()
             if k.startswith(p + "blocks.%d." % i)}
        H, Hkv = b["q_proj.weight"].shape[0] // head_dim, b["k_proj.weight"].shape[0] // head_dim
        h = rmsnorm(x, b["attn_norm.weight"], eps)
        q = rope((h @ b["q_proj.weight"].T).reshape(T, H, head_dim), theta)
        k = rope((h @ b["k_proj.weight"].T).reshape(T, Hkv, head_dim), theta)
        v = (h @ b["v_proj.weight"].T).reshape(T, Hkv, head_dim)
        y = np.empty((T, H, head_dim))
        g = H // Hkv
        for hh in range(H):
            s = q[:, hh, :] @ k[:, hh // g, :].T / np.sqrt(head_dim)
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            y[:, hh, :] = (s / s.sum(axis=-1, keepdims=True)) @ v[:, hh // g, :]
        x = x + y.reshape(T, H * head_dim) @ b["attn_out.weight"].T
        h = rmsnorm(x, b["ff_norm.weight"], eps)
        gate = h @ b["ff_proj.weight"].T
        x = x + ((gate / (1 + np.exp(-gate))) * (h @ b["up_proj.weight"].T)) @ b["ff_out.weight"].T
        i += 1
    out = rmsnorm(x, W[p + "ln_f.weight"].astype(np.float64), eps)
    return out @ W[p + "ff_out.weight"].astype(np.float64).T


# ------------------------------------------------------------------ commands


def standin(out_dir, seed=7):
    """2 layers, hidden 128, 2 heads x 64, 1 KV head, ffn 192, vocab 264."""
    import os
    rng = np.random.default_rng(seed)
    L, C, H, Hkv, D, Fd = 2, 128, 2, 1, 64, 192
    W = {"model.transformer.wte.weight": rng.normal(0, 1, (VOCAB, C))}
    for i in range(L):
        p = "model.transformer.blocks.%d." % i
        W[p + "attn_norm.weight"] = 1 + rng.normal(0, 0.1, C)
        W[p + "q_proj.weight"] = rng.normal(0, C ** -0.5, (H * D, C))
        W[p + "k_proj.weight"] = rng.normal(0, C ** -0.5, (Hkv * D, C))
        W[p + "v_proj.weight"] = rng.normal(0, C ** -0.5, (Hkv * D, C))
        W[p + "attn_out.weight"] = rng.normal(0, (H * D) ** -0.5, (C, H * D))
        W[p + "ff_norm.weight"] = 1 + rng.normal(0, 0.1, C)
        W[p + "ff_proj.weight"] = rng.normal(0, C ** -0.5, (Fd, C))
        W[p + "up_proj.weight"] = rng.normal(0, C ** -0.5, (Fd, C))
        W[p + "ff_out.weight"] = rng.normal(0, Fd ** -0.5, (C, Fd))
    W["model.transformer.ln_f.weight"] = 1 + rng.normal(0, 0.1, C)
    W["model.transformer.ff_out.weight"] = rng.normal(0, C ** -0.5, (VOCAB, C))
    W = {k: bf16_round(v.astype(np.float32)) for k, v in W.items()}
    os.makedirs(out_dir, exist_ok=True)
    meta = {"format": "pt", "dkv_model": "tiny-dllm-standin", "head_dim": D, "rope_theta": 10000.0,
            "rms_eps": 1e-5, "mask_id": MASK_ID, "end_id": END_ID, "seed": seed}
    write_safetensors(os.path.join(out_dir, "model.safetensors"), [(k, v, "BF16") for k, v in W.items()], meta)
    text = [b"The quick brown fox jumps over the lazy dog; a stand-in snippet for the check.",
            b"abandon: to give up completely; \"abandon hope\"",
            b"Whatever you are, be a good one. -- Abraham Lincoln"]
    ct = []
    for i, t in enumerate(text):
        tok = np.array(list(t[:48].ljust(48, b" ")), dtype=np.int64)
        pos = np.array(sorted(rng.choice(48, 8, replace=False)))
        tok[pos[:6]] = MASK_ID
        logits = forward(W, tok, D, 10000.0, 1e-5)[pos]
        ct += [("snippet.%d.tokens" % i, tok.astype(np.float32), "F32"),
               ("snippet.%d.positions" % i, pos.astype(np.float32), "F32"),
               ("snippet.%d.logits" % i, logits.astype(np.float32), "F32")]
    write_safetensors(os.path.join(out_dir, "check.safetensors"), ct, {"snippets": len(text), "vocab": VOCAB})
    print("tiny_dllm_numpy: wrote %s/model.safetensors and check.safetensors" % out_dir)


def verify(model_dir):
    W, meta = read_safetensors(model_dir + "/model.safetensors")
    C, _ = read_safetensors(model_dir + "/check.safetensors")
    D, theta, eps = int(meta["head_dim"]), float(meta["rope_theta"]), float(meta["rms_eps"])
    worst = 0.0
    i = 0
    while "snippet.%d.tokens" % i in C:
        tok = C["snippet.%d.tokens" % i].astype(np.int64)
        pos = C["snippet.%d.positions" % i].astype(np.int64)
        want = C["snippet.%d.logits" % i].astype(np.float64)
        got = forward(W, tok, D, theta, eps)[pos]
        err = np.abs(got - want).max() / max(1.0, np.abs(want).max())
        agree = (got.argmax(-1) == want.argmax(-1)).mean()
        print("snippet %d: max |numpy - file| / max(1, max|logit|) = %.3g, argmax agreement %.2f" % (i, err, agree))
        worst = max(worst, err)
        i += 1
    print("worst %.3g (tolerance 2e-3)" % worst)
    return 0 if worst < 2e-3 and i > 0 else 1


def generate(model_dir, text, gen=64, steps=32, block=32):
    W, meta = read_safetensors(model_dir + "/model.safetensors")
    D, theta, eps = int(meta["head_dim"]), float(meta["rope_theta"]), float(meta["rms_eps"])
    prompt = list(text.encode("utf-8"))
    gen = (gen + block - 1) // block * block
    tok = np.array(prompt + [MASK_ID] * gen, dtype=np.int64)
    per = [block // steps + (1 if i < block % steps else 0) for i in range(steps)]
    for b0 in range(len(prompt), len(tok), block):
        for k in per:
            masked = [p for p in range(b0, b0 + block) if tok[p] == MASK_ID]
            if not masked or k == 0:
                continue
            logits = forward(W, tok, D, theta, eps)[masked]
            z = np.exp(logits - logits.max(axis=-1, keepdims=True))
            prob = z / z.sum(axis=-1, keepdims=True)
            arg, conf = prob.argmax(-1), prob.max(-1)
            for j in sorted(range(len(masked)), key=lambda j: (-conf[j], masked[j]))[:k]:
                tok[masked[j]] = arg[j]
    out = bytearray()
    for t in tok[len(prompt):]:
        if t == END_ID:
            break
        out += bytes([t]) if t < 256 else b"_"
    print(repr(text), "->", repr(out.decode("utf-8", "replace")))


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
    elif len(sys.argv) >= 3 and sys.argv[1] == "standin":
        standin(sys.argv[2], int(sys.argv[4]) if len(sys.argv) >= 5 and sys.argv[3] == "--seed" else 7)
    elif len(sys.argv) >= 4 and sys.argv[1] == "generate":
        generate(sys.argv[2], sys.argv[3], *[int(x) for x in sys.argv[4:6]])
    elif len(sys.argv) == 3 and sys.argv[1] == "verify":
        sys.exit(verify(sys.argv[2]))
    else:
        sys.exit(__doc__)
