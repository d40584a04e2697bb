-- test_sim.lua - dkv.simulate and dkv.save from Lua: a tiny run whose counts are known by hand,
-- the result accessors, the saved run, and configuration errors that name the field.
local dkv = require "dkv"

local function base()
  return {
    model = "tiny", gpu = "h200",
    workload = {kind = "fixed", n = 6, interval_s = 0.001, prompt = 64, gen = 32},
    decode = {cache = "dual", block_len = 16},
    scheduler = {kind = "phase", max_num_batched_tokens = 256},
  }
end

-- counts: 6 requests x 2 blocks x 16 steps, one Refresh per block
local r = dkv.simulate(base())
local s = r.summary
assert(s.n_requests == 6 and s.n_done == 6, "all requests finish")
assert(s.request_steps == 6 * 32, "request-steps: " .. s.request_steps)
assert(s.refresh_steps == 12 and s.reuse_steps == 180, "phase counts")
assert(s.phase_pred_accuracy == 1.0)
assert(s.end_allocated_kv == 0, "KV freed at the end")
assert(s.end_allocated_device == s.peak_weights_bytes, "device manager back to the weights")
assert(s.throughput_rps > 0 and s.latency_p99_s >= s.latency_p50_s)
assert(s.cost_per_mtok > 0)

local req = r:requests()
assert(#req.id == 6)
for i = 1, 6 do
  assert(req.refresh_steps[i] == 2 and req.reuse_steps[i] == 30)
  assert(req.finish_s[i] > req.start_s[i] and req.start_s[i] >= req.arrival_s[i])
end
local st = r:steps()
assert(#st.index == s.n_steps)
local items = 0
for i = 1, #st.index do
  items = items + st.n_items[i]
  assert(st.budget_tokens[i] <= 256 or st.n_items[i] == 1, "budget respected at step " .. i)
end
assert(items == s.request_steps)
local mem = r:memory()
-- two samples per step: the in-step peak (transients held), then the level after the step
assert(#mem.time_s == 2 * s.n_steps and mem.kv[#mem.kv] == 0)
for i = 1, #mem.time_s, 2 do
  assert(mem.activation[i] > 0 and mem.activation[i + 1] == 0, "transient activations at sample " .. i)
end
assert(r.config.scheduler.kind == "phase" and r.config.scheduler.max_num_batched_tokens == 256)
assert(r.config.mem.kind == "blockpool", "defaults are resolved into the config")
assert(r.config.policies.logit.max_num_logits == 16384, "preset value resolved")

-- the run is saved with its resolved config (when the script has an output file)
if dkv.output then
  assert(dkv.save(r, "tiny_phase") == true)
  local ok, err = pcall(dkv.save, r, "tiny_phase")
  assert(not ok and err:find("tiny_phase"), "duplicate run name: " .. tostring(err))
end

-- kernel records on request
local cfg = base(); cfg.record = {kernels = true}
local rk = dkv.simulate(cfg)
local k = rk:kernels()
assert(#k.kind > 0 and k.class_names[0] == "qkv")
assert(#rk:l2_kernels().kind == 0, "no L2 replay records unless asked")

-- the L2 replay's kernels (record.l2_kernels): every step's start, one layer and end, whose bytes (the layer's
-- n_layers times) are each step's class records exactly (up to rounding each record to a byte); asking for them
-- replays every step (no memo), which changes no class byte
cfg = base(); cfg.model = "llada-8b"; cfg.record = {kernels = true, l2_kernels = true}
local rl = dkv.simulate(cfg)
local l2, kk = rl:l2_kernels(), rl:kernels()
local k0 = dkv.simulate((function() local c = base(); c.model = "llada-8b"; c.record = {kernels = true}; return c end)()):kernels()
assert(#k0.kind == #kk.kind, "the same class records with and without the replay's kernels")
for i = 1, #kk.kind do
  assert(k0.read_bytes[i] == kk.read_bytes[i] and k0.write_bytes[i] == kk.write_bytes[i],
         "class bytes unchanged by record.l2_kernels (record " .. i .. ")")
end
local layers = dkv.preset.model("llada-8b").n_layers
local sum, n_rec, parts = {}, {}, {[0] = 0, 0, 0}
for i = 1, #l2.kind do
  local key = l2.step_index[i] .. ":" .. l2.kind[i]
  local m = l2.l2_part[i] == 1 and layers or 1
  sum[key] = sum[key] or {0, 0}
  sum[key][1] = sum[key][1] + m * l2.read_bytes[i]
  sum[key][2] = sum[key][2] + m * l2.write_bytes[i]
  n_rec[l2.step_index[i]] = (n_rec[l2.step_index[i]] or 0) + 1
  parts[l2.l2_part[i]] = parts[l2.l2_part[i]] + 1
  assert(l2.l2_seq[i] == (i > 1 and l2.step_index[i] == l2.step_index[i - 1] and l2.l2_seq[i - 1] + 1 or 1),
         "l2_seq counts each step's kernels from 1")
end
assert(parts[0] > 0 and parts[1] > 0 and parts[2] > 0, "start, layer and end records")
local most = 0   -- the replay's dirty bytes after each kernel: within the H200 preset's 60 MiB L2, some
for i = 1, #l2.kind do
  assert(l2.l2_dirty_bytes[i] >= 0 and l2.l2_dirty_bytes[i] <= 60 * 2 ^ 20, "dirty bytes " .. l2.l2_dirty_bytes[i])
  most = math.max(most, l2.l2_dirty_bytes[i])
end
assert(most > 1e6, "the replay holds dirty lines: " .. most)
-- (since session 48) what it holds of the residual stream, q|k|v and the attention's output: within the L2, and
-- after a layer's q|k|v GEMM some of q|k|v, after its attention some of the attention's output
local seen = {}
for i = 1, #l2.kind do
  for _, f in ipairs({"l2_held_x", "l2_held_qkv", "l2_held_att"}) do
    assert(l2[f][i] >= 0 and l2[f][i] <= 60 * 2 ^ 20, f .. " " .. l2[f][i])
  end
  local cls = kk.class_names[l2.kind[i]]
  if l2.l2_part[i] == 1 and cls == "qkv" and l2.l2_held_qkv[i] > 0 then seen.qkv = true end
  if l2.l2_part[i] == 1 and cls == "attn" and l2.l2_held_att[i] > 0 then seen.att = true end
end
assert(seen.qkv and seen.att, "the replay holds q|k|v after its GEMM and the attention's output after it")
local checked = 0
for i = 1, #kk.kind do
  local cls = kk.class_names[kk.kind[i]]
  if cls ~= "compress" and cls ~= "reorder" then   -- (not in the L2 replay)
    local s2 = sum[kk.step_index[i] .. ":" .. kk.kind[i]]
    assert(s2, "an L2 record for step " .. kk.step_index[i] .. " class " .. cls)
    local tol = layers * n_rec[kk.step_index[i]] + 1
    assert(math.abs(s2[1] - kk.read_bytes[i]) <= tol and math.abs(s2[2] - kk.write_bytes[i]) <= tol,
           string.format("step %d %s: L2 records %d / %d against the class's %d / %d", kk.step_index[i], cls,
                         s2[1], s2[2], kk.read_bytes[i], kk.write_bytes[i]))
    checked = checked + 1
  end
end
assert(checked == #kk.kind and checked > 0)
cfg.record = {l2_kernels = true}   -- alone: only the replay's records
local ra = dkv.simulate(cfg)
assert(#ra:kernels().kind == 0 and #ra:l2_kernels().kind == #l2.kind)
if dkv.output then assert(dkv.save(ra, "l2_replay") == true) end

-- dynamic retention through a Lua callback: called once per block of every request
local calls = 0
cfg = base(); cfg.decode.cache = "sparse"
cfg.policies = {retention = {callback = function(req_id, block, rho) calls = calls + 1; return 0.25 end}}
local sp = dkv.simulate(cfg)
assert(sp.summary.n_done == 6 and calls == 12, "callback calls: " .. calls)
cfg.policies.retention.callback = function() error("boom") end
local ok, err = pcall(dkv.simulate, cfg)
assert(not ok and err:find("retention.callback") and err:find("boom"), err)

-- bad configurations: the error names the field (and the nearest valid key)
local function expect(mod, pattern)
  local c = base()
  mod(c)
  local ok2, e = pcall(dkv.simulate, c)
  assert(not ok2, "expected an error matching " .. pattern)
  assert(e:find(pattern, 1, true), "error '" .. e .. "' does not contain '" .. pattern .. "'")
end
expect(function(c) c.scheduler.max_num_seq = 4 end, "unknown field 'max_num_seq' (did you mean 'max_num_seqs'?)")
expect(function(c) c.workload = {kind = "poisson", rate = -1} end, "cfg.workload.rate")
-- a KV capacity past the GPU's memory less the margin leaves the device manager nothing: an error naming both (until
-- session 51 the device capacity wrapped around to about 2^64 bytes)
expect(function(c) c.mem = {capacity_bytes = 200 * 2 ^ 30} end,
       "mem.capacity_bytes (200.00 GiB) leaves no device memory: gpu.hbm_bytes less mem.margin is")
do
  local c = base(); c.mem = {capacity_bytes = 200 * 2 ^ 30, device_capacity_bytes = 8 * 2 ^ 30}
  assert(dkv.simulate(c).summary.device_capacity_bytes == 8 * 2 ^ 30, "with device_capacity_bytes given it runs")
end
-- offload with no KV cache: identical runs (session 51's audit: plain and progressive both moved 0 bytes)
for _, mode in ipairs{"plain", "progressive"} do
  expect(function(c) c.decode = {cache = "none"}; c.policies = {offload = {mode = mode}} end,
         "cfg.policies.offload.mode: is '" .. mode .. "', but decode.cache is 'none'")
end
expect(function(c) c.decode.block_len = 0 end, "cfg.decode.block_len")
expect(function(c) c.workload.gen = 40 end, "gen_tokens 40 is not a multiple of decode.block_len 16")
expect(function(c) c.model = "llada-8b"; c.gpu = "rtx4090"; c.instances = {n = 2} end, "do not fit")
expect(function(c) c.model = "llada-8b"; c.gpu = {base = "rtx4090", hbm_bytes = 8e9} end, "does not fit")
expect(function(c) c.scheduler.kind = "phse" end, "did you mean 'phase'")
expect(function(c) c.workload.cv = 2 end, "is not used by kind 'fixed'")
expect(function(c) c.modle = "tiny" end, "did you mean 'model'")
expect(function(c) c.record = {l2_kernel = true} end, "did you mean 'l2_kernels'")
expect(function(c) c.record = {l2_kernels = 1} end, "cfg.record.l2_kernels")
expect(function(c) c.gpu = {base = "h200", l2_bytes = 0}; c.record = {l2_kernels = true} end, "has no L2")
-- settings that cannot take effect are errors naming the field, not silent defaults
local AZ = "datasets/workloads/azure_sample.csv"
for _, k in ipairs({"n", "rate", "cv", "interval_s", "users", "think_s", "think_exponential", "stagger_first",
                    "prompt", "gen"}) do   -- a synthetic workload's keys with a trace
  local v = ({n = 5, rate = 2, cv = 2, interval_s = 1, users = 2, think_s = 1, think_exponential = true,
              stagger_first = true, prompt = 64, gen = 32})[k]
  expect(function(c) c.workload = {file = AZ, [k] = v} end, "cfg.workload." .. k .. ": is not used by kind 'trace'")
end
-- a trace's seed draws only the steps per block (session 51): without steps_max > steps_min it changes nothing
expect(function(c) c.workload = {file = AZ, seed = 3} end,
       "cfg.workload.seed: is not used by kind 'trace' unless steps_max > steps_min")
do
  local c = base(); c.workload = {file = AZ, first_n = 4, seed = 3, steps_min = 4, steps_max = 32}
  assert(dkv.simulate(c).summary.n_requests == 4, "a trace's seed with drawn steps runs")
end
expect(function(c) c.workload = {kind = "poisson", format = "azure"} end,
       "cfg.workload.format: is not used by kind 'poisson'")
expect(function(c) c.workload.lenient = true end, "cfg.workload.lenient: is not used by kind 'fixed'")
expect(function(c) c.workload.file = AZ end, "cfg.workload.file: is not used by kind 'fixed'")
expect(function(c) c.workload.prompt = {kind = "uniform", lo = 10, hi = 100, mu = 3} end,
       "cfg.workload.prompt.mu: is not used by kind 'uniform'")
expect(function(c) c.workload.prompt = {kind = "fixed", value = 64, lo = 3} end,
       "cfg.workload.prompt.lo: is not used by kind 'fixed'")
expect(function(c) c.workload.prompt = {kind = "lognormal", mu = 4, sigma = 0.5, hi = 9} end,
       "cfg.workload.prompt.hi: is not used by kind 'lognormal'")
expect(function(c) c.workload.prompt = {kind = "lognormal", mean = 100, median = 60, sigma = 0.5} end,
       "cfg.workload.prompt.sigma: is not used with mean and median")
expect(function(c) c.workload.gen = {kind = "empirical", file = "x.txt", value = 32} end,
       "cfg.workload.gen.value: is not used by kind 'empirical'")
do   -- what each kind does use still runs
  local c = base(); c.workload = {file = AZ, first_n = 3, gen_max = 64}
  assert(dkv.simulate(c).summary.n_requests == 3)
  c = base(); c.workload.prompt = {kind = "uniform", lo = 16, hi = 64, max = 48}
  assert(dkv.simulate(c).summary.n_requests == 6)
end
expect(function(c) c.mem = {kind = "blockpool", max_split_size = 2 ^ 30} end,
       "cfg.mem.max_split_size: is for kind = 'caching' (kind is 'blockpool')")
expect(function(c) c.mem = {kind = "static", max_split_size = 2 ^ 30} end, "cfg.mem.max_split_size: is for kind = 'caching'")
for _, kind in ipairs({"static", "caching"}) do
  for k, v in pairs({chunk_blocks = 4, initial_bytes = 2 ^ 20, grow = false, shrink = true}) do
    expect(function(c) c.mem = {kind = kind, [k] = v} end,
           "cfg.mem." .. k .. ": is for kind = 'blockpool' (kind is '" .. kind .. "')")
  end
end
expect(function(c) c.mem = {capacity_bytes = 2 ^ 30, kv_frac = 0.5} end, "cfg.mem.kv_frac: is not used when capacity_bytes is given")
expect(function(c) c.mem = {kind = "caching", kv_frac = 0.5} end, "cfg.mem.kv_frac: is not used when kind is 'caching'")
expect(function(c) c.mem = {kind = "caching", device_capacity_bytes = 2 ^ 30} end,
       "cfg.mem.device_capacity_bytes: is not used when kind is 'caching'")
for k, v in pairs({placement = "partitioned", gpu_share = "spatial", shared_weights = true, guaranteed_frac = 0.3,
                   burst_frac = 0.5, route = "least_loaded", weights = {1}}) do
  expect(function(c) c.instances = {n = 1, [k] = v} end, "cfg.instances." .. k .. ": is not used when instances.n is 1")
end
expect(function(c) c.instances = {n = 2, placement = "partitioned", guaranteed_frac = 0.3} end,
       "cfg.instances.guaranteed_frac: is not used when instances.placement is 'partitioned'")
expect(function(c) c.mem = {kind = "static"}; c.instances = {n = 2, weights = {1, 2}} end,
       "cfg.instances.weights: is not used when mem.kind is 'static'")
do   -- the settings where they take effect still run
  local c = base(); c.mem = {kind = "caching", max_split_size = 2 ^ 30}; assert(dkv.simulate(c).summary.n_done == 6)
  c = base(); c.mem = {kind = "blockpool", chunk_blocks = 4, grow = true, shrink = true, kv_frac = 0.5}
  assert(dkv.simulate(c).summary.n_done == 6)
  c = base(); c.instances = {n = 2, placement = "shared", guaranteed_frac = 0.3, weights = {1, 2}, shared_weights = true}
  assert(dkv.simulate(c).summary.n_done == 6)
end
print("test_sim.lua: ok")

-- sim.first_use (docs/COST_MODEL.md, "Cold shapes"): "run" (true, the default) starts every run cold;
-- "process" shares this process's warm shapes between runs, so the same run again pays no first use;
-- false / "off" charges none.  The measured h200 profile has first-use costs.
do
  local function fu(v) local c = base(); c.model = "llada-8b"; c.sim = {first_use = v}; return dkv.simulate(c) end
  local run1, run2 = fu("run"), fu(true)
  assert(run1.summary.sim_time_s == run2.summary.sim_time_s, "first_use run: every run starts cold")
  assert(run1.config.sim.first_use == "run" and run2.config.sim.first_use == "run")
  local off = fu(false)
  assert(off.config.sim.first_use == "off" and off.summary.sim_time_s < run1.summary.sim_time_s,
         "first_use off charges nothing")
  local p1, p2 = fu("process"), fu("process")
  assert(p1.config.sim.first_use == "process")
  assert(p1.summary.sim_time_s == run1.summary.sim_time_s, "the first process run pays the cold shapes")
  assert(p2.summary.sim_time_s == off.summary.sim_time_s, "the second finds them warm: "
         .. p2.summary.sim_time_s .. " vs " .. off.summary.sim_time_s)
  local ok, err = pcall(fu, "sometimes")
  assert(not ok and tostring(err):find("sim.first_use", 1, true) and tostring(err):find("process", 1, true), tostring(err))
  ok, err = pcall(fu, 3)
  assert(not ok and tostring(err):find("sim.first_use", 1, true), tostring(err))
end

-- sim.warm_gemms (default true, as dkv.execute's warm_gemms): after the CUDA backend's GEMM warm-up a
-- shape of at most 8,192 rows (core/model/gemm_warm.h) plans with its bucket's algorithm, so it has no
-- first use; false charges first_use.gemm_s (h200-20261201k: 0.000319822 s) for each new GEMM shape
-- (q|k|v, o, the FFN's two, the LM head's chunks), and a shape above 8,192 rows is charged either way.
-- On k: no clock model, so the charges add exactly.
do
  local GEMM_S = 0.000319822
  local function t(prompt, warm, fu, n)
    local c = {model = "llada-8b", gpu = {base = "h200", profile = "h200-20261201k"},
               workload = {kind = "fixed", n = n or 1, interval_s = 0, prompt = prompt, gen = 32},
               decode = {cache = "dual", block_len = 32, steps = 8}, sim = {first_use = fu, warm_gemms = warm}}
    local r = dkv.simulate(c)
    assert(r.config.sim.warm_gemms == warm, "the resolved config records sim.warm_gemms")
    return r.summary.sim_time_s
  end
  local n = (t(512, false, "run") - t(512, true, "run")) / GEMM_S
  assert(n >= 8 and math.abs(n - math.floor(n + 0.5)) < 1e-6,
         string.format("warm_gemms=false: %.6f GEMM first uses more (want a whole number >= 8)", n))
  -- three prompts of 3,000 at t = 0: a first Refresh step of 9,096 rows
  local big = (t(3000, true, "run", 3) - t(3000, true, false, 3)) / GEMM_S
  local big_cold = (t(3000, false, "run", 3) - t(3000, false, false, 3)) / GEMM_S
  assert(big >= 4 - 1e-6 and big < big_cold - 1,
         string.format("a 9,096-row shape is a first use even after the warm-up (%.3f of %.3f charges)", big, big_cold))
  local ok, err = pcall(t, 512, 1, "run")
  assert(not ok and tostring(err):find("sim.warm_gemms", 1, true) and tostring(err):find("boolean", 1, true), tostring(err))
end

-- sim.kernel_scale (default 1; the machine calibration, docs/COST_MODEL.md "Machine calibration"):
-- every kernel time x the scale.  One request, no copies, no first use, profile k (no clock model):
-- the steps' compute scales exactly, and the run is longer by that alone (host time unscaled); 0, negatives, above 10 and
-- non-numbers are errors naming sim.kernel_scale.
do
  local function r(ks)
    return dkv.simulate({model = "llada-8b", gpu = {base = "h200", profile = "h200-20261201k"},
                         workload = {kind = "fixed", n = 1, interval_s = 0, prompt = 512, gen = 32},
                         decode = {cache = "dual", block_len = 32, steps = 8},
                         sim = {first_use = false, kernel_scale = ks}, record = {steps = true}})
  end
  local one, more = r(nil), r(1.1)
  assert(one.config.sim.kernel_scale == 1 and more.config.sim.kernel_scale == 1.1, "the resolved config records it")
  local s1, s2 = one:steps(), more:steps()
  local c1, c2 = 0, 0
  for i = 1, #s1.compute_s do c1, c2 = c1 + s1.compute_s[i], c2 + s2.compute_s[i] end
  assert(#s1.compute_s == #s2.compute_s and #s1.compute_s > 0, "the same plans")
  assert(math.abs(c2 / c1 - 1.1) < 1e-9, string.format("compute x %.9f, want x 1.1", c2 / c1))
  local dt = more.summary.sim_time_s - one.summary.sim_time_s
  assert(math.abs(dt - (c2 - c1)) < 1e-9, string.format("the run is longer by the kernels' tenth only (%.9f, %.9f)", dt, c2 - c1))
  for _, bad in ipairs({0, -1, 11, "fast"}) do
    local ok, err = pcall(r, bad)
    assert(not ok and tostring(err):find("sim.kernel_scale", 1, true), tostring(err))
  end
end

-- The low-rank compressor's first call costs what the profile measured for it when the backend did not
-- warm it (sim.warm_compressor = false: runs recorded before session 36): h200-20261201k has no
-- first_use.compress_s, so the loader takes the largest first_s of kernels.compress (0.141333 s,
-- not first_use.other_s): the only class the offload adds.  With sim.warm_compressor (the default, as
-- the CUDA backend creates and runs its compressor at begin) it costs nothing.  On k, not the shipped
-- l: l's clock model couples each step to the ones before it through their start times, which the cold
-- cost moves.
do
  local function run(off, fu, wc)
    local c = {model = "llada-8b", gpu = {base = "h200", profile = "h200-20261201k"}, workload = {kind = "fixed", n = 2, interval_s = 0, prompt = 512, gen = 64},
               decode = {cache = "dual", block_len = 32, steps = 8}, sim = {first_use = fu, warm_compressor = wc},
               policies = off and {offload = {mode = "progressive", t1 = 1 / 3, t2 = 2 / 3, lowrank_ratio = 0.3}} or nil}
    return dkv.simulate(c)
  end
  local function t(off, fu, wc) return run(off, fu, wc).summary.sim_time_s end
  local with, without = t(true, "run", false) - t(true, false, false), t(false, "run", false) - t(false, false, false)
  assert(math.abs((with - without) - 0.141333) < 1e-9,
         string.format("first compression: %.9g s more cold cost", with - without))
  local warm = t(true, "run") - t(true, false)
  assert(math.abs(warm - without) < 1e-12, string.format("warm compressor: %.9g s more cold cost than without offload",
                                                        warm - without))
  local r = run(true, "run")
  assert(r.config.sim.warm_compressor == true, "the resolved config records sim.warm_compressor")
  -- the compressor's memory is counted from the run's start (core/engine/engine_devmem.c), so a run that
  -- could compress but never reaches phase 2 (t1 0.999 of 16 steps) holds it; one whose policy cannot
  -- compress (t1 = t2 = 1) does not, and counts what a run without offload counts
  local function counted(t1, t2)
    local c = {model = "llada-8b", gpu = {base = "h200", profile = "h200-20261201k"},
               workload = {kind = "fixed", n = 2, interval_s = 0, prompt = 512, gen = 64},
               decode = {cache = "dual", block_len = 32, steps = 8},
               policies = t1 and {offload = {mode = "progressive", t1 = t1, t2 = t2, lowrank_ratio = 0.3}} or nil}
    local rr = dkv.simulate(c)
    assert(rr.summary.pcie_d2h_bytes == 0, "no copies")
    return rr.summary.device_counted_bytes
  end
  local none, never, late = counted(), counted(1, 1), counted(0.999, 1)
  assert(never == none and late > none + 1e8,
         string.format("compressor counted from the start: none %d, never %d, late %d bytes", none, never, late))
  local ok, err = pcall(run, true, "run", "yes")
  assert(not ok and tostring(err):find("sim.warm_compressor", 1, true), tostring(err))
  -- a setting that cannot take effect is an error: the compressor is warmed with the GEMMs
  local c = {model = "llada-8b", gpu = "h200", workload = {kind = "fixed", n = 1, interval_s = 0, prompt = 64, gen = 32},
             decode = {cache = "dual", block_len = 32, steps = 8}, sim = {warm_gemms = false, warm_compressor = true}}
  ok, err = pcall(dkv.simulate, c)
  assert(not ok and tostring(err):find("sim.warm_compressor", 1, true) and tostring(err):find("warm_gemms", 1, true),
         tostring(err))
  c.sim.warm_compressor = false
  assert(dkv.simulate(c).config.sim.warm_compressor == false)
end

-- The timeslice hand-over (scheduler.step_release_s, handover_s; core/engine/engine.h): two
-- instances, every request at t = 0: consecutive steps of the two are release + handover apart;
-- the config records the values; a negative one is an error naming the field.
do
  local function t(rel, ho)
    local c = base()
    c.workload = {kind = "fixed", n = 4, interval_s = 0, prompt = 64, gen = 32}
    c.scheduler = {kind = "phase", max_num_seqs = 1, step_host_s = 2e-4, step_release_s = rel, handover_s = ho}
    c.instances = {n = 2}
    return dkv.simulate(c)
  end
  local r0, r1 = t(0, 0), t(1e-4, 5e-5)
  assert(r1.config.scheduler.step_release_s == 1e-4 and r1.config.scheduler.handover_s == 5e-5)
  -- not given on a profiled GPU: the profile's host model is used, and the resolved config says so
  local cp = {model = "llada-8b", gpu = "h200", workload = {kind = "fixed", n = 2, interval_s = 0, prompt = 64, gen = 32},
              decode = {cache = "dual", block_len = 32, steps = 8}}
  local rp = dkv.simulate(cp)
  assert(rp.config.scheduler.handover_s == "profile" and rp.config.scheduler.step_host_s == "profile",
         tostring(rp.config.scheduler.handover_s))
  local st, n = r1:steps(), 0
  for j = 1, #st.start_s - 1 do
    if st.instance[j] ~= st.instance[j + 1] then
      local gap = st.start_s[j + 1] - st.start_s[j] - st.time_s[j]
      assert(math.abs(gap - 1.5e-4) < 1e-12, string.format("hand-over gap %.9g s, want 1.5e-4", gap))
      n = n + 1
    end
  end
  assert(n > 50, "the instances alternate: " .. n)
  assert(r1.summary.sim_time_s > r0.summary.sim_time_s, "the hand-overs cost time")
  local ok, err = pcall(t, 0, -1)
  assert(not ok and tostring(err):find("handover_s", 1, true), tostring(err))
end

-- scheduler.step_host_s not given on a profiled GPU: the engine's planning per step comes from the
-- profile's host table (h200-20261201g: base_s + per_item_s x items, fitted by scripts/fit_host.py
-- from dkv.execute's per-step records), so a single instance's run is longer by exactly that per step
do
  local function t(h)
    local c = {model = "llada-8b", gpu = "h200", workload = {kind = "fixed", n = 1, interval_s = 0, prompt = 64, gen = 32},
               decode = {cache = "dual", block_len = 32, steps = 8}, scheduler = {step_host_s = h}}
    return dkv.simulate(c)
  end
  local r0, rp = t(0), t(nil)
  local steps = #rp:steps().start_s
  local d = rp.summary.sim_time_s - r0.summary.sim_time_s
  local want = (steps - 1) * (3.95356e-06 + 6.49104e-07)   -- one item per step; the last step's planning ends the run
  assert(d > 0 and math.abs(d - want) < 1e-9,
         string.format("profile planning: %.9g s more over %d steps (want %.9g)", d, steps, want))
end

-- instances.burst_frac caps what one instance of a shared block pool holds (until session 51 it was parsed, checked
-- and documented but never reached the pool): two instances, 8 GiB, burst 0.3 -> together at most 0.6 of the pool
do
  local function peak(b)
    return dkv.simulate{model = "llada-8b", gpu = "h200", seed = 1, record = {memory_every = 0},
      workload = {kind = "poisson", n = 40, rate = 20, prompt = 2048, gen = 128, seed = 3},
      decode = {cache = "dual", block_len = 32}, mem = {kind = "blockpool", capacity_bytes = 8 * 2 ^ 30},
      instances = {n = 2, guaranteed_frac = 0.2, burst_frac = b}}.summary.peak_kv_bytes
  end
  local full, capped = peak(1), peak(0.3)
  assert(capped <= 2 * 0.3 * 8 * 2 ^ 30, "burst_frac 0.3: peak KV " .. capped .. " past 2 x 0.3 of the pool")
  assert(full > 2 * 0.3 * 8 * 2 ^ 30, "burst_frac 1: the workload must fill more than the capped share (" .. full .. ")")
end
