-- test_policy.lua - the policies seen through dkv.simulate: hand-computed PCIe bytes of plain
-- offload, logit chunk peaks, layout and retention effects, routing by threshold, and
-- configuration errors that name the policy field (core/policy, docs/POLICIES.md).
local dkv = require "dkv"
local V = 126464            -- LLaDA vocabulary
local KV = 512 * 1024       -- LLaDA KV bytes per token (bf16, 32 layers)

local function expect_error(f, want)
  local ok, msg = pcall(f)
  assert(not ok, "expected an error containing '" .. want .. "'")
  assert(tostring(msg):find(want, 1, true), "error '" .. tostring(msg) .. "' lacks '" .. want .. "'")
end

local function one(extra)
  local cfg = {model = "llada-8b", gpu = "h200",
               workload = {kind = "fixed", n = 1, interval_s = 0, prompt = 512, gen = 256},
               decode = {cache = "dual", block_len = 32}, record = {memory_every = 0}}
  for k, v in pairs(extra or {}) do cfg[k] = v end
  return dkv.simulate(cfg).summary
end

-- ---------------------------------------------------------------- offload
do
  local none = one()
  local plain = one{policies = {offload = {mode = "plain"}}}
  local prog = one{policies = {offload = {mode = "progressive"}}}
  local raw = one{policies = {offload = {mode = "progressive", t1 = 0, t2 = 0}}}
  local never = one{policies = {offload = {mode = "progressive", t1 = 1, t2 = 1}}}
  -- plain: 8 blocks x 31 Reuse steps fetch the 736 cached tokens they read and do not compute
  assert(plain.pcie_h2d_bytes == 8 * 31 * 736 * KV, "plain h2d " .. plain.pcie_h2d_bytes)
  -- and copy back what every step wrote: per block one 768-token Refresh and 31 x 32 tokens
  assert(plain.pcie_d2h_bytes == 8 * (768 + 31 * 32) * KV, "plain d2h " .. plain.pcie_d2h_bytes)
  -- raw offload from the first step fetches what plain fetches, but keeps the working set
  assert(raw.pcie_h2d_bytes == plain.pcie_h2d_bytes, "raw vs plain h2d")
  assert(raw.pcie_d2h_bytes < plain.pcie_d2h_bytes)
  -- progressive moves less than plain, more than nothing
  assert(prog.pcie_h2d_bytes > 0 and prog.pcie_h2d_bytes < 0.5 * plain.pcie_h2d_bytes,
         "progressive h2d " .. prog.pcie_h2d_bytes)
  assert(never.pcie_h2d_bytes == 0 and never.pcie_d2h_bytes == 0 and none.pcie_h2d_bytes == 0)
  assert(never.latency_mean_s == none.latency_mean_s)
  assert(plain.latency_mean_s > prog.latency_mean_s and prog.latency_mean_s >= none.latency_mean_s)
  -- pageable copies are slower
  local pageable = one{policies = {offload = {mode = "plain", pinned = false}}}
  assert(pageable.latency_mean_s > plain.latency_mean_s)
end

-- ---------------------------------------------------------------- logit chunks
-- the device manager is the PyTorch-like caching allocator: a large block is not split when less
-- than 1 MiB would remain, so allocated bytes may exceed the request by up to 2 MiB
local function near(got, want, what)
  assert(got >= want and got < want + 2 * 1024 * 1024, what .. ": " .. got .. " for " .. want)
end
do
  -- block rows: 32 rows of bf16 logits + two fp32 temporaries = 32 * V * 10 bytes
  local s = one{policies = {logit = {max_num_logits = 1024}}}
  near(s.peak_logits_bytes, 32 * V * 10, "block rows peak")
  -- all rows: a Refresh computes 768 rows; chunks of 1024 hold them all, chunks of 256 a third
  s = one{decode = {cache = "dual", block_len = 32, logits = "all"}, policies = {logit = {max_num_logits = 1024}}}
  near(s.peak_logits_bytes, 768 * V * 10, "all rows peak")
  s = one{decode = {cache = "dual", block_len = 32, logits = "all"}, policies = {logit = {max_num_logits = 256}}}
  near(s.peak_logits_bytes, 256 * V * 10, "chunked peak")
  -- no temporaries (fused sampling): the bf16 chunk alone
  s = one{decode = {cache = "dual", block_len = 32, logits = "all"},
          policies = {logit = {max_num_logits = 256, upcast_tensors = 0, upcast_bytes = 0}}}
  near(s.peak_logits_bytes, 256 * V * 2, "fused peak")
end

-- ---------------------------------------------------------------- layout
do
  -- the layout policy's roofline model (a measured profile's attention does not see run lengths):
  -- a curve with 256-B runs at 0.62 and 8-KiB runs at 0.96: the KV reads get faster
  local steep = {base = "h200", profile = "", bw_curve = {{256, 0.62}, {8192, 0.96}}}
  local t = one{gpu = steep, policies = {layout = {layout = "tmajor"}}}
  local l = one{gpu = steep, policies = {layout = {layout = "layer_major", reorder = "per_block"}}}
  assert(l.latency_mean_s < t.latency_mean_s, "layer-major is faster under a steep curve")
  -- with a flat curve the layout only adds its reorder copies
  local g = dkv.preset.gpu("h200")
  g.profile = nil
  g.bw_curve = {{32, 1.0}, {65536, 1.0}}
  local tf = one{gpu = g, policies = {layout = {layout = "tmajor"}}}
  local lf = one{gpu = g, policies = {layout = {layout = "layer_major", reorder = "per_step"}}}
  assert(lf.latency_mean_s > tf.latency_mean_s, "reorder costs time when runs do not matter")
  assert(lf.hbm_read_bytes > tf.hbm_read_bytes)
end

-- ---------------------------------------------------------------- retention
do
  local function sparse(ret)
    return one{decode = {cache = "sparse", block_len = 32}, policies = {retention = ret}}
  end
  local ph = sparse{rho = 0.5, set = "per_head"}
  local sh = sparse{rho = 0.5, set = "shared"}
  local full = sparse{rho = 1.0}
  assert(ph.peak_kv_bytes == sh.peak_kv_bytes, "same bytes for both sets")
  assert(ph.peak_kv_bytes < full.peak_kv_bytes)
  -- entropy rule within its bounds: between the fixed runs at rho_min and rho_max
  local lo, hi = sparse{rho = 0.1}, sparse{rho = 0.9}
  local ent = sparse{mode = "entropy", rho_min = 0.1, rho_max = 0.9, ent_a = 2, ent_b = 2}
  assert(ent.hbm_read_bytes > lo.hbm_read_bytes and ent.hbm_read_bytes < hi.hbm_read_bytes)
  -- a callback sees every block and its value is used
  local seen = 0
  local cb = sparse{mode = "callback", rho_min = 0.05, rho_max = 1,
                    callback = function(_, _, _) seen = seen + 1; return 0.1 end}
  assert(seen == 8, "callback calls " .. seen)
  assert(cb.hbm_read_bytes == lo.hbm_read_bytes, "callback rho 0.1 == fixed 0.1")
  expect_error(function() sparse{mode = "callback", callback = function() return "x" end} end,
               "retention.callback")
  -- NaN, infinity and numeric strings are errors too (NaN used to fall back to rho silently)
  expect_error(function() sparse{mode = "callback", callback = function() return 0 / 0 end} end,
               "expected a finite number")
  expect_error(function() sparse{mode = "callback", callback = function() return math.huge end} end,
               "expected a finite number")
  expect_error(function() sparse{mode = "callback", callback = function() return "0.5" end} end,
               "returned a string")
end

-- ---------------------------------------------------------------- routing
do
  local function routed(gen, threshold)
    local r = dkv.simulate{model = "llada-8b", gpu = "h200",
                           workload = {kind = "fixed", n = 3, interval_s = 0, prompt = 64, gen = gen},
                           decode = {cache = "dual", block_len = 32},
                           policies = {routing = {enabled = true, threshold_tokens = threshold}},
                           record = {memory_every = 0}}
    local rq, k = r:requests(), 0
    for i = 1, #rq.route do k = k + rq.route[i] end
    return k
  end
  assert(routed(32, 64) == 3, "G=32 < 64: plain path")
  assert(routed(64, 64) == 0, "G=64 is not below 64: pool")
  -- break-even with the preset's cudaMalloc + cudaFree plain step: the pool pays back in a step
  assert(routed(32, 0) == 0)
end

-- ---------------------------------------------------------------- configuration errors name the field
expect_error(function() one{policies = {offload = {mode = "progressive", t1 = 1.5}}} end, "offload.t1")
expect_error(function() one{policies = {offload = {mode = "progresive"}}} end, "offload.mode")
expect_error(function() one{policies = {offload = {lowrank_ratio = 0}}} end, "offload.lowrank_ratio")
expect_error(function() one{policies = {layout = {layout = "tmajr"}}} end, "layout.layout")
expect_error(function() one{policies = {lifecycle = {rule = "deferred", delay_steps = 0, delay_s = 0}}} end,
             "lifecycle.delay_steps")
expect_error(function() one{policies = {logit = {upcast_bytes = 3}}} end, "logit.upcast_bytes")
expect_error(function() one{decode = {cache = "sparse", block_len = 32}, policies = {retention = {rho = 1.5}}} end,
             "retention.rho")
print("test_policy.lua: ok")
