-- A synthetic head configuration for device call 34 (session 14): 24 query heads / 4 KV heads x 128, not any
-- model's.  Only its attention is profiled (dkv profile --grid attn --model h24 --root <this dir>), to check
-- the simulator's rule for head configurations a profile does not hold (docs/COST_MODEL.md "Attention of
-- another head configuration") on a count that is neither LLaDA-8B's (32) nor Dream-7B's (28).
return {
  name = "h24",
  source = "synthetic (dkv device call 34): Dream-7B's preset with 24 query heads and hidden 3072",
  n_layers = 28,
  hidden = 3072,
  ffn = 18944,
  n_heads = 24,
  n_kv_heads = 4,
  head_dim = 128,
  vocab = 152064,
  mask_id = 151666,
  max_len = 32768,
  rope_theta = 1000000,
  tied_embeddings = false,
  qkv_bias = true,
  weight_dtype = "bf16",
}
