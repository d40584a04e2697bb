-- experiments/tiny_text.lua - text in, text out: the project's tiny dLLM (docs/MODELS.md) decodes
-- the prompts of a prompts file (docs/WORKLOADS.md) through dkv.execute, and the generated text is
-- printed and saved in the run (tables outputs/prompts, attributes outputs_text.text.<id>;
-- docs/HDF5_SCHEMA.md, "Generated tokens and text").
--
--   dkv run experiments/tiny_text.lua -o text.h5 [-D prompts=FILE] [-D cache=none|prefix|dual]
--       [-D gen=64] [-D steps=32] [-D weights=datasets/models/tiny-dllm/model.safetensors]
--
-- Without a CUDA device only the simulated run is written (no text: the simulator makes no
-- tokens) and a line says so.  Expected device time: about 3 s (weights, arena, 6 requests).
local dkv = require "dkv"

local prompts = dkv.param("prompts", "datasets/workloads/tiny_prompts.jsonl", "prompts file (JSONL: text or tokens)")
local weights = dkv.param("weights", "datasets/models/tiny-dllm/model.safetensors", "the tiny dLLM's safetensors")
local cache = dkv.param("cache", "dual", "cache mode: none, prefix or dual")
local gen = dkv.param("gen", 64, "generated tokens per request (a line's own gen wins)", {integer = true, min = 1})
local steps = dkv.param("steps", 32, "denoising steps per block of 32", {integer = true, min = 1})
local cfg = {model = "tiny-dllm", gpu = "h200", seed = 1,
             decode = {cache = cache, block_len = 32, steps = steps},
             workload = {prompts = {file = prompts, gen = gen}}}

-- the byte tokenizer's decoding (core/workload/tokenizer.h): bytes, "_" for a mask, stop at end
local function text(ids)
  local out = {}
  for _, t in ipairs(ids) do
    if t == 257 then break end
    out[#out + 1] = (t >= 0 and t < 256) and string.char(t) or (t == 256 or t < 0) and "_" or "?"
  end
  return (table.concat(out):gsub("[%c]", " "))
end

local ok, r, dev = pcall(dkv.execute, cfg, {weights = weights, outputs = true})
if not ok then
  if not tostring(r):find("no CUDA device", 1, true) then error(r, 0) end
  print("tiny_text: " .. tostring(r):gsub("^.-dkv.execute: ", "") .. ": simulated only (no text)")
  local s = dkv.simulate(cfg)
  dkv.save(s, "tiny_text:" .. cache .. ":sim")
  print(string.format("%-8s %8s %10s", "cache", "requests", "sim_time_s"))
  print(string.format("%-8s %8d %10.4f", cache, s.summary.n_done, s.summary.sim_time_s))
  return
end
dkv.save(r, "tiny_text:" .. cache .. ":real")
print(string.format("%-3s %-42s | %s", "id", "prompt", "generated (cache " .. cache .. ")"))
for i, id in ipairs(dev.outputs.id) do
  print(string.format("%-3d %-42s | %s", id, text(dev.outputs.prompt[i]), text(dev.outputs.tokens[i])))
end
