#!/usr/bin/env python3
"""train_tiny_dllm.py - trains dkv's tiny byte-level dLLM (issue 10) with LLaDA's masked-diffusion
objective, on the GPU machine (PyTorch; no network needed; no numpy, no safetensors package).

Commands (the lead runs them):
    here:       /usr/bin/python3 scripts/tiny_corpus.py            # writes .corpus/ (git-ignored)
    on device:  python3 scripts/train_tiny_dllm.py --smoke --out $OUT/smoke && \
                PYTHONUNBUFFERED=1 timeout 480 python3 scripts/train_tiny_dllm.py \
                    --corpus .corpus --out $OUT --minutes 6.5
                (carry: [".corpus"])

The architecture is exactly the one core/ref implements (core/ref/ref.h), LLaDA block:
    x = wte[tok]
    per layer: h = RMSNorm(x) * attn_norm
               q, k, v = h Wq^T, h Wk^T, h Wv^T             (no bias)
               q, k = RoPE(q), RoPE(k)                       rotate-half, theta 10000
               x += Attention(q, k, v) Wo^T                  bidirectional, GQA h -> h // (H/Hkv)
               h = RMSNorm(x) * ffn_norm
               x += (SiLU(h Wgate^T) * (h Wup^T)) Wdown^T
    out = RMSNorm(x) * ln_f;  logits = out Whead^T           (untied)
Byte vocabulary: ids 0..255 = bytes, 256 = mask, 257 = end/pad, 258..263 reserved (never
targets; the vocabulary is padded to 264, a multiple of 8).  head_dim 64.

Outputs in --out: model.safetensors (bf16, LLaDA tensor names, core/io/safetensors_map.c),
config.json, loss.csv, metrics.json, check.json + check.safetensors (float32 logits of the
exported bf16 weights on three held-out snippets, for tests/unit/test_ref_tiny.c).

The training loop stops at --minutes of wall time from the start of the script (or at --steps)
and then ALWAYS evaluates and exports what it has, also after an error in the loop or SIGTERM.
"""
import array
import json
import math
import os
import random
import signal
import struct
import sys

import script_io  # noqa: E402  (arg_parser: one-line usage errors; the script's folder is on sys.path)
import time
import traceback


def parse_args():
    ap = script_io.arg_parser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=".corpus", help="folder with train.txt, heldout.txt (tiny_corpus.py)")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--minutes", type=float, default=6.5, help="wall-clock budget of the training loop")
    ap.add_argument("--steps", type=int, default=0, help="total steps (0: estimated from --minutes)")
    ap.add_argument("--smoke", action="store_true", help="a few tiny steps, seconds; same outputs")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=768)
    ap.add_argument("--seq", type=int, default=512, help="training canvas = the preset's max_len")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--eval-every", type=int, default=250)
    return ap.parse_args()


if __name__ == "__main__":
    ARGS = parse_args()   # --help and a bad option are answered before torch is imported (the device machine has it)
try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    if __name__ != "__main__":
        raise
    sys.exit("train_tiny_dllm: needs PyTorch (%s): run it on the device machine (see the commands above)" % e)

MASK_ID = 256
END_ID = 257
VOCAB = 264
DOC_SEP = 0x1E          # the record separator between documents in .corpus/*.txt
HEAD_DIM = 64

T0 = time.time()
STOP = {"flag": False, "why": ""}


def log(*a):
    print("[%7.1fs]" % (time.time() - T0), *a, flush=True)


def on_term(signum, frame):
    STOP["flag"] = True
    STOP["why"] = "signal %d" % signum


# ------------------------------------------------------------------ model


class RMSNorm(torch.nn.Module):
    def __init__(self, c, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(c))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * self.weight.float()).to(x.dtype)


def rope_tables(T, D, theta, device):
    # f_i = theta^(-2i/D), a = pos * f_i  (core/ref/ref_ops.c dkv_ref_rope); computed in float64
    inv = theta ** (-torch.arange(0, D // 2, dtype=torch.float64, device=device) * 2.0 / D)
    a = torch.arange(T, dtype=torch.float64, device=device)[:, None] * inv[None, :]
    return torch.cos(a).float(), torch.sin(a).float()   # (T, D/2)


def apply_rope(x, cos, sin):
    # x (B, H, T, D): y[i] = x[i] cos - x[i+D/2] sin ; y[i+D/2] = x[i+D/2] cos + x[i] sin
    half = x.shape[-1] // 2
    x1 = x[..., :half].float()
    x2 = x[..., half:].float()
    y1 = x1 * cos - x2 * sin
    y2 = x2 * cos + x1 * sin
    return torch.cat([y1, y2], dim=-1).to(x.dtype)


class Block(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, H, Hkv, D, Fd = cfg["hidden"], cfg["n_heads"], cfg["n_kv_heads"], HEAD_DIM, cfg["ffn"]
        self.H, self.Hkv, self.D = H, Hkv, D
        self.attn_norm = RMSNorm(C, cfg["rms_eps"])
        self.q_proj = torch.nn.Linear(C, H * D, bias=False)
        self.k_proj = torch.nn.Linear(C, Hkv * D, bias=False)
        self.v_proj = torch.nn.Linear(C, Hkv * D, bias=False)
        self.attn_out = torch.nn.Linear(H * D, C, bias=False)
        self.ff_norm = RMSNorm(C, cfg["rms_eps"])
        self.ff_proj = torch.nn.Linear(C, Fd, bias=False)    # gate (SiLU applied)
        self.up_proj = torch.nn.Linear(C, Fd, bias=False)
        self.ff_out = torch.nn.Linear(Fd, C, bias=False)     # down

    def forward(self, x, cos, sin, exact):
        B, T, C = x.shape
        h = self.attn_norm(x)
        q = self.q_proj(h).view(B, T, self.H, self.D).transpose(1, 2)     # (B, H, T, D)
        k = self.k_proj(h).view(B, T, self.Hkv, self.D).transpose(1, 2)   # (B, Hkv, T, D)
        v = self.v_proj(h).view(B, T, self.Hkv, self.D).transpose(1, 2)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        group = self.H // self.Hkv
        k = k.repeat_interleave(group, dim=1)   # query head h reads KV head h // group
        v = v.repeat_interleave(group, dim=1)
        if exact:   # plain float32 math, the check path
            s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.D))
            y = torch.matmul(torch.softmax(s, dim=-1), v)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False)
        y = y.transpose(1, 2).reshape(B, T, self.H * self.D)
        x = x + self.attn_out(y)
        h = self.ff_norm(x)
        x = x + self.ff_out(F.silu(self.ff_proj(h)) * self.up_proj(h))
        return x


class TinyDLLM(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = torch.nn.Embedding(VOCAB, cfg["hidden"])
        self.blocks = torch.nn.ModuleList([Block(cfg) for _ in range(cfg["n_layers"])])
        self.ln_f = RMSNorm(cfg["hidden"], cfg["rms_eps"])
        self.head = torch.nn.Linear(cfg["hidden"], VOCAB, bias=False)
        self._rope = None

    def init_weights(self):
        std = 0.02
        for name, p in self.named_parameters():
            if name.endswith("norm.weight") or name.startswith("ln_f"):
                torch.nn.init.ones_(p)
            elif name.endswith("attn_out.weight") or name.endswith("ff_out.weight"):
                torch.nn.init.normal_(p, 0.0, std / math.sqrt(2 * self.cfg["n_layers"]))
            else:
                torch.nn.init.normal_(p, 0.0, std)

    def rope(self, T, device):
        if self._rope is None or self._rope[0].shape[0] < T or self._rope[0].device != device:
            self._rope = rope_tables(max(T, self.cfg["max_len"]), HEAD_DIM, self.cfg["rope_theta"], device)
        return self._rope[0][:T], self._rope[1][:T]

    def forward(self, tok, exact=False):
        cos, sin = self.rope(tok.shape[1], tok.device)
        x = self.wte(tok)
        for b in self.blocks:
            x = b(x, cos, sin, exact)
        return self.head(self.ln_f(x))


def export_names(model):
    """(file name, tensor) in the LLaDA naming core/io/safetensors_map.c maps."""
    out = [("model.transformer.wte.weight", model.wte.weight)]
    for i, b in enumerate(model.blocks):
        p = "model.transformer.blocks.%d." % i
        out += [(p + "attn_norm.weight", b.attn_norm.weight), (p + "q_proj.weight", b.q_proj.weight),
                (p + "k_proj.weight", b.k_proj.weight), (p + "v_proj.weight", b.v_proj.weight),
                (p + "attn_out.weight", b.attn_out.weight), (p + "ff_norm.weight", b.ff_norm.weight),
                (p + "ff_proj.weight", b.ff_proj.weight), (p + "up_proj.weight", b.up_proj.weight),
                (p + "ff_out.weight", b.ff_out.weight)]
    out += [("model.transformer.ln_f.weight", model.ln_f.weight),
            ("model.transformer.ff_out.weight", model.head.weight)]
    return out


# ------------------------------------------------------------------ safetensors (by hand)


def tensor_bytes(t, dtype):
    t = t.detach().to("cpu").contiguous()
    if dtype == "BF16":
        a = array.array("h", t.to(torch.bfloat16).view(torch.int16).flatten().tolist())
    else:
        a = array.array("f", t.to(torch.float32).flatten().tolist())
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, tensor, dtype "BF16"|"F32").  Layout: u64 LE header length, JSON
    header padded with spaces to a multiple of 8, then the data in order (core/io/safetensors.c)."""
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    blobs, off = [], 0
    for name, t, dt in tensors:
        b = tensor_bytes(t, dt)
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


# ------------------------------------------------------------------ data


def load_stream(path):
    """The file's bytes as int64 token ids, the document separator mapped to END_ID."""
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        raise SystemExit("train_tiny_dllm: %s is empty" % path)
    t = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(torch.int64)
    t[t == DOC_SEP] = END_ID
    return t


def synthetic_stream(n, seed):
    """--smoke without a corpus: a deterministic pseudo-English byte stream."""
    rng = random.Random(seed)
    words = ("the of and to in is was that for it with as his on be at by this had not are but from "
             "or have an they which one you were her all she there would their we him been has when "
             "who will more no if out so said what up its about into than them can only other new").split()
    docs = []
    while sum(len(d) for d in docs) < n:
        s = " ".join(rng.choice(words) for _ in range(rng.randint(5, 40)))
        docs.append(s[0].upper() + s[1:] + ".\n")
    data = bytes([DOC_SEP]).join(d.encode() for d in docs)
    t = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(torch.int64)
    t[t == DOC_SEP] = END_ID
    return t


def windows(stream, T):
    """Non-overlapping windows of T tokens (B, T); the tail padded with END_ID."""
    n = (stream.numel() + T - 1) // T
    pad = n * T - stream.numel()
    s = torch.cat([stream, torch.full((pad,), END_ID, dtype=stream.dtype)]) if pad else stream
    return s.view(n, T)


def eval_mask(win, ratio, seed):
    """Fixed-seed mask of `ratio` of the byte positions (END/pad positions are never masked)."""
    g = torch.Generator().manual_seed(seed)
    r = torch.rand(win.shape, generator=g)
    return (r < ratio) & (win < 256)


# ------------------------------------------------------------------ training


def lr_at(step, total, warmup, lr_max, lr_min):
    if step < warmup:
        return lr_max * (step + 1) / warmup
    p = min(1.0, (step - warmup) / max(1, total - warmup))
    return lr_min + 0.5 * (lr_max - lr_min) * (1 + math.cos(math.pi * p))


def diffusion_loss(model, x0, eps, gen):
    """LLaDA's objective: t ~ U(0,1) per sequence, p = (1-eps) t + eps, mask each position with
    prob p, CE on masked positions weighted by 1/p, summed and divided by B * L."""
    B, T = x0.shape
    t = torch.rand(B, device=x0.device, generator=gen)
    p = ((1 - eps) * t + eps)[:, None].expand(B, T)
    masked = torch.rand(B, T, device=x0.device, generator=gen) < p
    xt = torch.where(masked, torch.full_like(x0, MASK_ID), x0)
    with torch.autocast(device_type=x0.device.type, dtype=torch.bfloat16, enabled=x0.is_cuda):
        logits = model(xt)
    ce = F.cross_entropy(logits[masked].float(), x0[masked], reduction="none")
    return (ce / p[masked]).sum() / (B * T)


@torch.no_grad()
def evaluate(model, win, mask, batch, device, exact):
    """Masked-byte NLL (bits) and accuracy over the masked positions of win."""
    model.eval()
    nll, correct, n = 0.0, 0, 0
    for i in range(0, win.shape[0], batch):
        x0 = win[i:i + batch].to(device)
        m = mask[i:i + batch].to(device)
        xt = torch.where(m, torch.full_like(x0, MASK_ID), x0)
        if exact:
            logits = model(xt, exact=True).float()
        else:
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                logits = model(xt).float()
        lm = logits[m]
        nll += F.cross_entropy(lm, x0[m], reduction="sum").item()
        correct += (lm.argmax(-1) == x0[m]).sum().item()
        n += int(m.sum().item())
    model.train()
    return {"nll_bits_per_byte": nll / max(1, n) / math.log(2), "accuracy": correct / max(1, n), "masked_bytes": n}


def unigram(train, held, mask):
    counts = torch.bincount(train[train < 256], minlength=256).double()
    p = counts / counts.sum()
    nz = p[p > 0]
    ent = float(-(nz * torch.log2(nz)).sum())
    top = int(torch.argmax(counts))
    tgt = held[mask]
    acc = float((tgt == top).double().mean()) if tgt.numel() else 0.0
    pt = p[tgt].clamp_min(1e-12)
    xent = float(-(torch.log2(pt)).mean()) if tgt.numel() else 0.0
    return {"entropy_bits": ent, "most_frequent_byte": top, "accuracy": acc,
            "heldout_cross_entropy_bits": xent}


def build_cfg(a):
    if a.hidden != a.heads * HEAD_DIM or a.heads % a.kv_heads:
        raise SystemExit("train_tiny_dllm: need hidden == heads * 64 and heads %% kv_heads == 0 (got %d, %d, %d)"
                         % (a.hidden, a.heads, a.kv_heads))
    return {"name": "tiny-dllm", "n_layers": a.layers, "hidden": a.hidden, "ffn": a.ffn, "n_heads": a.heads,
            "n_kv_heads": a.kv_heads, "head_dim": HEAD_DIM, "vocab": VOCAB, "mask_id": MASK_ID,
            "end_id": END_ID, "max_len": a.seq, "rope_theta": 10000.0, "rms_eps": 1e-5,
            "tied_embeddings": False, "qkv_bias": False}


def train_loop(a, model, train, held_win, held_mask, device, csv, state):
    decay = [p for p in model.parameters() if p.dim() >= 2]     # matrices and embeddings
    no_decay = [p for p in model.parameters() if p.dim() < 2]   # the RMSNorm weights
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95))
    gen = torch.Generator(device=device).manual_seed(a.seed + 1)
    budget = a.minutes * 60.0
    ar = torch.arange(a.seq, device=device)
    n_start = train.numel() - a.seq
    total = a.steps if a.steps > 0 else 10 ** 9
    t_loop = time.time()
    step = 0
    while step < total and not STOP["flag"]:
        if time.time() - T0 > budget:
            STOP["why"] = "budget of %.2f min" % a.minutes
            break
        if step in (10, 40) and device.type == "cuda":
            torch.cuda.synchronize()
        if step == 10:
            t_loop = time.time()
        if a.steps == 0 and step == 40:   # fix the schedule length from the rate of steps 10..40
            rate = 30 / (time.time() - t_loop)
            total = max(60, int(rate * (budget - (time.time() - T0)) * 0.97) + 30)
            state["total_steps"] = total
            log("measured %.2f steps/s -> total steps %d" % (rate, total))
        lr = lr_at(step, total if total < 10 ** 9 else 2000, a.warmup, a.lr, a.lr * 0.05)
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, n_start, (a.batch,), device=device, generator=gen)
        x0 = train[starts[:, None] + ar[None, :]]
        loss = diffusion_loss(model, x0, 1e-3, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        state["steps"] = step
        if step % 25 == 0 or step == 1:
            lv = loss.item()
            if not math.isfinite(lv):
                raise RuntimeError("loss is %r at step %d" % (lv, step))
            el = time.time() - T0
            csv.write("%d,%.2f,%.5f,%.6g,,\n" % (step, el, lv, lr))
            csv.flush()
            if step % 100 == 0 or step == 1:
                log("step %d loss %.4f lr %.3g" % (step, lv, lr))
        if step % a.eval_every == 0:
            n = min(64, held_win.shape[0])
            ev = evaluate(model, held_win[:n], held_mask[:n], 64, device, exact=False)
            csv.write("%d,%.2f,,,%.5f,%.5f\n" % (step, time.time() - T0, ev["nll_bits_per_byte"], ev["accuracy"]))
            csv.flush()
            log("step %d held-out(sample) nll %.3f bits/byte acc %.3f" % (step, ev["nll_bits_per_byte"], ev["accuracy"]))
    if step >= total:
        STOP["why"] = "steps %d" % total


# ------------------------------------------------------------------ export


def rounded_copy(model, cfg):
    """A float32 CPU copy whose weights are exactly the exported bf16 values."""
    m = TinyDLLM(cfg)
    sd = {k: v.detach().to("cpu").to(torch.bfloat16).to(torch.float32) for k, v in model.state_dict().items()}
    m.load_state_dict(sd)
    return m.eval()


def make_check(mref, held, seed, n_snip=3, T=96, n_pos=8):
    """Three held-out snippets, about a quarter of their bytes masked; the float32 logits of the
    exported weights (plain float32 math on the CPU) at 8 positions (6 masked, 2 not)."""
    rng = random.Random(seed + 7)
    snips = []
    for i in range(n_snip):
        off = rng.randrange(0, max(1, held.numel() - T))
        tok = held[off:off + T].clone()
        if tok.numel() < T:
            tok = torch.cat([tok, torch.full((T - tok.numel(),), END_ID, dtype=tok.dtype)])
        orig = tok.clone()
        cand = [p for p in range(T) if tok[p] < 256]
        masked = sorted(rng.sample(cand, max(n_pos, len(cand) // 4)))
        for p in masked:
            tok[p] = MASK_ID
        unm = [p for p in range(T) if p not in masked]
        pos = sorted(rng.sample(masked, n_pos - 2) + rng.sample(unm, 2))
        with torch.no_grad():
            logits = mref(tok[None, :].to(torch.int64), exact=True)[0].float()
        snips.append({"tokens": [int(x) for x in tok], "original": [int(x) for x in orig], "positions": pos,
                      "logits": [[float(v) for v in logits[p]] for p in pos]})
    return snips


def write_outputs(a, cfg, model, train, held, out, state):
    os.makedirs(out, exist_ok=True)
    model = model.float()
    mref = rounded_copy(model, cfg)
    meta = {"format": "pt", "dkv_model": "tiny-dllm", "head_dim": HEAD_DIM, "rope_theta": cfg["rope_theta"],
            "rms_eps": cfg["rms_eps"], "mask_id": MASK_ID, "end_id": END_ID, "seed": a.seed,
            "steps": state.get("steps", 0)}
    write_safetensors(os.path.join(out, "model.safetensors"),
                      [(n, t, "BF16") for n, t in export_names(mref)], meta)
    log("wrote model.safetensors (%d bytes)" % os.path.getsize(os.path.join(out, "model.safetensors")))
    snips = make_check(mref, held, a.seed)
    with open(os.path.join(out, "check.json"), "w") as f:
        json.dump({"about": "float32 logits of model.safetensors (bf16 weights read as float32, plain float32 "
                   "math, CPU) at `positions` of each snippet's `tokens` (256 = mask)", "vocab": VOCAB,
                   "snippets": snips}, f)
    ct = []
    for i, s in enumerate(snips):
        ct.append(("snippet.%d.tokens" % i, torch.tensor(s["tokens"], dtype=torch.float32), "F32"))
        ct.append(("snippet.%d.positions" % i, torch.tensor(s["positions"], dtype=torch.float32), "F32"))
        ct.append(("snippet.%d.logits" % i, torch.tensor(s["logits"], dtype=torch.float32), "F32"))
    write_safetensors(os.path.join(out, "check.safetensors"), ct, {"snippets": len(snips), "vocab": VOCAB})
    log("wrote check.json / check.safetensors")
    # final held-out metrics: the exported weights in float32, no autocast, no TF32
    torch.set_float32_matmul_precision("highest")   # no TF32
    dev = next(model.parameters()).device
    mdev = mref.to(dev)
    win = windows(held, cfg["max_len"])
    if win.shape[0] > a.max_eval_windows:
        win = win[:a.max_eval_windows]
    mask = eval_mask(win, 0.15, a.seed + 99)
    ev = evaluate(mdev, win, mask, 32, dev, exact=True)
    uni = unigram(train.cpu(), win, mask)
    metrics = {"heldout": dict(ev, mask_ratio=0.15, mask_seed=a.seed + 99, windows=int(win.shape[0]),
                               window_len=cfg["max_len"], heldout_bytes_total=int((held < 256).sum()),
                               weights="exported bf16, float32 math"),
               "unigram_baseline": uni, "steps": state.get("steps", 0), "stopped_by": STOP["why"],
               "train_seconds": state.get("train_seconds"), "error": state.get("error")}
    with open(os.path.join(out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    log("held-out (15%% masked, %d bytes): nll %.4f bits/byte, accuracy %.4f; unigram %.3f bits, acc %.4f"
        % (ev["masked_bytes"], ev["nll_bits_per_byte"], ev["accuracy"], uni["entropy_bits"], uni["accuracy"]))


def main():
    a = ARGS
    a.max_eval_windows = 4096
    if a.smoke:
        a.layers, a.hidden, a.heads, a.kv_heads, a.ffn = 2, 128, 2, 1, 256
        a.seq, a.batch, a.warmup, a.eval_every, a.max_eval_windows = 128, 8, 5, 10, 16
        a.steps = a.steps or 20
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.cuda.manual_seed_all(a.seed)
        torch.set_float32_matmul_precision("high")   # TF32 allowed while training (bf16 autocast anyway)
    cfg = build_cfg(a)
    tr_path, he_path = os.path.join(a.corpus, "train.txt"), os.path.join(a.corpus, "heldout.txt")
    if os.path.exists(tr_path) and os.path.exists(he_path):
        train, held = load_stream(tr_path), load_stream(he_path)
        data = {"corpus": a.corpus, "train_tokens": train.numel(), "heldout_tokens": held.numel()}
        man = os.path.join(a.corpus, "manifest.json")
        if os.path.exists(man):
            with open(man) as f:
                data["manifest"] = json.load(f)
    elif a.smoke:
        train, held = synthetic_stream(200000, a.seed), synthetic_stream(20000, a.seed + 1)
        data = {"corpus": "synthetic (--smoke without %s)" % a.corpus}
    else:
        raise SystemExit("train_tiny_dllm: %s or %s is missing; run /usr/bin/python3 scripts/tiny_corpus.py "
                         "first (and carry .corpus)" % (tr_path, he_path))
    model = TinyDLLM(cfg)
    model.init_weights()
    n_params = sum(p.numel() for p in model.parameters())
    cfg["params"] = n_params
    log("device %s torch %s; params %d; train %d tokens, held-out %d tokens"
        % (device, torch.__version__, n_params, train.numel(), held.numel()))
    if n_params > 8_200_000:
        log("WARNING: %d parameters is above the ~8 M limit of issue 10" % n_params)
    model.to(device)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump({"model": cfg, "seed": a.seed, "args": vars(a), "data": data, "command": " ".join(sys.argv),
                   "torch": torch.__version__, "device": str(device),
                   "gpu": torch.cuda.get_device_name(0) if device.type == "cuda" else None}, f, indent=1)
    held_win = windows(held, cfg["max_len"])
    held_mask = eval_mask(held_win, 0.15, a.seed + 99)
    state = {}
    t_train = time.time()
    with open(os.path.join(a.out, "loss.csv"), "w") as csv:
        csv.write("step,elapsed_s,train_loss,lr,heldout_nll_bits,heldout_acc\n")
        try:
            train_loop(a, model, train.to(device), held_win, held_mask, device, csv, state)
        except Exception as e:   # export what we have anyway
            traceback.print_exc()
            state["error"] = repr(e)
            STOP["why"] = "error"
    state["train_seconds"] = time.time() - t_train
    log("training stopped (%s) after %d steps" % (STOP["why"], state.get("steps", 0)))
    with open(os.path.join(a.out, "config.json")) as f:
        c = json.load(f)
    c["total_steps_planned"] = state.get("total_steps", a.steps)
    c["steps_done"] = state.get("steps", 0)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
    write_outputs(a, cfg, model, train, held, a.out, state)
    log("done")
    return 1 if state.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())
