-- experiments/retention.lua - dLLM-Serve's head-centric sparse cache (and Sparse-dLLM):
-- "each attention head keeps its own top-k tokens (retention ratio rho) packed contiguously as
--  [head, token, feature], instead of one token set shared by all heads"; future work named
-- there: rho chosen from attention entropy.
--
-- The retention policy (core/policy/retention.h, docs/POLICIES.md section 5) gives k per head,
-- the bytes kept and the contiguous runs of a Reuse step's read (per-head packed vs a gathered
-- shared set).  In simulation retention changes bytes and bandwidth efficiency, not quality.
-- Rows: no cache (dLLM-Serve's "dense" baseline: every step a full forward) and dense dual
-- cache as baselines; fixed rho per head and shared; dynamic rho from an
-- entropy distribution (Beta(2,5): mostly peaked attention; Beta(5,2): mostly spread) and from a
-- Lua callback (rho grows with the block index).
--
--   dkv run experiments/retention.lua [-D models=llada-8b,dream-7b] [-D gpu=h200] [-D n=8]
--       [-D prompt=512] [-D gen=256] [-D block=32]
local dkv = require("dkv")

local gpu = dkv.param("gpu", "h200", "GPU preset (datasets/presets/gpu/)")
local n, prompt, gen, block = dkv.param("n", 8, "number of requests", {integer = true, min = 1}), dkv.param("prompt", 512, "prompt tokens per request", {integer = true, min = 1}), dkv.param("gen", 256, "generated tokens per request", {integer = true, min = 1}), dkv.param("block", 32, "block length in tokens (tokens decoded per block)", {integer = true, min = 1})
local models = {}
for m in tostring(dkv.param("models", "llada-8b,dream-7b", "comma-separated model presets")):gmatch("[^,]+") do models[#models + 1] = m end

local GiB = 2 ^ 30
local cols = {model = {}, cache = {}, set = {}, rho_mode = {}, rho = {}, tokens_per_s = {}, latency_s = {},
              speedup = {}, peak_kv_gib = {}, hbm_read_per_token_mib = {}}

local function variants()
  local v = {{cache = "none"}, {cache = "dual"}}
  for _, rho in ipairs{0.1, 0.3, 0.5, 1.0} do
    v[#v + 1] = {cache = "sparse", set = "per_head", mode = "fixed", rho = rho}
    v[#v + 1] = {cache = "sparse", set = "shared", mode = "fixed", rho = rho}
  end
  -- entropy rule: rho = 0.1 + 0.8 e, E[rho] = 0.1 + 0.8 a / (a + b)
  v[#v + 1] = {cache = "sparse", set = "per_head", mode = "entropy", ent_a = 2, ent_b = 5, rho = 0.1 + 0.8 * 2 / 7}
  v[#v + 1] = {cache = "sparse", set = "per_head", mode = "entropy", ent_a = 5, ent_b = 2, rho = 0.1 + 0.8 * 5 / 7}
  -- callback: rho grows from 0.1 by 0.1 per block (8 blocks of 32: mean 0.45)
  v[#v + 1] = {cache = "sparse", set = "per_head", mode = "callback", rho = 0.45,
               callback = function(_, blk, _) return 0.1 + 0.1 * blk end}
  return v
end

for _, model in ipairs(models) do
  local base
  for _, v in ipairs(variants()) do
    local ret = nil
    if v.cache == "sparse" then
      ret = {set = v.set, mode = v.mode}
      if v.mode == "fixed" then ret.rho = v.rho end
      if v.mode == "entropy" then ret.ent_a, ret.ent_b = v.ent_a, v.ent_b end
      if v.mode == "callback" then ret.callback, ret.rho_min, ret.rho_max = v.callback, 0.05, 1.0 end
    end
    local r = dkv.simulate{
      model = model, gpu = gpu,
      workload = {kind = "fixed", n = n, interval_s = 0, prompt = prompt, gen = gen},
      decode = {cache = v.cache, block_len = block},
      policies = {retention = ret},
      record = {memory_every = 0},
    }
    local s = r.summary
    base = base or s.tokens_per_s
    local row = {model = model, cache = v.cache, set = v.set or "-", rho_mode = v.mode or "-", rho = v.rho or 1,
                 tokens_per_s = s.tokens_per_s, latency_s = s.latency_mean_s, speedup = s.tokens_per_s / base,
                 peak_kv_gib = s.peak_kv_bytes / GiB,
                 hbm_read_per_token_mib = s.hbm_read_bytes / math.max(1, s.gen_tokens) / 2 ^ 20}
    for c, t in pairs(cols) do t[#t + 1] = row[c] end
    dkv.save(r, string.format("retention_%s_%s_%s_%s_%g", model, v.cache, row.set, row.rho_mode, row.rho))
  end
end

print(string.format("retention: %s, %d x (P=%d, G=%d), B=%d (sparse: dense step, selecting step, Reuse steps)",
                    gpu, n, prompt, gen, block))
print(string.format("%-10s %-7s %-9s %-9s %6s %9s %8s %8s %9s %12s", "model", "cache", "set", "rho_mode", "rho",
                    "tok/s", "lat_s", "speedup", "peakKV", "HBM_MiB/tok"))
for i = 1, #cols.model do
  print(string.format("%-10s %-7s %-9s %-9s %6.3f %9.1f %8.3f %8.3f %9.2f %12.1f", cols.model[i], cols.cache[i],
                      cols.set[i], cols.rho_mode[i], cols.rho[i], cols.tokens_per_s[i], cols.latency_s[i],
                      cols.speedup[i], cols.peak_kv_gib[i], cols.hbm_read_per_token_mib[i]))
end
print("speedup: over the no-cache row.  rho for entropy/callback rows: the rule's expected mean.")
print("dLLM-Serve measured on the H200 (ANCHORS.md, rho 0.5, 8 requests): dense (no cache) 43.2, shared 52.7 "
      .. "(1.22x), per-head 48.1 (1.11x) tokens/s")

dkv.write_run("retention_table", {
  params = {gpu = gpu, n = n, prompt = prompt, gen = gen, block = block, models = table.concat(models, ",")},
  tables = {retention = {columns = cols,
                         units = {tokens_per_s = "tokens/s", latency_s = "s", peak_kv_gib = "GiB",
                                  hbm_read_per_token_mib = "MiB/token"},
                         docs = {speedup = "tokens/s over the no-cache (dense) row of the same model",
                                 rho = "fixed rho, or the dynamic rule's expected mean"}}},
})
