-- experiments/cpu_only.lua - "a CPU-only run (no GPU at all)" (Flash-dLLM boundary case).
--
-- dkv itself runs without a GPU (the simulator; dkv.execute reports "no CUDA device"), so what this
-- experiment asks is what a dLLM step costs when the "device" is a CPU socket.  The CPU is an
-- ASSUMED preset written inline below (no CPU was measured for dkv): one server socket with
-- 8-channel DDR5 (~250 GB/s sustained copy), ~50 TFLOP/s bf16 achieved with AMX-class matrix
-- units, 512 GiB of memory, and no PCIe tier (offload is moot: "host" memory is the same DRAM).
-- Every figure here is therefore a model of the roofline on those assumptions, to be replaced by
-- a measured preset; the H200 rows use the measured preset for comparison.
--
--   dkv run experiments/cpu_only.lua [-D n=8] [-D prompt=512] [-D gen=256] [-D bw=250e9] [-D flops=50e12]
local dkv = require("dkv")

local n, prompt, gen = dkv.param("n", 8, "number of requests", {integer = true, min = 2}), dkv.param("prompt", 512, "prompt tokens per request", {integer = true, min = 1}), dkv.param("gen", 256, "generated tokens per request", {integer = true, min = 1})
local GiB = 2 ^ 30

local cpu = {
  base = "h200", name = "cpu-socket (assumed)", profile = "",   -- a roofline, not the H200's measured kernels
  hbm_bytes = 512 * GiB, hbm_bw = dkv.param("bw", 250e9, "assumed CPU memory bandwidth, bytes/s", {min = 1}), flops_bf16 = dkv.param("flops", 50e12, "assumed CPU bf16 rate, FLOP/s", {min = 1}), flops_fp32 = 8e12,
  pcie_h2d_pinned = 250e9, pcie_d2h_pinned = 250e9, pcie_bidir_pinned = 250e9,
  pcie_h2d_pageable = 250e9, pcie_d2h_pageable = 250e9,
  launch_overhead_s = 5e-6, malloc_s = 1e-6, free_s = 1e-6, cost_per_hour = 2.0,
  bw_curve = {{64, 0.5}, {4096, 0.9}, {65536, 1.0}},
}

print(string.format("CPU-only vs H200: llada-8b, batch 1 and %d requests at once, P=%d, G=%d, B=32 (simulated; "
                    .. "the CPU preset is an assumption)", n, prompt, gen))
print(string.format("%-22s %-6s %5s %10s %10s %10s %9s", "device", "cache", "reqs", "reuse_ms", "tok/s", "p99_s", "$/Mtok"))
for _, dev in ipairs{{"cpu-socket (assumed)", cpu}, {"h200 (measured preset)", "h200"}} do
  for _, cache in ipairs{"none", "dual"} do
    for _, reqs in ipairs{1, n} do
      local r = dkv.simulate{
        model = "llada-8b", gpu = dev[2],
        workload = {kind = "fixed", n = reqs, interval_s = 0, prompt = prompt, gen = gen},
        decode = {cache = cache, block_len = 32},
        record = {memory_every = 0, steps = true},
      }
      local s = r.summary
      -- median step time of Reuse-only steps (no Refresh item): the bandwidth-bound step
      local st, reuse = r:steps(), {}
      for i = 1, #st.index do
        if st.n_refresh[i] == 0 and st.n_items[i] > 0 then reuse[#reuse + 1] = st.time_s[i] end
      end
      table.sort(reuse)
      local med = #reuse > 0 and string.format("%.2f", reuse[(#reuse + 1) // 2] * 1e3) or "-"
      print(string.format("%-22s %-6s %5d %10s %10.2f %10.1f %9.2f", dev[1], cache, reqs, med, s.tokens_per_s,
                          s.latency_p99_s, s.cost_per_mtok))
      dkv.save(r, string.format("cpu_only_%s_%s_%d", dev[1]:match("^%S+"), cache, reqs))
    end
  end
end
print("claim: a CPU-only run (no GPU at all) — Flash-dLLM boundary case")
