-- scripts/bench_sim.lua - simulator speed benchmark (not a test): the whole Azure LLM code trace
-- through LLaDA-8B on the H200 preset, dual cache, block pool, phase-multiplexed scheduler.
--
--   dkv run scripts/bench_sim.lua [-D trace=PATH] [-D clamp=1] [-D rec=false] [-D profile=NAME]
--
-- trace: defaults to ../shared/datasets/AzureLLMInferenceTrace_code.csv (not shipped; see README).
-- clamp=1 clamps prompts to 3072 and generations to 1024 so every request fits LLaDA's 4096-token
-- canvas (otherwise requests longer than that are rejected as too_long and counted).
-- rec=false turns off per-step and memory recording.  profile=NAME costs kernels from
-- datasets/profiles/NAME.lua (the h200 preset with that profile).  Prints wall time and simulated/wall ratio.
local dkv = require "dkv"
local wl = {file = dkv.param("trace", "../shared/datasets/AzureLLMInferenceTrace_code.csv", "workload trace file")}
local clamp = dkv.param("clamp", nil, "any value but false: clamp prompts to 3072 and generations to 1024")
if clamp then wl.prompt_max = 3072; wl.gen_max = 1024 end
local rec = dkv.param("rec", true, "record steps and memory")
local profile = dkv.param("profile", nil, "cost kernels from datasets/profiles/<profile>.lua (h200 with that profile)")
local gpu = profile and {base = "h200", profile = profile} or "h200"
local r = dkv.simulate{model = "llada-8b", gpu = gpu, workload = wl,
  decode = {cache = "dual"}, mem = {kind = "blockpool"}, scheduler = {kind = "phase"},
  record = {steps = rec, memory_every = rec and 1 or 0}}
local s = r.summary
print(string.format("requests %d done %d too_long %d oom %d | engine steps %d request-steps %d | " ..
  "simulated %.1f s | engine wall %.3f s | simulated/wall %.0fx",
  s.n_requests, s.n_done, s.n_too_long, s.n_oom, s.n_steps, s.request_steps, s.sim_time_s, s.wall_s,
  s.sim_time_s / s.wall_s))
