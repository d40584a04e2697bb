-- test_prompts.lua - prompts files through dkv.simulate: text (byte tokenizer of tiny-dllm) and
-- token ids; the model's tokenizer from its preset; errors naming file, line and field.
local dkv = require "dkv"
local file = "tests/data/prompts_tiny.jsonl"

local tiny = dkv.model_info("tiny-dllm")
assert(tiny.tokenizer == "byte")
assert(dkv.model_info("llada-8b").tokenizer == "none", "real checkpoints: token ids only")
-- 6 layers x (q, o: 384x384; k, v: 128x384; gate, up, down: 384x768; 2 norms) + wte, head, ln_f
assert(tiny.params == 6 * (2 * 384 * 384 + 2 * 128 * 384 + 3 * 384 * 768 + 2 * 384) + 2 * 264 * 384 + 384)
assert(tiny.params == 7875456 and tiny.weight_bytes <= 16e6)

local cfg = {model = "tiny-dllm", gpu = "h200", decode = {cache = "dual", block_len = 32},
             workload = {prompts = {file = file, gen = 32}}}
local r = dkv.simulate(cfg)
local req = r:requests()
assert(#req.id == 3, #req.id)
-- "The quick brown fox" = 19 bytes; "café" = 5 bytes (é is 2 in UTF-8); 4 token ids
assert(req.prompt_tokens[1] == 19 and req.prompt_tokens[2] == 5 and req.prompt_tokens[3] == 4)
assert(req.gen_tokens[1] == 32 and req.gen_tokens[2] == 64 and req.gen_tokens[3] == 32)
assert(r.summary.n_done == 3)

local function fails(c, ...)
  local ok, err = pcall(dkv.simulate, c)
  assert(not ok, "expected an error")
  for _, s in ipairs{...} do assert(err:find(s, 1, true), err .. "  [lacks: " .. s .. "]") end
end
-- a model without a known tokenizer takes token ids, not text
fails({model = "llada-8b", gpu = "h200", workload = {prompts = {file = file}}},
      "prompts_tiny.jsonl:1:", "give token ids", "(field text)")
fails({model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = file, gne = 3}}},
      "workload.prompts: unknown field 'gne'")
fails({model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = file}, prompt = 10}},
      "workload.prompt", "not used with prompts")
fails({model = "tiny-dllm", gpu = "h200", workload = {kind = "poisson", prompts = {file = file}}},
      "workload.kind", "workload.prompts is set")
fails({model = "tiny-dllm", gpu = "h200", workload = {prompts = {}}}, "workload.prompts.file")
fails({model = {base = "tiny-dllm", tokenizer = "bpe"}, gpu = "h200"}, "tokenizer", "'bpe'")
fails({model = {base = "llada-8b", tokenizer = "byte"}, gpu = "h200"}, "tokenizer 'byte' needs")
print("prompts: ok")
