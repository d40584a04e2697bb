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

-- every number of a preset is finite (math.huge made dkv.simulate spin, or gave NaN), and within its range where it
-- has one: per-call times at most an hour, byte counts below 2^64; the error names the field
for _, f in ipairs{"hbm_bytes", "hbm_bw", "flops_bf16", "flops_fp32", "pcie_h2d_pinned", "pcie_d2h_pinned",
                   "pcie_bidir_pinned", "pcie_h2d_pageable", "pcie_d2h_pageable", "launch_overhead_s", "malloc_s",
                   "free_s", "cost_per_hour", "l2_bytes", "retention"} do
  for _, v in ipairs{math.huge, -math.huge} do
    ok, err = pcall(dkv.preset.gpu, {base = "rtx4090", [f] = v})
    assert(not ok and err:find("gpu." .. f .. ": must be finite (got " .. (v > 0 and "inf" or "-inf") .. ")", 1, true),
           f .. ": " .. tostring(err))
  end
end
for _, c in ipairs{{"malloc_s", 3601, "must be in [0, 3600] (got 3601)"}, {"free_s", 1e300, "must be in [0, 3600]"},
                   {"launch_overhead_s", 1e4, "must be in [0, 3600]"}, {"hbm_bytes", 1e30, "must be in (0, 1.8446744"},
                   {"l2_bytes", 2^64, "must be in [0, 1.8446744"}} do
  ok, err = pcall(dkv.preset.gpu, {base = "rtx4090", [c[1]] = c[2]})
  assert(not ok and err:find("gpu." .. c[1] .. ": " .. c[3], 1, true), c[1] .. ": " .. tostring(err))
end
assert(dkv.preset.gpu{base = "rtx4090", malloc_s = 3600, retention = 1}.malloc_s == 3600)   -- the bounds themselves
ok, err = pcall(dkv.preset.gpu, {base = "h200", profile = "", kclass = {attn = {scale = math.huge, launch_s = 0}}})
assert(not ok and err:find("gpu.kclass.attn.scale: must be finite", 1, true), err)
ok, err = pcall(dkv.preset.gpu, {base = "h200", profile = "", kclass = {attn = {scale = 1, launch_s = 1e9}}})
assert(not ok and err:find("gpu.kclass.attn.launch_s: must be in [0, 3600]", 1, true), err)
ok, err = pcall(dkv.preset.gpu, {base = "rtx4090", bw_curve = {{math.huge, 1}}})
assert(not ok and err:find("gpu.bw_curve[1].run_bytes: must be finite and > 0 (got inf)", 1, true), tostring(err))
ok, err = pcall(dkv.preset.gpu, {base = "rtx4090", bw_curve = {{run_bytes = math.huge, efficiency = 1}}})
assert(not ok and err:find("gpu.bw_curve[1].run_bytes: must be finite (got inf)", 1, true), tostring(err))
ok, err = pcall(dkv.preset.model, {base = "tiny", rope_theta = math.huge})
assert(not ok and err:find("model.rope_theta: must be finite (got inf)", 1, true), err)

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
-- an infinite or absurd device memory: an error naming the field, not kv_tokens = -2^63 and kv_bytes = NaN
for _, v in ipairs{math.huge, 1e30} do
  ok, err = pcall(dkv.budget, "tiny", {base = "h200", hbm_bytes = v})
  assert(not ok and err:find("gpu.hbm_bytes: must be ", 1, true), tostring(v) .. ": " .. tostring(err))
end
local bmax = dkv.budget("tiny", {base = "h200", hbm_bytes = 2^64 - 2^11}, {kv_frac = 1e-9})   -- the largest allowed
assert(bmax.kv_tokens > 0 and bmax.logit_rows > 0 and bmax.kv_bytes == bmax.kv_bytes, bmax.kv_tokens)

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
-- a mistaken spec is an error naming the key, before anything is written (it used to write a table with one empty
-- column 'colums', and drop units and docs for columns or summary values that do not exist)
for _, c in ipairs{
  {{tables = {t = {colums = {x = {1}}}}}, "run.tables.t.colums: expected an array of values, got a table with key 'x' (did you mean 'columns'?)"},
  {{tables = {t = {x = {1}, units = {x = "s"}}}}, "run.tables.t.units: expected an array of values, got a table with key 'x' (units needs the form"},
  {{tables = {t = {x = {1, 2, y = 3}}}}, "run.tables.t.x: expected an array of values, got a table with key 'y'"},
  {{tables = {t = {columns = {time_s = {1}}, units = {tme_s = "s"}}}}, "run.tables.t.units: 'tme_s' names no column (did you mean 'time_s'?)"},
  {{tables = {t = {columns = {time_s = {1}, kv = {2}}, docs = {bytes = "d"}}}}, "run.tables.t.docs: 'bytes' names no column (known: kv, time_s)"},
  {{tables = {t = {columns = {x = {1}}, units = {x = 1}}}}, "run.tables.t.units.x: expected a string, got number"},
  {{tables = {t = {columns = {x = {1}}, docs = "x"}}}, "run.tables.t.docs: expected a table, got string"},
  {{summary = {lat_s = 1}, units = {lats = "s"}}, "run.units: 'lats' names no summary value (did you mean 'lat_s'?)"},
  {{summary = {lat_s = 1}, units = {lat_s = "s", kv_bytes = "bytes"}}, "run.units: 'kv_bytes' names no summary value (known: lat_s)"},
  {{units = {y = "s"}}, "run.units: 'y' names no summary value (there are none)"},
} do
  ok, err = pcall(dkv.write_run, "spec-mistake", c[1])
  assert(not ok and err:find(c[2], 1, true), c[2] .. "\n got: " .. tostring(err))
end
-- ... and left no trace: the name is still free, and the documented forms are written
assert(dkv.write_run("spec-mistake", {summary = {lat_s = 1, n = 2}, units = {lat_s = "s"},
  tables = {t = {columns = {time_s = {1, 2}, kv = {3, 4}}, units = {time_s = "s"}, docs = {kv = "KV bytes"}},
            e = {x = {}}}}))
dkv.progress("test", 1, 1)   -- no terminal: silent
print("test_dkv ok")
