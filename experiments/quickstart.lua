-- quickstart.lua - the first experiment a newcomer runs (`scons quickstart`).
--
--   dkv run experiments/quickstart.lua -o results/quickstart.h5 [-D gpu=rtx4090] [-D model=llada-8b]
--                                       [-D trace=PATH] [-D n=48] [-D load=4]
--
-- Part 1: the dLLM-Serve memory budget of every GPU preset for LLaDA-8B and Dream-7B
--         (usable = HBM - weights - 10 %, split 7:3 between KV and activations; how many KV
--         tokens fit).  Pure arithmetic from the presets.
-- Part 2: one model on one GPU serving a real request stream (the shipped sample of the Azure
--         LLM inference trace 2023, or -D trace=PATH for the full file) replayed `load` times
--         faster than recorded so that memory is contended, simulated with three
--         memory managers (static reservation, PyTorch-like caching allocator, block pool) under
--         two schedulers (FCFS continuous batching, dLLM-Serve's phase-multiplexed one).  Every
--         simulation is a run in the HDF5 file (memory over time, per-request latency), which
--         scripts/plot.py draws.
local dkv = require "dkv"

local GiB = 2 ^ 30
local gpu = dkv.param("gpu", "rtx4090", "GPU preset (the memory-tight card dLLM-Serve targets)")
local model = dkv.param("model", "llada-8b", "model preset")
local trace = dkv.param("trace", "datasets/workloads/azure_sample.csv", "workload trace file")
local n = dkv.param("n", 48, "requests of the trace", {integer = true, min = 1})
local load = dkv.param("load", 4, "arrival rate multiplier of the trace")

local function row(cols, widths)
  local out = {}
  for i, c in ipairs(cols) do
    local w = widths[i]
    out[i] = (i == 1) and string.format("%-" .. w .. "s", c) or string.format("%" .. w .. "s", c)
  end
  print(table.concat(out, "  "))
end

-- Part 1 ------------------------------------------------------------------------------------
print("dLLM-Serve budget per GPU (usable = HBM - weights - 10 %, KV : activations = 7 : 3)")
local w1 = {10, 9, 8, 9, 8, 8, 10, 11}
for _, g in ipairs(dkv.preset.list("gpu")) do w1[1] = math.max(w1[1], #g) end   -- h200-calibrated
row({"gpu", "model", "HBM GiB", "weights", "usable", "KV GiB", "KV tokens", "logit rows"}, w1)
local budget = {gpu = {}, model = {}, hbm_gib = {}, weights_gib = {}, usable_gib = {}, kv_gib = {}, kv_tokens = {},
                logit_rows = {}}
for _, g in ipairs(dkv.preset.list("gpu")) do
  for _, m in ipairs({"llada-8b", "dream-7b"}) do
    local ok, b = pcall(dkv.budget, m, g)
    if ok then
      row({g, m, string.format("%.1f", b.hbm_bytes / GiB), string.format("%.2f", b.weight_bytes / GiB),
           string.format("%.2f", b.usable_bytes / GiB), string.format("%.2f", b.kv_bytes / GiB),
           tostring(b.kv_tokens), tostring(b.logit_rows)}, w1)
      local t = budget
      t.gpu[#t.gpu + 1] = g; t.model[#t.model + 1] = m
      t.hbm_gib[#t.hbm_gib + 1] = b.hbm_bytes / GiB; t.weights_gib[#t.weights_gib + 1] = b.weight_bytes / GiB
      t.usable_gib[#t.usable_gib + 1] = b.usable_bytes / GiB; t.kv_gib[#t.kv_gib + 1] = b.kv_bytes / GiB
      t.kv_tokens[#t.kv_tokens + 1] = b.kv_tokens; t.logit_rows[#t.logit_rows + 1] = b.logit_rows
    else
      row({g, m, "-", "does not fit", "", "", "", ""}, w1)
    end
  end
end
dkv.write_run("budget", {
  params = {margin = 0.10, kv_frac = 0.7},
  tables = {budget = {columns = budget, units = {hbm_gib = "GiB", weights_gib = "GiB", usable_gib = "GiB",
                                                 kv_gib = "GiB", kv_tokens = "tokens", logit_rows = "rows"}}},
})

-- Part 2 ------------------------------------------------------------------------------------
if not dkv.simulate then
  print("\n(dkv.simulate is not built in this version: part 2 skipped)")
  return
end
local w2 = {10, 6, 11, 11, 10, 10, 9, 9, 8}
local done = 0
for _, mem in ipairs({"static", "caching", "blockpool"}) do
  for _, sched in ipairs({"fcfs", "phase"}) do
    local r = dkv.simulate{
      model = model, gpu = gpu,
      workload = {file = trace, first_n = n, prompt_max = 3072, gen_max = 1024, rate_scale = load},
      decode = {cache = "dual", block_len = 32},
      mem = {kind = mem}, scheduler = {kind = sched},
      record = {memory_every = 1}, seed = 1,
    }
    local s = r.summary
    if done == 0 then   -- the requests the trace gave (n is an upper bound: a shorter trace has fewer)
      print(string.format("\n%s on %s: %d requests of %s at %gx their rate, dual cache, block 32 (simulated)",
                          model, gpu, s.n_requests, trace, load))
      row({"memory", "sched", "peak res GiB", "peak KV GiB", "KV ext frag", "reuse", "req/s", "p99 s", "done"}, w2)
    end
    row({mem, sched, string.format("%.2f", s.peak_reserved / GiB), string.format("%.2f", s.peak_kv_bytes / GiB),
         string.format("%.3f", s.kv_external_frag_at_peak), string.format("%.2f", s.block_reuse_rate),
         string.format("%.2f", s.throughput_rps), string.format("%.1f", s.latency_p99_s),
         string.format("%d/%d", s.n_done, s.n_requests)}, w2)
    dkv.save(r, string.format("%s:%s", mem, sched))
    done = done + 1
    dkv.progress("quickstart", done, 6)
  end
end
if dkv.output then print("\nresults: " .. dkv.output .. "  (dkv info " .. dkv.output .. ")") end
