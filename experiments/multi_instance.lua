-- multi_instance.lua - N engine instances on one GPU sharing one KV pool or partitioning it
-- (Flash-dLLM's claim: "3.8x with 4 instances").
--
--   dkv run experiments/multi_instance.lua -o multi.h5 [-D seqs=8] [-D rate=8] [-D n=400]
--
-- LLaDA-8B on the H200 preset, dual cache, block pool, phase scheduler; each instance runs at
-- most `seqs` requests (a small engine: the regime where several instances could help).
-- Workload: Poisson at `rate` req/s (above what the GPU serves: saturation), Azure-shaped prompts
-- (lognormal, mean 2048, median 1469, at most 3840 tokens), generation 256; requests go to
-- instances round-robin.
-- Grid: instances 1, 2, 4, 8 x pool shared / partitioned x GPU sharing timeslice (one instance's
-- step at a time) / spatial (MPS-like: the ready instances' steps run as one merged step) x
-- weights separate (one copy per instance, as separate processes) / shared (one copy).
-- host: per-step host time of an instance (scheduler.step_host_s): 0 (a pure GPU roofline) and
-- 0.03 s (the gap between Fast-dLLM's measured ~40 ms Reuse step and the 3.7 ms floor on this
-- H200, ANCHORS.md): with host time, a single instance leaves the GPU idle between its steps and
-- further instances fill those gaps.
local dkv = require "dkv"
local sweep = require "sweep"

local seqs = dkv.param("seqs", 8, "max requests per instance (max_num_seqs)", {integer = true, min = 1})
local rate = dkv.param("rate", 4, "Poisson arrival rate, requests/s")
local n = dkv.param("n", 400, "requests", {integer = true, min = 1})
local hosts = {0, dkv.param("host", 0.03, "per-step host time of an instance, s (the grid also runs 0)")}

local rows = sweep{
  name = "multi",
  grid = {host = hosts, weights = {"separate", "shared"}, share = {"timeslice", "spatial"},
          placement = {"shared", "partitioned"}, inst = {1, 2, 4, 8}},
  order = {"host", "weights", "share", "placement", "inst"},
  run = function(p)
    local ok, r = pcall(dkv.simulate, {
      model = "llada-8b", gpu = "h200",
      workload = {kind = "poisson", n = n, rate = rate, gen = 256, seed = 3,
                  prompt = {kind = "lognormal", mean = 2048, median = 1469, max = 3840}},
      decode = {cache = "dual"}, mem = {kind = "blockpool"},
      scheduler = {kind = "phase", max_num_seqs = seqs, step_host_s = p.host},
      -- one instance: the same run in every (weights, share, placement) column, as the settings of several
      -- instances cannot take effect with one (given, they are an error)
      instances = p.inst > 1 and {n = p.inst, placement = p.placement, gpu_share = p.share,
                                  shared_weights = p.weights == "shared"} or {n = 1},
      record = {memory_every = 16},
    })
    if ok then return r end
    return {error = tostring(r):match("do not fit") and "weights do not fit" or tostring(r)}
  end,
}

-- speed-up over the single instance of the same (weights, share, placement) column
local base = {}
for _, r in ipairs(rows) do
  if r.params.inst == 1 and r.summary.throughput_rps then
    base[r.params.host .. r.params.weights .. r.params.share .. r.params.placement] = r.summary.throughput_rps
  end
end
print(string.format("instances on one H200 (LLaDA-8B, dual cache, phase scheduler, max_num_seqs %d per instance, "
                    .. "Poisson %g req/s, Azure-shaped P, G 256)", seqs, rate))
sweep.print(rows, {"host", "weights", "share", "placement", "inst",
  {"done", function(r) return r.summary.n_done or r.summary.error end},
  "throughput_rps", "tokens_per_s",
  {"speedup", function(r)
    local b = base[r.params.host .. r.params.weights .. r.params.share .. r.params.placement]
    return b and r.summary.throughput_rps and r.summary.throughput_rps / b or nil
  end},
  "latency_p99_s", "mean_batch", "gpu_busy_frac",
  {"peak_kv_GiB", function(r) return r.summary.peak_kv_bytes and r.summary.peak_kv_bytes / 2^30 end},
  "n_oom"})
return rows
