-- phase_scheduler.lua - dLLM-Serve's phase-multiplexed scheduler against FCFS static batching
-- and FCFS continuous batching (claim: throughput 1.61-1.81x on the RTX 4090, 1.60-1.74x on the
-- L40S over its baseline; tail latency ~4x lower under contention).
--
--   dkv run experiments/phase_scheduler.lua -o phase.h5 [-D trace=PATH] [-D n=N (0 = whole trace)]
--
-- Two workloads, LLaDA-8B, dual cache, block pool, each GPU preset's dLLM-Serve budgets:
--   azure    the Azure LLM code trace (all 8,819 requests, or the first n; prompts clamped to 3072 and generations
--            to 1024 so the canvas fits LLaDA's 4096; generations rounded up to 32-token blocks),
--            at its own rate and 4x faster (contention); the default trace falls back to
--            datasets/workloads/azure_sample.csv when it is not readable, a -D trace that is not is an error;
--   serve    dLLM-Serve's shape: Poisson arrivals, prompt 512, generation 256, at 0.5-4 req/s.
-- Every run is saved (runs "phase:<condition>,kind=<scheduler>"); the table gives each
-- scheduler's throughput and P99 latency and the ratios phase/fcfs and phase/static.
local dkv = require "dkv"
local sweep = require "sweep"

local trace = dkv.param("trace", "../shared/datasets/AzureLLMInferenceTrace_code.csv", "the Azure LLM code trace")
local n = dkv.param("n", 0, "requests of the trace (0: all)", {integer = true, min = 0})
-- the default trace (outside the repository) falls back to the sample when absent; a -D trace that cannot be
-- read is an error naming it, never a silent substitute
local ok_trace, trace_err = pcall(dkv.simulate, {model = "tiny", gpu = "h200", workload = {file = trace, first_n = 1}})
if not ok_trace then
  if dkv.params.trace ~= nil then error("-D trace=" .. trace .. ": " .. tostring(trace_err):gsub("\n.*", ""), 0) end
  print("note: " .. trace .. " not readable; using datasets/workloads/azure_sample.csv")
  trace = "datasets/workloads/azure_sample.csv"
end

local function workload(p)
  if p.wl == "azure" then
    return {file = trace, first_n = n, rate_scale = p.load, prompt_max = 3072, gen_max = 1024}
  end
  return {kind = "poisson", n = 400, rate = p.load, prompt = 512, gen = 256, seed = 7}
end

local conditions = {
  {wl = "azure", load = 1}, {wl = "azure", load = 4},
  {wl = "serve", load = 0.5}, {wl = "serve", load = 1}, {wl = "serve", load = 2}, {wl = "serve", load = 4},
}
local idx = {}
for i = 1, #conditions do idx[i] = i end

local rows = sweep{
  name = "phase",
  grid = {gpu = {"rtx4090", "l40s", "h200"}, cond = idx, kind = {"static", "fcfs", "phase"}},
  order = {"gpu", "cond", "kind"},
  run = function(p)
    local c = conditions[p.cond]
    return dkv.simulate{
      model = "llada-8b", gpu = p.gpu, workload = workload(c),
      decode = {cache = "dual", block_len = 32}, mem = {kind = "blockpool"},
      scheduler = {kind = p.kind}, record = {memory_every = 16}, seed = 1,
    }
  end,
}

-- one line per (gpu, condition): the three schedulers side by side
local by = {}
for _, r in ipairs(rows) do
  local key = r.params.gpu .. "/" .. r.params.cond
  by[key] = by[key] or {gpu = r.params.gpu, cond = conditions[r.params.cond]}
  by[key][r.params.kind] = r.summary
end
local out = {}
for _, g in ipairs({"rtx4090", "l40s", "h200"}) do
  for i = 1, #conditions do
    local b = by[g .. "/" .. i]
    if b and b.static and b.fcfs and b.phase then
      out[#out + 1] = {params = {gpu = g, workload = b.cond.wl, load = b.cond.load}, summary = {
        static_rps = b.static.throughput_rps, fcfs_rps = b.fcfs.throughput_rps, phase_rps = b.phase.throughput_rps,
        x_fcfs = b.phase.throughput_rps / b.fcfs.throughput_rps,
        x_static = b.phase.throughput_rps / b.static.throughput_rps,
        static_p99 = b.static.latency_p99_s, fcfs_p99 = b.fcfs.latency_p99_s, phase_p99 = b.phase.latency_p99_s,
        p99_fcfs_over_phase = b.fcfs.latency_p99_s / b.phase.latency_p99_s,
        batch_fcfs = b.fcfs.mean_batch, batch_phase = b.phase.mean_batch,
      }}
    end
  end
end
print("phase-multiplexed scheduler vs FCFS static / continuous (LLaDA-8B, dual cache, block pool)")
print("load: azure = rate_scale of the trace, serve = Poisson req/s; p99 in seconds")
sweep.print(out, {"gpu", "workload", "load", "static_rps", "fcfs_rps", "phase_rps", "x_fcfs", "x_static",
                  "fcfs_p99", "phase_p99", "p99_fcfs_over_phase", "batch_fcfs", "batch_phase"})
return out
