-- LLaDA-8B-Instruct (GSAI-ML): shapes from its config (docs/ANCHORS.md).
return {
  name = "llada-8b",
  source = "GSAI-ML/LLaDA-8B-Instruct config.json (docs/ANCHORS.md): 32 layers, d 4096, FFN 12288 (SwiGLU), "
        .. "32 heads x 128, no GQA, vocab 126464, mask 126336, RoPE 500000, max length 4096",
  n_layers = 32,
  hidden = 4096,
  ffn = 12288,
  n_heads = 32,
  n_kv_heads = 32,
  head_dim = 128,
  vocab = 126464,
  mask_id = 126336,
  max_len = 4096,
  rope_theta = 500000,
  tied_embeddings = false,
  qkv_bias = false,
  weight_dtype = "bf16",
  kv_dtype = "bf16",
  act_dtype = "bf16",
}
