-- Dream-v0-Instruct-7B (Dream-org, Qwen2.5-7B based): shapes from its config (docs/ANCHORS.md).
return {
  name = "dream-7b",
  source = "Dream-org/Dream-v0-Instruct-7B config.json (docs/ANCHORS.md): 28 layers, d 3584, FFN 18944, "
        .. "28 heads / 4 KV heads x 128, vocab 152064, RoPE 1e6, q/k/v bias (Qwen2); mask id 151666 (its <|mask|> "
        .. "token; seen as mask_token_id for Dream-org/Dream-v0-Instruct-7B in several public inference codebases, "
        .. "2026-11-29); max length 32768 (Qwen2.5 native context) is not verified here",
  n_layers = 28,
  hidden = 3584,
  ffn = 18944,
  n_heads = 28,
  n_kv_heads = 4,
  head_dim = 128,
  vocab = 152064,
  mask_id = 151666,
  max_len = 32768,
  rope_theta = 1000000,
  tied_embeddings = false,
  qkv_bias = true,
  weight_dtype = "bf16",
  kv_dtype = "bf16",
  act_dtype = "bf16",
}
