-- experiments/hw_cpu_agreement.lua - the CPU backend against the CUDA backend on the tiny dLLM
-- (issue 10: the same tokens, agreement >= 99 %): the held-out prompts decoded greedily through
-- dkv.execute with backend = "cuda" and backend = "cpu", per cache mode, and the token agreement
-- between the two (per position over all requests) with the first divergence step per request.
-- Without a CUDA device the CUDA half is skipped and one line says so (the CPU half still runs).
--
--   dkv run experiments/hw_cpu_agreement.lua -o agree.h5 [-D prompts=datasets/prompts/heldout.jsonl]
local dkv = require "dkv"

local prompts = dkv.param("prompts", "datasets/prompts/heldout.jsonl", "prompts file (JSONL)")
local modes = dkv.param("modes", "none,prefix,dual,sparse", "cache modes, comma-separated")
local W = "datasets/models/tiny-dllm/model.safetensors"

local rows = {cache = {}, agreement = {}, positions = {}, diverged_requests = {}, first_divergence_min = {}}
print(string.format("CPU vs CUDA backend, tiny-dllm, %s", prompts))
for cache in modes:gmatch("[^,]+") do
  local cfg = {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = prompts}},
               decode = {cache = cache, block_len = 32}, mem = {capacity_bytes = 256 * 2 ^ 20}}
  local rc, cpu = dkv.execute(cfg, {backend = "cpu", weights = W, outputs = true})
  dkv.save(rc, "cpu_" .. cache)
  local ok, rg, gpu = pcall(dkv.execute, cfg, {backend = "cuda", weights = W, outputs = true})
  if not ok then
    print(string.format("%-7s CUDA half skipped: %s", cache, tostring(rg):gsub("\n.*", "")))
  else
    dkv.save(rg, "cuda_" .. cache)
    local same, n, div, first = 0, 0, 0, math.huge
    for i = 1, #cpu.outputs.tokens do
      local a, b, st = cpu.outputs.tokens[i], gpu.outputs.tokens[i], cpu.outputs.step[i]
      local s0, f = math.huge, math.huge
      for j = 1, #a do s0 = math.min(s0, st[j] >= 0 and st[j] or math.huge) end
      for j = 1, #a do
        n = n + 1
        if a[j] == b[j] then same = same + 1 elseif st[j] >= 0 then f = math.min(f, st[j] - s0) end
      end
      if f < math.huge then div, first = div + 1, math.min(first, f) end
    end
    local row = {cache = cache, agreement = same / n, positions = n, diverged_requests = div,
                 first_divergence_min = first < math.huge and first or -1}
    for k, t in pairs(rows) do t[#t + 1] = row[k] end
    print(string.format("%-7s agreement %.4f over %d positions; %d requests diverge (earliest at step %d)", cache,
                        row.agreement, n, div, row.first_divergence_min))
  end
end
if #rows.cache > 0 then dkv.write_run("cpu_vs_cuda", {params = {prompts = prompts}, tables = {agreement = rows}}) end
