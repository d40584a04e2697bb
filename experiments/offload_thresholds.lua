-- experiments/offload_thresholds.lua - Flash-dLLM's progressive offload claim:
-- "first third of the steps: all KV on the GPU; middle third: offload a low-rank (~30 %)
--  approximation; last third: offload raw KV, keep the minimum.  +9 % latency vs +310 % for
--  plain CPU offload."
--
-- The offload policy (core/policy/offload.h, docs/POLICIES.md section 3) decides per step what
-- is fetched, compressed and copied back; the simulator queues the copies on its PCIe model
-- (pinned or pageable rates of the preset, overlap with compute for asynchronous copies; plain
-- offload's copies are blocking, as the engine orders them).  This script sweeps the thresholds
-- (t1, t2) and the low-rank ratio against no offload and plain offload, and prints the latency
-- overhead, PCIe bytes and the peak KV held on the GPU.
--
-- Without -D n it runs batches of 1 and 4 requests (all arriving at once).
--
--   dkv run experiments/offload_thresholds.lua [-D model=llada-8b] [-D gpu=h200] [-D n=1]
--       [-D prompt=512] [-D gen=256] [-D block=32] [-D cache=dual] [-D ratio=0.3]
local dkv = require("dkv")

local model, gpu = dkv.param("model", "llada-8b", "model preset (datasets/presets/model/)"), dkv.param("gpu", "h200", "GPU preset (datasets/presets/gpu/)")
local batch_n = dkv.param("n", nil, "requests in the batch (nil: batches of 1 and 4)", {integer = true, min = 1})
local batches = batch_n and {batch_n} or {1, 4}
local prompt, gen = dkv.param("prompt", 512, "prompt tokens per request", {integer = true, min = 1}), dkv.param("gen", 256, "generated tokens per request", {integer = true, min = 1})
local block, cache, ratio = dkv.param("block", 32, "block length in tokens (tokens decoded per block)", {integer = true, min = 1}), dkv.param("cache", "dual", "decode cache: none, prefix, dual or sparse"), dkv.param("ratio", 0.3, "low-rank ratio of the middle offload third")

local GiB = 2 ^ 30
local variants = {
  {name = "none", mode = "none"},
  {name = "plain", mode = "plain"},
  {name = "plain_pageable", mode = "plain", pinned = false},
  {name = "prog_1/3_2/3", mode = "progressive", t1 = 1 / 3, t2 = 2 / 3},
  {name = "prog_1/3_2/3_pageable", mode = "progressive", t1 = 1 / 3, t2 = 2 / 3, pinned = false},
  {name = "prog_0_0(raw)", mode = "progressive", t1 = 0, t2 = 0},
  {name = "prog_0_1(lowrank)", mode = "progressive", t1 = 0, t2 = 1},
  {name = "prog_1/2_3/4", mode = "progressive", t1 = 0.5, t2 = 0.75},
  {name = "prog_2/3_1", mode = "progressive", t1 = 2 / 3, t2 = 1},
  {name = "prog_1_1(never)", mode = "progressive", t1 = 1, t2 = 1},
}

local cols = {n = {}, variant = {}, t1 = {}, t2 = {}, pinned = {}, latency_s = {}, overhead = {}, h2d_gib = {},
              d2h_gib = {}, peak_kv_gib = {}, peak_host_gib = {}, tokens_per_s = {}}
local function run_batch(n)
  local base
  local first = #cols.variant + 1
  for _, v in ipairs(variants) do
    local pinned = v.pinned ~= false
    local off = {mode = v.mode}   -- only the settings the mode uses (others are an error)
    if v.mode ~= "none" then off.pinned = pinned end
    if v.mode == "progressive" then off.t1, off.t2, off.lowrank_ratio = v.t1, v.t2, ratio end
    local r = dkv.simulate{
      model = model, gpu = gpu,
      workload = {kind = "fixed", n = n, interval_s = 0, prompt = prompt, gen = gen},
      decode = {cache = cache, block_len = block},
      policies = {offload = off},
      record = {memory_every = 0},
    }
    local s = r.summary
    base = base or s.latency_mean_s
    local row = {n = n, variant = v.name, t1 = v.t1 or -1, t2 = v.t2 or -1, pinned = pinned,
                 latency_s = s.latency_mean_s, overhead = s.latency_mean_s / base - 1,
                 h2d_gib = s.pcie_h2d_bytes / GiB, d2h_gib = s.pcie_d2h_bytes / GiB,
                 peak_kv_gib = s.peak_kv_bytes / GiB, peak_host_gib = s.peak_host_bytes / GiB,
                 tokens_per_s = s.tokens_per_s}
    for c, t in pairs(cols) do t[#t + 1] = row[c] end
    dkv.save(r, string.format("offload_n%d_%s", n, (v.name:gsub("[^%w_]", "_"))))
  end

  print(string.format("offload: %s on %s, %d x (P=%d, G=%d), %s cache, B=%d, low-rank ratio %.2f", model, gpu, n,
                      prompt, gen, cache, block, ratio))
  print(string.format("%-22s %8s %9s %9s %9s %9s %9s %9s", "variant", "lat_s", "overhead", "h2d_GiB", "d2h_GiB",
                      "peakKV", "peakHost", "tok/s"))
  for i = first, #cols.variant do
    print(string.format("%-22s %8.3f %+8.1f%% %9.2f %9.2f %9.2f %9.2f %9.1f", cols.variant[i], cols.latency_s[i],
                        100 * cols.overhead[i], cols.h2d_gib[i], cols.d2h_gib[i], cols.peak_kv_gib[i],
                        cols.peak_host_gib[i], cols.tokens_per_s[i]))
  end
  local prog, plain, raw = cols.overhead[first + 3], cols.overhead[first + 1], cols.overhead[first + 5]
  print(string.format("claim: progressive +9 %%, plain +310 %%.  simulated: progressive %+.1f %%, plain (blocking) "
                      .. "%+.1f %%, raw offload with overlap %+.1f %%", 100 * prog, 100 * plain, 100 * raw))
  print()
end

for _, n in ipairs(batches) do run_batch(n) end

dkv.write_run("offload_table", {
  params = {model = model, gpu = gpu, batches = table.concat(batches, ","), prompt = prompt, gen = gen,
            block = block, cache = cache, ratio = ratio},
  tables = {offload = {columns = cols,
                       units = {latency_s = "s", h2d_gib = "GiB", d2h_gib = "GiB", peak_kv_gib = "GiB",
                                peak_host_gib = "GiB", tokens_per_s = "tokens/s"},
                       docs = {overhead = "mean latency / mean latency without offload - 1",
                               t1 = "-1: not progressive", t2 = "-1: not progressive"}}},
})
