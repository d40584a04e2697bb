-- The tiny byte-level dLLM trained by the project (issue 10; docs/MODELS.md): LLaDA blocks,
-- byte vocabulary (0..255 bytes, 256 mask, 257 end/pad, 258..263 reserved; padded to 264).
-- Weights: datasets/models/tiny-dllm/model.safetensors (bf16, LLaDA names), made by
-- scripts/train_tiny_dllm.py.  RMSNorm eps 1e-5.  7,875,456 parameters.
return {
  name = "tiny-dllm",
  source = "dkv scripts/train_tiny_dllm.py (docs/MODELS.md): 6 layers, d 384, FFN 768 (SwiGLU), "
        .. "6 heads x 64, 2 KV heads, byte vocab 264, mask 256, RoPE 10000, max length 512",
  n_layers = 6,
  hidden = 384,
  ffn = 768,
  n_heads = 6,
  n_kv_heads = 2,
  head_dim = 64,
  vocab = 264,
  mask_id = 256,
  max_len = 512,
  rope_theta = 10000,
  tied_embeddings = false,
  qkv_bias = false,
  weight_dtype = "bf16",
  kv_dtype = "bf16",
  act_dtype = "bf16",
  tokenizer = "byte",   -- core/workload/tokenizer.h: prompts may be given as text
}
