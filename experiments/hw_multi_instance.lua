-- experiments/hw_multi_instance.lua - issue 6, hardware study 3: N engine instances on one GPU
-- sharing one KV pool or partitioning it, on the H200 and in the simulator.  (The simulated-only
-- sweep: experiments/multi_instance.lua.)
--
--   dkv run experiments/hw_multi_instance.lua -o multi.h5 [-D backend=auto|sim|cuda] [-D n=16]
--       [-D prompt=512] [-D gen=128] [-D seqs=4] [-D capacity_gib=4] [-D steps=32]
--
-- THE CUDA BACKEND RUNS ONE INSTANCE: core/lua/l_execute.c (make_cuda) refuses
-- cfg.instances.n != 1 ("the CUDA backend runs one instance"), and cuda/backend.c has one engine,
-- one arena, one stream set.  So only inst=1 has a real half; for 2, 4 and 8 instances this
-- script still calls dkv.execute (the refusal is immediate: nothing is allocated) and prints the
-- refusal, so the points light up when the backend learns instances.  Until then the 2/4/8 rows
-- are simulation only and the claim ("3.8x with 4 instances") is not measured on hardware.
--
-- Points (runs multi:<point>:sim, and :real / :device where the backend ran):
--   inst=N,shared        N instances (1, 2, 4, 8) sharing one pool (guaranteed quotas, borrowing)
--   inst=N,partitioned   N instances, the pool split evenly
-- LLaDA-8B shapes, 16 requests x (512 + 128) at t = 0, dual cache, block 32, phase scheduler,
-- at most 4 running requests per instance, one weight copy for all instances (shared_weights:
-- 8 separate copies do not fit the H200), GPU time-sliced between instances, a 4 GiB pool in all
-- (8192 tokens: 12 requests of 640 at once, so sharing vs partitioning matters at 4 and 8
-- instances).  Throughput, peak KV, KV fragmentation (internal, external) and reuse rate.
--
-- Expected device time: inst=1,shared 3.49 s simulated -> ~10 s (x2 + 3 s); the refusals ~0 s;
-- inst=1,partitioned is simulation only (the same plans as inst=1,shared).  ~10 s in all.
-- Fragmentation columns: the KV manager's internal fragmentation at its peak, external
-- fragmentation at the peak of allocated KV and its mean over the run (summary fields).
local dkv = require "dkv"
local hw = require "hw_lib"

local model, gpu = hw.param("model", "llada-8b", "model preset (datasets/presets/model/)"), hw.param("gpu", "h200", "GPU preset (datasets/presets/gpu/)")
local n, prompt, gen = hw.param("n", 16, "requests"), hw.param("prompt", 512, "prompt tokens per request"), hw.param("gen", 128, "generated tokens per request")
local seqs, cap_gib, steps = hw.param("seqs", 4, "max requests per instance (max_num_seqs)"), hw.param("capacity_gib", 4, "KV arena / pool capacity, GiB"), hw.param("steps", 32, "denoising steps per block")
local insts = {}
for x in tostring(hw.param("insts", "1,2,4,8", "comma-separated instance counts")):gmatch("[^,]+") do insts[#insts + 1] = tonumber(x) end

local rows, base = {}, {}
local refusal
for _, placement in ipairs{"shared", "partitioned"} do
  for _, k in ipairs(insts) do
    local point = string.format("inst=%d,%s", k, placement)
    local cfg = {model = model, gpu = gpu, seed = 1,
      workload = {kind = "fixed", n = n, interval_s = 0, prompt = prompt, gen = gen},
      decode = {cache = "dual", block_len = 32, steps = steps},
      scheduler = {kind = "phase", max_num_seqs = seqs},
      mem = {kind = "blockpool", capacity_bytes = cap_gib * hw.GiB},
      instances = {n = k, placement = placement, shared_weights = true},
      record = {kernels = true}}
    -- one instance partitioned is the shared pool: simulated only; inst > 1: the backend refuses
    -- today (allow_refusal), so no device time is expected for them
    local p = hw.pair("multi", point, cfg, {allow_refusal = true, sim_only = k == 1 and placement == "partitioned"})
    if p.err then refusal = p.err end
    local row = hw.row(p)
    row.placement, row.inst = placement, k
    if k ~= 1 or placement ~= "shared" then row.expect_s = p.real and row.expect_s or nil end
    -- speedups compare like with like: simulated against simulated (every point has a simulated
    -- half); the measured req/s has its own column
    local x = p.sim or p.real
    if p.real then row.real_rps = p.real.summary.throughput_rps end
    if x then
      local s = x.summary
      row.rps, row.peak_kv_gib = s.throughput_rps, s.peak_kv_bytes / hw.GiB
      row.int_frag, row.ext_frag, row.reuse = s.kv_internal_frag_peak, s.kv_external_frag_at_peak, s.block_reuse_rate
      row.ext_frag_mean = s.kv_external_frag_mean
      row.oom, row.done = s.n_oom, s.n_done
      if k == 1 then base[placement] = s.throughput_rps end
      local b = base[placement] or base.shared
      row.speedup = b and s.throughput_rps / b or nil
    end
    row.real = p.real and "yes" or (p.err and "refused" or "-")
    rows[#rows + 1] = row
  end
end

print(string.format("hw multi-instance: %s on %s, %d x (P=%d, G=%d), dual, max_num_seqs %d per instance, pool %d GiB, "
                    .. "shared weights, timeslice", model, gpu, n, prompt, gen, seqs, cap_gib))
hw.print_table(rows, {{"point", "point"}, {"real", "real"}, {"expect_s", "expect_s", "%.1f"},
  {"sim_s", "sim_s", "%.3f"}, {"real_s", "real_s", "%.3f"}, {"done", "done"}, {"rps", "sim_req/s", "%.3f"},
  {"speedup", "sim_speedup", "%.2f"}, {"real_rps", "real_req/s", "%.3f"}, {"peak_kv_gib", "peakKV_GiB", "%.3f"}, {"int_frag", "int_frag", "%.4f"},
  {"ext_frag", "ext@peak", "%.4f"}, {"ext_frag_mean", "ext_mean", "%.4f"}, {"reuse", "reuse", "%.3f"}, {"dev_used_gib", "dev_GiB", "%.2f"}})
if refusal then print("real half for inst > 1: " .. refusal) end
print("claim (Flash-dLLM): 3.8x throughput with 4 instances")
hw.footer("hw_multi_instance", rows)
