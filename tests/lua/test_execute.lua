-- test_execute.lua - dkv.execute from Lua: the same configuration as dkv.simulate.  Without a GPU
-- (here, and in CI) it must fail with "dkv.execute: no CUDA device (<reason>)" and nothing else;
-- with one, it returns the result type of dkv.simulate (dkv.save takes it) and a device table.
-- The configuration's errors are reported by the same parser either way on a GPU machine.
local dkv = require "dkv"

-- the tiny preset with head_dim 64 (the attention kernels take 64 or 128)
local cfg = {
  model = {base = "tiny", name = "tiny-d64", hidden = 128, n_heads = 2, n_kv_heads = 1, head_dim = 64},
  gpu = "h200",
  workload = {kind = "fixed", n = 3, interval_s = 0, prompt = 64, gen = 32},
  decode = {cache = "dual", block_len = 16, steps = 4},
  mem = {kind = "blockpool", capacity_bytes = 4 * 2^20},
}

assert(type(dkv.execute) == "function", "dkv.execute exists")
local ok, r, dev = pcall(dkv.execute, cfg)
if not ok then
  local msg = tostring(r)
  assert(msg:find("dkv.execute: no CUDA device (", 1, true), "names the cause: " .. msg)
  assert(msg:find(")", 1, true), "the reason is given in parentheses: " .. msg)
  -- an options table does not change that
  local ok2, msg2 = pcall(dkv.execute, cfg, {device = 0, attn_streams = 2})
  assert(not ok2 and tostring(msg2):find("no CUDA device", 1, true), tostring(msg2))
  -- the cfg argument is still checked first
  local ok3, msg3 = pcall(dkv.execute, 42)
  assert(not ok3 and tostring(msg3):find("table expected", 1, true), tostring(msg3))
  print("no GPU: " .. msg)
  return
end

-- a GPU: the result is dkv.simulate's type, every request finished, the device table is filled
local s = r.summary
assert(s.n_done == 3 and s.request_steps == 3 * 2 * 4, "all steps ran: " .. s.request_steps)
assert(s.tokens_per_s > 0 and s.gen_tokens == 96)
local steps = r:steps()
assert(#steps.index == s.n_steps and steps.time_s[1] > 0)
assert(dev.device:find("sm_", 1, true) and dev.arena_bytes > 0 and dev.steps == s.n_steps)
assert(#dev.memory.free_bytes == s.n_steps)
local sim = dkv.simulate(cfg)
assert(sim.summary.request_steps == s.request_steps, "the simulator ran the same plan")
assert(dkv.save(r, "execute") ~= nil)
-- a configuration the device cannot run is refused with the field named
local bad = {}
for k, v in pairs(cfg) do bad[k] = v end
bad.mem = {kind = "caching"}
local okb, msgb = pcall(dkv.execute, bad)
assert(not okb and tostring(msgb):find("cfg.mem.kind", 1, true), tostring(msgb))
print(string.format("GPU: %s, %.1f tokens/s", dev.device, s.tokens_per_s))
