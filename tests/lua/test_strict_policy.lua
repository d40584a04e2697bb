-- test_strict_policy.lua - policy inputs are strict (issue 12, item 3): a retention callback's
-- NaN, inf or out-of-range value is an error naming the callback's file:line, the request, the
-- block and the value; clamping happens only when asked (retention.clamp) and is counted; a
-- setting that cannot take effect in the chosen configuration is an error naming it.
local dkv = require "dkv"

local function cfg(ret, extra)
  local c = {model = "llada-8b", gpu = "h200", seed = 3, decode = {cache = "sparse"},
             workload = {kind = "poisson", n = 4, rate = 20, prompt = 128, gen = 64},
             policies = {retention = ret}, record = {steps = false, memory_every = 0}}
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end
local function returns(v)   -- a callback whose block 1 value is v; it is defined on line 15
  return function(_, blk, _) if blk == 1 then return v end return 0.5 end
end

for _, case in ipairs{{0 / 0, "returned %-?nan"}, {math.huge, "returned inf"}, {-math.huge, "returned %-inf"},
                      {2.0, "returned 2 for request %d+ block 1: outside %[rho_min, rho_max%] = %[0.1, 0.9%]"},
                      {-1, "returned %-1 for request %d+ block 1: outside"}} do
  local ok, err = pcall(dkv.simulate, cfg({callback = returns(case[1])}))
  assert(not ok, "value " .. tostring(case[1]) .. " was accepted")
  assert(err:find("cfg.policies.retention.callback (", 1, true), err)
  assert(err:find("test_strict_policy.lua:15)", 1, true), "names the callback's file:line: " .. err)
  assert(err:find(case[2]), err)
end

-- clamping only when asked for, and counted
local r = dkv.simulate(cfg({callback = returns(2.0), clamp = true}))
assert(r.summary.rho_clamped == 4, "4 requests x block 1 clamped, got " .. r.summary.rho_clamped)
r = dkv.simulate(cfg({callback = returns(0.5)}))
assert(r.summary.rho_clamped == 0)
r = dkv.simulate(cfg({callback = returns(0.5), rho_min = 0.05, rho_max = 1.0}))
assert(r.summary.n_done == 4)

-- settings that cannot take effect
local function refused(c, want)
  local ok, err = pcall(dkv.simulate, c)
  assert(not ok, "accepted: " .. want)
  assert(err:find(want, 1, true), "expected '" .. want .. "' in: " .. err)
end
refused(cfg({callback = returns(0.5)}, {decode = {cache = "dual"}}),
        "cfg.policies.retention.callback: is not used when decode.cache is 'dual' (retention applies to cache = 'sparse')")
refused(cfg({rho = 0.3}, {decode = {cache = "prefix"}}), "cfg.policies.retention.rho: is not used when decode.cache is 'prefix'")
refused(cfg({mode = "fixed", rho_min = 0.2}), "cfg.policies.retention.rho_min: is not used when retention.mode is 'fixed'")
refused(cfg({mode = "entropy", clamp = true}), "cfg.policies.retention.clamp: is not used when retention.mode is 'entropy'")
refused(cfg({callback = returns(0.5), ent_a = 3}), "cfg.policies.retention.ent_a: is not used when retention.mode is 'callback'")
local base = cfg(nil, {decode = {cache = "dual"}})
base.policies = {offload = {mode = "none", t1 = 0.5}}
refused(base, "cfg.policies.offload.t1: is not used when offload.mode is 'none'")
base.policies = {offload = {mode = "plain", lowrank_ratio = 0.5}}
refused(base, "cfg.policies.offload.lowrank_ratio: is not used when offload.mode is 'plain'")
base.policies = {lifecycle = {delay_s = 1}}
refused(base, "cfg.policies.lifecycle.delay_s: is not used when lifecycle.rule is 'immediate'")
base.policies = {routing = {threshold_tokens = 64}}
refused(base, "cfg.policies.routing.threshold_tokens: is not used when routing.enabled is false")
-- the same settings where they take effect are accepted
base.policies = {offload = {mode = "progressive", t1 = 0.5, t2 = 0.75, lowrank_ratio = 0.5, pinned = false},
                 lifecycle = {rule = "deferred", delay_s = 1}, routing = {enabled = true, threshold_tokens = 64}}
assert(dkv.simulate(base).summary.n_done == 4)
print("strict policy inputs ok")
