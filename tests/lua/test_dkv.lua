-- test_dkv.lua - the dkv module as scripts see it (run by tests/run.sh with `dkv run -o FILE`):
-- version, params, shard, presets, model arithmetic, budget, literal, write_run.
local dkv = require "dkv"

assert(type(dkv.version) == "string" and dkv.version:match("^%d+%.%d+%.%d+"), dkv.version)
assert(type(dkv.git_commit) == "string")
for k in pairs(dkv.params) do error("no -D given, got " .. k) end
assert(dkv.shard.index == 0 and dkv.shard.count == 1)
assert(#dkv.shard.select({1, 2, 3}) == 3 and dkv.shard.mine(1))

-- presets: names, resolved tables, overrides, errors naming the field
local gpus = dkv.preset.list("gpu")
-- the list is the preset files, sorted (tests/unit/test_lua.c compares it with the folder): a new
-- preset needs no change here
assert(#gpus >= 2, table.concat(gpus, " "))
for i = 2, #gpus do assert(gpus[i - 1] < gpus[i], table.concat(gpus, " ")) end
local has_h200 = false
for _, name in ipairs(gpus) do has_h200 = has_h200 or name == "h200" end
assert(has_h200, "the h200 preset the tests below use")
for _, name in ipairs(gpus) do
  local g = dkv.preset.gpu(name)
  assert(g.name == name and g.hbm_bytes > 0 and g.source ~= nil and #g.bw_curve > 0, name)
  assert(g.max_num_logits > 0 and g.max_num_batched_tokens > g.max_num_logits and g.retention > 0)
  assert(g.cost_per_hour > 0 and g.launch_overhead_s > 0 and g.pcie_h2d_pageable < g.pcie_h2d_pinned)
end
local h = dkv.preset.gpu{base = "h200", hbm_bytes = 96 * 2^30}
assert(h.hbm_bytes == 96 * 2^30 and h.hbm_bw == 4292e9 and h.name == "h200+custom")
local ok, err = pcall(function() return dkv.preset.gpu{base = "h200", pcie_h2d_pinnd = 1} end)
assert(not ok and err:find("gpu: unknown field 'pcie_h2d_pinnd' (did you mean 'pcie_h2d_pinned'?)", 1, true), err)
assert(err:find("test_dkv.lua:%d+:"), "error carries the script position: " .. err)
ok, err = pcall(dkv.preset.model, {base = "tiny", vocab = 2.5})
assert(not ok and err:find("model.vocab: expected an integer, got 2.5", 1, true), err)

-- per-kernel-class calibration (kclass): read back, checked, and it changes the simulated time
local kc = dkv.preset.gpu{base = "h200", profile = "", kclass = {attn = {scale = 2.5, launch_s = 16e-6}}}
assert(kc.kclass.attn.scale == 2.5 and kc.kclass.attn.launch_s == 16e-6 and kc.kclass.qkv == nil)
assert(next(dkv.preset.gpu("h200").kclass or {}) == nil, "the shipped h200 preset is uncalibrated")
ok, err = pcall(dkv.preset.gpu, {base = "h200", kclass = {atn = {scale = 1, launch_s = 0}}})
assert(not ok and err:find("gpu.kclass: unknown field 'atn' (did you mean 'attn'?)", 1, true), err)
ok, err = pcall(dkv.preset.gpu, {base = "h200", kclass = {attn = {scale = 0, launch_s = 0}}})
assert(not ok and err:find("gpu.kclass.attn.scale: must be > 0", 1, true), err)
ok, err = pcall(dkv.preset.gpu, {base = "h200", kclass = {ffn = {scale = 1}}})
assert(not ok and err:find("gpu.kclass.ffn.launch_s: required field is missing", 1, true), err)
-- overriding the roofline of a profiled preset without saying which costs to use is an error
ok, err = pcall(dkv.preset.gpu, {base = "h200", hbm_bw = 3e12})
assert(not ok and err:find("gpu.hbm_bw: overrides the roofline of a preset whose measured profile", 1, true), err)
assert(dkv.preset.gpu{base = "h200", hbm_bw = 3e12, profile = ""}.hbm_bw == 3e12)
assert(dkv.preset.gpu("h200").profile == "h200-20261203t")
do
  local cfg = {model = "llada-8b", gpu = {base = "h200", profile = ""}, decode = {cache = "dual", block_len = 32},
               workload = {kind = "fixed", n = 2, interval_s = 0, prompt = 512, gen = 64}}
  local base = dkv.simulate(cfg).summary.sim_time_s
  cfg.gpu = {base = "h200", profile = "", kclass = {attn = {scale = 3, launch_s = 20e-6}}}
  local slow = dkv.simulate(cfg).summary.sim_time_s
  assert(slow > base * 1.02, string.format("calibrated attention %.4f vs %.4f s", slow, base))
end

-- model arithmetic against hand-computed figures
local tiny = dkv.model_info("tiny")
-- K+V per token: 2 layers x 2 (K,V) x 2 KV heads x 16 dims x 2 bytes
assert(tiny.kv_bytes_per_token == 2 * 2 * 2 * 16 * 2)
assert(tiny.logit_row_bytes == 256 * 2)
local layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128 + 2 * 64
assert(tiny.params == 2 * 256 * 64 + 2 * layer + 64, tiny.params)
assert(tiny.weight_bytes == 2 * tiny.params)
local llada = dkv.model_info("llada-8b")
assert(llada.kv_bytes_per_token == 512 * 1024)
assert(math.abs(llada.weight_bytes - 16.07e9) / 16.07e9 < 0.005, llada.weight_bytes)

-- budget: usable = HBM - weights - 10 %; KV : activations = 7 : 3
local b = dkv.budget("llada-8b", "a100-80g")
assert(math.abs(b.usable_bytes - (80 * 2^30 * 0.9 - llada.weight_bytes)) < 1)
assert(math.abs(b.kv_bytes - 0.7 * b.usable_bytes) < 1 and math.abs(b.act_bytes - 0.3 * b.usable_bytes) < 1)
assert(b.kv_tokens == math.floor(b.kv_bytes / (512 * 1024)))
local b2 = dkv.budget("llada-8b", "a100-80g", {margin = 0, kv_frac = 1})
assert(b2.act_bytes == 0 and b2.kv_bytes > b.kv_bytes)
ok, err = pcall(dkv.budget, "llada-8b", "a100-80g", {kv_fraction = 1})
assert(not ok and err:find("did you mean 'kv_frac'"), err)

-- literal: Lua syntax that reads back equal
local v = {b = {1, 2.5, "x\n\"y\""}, a = true, ["not ident"] = -3, [10] = 0.1}
local back = load("return " .. dkv.literal(v))()
assert(back.b[2] == 2.5 and back.b[3] == "x\n\"y\"" and back.a == true and back["not ident"] == -3 and back[10] == 0.1)
assert(dkv.literal(1) == "1" and dkv.literal(1.0) == "1.0" and dkv.literal("s") == '"s"')

-- write_run into the output file given by tests/run.sh
assert(type(dkv.output) == "string")
assert(dkv.write_run("lua-test", {params = {n = 3}, summary = {ok = true},
                                  tables = {t = {x = {1, 2, 3}, name = {"a", "b", "c"}}}}))
ok, err = pcall(dkv.write_run, "lua-test", {})
assert(not ok and err:find("already exists"), err)
ok, err = pcall(dkv.write_run, "long-string", {tables = {t = {s = {string.rep("x", 40)}}}})
assert(not ok and err:find("longer than 31 characters"), err)
ok, err = pcall(dkv.write_run, "mixed", {tables = {t = {s = {1, "a"}}}})
assert(not ok and err:find("one kind"), err)
dkv.progress("test", 1, 1)   -- no terminal: silent
print("test_dkv ok")
