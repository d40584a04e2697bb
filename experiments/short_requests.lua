-- experiments/short_requests.lua - the boundary case "short requests where pool set-up costs more
-- than it saves: route them to a plain path".
--
-- The routing policy (core/policy/routing.h, docs/POLICIES.md section 6) sends a request to the
-- plain path (KV in the device's caching allocator) when its expected lifetime in generated
-- tokens is below a threshold, or, with threshold 0, when its steps are below the break-even
--     n* = (setup_s + n_blocks * block_s) / (plain_step_s - pool_step_s).
-- The Azure code trace is the natural workload: its mean generation is 28 tokens (one 32-token
-- block after rounding).  Two plain paths are priced: cudaMalloc + cudaFree per step (the GPU
-- preset's malloc_s + free_s) and a pooled allocator (cudaMallocAsync, ~1.8 us per pair).
--
--   dkv run experiments/short_requests.lua [-D trace=PATH] [-D n=1000] [-D model=llada-8b]
--       [-D gpu=h200] [-D rate_scale=1]
-- The default trace (../shared/datasets/AzureLLMInferenceTrace_code.csv) falls back to
-- datasets/workloads/azure_sample.csv when it is not readable; a -D trace that is not is an error.
local dkv = require("dkv")

local model, gpu = dkv.param("model", "llada-8b", "model preset (datasets/presets/model/)"), dkv.param("gpu", "h200", "GPU preset (datasets/presets/gpu/)")
local n, rate_scale = dkv.param("n", 1000, "requests of the trace", {integer = true, min = 1}), dkv.param("rate_scale", 1, "arrival rate multiplier of the trace")
local trace = dkv.param("trace", "../shared/datasets/AzureLLMInferenceTrace_code.csv", "workload trace file")
-- the default trace (outside the repository) falls back to the sample when absent; a -D trace that cannot be
-- read is an error naming it, never a silent substitute
local ok_trace, trace_err = pcall(dkv.simulate, {model = "tiny", gpu = gpu, workload = {file = trace, first_n = 1}})
if not ok_trace then
  if dkv.params.trace ~= nil then error("-D trace=" .. trace .. ": " .. tostring(trace_err):gsub("\n.*", ""), 0) end
  print("note: " .. trace .. " not readable; using datasets/workloads/azure_sample.csv")
  trace = "datasets/workloads/azure_sample.csv"
end

local g = dkv.preset.gpu(gpu)
local cuda_malloc = g.malloc_s + g.free_s
local pooled = 1.8e-6
local variants = {
  -- threshold 1 token: nothing is shorter, everything stays in the pool with its costs charged
  -- (with routing disabled the engine charges no routing costs at all)
  {name = "pool only", enabled = true, threshold = 1, plain = cuda_malloc},
  {name = "auto, cudaMalloc plain", enabled = true, threshold = 0, plain = cuda_malloc},
  {name = "<64 tok, cudaMalloc plain", enabled = true, threshold = 64, plain = cuda_malloc},
  {name = "<128 tok, cudaMalloc plain", enabled = true, threshold = 128, plain = cuda_malloc},
  {name = "auto, pooled plain", enabled = true, threshold = 0, plain = pooled},
  {name = "<64 tok, pooled plain", enabled = true, threshold = 64, plain = pooled},
}

local setup_s, block_s, pool_step_s = g.malloc_s, 1.5e-6, 1.0e-6
local GiB = 2 ^ 30
local cols = {variant = {}, threshold = {}, plain_step_s = {}, routed_plain = {}, latency_p50_s = {},
              latency_p99_s = {}, tokens_per_s = {}, alloc_time_s = {}, peak_reserved_gib = {}, kv_ext_frag_mean = {}}
for _, v in ipairs(variants) do
  local r = dkv.simulate{
    model = model, gpu = gpu,
    workload = {file = trace, first_n = n, rate_scale = rate_scale, prompt_max = 3072, gen_max = 1024},
    decode = {cache = "dual", block_len = 32},
    mem = {kind = "blockpool"},
    policies = {routing = {enabled = v.enabled, threshold_tokens = v.threshold, setup_s = setup_s, block_s = block_s,
                           pool_step_s = pool_step_s, plain_step_s = v.plain or cuda_malloc}},
    record = {memory_every = 0},
  }
  local s = r.summary
  local rq = r:requests()
  local routed = 0
  for i = 1, #rq.route do routed = routed + rq.route[i] end
  local row = {variant = v.name, threshold = v.threshold or -1, plain_step_s = v.plain or cuda_malloc,
               routed_plain = routed, latency_p50_s = s.latency_p50_s, latency_p99_s = s.latency_p99_s,
               tokens_per_s = s.tokens_per_s, alloc_time_s = s.alloc_time_s,
               peak_reserved_gib = s.peak_reserved / GiB, kv_ext_frag_mean = s.kv_external_frag_mean}
  for c, t in pairs(cols) do t[#t + 1] = row[c] end
  dkv.save(r, "short_" .. v.name:gsub("[^%w]+", "_"))
end

print(string.format("short requests: %s on %s, first %d requests of %s (x%g rate), dual cache, 32-token blocks",
                    model, gpu, n, trace, rate_scale))
print(string.format("pool: set-up %.1f us + %.1f us per block, %.1f us per step; plain: %.1f us (cudaMalloc+Free) "
                    .. "or %.1f us (pooled) per step", setup_s * 1e6, block_s * 1e6, pool_step_s * 1e6,
                    cuda_malloc * 1e6, pooled * 1e6))
for _, pl in ipairs{cuda_malloc, pooled} do
  local nb = 24 -- a 768-token canvas in 32-token blocks
  local be = (setup_s + nb * block_s) / (pl - pool_step_s)
  print(string.format("  break-even with a %.1f us plain step, 24 blocks: %.1f steps", pl * 1e6, be))
end
print(string.format("%-28s %7s %9s %9s %9s %9s %9s %9s", "variant", "plain", "p50_s", "p99_s", "tok/s", "alloc_s",
                    "reservd", "extFrag"))
for i = 1, #cols.variant do
  print(string.format("%-28s %7d %9.3f %9.3f %9.1f %9.4f %9.2f %9.3f", cols.variant[i], cols.routed_plain[i],
                      cols.latency_p50_s[i], cols.latency_p99_s[i], cols.tokens_per_s[i], cols.alloc_time_s[i],
                      cols.peak_reserved_gib[i], cols.kv_ext_frag_mean[i]))
end

dkv.write_run("short_requests_table", {
  params = {model = model, gpu = gpu, n = n, trace = trace, rate_scale = rate_scale},
  tables = {routing = {columns = cols,
                       units = {plain_step_s = "s", latency_p50_s = "s", latency_p99_s = "s", tokens_per_s = "tokens/s",
                                alloc_time_s = "s", peak_reserved_gib = "GiB", routed_plain = "requests"},
                       docs = {threshold = "-1: routing off; 0: break-even"}}},
})
