-- experiments/hw_long_ctx.lua - long contexts in one batch (issue 9, session 13): 8 requests of 2,048-3,072
-- prompt tokens at t = 0, dual cache, through dkv.execute and dkv.simulate (runs lc:<point>:real / :sim).
-- An in-sample diagnostic, not a held-out point: its workloads are synthetic (fixed or uniform prompt
-- lengths), disjoint from experiments/hw_heldout_points.lua's trace samples.  Call 29's class events put
-- the held-out mc:dual,long's Reuse attention 10 % above the simulator (docs/COST_MODEL.md "Per class on
-- today's backend"); these points separate long contexts (u2048, u3072: every item the same length) from
-- a batch of different lengths (mix: uniform 2,048-3,072), the simulator's heterogeneous-batch rule.
--
--   dkv run experiments/hw_long_ctx.lua -o lc.h5 [-D backend=auto|sim|cuda] [-D class_timing=true|false]
--       [-D warmup=each] [-D point=mix]
--
-- Expected device time: ~3 s per dkv.execute, two per point with -D warmup=each: ~25 s.
local dkv = require "dkv"
local hw = require "hw_lib"

local points = {
  {"u2048", 2048},
  {"u3072", 3072},
  {"mix", {kind = "uniform", lo = 2048, hi = 3072}},
}
local only = hw.param("point", nil, "run only this point (u2048, u3072 or mix; nil: all)")
local rows = {}
for _, pt in ipairs(points) do
  if not only or only == pt[1] then
    local cfg = {model = hw.param("model", "llada-8b", "model preset (datasets/presets/model/)"),
      gpu = hw.param("gpu", "h200", "GPU preset (datasets/presets/gpu/)"), seed = 1,
      workload = {kind = "fixed", n = 8, interval_s = 0, prompt = pt[2], gen = 64},
      decode = {cache = "dual", block_len = 32, steps = 8},
      scheduler = {kind = "phase", max_num_seqs = 8},
      mem = {kind = "blockpool", capacity_bytes = 16 * hw.GiB},
      record = {kernels = true}}
    local p = hw.pair("lc", pt[1], cfg)
    local row = hw.row(p)
    local x = p.real or p.sim
    if x then row.n_steps = x.summary.n_steps end
    rows[#rows + 1] = row
  end
end
assert(#rows > 0, "hw_long_ctx: no point matches -D point=" .. tostring(only))
print("hw long contexts: 8 requests at t = 0, prompts 2,048-3,072 + 64, dual cache, blocks of 32 in 8 steps")
hw.print_table(rows, {{"point", "point"}, {"n_steps", "steps"}, {"sim_s", "sim_s", "%.4f"}, {"real_s", "real_s", "%.4f"},
  {"sim_lat_s", "sim_lat", "%.4f"}, {"real_lat_s", "real_lat", "%.4f"}})
hw.footer("hw_long_ctx", rows)
