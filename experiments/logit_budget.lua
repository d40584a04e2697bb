-- experiments/logit_budget.lua - dLLM-Serve's logit-aware activation budget and budget rules:
-- "the [B, L, V] logit tensor (V = 126,464 for LLaDA) is the transient peak; compute logits in
--  chunks of at most max_num_logits rows" and "usable = HBM - weights - 10 % margin, split 7 : 3
--  between KV and activations; per-GPU presets (RTX 4090: 4096 / 8192 / 0.5; L40S: 8192 /
--  16384 / 0.4; A100-80G: 16384 / 32768 / 0.3)".
--
-- Part 1 prints the budget split (dkv.budget, core/policy/sizing.h) and the chunk peak of each
-- GPU preset's max_num_logits (core/policy/logit.h: chunk logits + two fp32 sampling
-- temporaries).  Part 2 simulates a batch on one GPU with `all` (Fast-dLLM) and `block`
-- (dLLM-Serve) logit rows, unchunked and chunked, and reports the logits' peak, the activation
-- peak, throughput and how many requests could not be served.
--
--   dkv run experiments/logit_budget.lua [-D model=llada-8b] [-D gpu=a100-80g] [-D n=32]
--       [-D prompt=512] [-D gen=256] [-D block=32] [-D cache=dual]
local dkv = require("dkv")

local model = dkv.param("model", "llada-8b", "model preset (datasets/presets/model/)")
local gpu = dkv.param("gpu", "a100-80g", "GPU preset (datasets/presets/gpu/)")
local n, prompt, gen = dkv.param("n", 32, "requests in the simulated batch", {integer = true, min = 1}), dkv.param("prompt", 512, "prompt tokens per request", {integer = true, min = 1}), dkv.param("gen", 256, "generated tokens per request", {integer = true, min = 1})
local block, cache = dkv.param("block", 32, "block length in tokens (tokens decoded per block)", {integer = true, min = 1}), dkv.param("cache", "dual", "decode cache: none, prefix, dual or sparse")
local GiB = 2 ^ 30

-- ---------------------------------------------------------------- part 1: budget rules per preset
local m = dkv.model_info(model)
local b1 = {gpu = {}, hbm_gib = {}, weights_gib = {}, usable_gib = {}, kv_gib = {}, act_gib = {},
            max_num_logits = {}, max_num_batched_tokens = {}, retention = {}, chunk_peak_gib = {}, chunk_fits = {},
            kv_requests = {}}
print(string.format("budget rules: %s (%.2f GiB of weights, %d KiB KV/token, %d KiB per logit row)", model,
                    m.weight_bytes / GiB, m.kv_bytes_per_token // 1024, m.logit_row_bytes // 1024))
print(string.format("%-9s %7s %7s %7s %7s %7s %7s %7s %5s %9s %5s %8s", "gpu", "HBM", "weights", "usable", "KV",
                    "act", "logits", "batch", "rho", "chunkPeak", "fits", "KV_reqs"))
for _, gname in ipairs{"rtx4090", "l40s", "a100-80g", "h200"} do
  local g = dkv.preset.gpu(gname)
  local ok, b = pcall(dkv.budget, model, gname)
  if ok then
    -- logit.h defaults: chunk rows x V x (act bytes + 2 x 4 bytes of fp32 temporaries)
    local peak = g.max_num_logits * m.logit_row_bytes * (1 + 8 / 2)
    local row = {gpu = gname, hbm_gib = g.hbm_bytes / GiB, weights_gib = b.weight_bytes / GiB,
                 usable_gib = b.usable_bytes / GiB, kv_gib = b.kv_bytes / GiB, act_gib = b.act_bytes / GiB,
                 max_num_logits = g.max_num_logits, max_num_batched_tokens = g.max_num_batched_tokens,
                 retention = g.retention, chunk_peak_gib = peak / GiB, chunk_fits = peak <= b.act_bytes,
                 kv_requests = b.kv_tokens // (prompt + gen)}
    for c, t in pairs(b1) do t[#t + 1] = row[c] end
    print(string.format("%-9s %7.1f %7.2f %7.2f %7.2f %7.2f %7d %7d %5.2f %9.2f %5s %8d", gname, row.hbm_gib,
                        row.weights_gib, row.usable_gib, row.kv_gib, row.act_gib, row.max_num_logits,
                        row.max_num_batched_tokens, row.retention, row.chunk_peak_gib, tostring(row.chunk_fits),
                        row.kv_requests))
  else
    print(string.format("%-9s does not fit: %s", gname, tostring(b)))
  end
end
print(string.format("KV_reqs: requests of P + G = %d tokens whose dense KV fits the KV budget", prompt + gen))
print()

-- ---------------------------------------------------------------- part 2: chunking in a run
local UNCHUNKED = 1000000000 -- larger than any step's rows
local g = dkv.preset.gpu(gpu)
local variants = {
  {rows = "all", chunk = UNCHUNKED}, {rows = "all", chunk = 1024}, {rows = "all", chunk = g.max_num_logits},
  {rows = "all", chunk = 1024, temps = 0},
  {rows = "block", chunk = UNCHUNKED}, {rows = "block", chunk = 1024}, {rows = "block", chunk = g.max_num_logits},
}
local b2 = {logit_rows = {}, max_num_logits = {}, upcast_tensors = {}, peak_logits_gib = {}, peak_act_gib = {},
            peak_alloc_gib = {}, n_done = {}, n_oom = {}, n_preempted = {}, tokens_per_s = {}, mean_batch = {}}
print(string.format("logit chunking: %s on %s, %d x (P=%d, G=%d), %s cache, B=%d", model, gpu, n, prompt, gen,
                    cache, block))
print(string.format("%-6s %10s %6s %10s %9s %10s %6s %5s %7s %9s %7s", "rows", "chunk", "temps", "logitsPeak",
                    "actPeak", "allocPeak", "done", "oom", "preempt", "tok/s", "batch"))
for _, v in ipairs(variants) do
  local temps = v.temps or 2
  local r = dkv.simulate{
    model = model, gpu = gpu,
    workload = {kind = "fixed", n = n, interval_s = 0, prompt = prompt, gen = gen},
    decode = {cache = cache, block_len = block, logits = v.rows},
    policies = {logit = {max_num_logits = v.chunk, upcast_tensors = temps, upcast_bytes = temps > 0 and 4 or 0}},
    record = {memory_every = 0},
  }
  local s = r.summary
  local row = {logit_rows = v.rows, max_num_logits = v.chunk, upcast_tensors = temps,
               peak_logits_gib = s.peak_logits_bytes / GiB, peak_act_gib = s.peak_activation_bytes / GiB,
               peak_alloc_gib = s.peak_allocated / GiB, n_done = s.n_done, n_oom = s.n_oom,
               n_preempted = s.n_preempted, tokens_per_s = s.tokens_per_s, mean_batch = s.mean_batch}
  for c, t in pairs(b2) do t[#t + 1] = row[c] end
  print(string.format("%-6s %10s %6d %10.2f %9.2f %10.2f %6d %5d %7d %9.1f %7.2f", v.rows,
                      v.chunk == UNCHUNKED and "none" or tostring(v.chunk), temps, row.peak_logits_gib,
                      row.peak_act_gib, row.peak_alloc_gib, s.n_done, s.n_oom, s.n_preempted, s.tokens_per_s,
                      s.mean_batch))
  dkv.save(r, string.format("logits_%s_%d_t%d", v.rows, v.chunk == UNCHUNKED and 0 or v.chunk, temps))
end
print("chunk 'none' = unchunked; temps = fp32 temporaries per chunk (logit.h)")

dkv.write_run("logit_budget_table", {
  params = {model = model, gpu = gpu, n = n, prompt = prompt, gen = gen, block = block, cache = cache},
  tables = {
    budget = {columns = b1, units = {hbm_gib = "GiB", weights_gib = "GiB", usable_gib = "GiB", kv_gib = "GiB",
                                     act_gib = "GiB", chunk_peak_gib = "GiB", kv_requests = "requests"}},
    chunking = {columns = b2, units = {peak_logits_gib = "GiB", peak_act_gib = "GiB", peak_alloc_gib = "GiB",
                                       tokens_per_s = "tokens/s"},
                docs = {max_num_logits = "1e9 = unchunked"}},
  },
})
