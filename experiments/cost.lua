-- experiments/cost.lua - the cost model: "$/token from memory and concurrency" (Flash-dLLM).
--
--   $/Mtok = cost_per_hour * n_gpus / 3600 / tokens_per_s * 1e6          (core/policy/cost.h)
-- Less KV per request lets more requests run at once; a step streams the weights once for the
-- whole batch, so throughput rises with concurrency until compute or memory binds.
-- Part 1: every GPU preset at saturation (all requests at once), no cache / dual / sparse.
-- Part 2: on one GPU, concurrency capped by max_num_seqs, dense (dual) vs sparse KV, with the
-- memory bound N = floor(KV budget / KV per request) printed beside it.
--
--   dkv run experiments/cost.lua [-D model=llada-8b] [-D gpu=a100-80g] [-D n=128] [-D prompt=512]
--       [-D gen=256] [-D block=32]
local dkv = require("dkv")

local model, gpu = dkv.param("model", "llada-8b", "model preset (datasets/presets/model/)"), dkv.param("gpu", "a100-80g", "GPU preset (datasets/presets/gpu/)")
local n, prompt, gen, block = dkv.param("n", 128, "requests (all at once)", {integer = true, min = 1}), dkv.param("prompt", 512, "prompt tokens per request", {integer = true, min = 1}), dkv.param("gen", 256, "generated tokens per request", {integer = true, min = 1}), dkv.param("block", 32, "block length in tokens (tokens decoded per block)", {integer = true, min = 1})
local GiB = 2 ^ 30

local function sim(gname, cache, seqs, nreq)
  return dkv.simulate{
    model = model, gpu = gname,
    workload = {kind = "fixed", n = nreq, interval_s = 0, prompt = prompt, gen = gen},
    decode = {cache = cache, block_len = block},
    scheduler = {max_num_seqs = seqs},
    record = {memory_every = 0, steps = false},
  }
end

-- ---------------------------------------------------------------- part 1: presets
local c1 = {gpu = {}, cache = {}, cost_per_hour = {}, tokens_per_s = {}, cost_per_mtok = {}, mean_batch = {},
            n_done = {}}
print(string.format("cost per preset: %s, %d x (P=%d, G=%d) at once, B=%d", model, math.min(n, 64), prompt, gen,
                    block))
print(string.format("%-9s %-7s %7s %9s %9s %7s %6s", "gpu", "cache", "$/h", "tok/s", "$/Mtok", "batch", "done"))
for _, gname in ipairs{"rtx4090", "l40s", "a100-80g", "h200"} do
  for _, cache in ipairs{"none", "dual", "sparse"} do
    local ok, r = pcall(sim, gname, cache, 256, math.min(n, 64))
    if ok then
      local s = r.summary
      local row = {gpu = gname, cache = cache, cost_per_hour = s.cost_per_hour, tokens_per_s = s.tokens_per_s,
                   cost_per_mtok = s.cost_per_mtok, mean_batch = s.mean_batch, n_done = s.n_done}
      for c, t in pairs(c1) do t[#t + 1] = row[c] end
      print(string.format("%-9s %-7s %7.2f %9.1f %9.3f %7.1f %6d", gname, cache, s.cost_per_hour, s.tokens_per_s,
                          s.cost_per_mtok, s.mean_batch, s.n_done))
      dkv.save(r, string.format("cost_%s_%s", gname, cache))
    else
      print(string.format("%-9s %-7s %s", gname, cache, tostring(r):gsub("\n.*", "")))
    end
  end
end
print()

-- ---------------------------------------------------------------- part 2: concurrency
local info = dkv.model_info(model)
local b = dkv.budget(model, gpu)
local g = dkv.preset.gpu(gpu)
local kv_dense = (prompt + gen) * info.kv_bytes_per_token
local kv_sparse = (math.ceil(g.retention * prompt) + 2 * block) * info.kv_bytes_per_token -- k + block, roughly
print(string.format("concurrency on %s: KV budget %.1f GiB; dense KV %.0f MiB/request -> memory bound %d; "
                    .. "sparse (rho %.2f) ~%.0f MiB -> %d", gpu, b.kv_bytes / GiB, kv_dense / 2 ^ 20,
                    math.floor(b.kv_bytes / kv_dense), g.retention, kv_sparse / 2 ^ 20,
                    math.floor(b.kv_bytes / kv_sparse)))
local c2 = {cache = {}, max_num_seqs = {}, mean_batch = {}, tokens_per_s = {}, cost_per_mtok = {}, peak_kv_gib = {},
            latency_p50_s = {}}
print(string.format("%-7s %6s %7s %9s %9s %8s %8s", "cache", "seqs", "batch", "tok/s", "$/Mtok", "peakKV", "p50_s"))
for _, cache in ipairs{"dual", "sparse"} do
  for _, seqs in ipairs{1, 4, 16, 64, 128} do
    local r = sim(gpu, cache, seqs, n)
    local s = r.summary
    local row = {cache = cache, max_num_seqs = seqs, mean_batch = s.mean_batch, tokens_per_s = s.tokens_per_s,
                 cost_per_mtok = s.cost_per_mtok, peak_kv_gib = s.peak_kv_bytes / GiB,
                 latency_p50_s = s.latency_p50_s}
    for c, t in pairs(c2) do t[#t + 1] = row[c] end
    print(string.format("%-7s %6d %7.1f %9.1f %9.3f %8.2f %8.2f", cache, seqs, s.mean_batch, s.tokens_per_s,
                        s.cost_per_mtok, row.peak_kv_gib, s.latency_p50_s))
    dkv.save(r, string.format("cost_%s_%s_seqs%d", gpu, cache, seqs))
  end
end

dkv.write_run("cost_table", {
  params = {model = model, gpu = gpu, n = n, prompt = prompt, gen = gen, block = block},
  tables = {
    presets = {columns = c1, units = {cost_per_hour = "$/h", tokens_per_s = "tokens/s", cost_per_mtok = "$/Mtok"}},
    concurrency = {columns = c2, units = {tokens_per_s = "tokens/s", cost_per_mtok = "$/Mtok", peak_kv_gib = "GiB",
                                          latency_p50_s = "s"}},
  },
})
