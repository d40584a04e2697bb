-- host_batch.lua - ledger rows 8, 12 and 13 as curves over host time per step and batch size
-- (issue 9, item 6): the verdicts of "4 instances give 3.8x" (Flash-dLLM) and "the phase scheduler
-- gives 1.6-1.8x throughput and ~4x lower tail latency" (dLLM-Serve) hang on two settings the
-- earlier rows fixed: the host (CPU) time an instance spends per step, and how many requests one
-- engine batches.  The seeds' own operating points are batch 1 with 30-35 ms of host time per step.
--
--   dkv run experiments/host_batch.lua -o host_batch.h5 [-D n=160] [-D rate=4]
--
-- LLaDA-8B, dual cache, block pool; Poisson `rate` req/s, Azure-shaped prompts (lognormal, mean 2048,
-- median 1469, at most 3840), generation 256 (the workload of multi_instance.lua, fewer requests).
-- Per (gpu, host, seqs):
--   x4_inst        throughput of 4 instances (timeslice, one shared pool, shared weights) over 1   (row 8)
--   phase/fcfs     phase-multiplexed over FCFS continuous batching, throughput                  (row 12)
--   phase/static   phase-multiplexed over static batching, throughput                           (row 12)
--   p99 fcfs/phase FCFS P99 latency over phase-multiplexed P99                                    (row 13)
--   busy_1         GPU busy fraction of the single FCFS instance (how much room instances have)
-- host: seconds of host time per step (scheduler.step_host_s); "profile" = the GPU preset's measured
-- host model (only for a preset with a profile; docs/COST_MODEL.md).  gpu a100-80g is roofline-only:
-- no hardware behind it (its figures are the model's, flagged "unmeasured").
local dkv = require "dkv"
local sweep = require "sweep"

local n = dkv.param("n", 160, "requests per run", {integer = true, min = 1})
local rate = dkv.param("rate", 4, "Poisson arrival rate, requests/s")
local gpus = {"h200", "a100-80g"}
local hosts = {0, 0.01, 0.03}
local seqss = {1, 4, 8, 32}

local function run(gpu, host, seqs, sched, inst)
  local sc = {kind = sched, max_num_seqs = seqs}
  if host ~= "profile" then sc.step_host_s = host end
  return dkv.simulate{
    model = "llada-8b", gpu = gpu,
    workload = {kind = "poisson", n = n, rate = rate, gen = 256, seed = 3,
                prompt = {kind = "lognormal", mean = 2048, median = 1469, max = 3840}},
    decode = {cache = "dual"}, mem = {kind = "blockpool"}, scheduler = sc,
    -- (the settings of several instances only with several: with one they cannot take effect, an error)
    instances = inst > 1 and {n = inst, placement = "shared", gpu_share = "timeslice", shared_weights = true} or {n = 1},
    record = {memory_every = 0, steps = false},
  }
end

local grid_host = {}
for _, h in ipairs(hosts) do grid_host[#grid_host + 1] = h end
if dkv.preset.gpu("h200").profile then grid_host[#grid_host + 1] = "profile" end

local rows = sweep{
  name = "host_batch",
  grid = {gpu = gpus, host = grid_host, seqs = seqss},
  order = {"gpu", "host", "seqs"},
  save = false,
  run = function(p)
    if p.host == "profile" and not dkv.preset.gpu(p.gpu).profile then return {skip = true} end
    local s1 = run(p.gpu, p.host, p.seqs, "phase", 1).summary
    local s4 = run(p.gpu, p.host, p.seqs, "phase", 4).summary
    local f = run(p.gpu, p.host, p.seqs, "fcfs", 1).summary
    local st = run(p.gpu, p.host, p.seqs, "static", 1).summary
    return {x4_inst = s4.throughput_rps / s1.throughput_rps,
                       phase_over_fcfs = s1.throughput_rps / f.throughput_rps,
                       phase_over_static = s1.throughput_rps / st.throughput_rps,
                       p99_fcfs_over_phase = f.latency_p99_s / s1.latency_p99_s,
                       busy_1 = f.gpu_busy_frac, tok_s_1 = f.tokens_per_s,
                       measured = dkv.preset.gpu(p.gpu).profile and 1 or 0}
  end,
}
local kept = {}
for _, r in ipairs(rows) do if not r.summary.skip then kept[#kept + 1] = r end end
rows = kept
local cols = {gpu = {}, host = {}, seqs = {}, x4_inst = {}, phase_over_fcfs = {}, phase_over_static = {},
              p99_fcfs_over_phase = {}, busy_1 = {}, tok_s_1 = {}, measured = {}}
for _, r in ipairs(rows) do
  for c, t in pairs(cols) do
    local v = r.params[c]
    if v == nil then v = r.summary[c] end
    if c == "host" then v = v == "profile" and -1 or v end
    t[#t + 1] = v
  end
end
dkv.write_run("host_batch_table", {
  params = {n = n, rate = rate},
  tables = {curves = {columns = cols, units = {host = "s (-1: the preset's profile host model)", tok_s_1 = "tokens/s"}}},
})
print(string.format("host time per step x batch (LLaDA-8B, dual cache, Poisson %g req/s, %d requests; rows 8, 12, 13)",
                    rate, n))
sweep.print(rows, {"gpu", "host", "seqs", "x4_inst", "phase_over_fcfs", "phase_over_static", "p99_fcfs_over_phase",
                   "busy_1", "tok_s_1"})
print("a100-80g: roofline preset, no hardware behind it (unmeasured).  Seeds' operating point: seqs 1, host 0.03.")
return rows
