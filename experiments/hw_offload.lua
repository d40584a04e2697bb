-- experiments/hw_offload.lua - issue 6, hardware study 2: offload thresholds (Flash-dLLM's
-- progressive offload) on the H200 and in the simulator, the same configurations through
-- dkv.execute and dkv.simulate, one file.  (The simulated-only sweep: experiments/offload_thresholds.lua.)
--
--   dkv run experiments/hw_offload.lua -o off.h5 [-D backend=auto|sim|cuda] [-D n=4]
--       [-D prompt=512] [-D gen=128] [-D block=32] [-D steps=32] [-D cache=dual] [-D plain=true]
--
-- Points (runs off:<point>:real / :sim / :device):
--   none                         no offload (the baseline of the overhead column)
--   plain                        blocking offload of raw KV (the "+310 %" arm of the claim)
--   prog,t=0.33-0.67,r=0.3/0.5  progressive, t1 = 1/3, t2 = 2/3: all KV on the GPU for the
--                                first third of a request's steps, a low-rank projection (ratio
--                                r) in the middle third, raw KV offloaded in the last third
--   prog,t=0.5-0.75,r=0.3/0.5   the same with boundaries 1/2 and 3/4
--   prog,never                   progressive with t1 = t2 = 1 (nothing offloaded: the policy's and
--                                the host tier's own cost)
-- Reported per point: latency (mean over requests) and its overhead over `none`, PCIe bytes both
-- ways, peak KV on the device (engine accounting), peak host tier, and with the real half
-- cudaMemGetInfo's peak (dev_GiB), copy-stream time and the mean relative error of the low-rank
-- projections.  LLaDA-8B shapes, random weights, 4 x (512 + 128) at t = 0, dual cache, block 32,
-- 32 steps per block (docs/GPU.md measured this configuration before: none 1.40 s, progressive
-- 1/3-2/3 r 0.3 2.71 s), a 8 GiB pool, pinned host buffers, record.kernels = true.
-- The backend's low-rank path moves real bytes but does not decompress (docs/GPU.md, "Honest
-- limits"): latency and PCIe bytes are real, the values are not checked.
--
-- Expected device time (simulated H200 time, x2 + 3 s per dkv.execute): none 0.87 s sim -> ~5 s;
-- plain 3.97 s -> ~11 s; each progressive point ~1.5 s -> ~6 s; never ~0.9 s -> ~5 s; all 7 ~45 s.
local dkv = require "dkv"
local hw = require "hw_lib"

local model, gpu = hw.param("model", "llada-8b", "model preset (datasets/presets/model/)"), hw.param("gpu", "h200", "GPU preset (datasets/presets/gpu/)")
local n, prompt, gen = hw.param("n", 4, "number of requests"), hw.param("prompt", 512, "prompt tokens per request"), hw.param("gen", 128, "generated tokens per request")
local block, steps, cache = hw.param("block", 32, "block length in tokens (tokens decoded per block)"), hw.param("steps", 32, "denoising steps per block"), hw.param("cache", "dual", "decode cache: none, prefix, dual or sparse")
local cap_gib = hw.param("capacity_gib", 8, "KV arena / pool capacity, GiB")

local points = {
  {"none", {mode = "none"}},
  {"prog,t=0.33-0.67,r=0.3", {mode = "progressive", t1 = 1 / 3, t2 = 2 / 3, lowrank_ratio = 0.3}},
  {"prog,t=0.33-0.67,r=0.5", {mode = "progressive", t1 = 1 / 3, t2 = 2 / 3, lowrank_ratio = 0.5}},
  {"prog,t=0.5-0.75,r=0.3", {mode = "progressive", t1 = 0.5, t2 = 0.75, lowrank_ratio = 0.3}},
  {"prog,t=0.5-0.75,r=0.5", {mode = "progressive", t1 = 0.5, t2 = 0.75, lowrank_ratio = 0.5}},
  {"prog,never", {mode = "progressive", t1 = 1, t2 = 1, lowrank_ratio = 0.3}},
}
if hw.param("plain", true, "also run plain (blocking) offload") then table.insert(points, 2, {"plain", {mode = "plain"}}) end
local only = hw.param("point", nil, "run only this point (name as printed; nil: all points)")

local rows, base_sim, base_real = {}, nil, nil
for _, pt in ipairs(points) do
  if not only or only == pt[1] then
    local off = pt[2]
    if off.mode ~= "none" then off.pinned = true end   -- not used (an error) without offload
    local cfg = {model = model, gpu = gpu, seed = 1,
      workload = {kind = "fixed", n = n, interval_s = 0, prompt = prompt, gen = gen},
      decode = {cache = cache, block_len = block, steps = steps},
      mem = {kind = "blockpool", capacity_bytes = cap_gib * hw.GiB},
      policies = {offload = off},
      record = {kernels = true}}
    local p = hw.pair("off", pt[1], cfg)
    local row = hw.row(p)
    local s, r = p.sim and p.sim.summary, p.real and p.real.summary
    if pt[1] == "none" then base_sim, base_real = s, r end
    if s and base_sim then row.sim_over = s.latency_mean_s / base_sim.latency_mean_s - 1 end
    if r and base_real then row.real_over = r.latency_mean_s / base_real.latency_mean_s - 1 end
    local x = r or s
    row.peak_kv_gib, row.peak_host_gib = x.peak_kv_bytes / hw.GiB, x.peak_host_bytes / hw.GiB
    if p.dev then row.copy_s, row.lr_err = p.dev.copy_time_s, p.dev.compress_rel_err_mean end
    rows[#rows + 1] = row
  end
end

print(string.format("hw offload: %s on %s, %d x (P=%d, G=%d), %s cache, B=%d, %d steps/block, pool %d GiB, pinned",
                    model, gpu, n, prompt, gen, cache, block, steps, cap_gib))
local cols = {}
for _, c in ipairs(hw.common_cols) do cols[#cols + 1] = c end
for _, c in ipairs{{"sim_over", "sim_over", "%+.3f"}, {"real_over", "real_over", "%+.3f"},
                   {"sim_pcie_gb", "sim_PCIe_GB", "%.2f"}, {"real_pcie_gb", "real_PCIe_GB", "%.2f"},
                   {"peak_kv_gib", "peakKV_GiB", "%.3f"}, {"peak_host_gib", "peakHost_GiB", "%.3f"},
                   {"dev_used_gib", "dev_GiB", "%.2f"}, {"copy_s", "copy_s", "%.3f"}, {"lr_err", "lr_err", "%.3f"}} do
  cols[#cols + 1] = c
end
hw.print_table(rows, cols)
print("claim (Flash-dLLM): progressive +9 % latency, plain CPU offload +310 %")
hw.footer("hw_offload", rows)
