-- experiments/hw_multi_instance.lua - issue 11: k engine instances on one GPU, sharing one KV pool
-- or partitioning it, executed (dkv.execute: one engine, CUDA backend and host thread per instance,
-- docs/GPU.md "Several instances on one GPU") and simulated.  (Simulation only, larger grid:
-- experiments/multi_instance.lua.  Separate processes: scripts/hw_multi_proc.sh.)
--
--   dkv run experiments/hw_multi_instance.lua -o multi.h5 [-D backend=auto|sim|cuda]
--       [-D ops=b1,b8,arrive] [-D insts=1,2,4,8] [-D prompt=512] [-D gen=64] [-D steps=16]
--       [-D n1=16] [-D n8=32] [-D seqs=8] [-D rate=4] [-D capacity_gib=4] [-D host=0] [-D gpu=h200]
--
-- Operating points (LLaDA-8B, dual cache, block 32, `steps` steps per block, phase scheduler, one
-- weight copy shared read-only unless the point says "copies", GPU time-sliced: one instance's
-- step at a time, FIFO):
--   b1       the seed's: batch 1 per instance (max_num_seqs 1), n1 requests of (prompt + gen) at t=0
--   b8       batched: up to `seqs` (8) sequences per instance, n8 requests at t=0 (the 2026-11-29
--            session's point: -D ops=b8 -D n8=16 -D gen=128 -D steps=32 -D seqs=4 -D gpu=h200)
--   arrive   b1's configuration with n1 requests arriving Poisson at `rate` req/s (seed 5)
-- Points per operating point: inst=1 (clock "real": the host clock, host planning included, as
-- the instances' runs; the base of the speed-ups), inst=1,steps (today's path: the clock is the sum
-- of the steps' times; the k = 1 identity check), inst=k,shared / inst=k,partitioned for k in insts
-- (k = 1 partitioned is the shared pool: not repeated), and inst=k,partitioned,copies for k > 1 (a
-- weight copy per instance and a pool of capacity_gib / k each: what k separate processes are,
-- scripts/hw_multi_proc.sh; executed for b1 at k = 4 only (or the largest k in insts below 4),
-- simulated at every k: the simulated twin
-- of the separate processes).  The pool is capacity_gib in all.
--
-- The simulated halves use the GPU preset `gpu` (default h200: the measured kernel-time profile
-- that datasets/presets/gpu/h200.lua names).  scripts/hw_session.sh post re-simulates them offline with
-- this script (-D backend=sim, the device run's -D settings, -D host = the measured host time).
--
-- Host time: the simulated halves model the host time of a step (scheduler.step_host_s), which the
-- executed runs spend for real.  Its value comes from the measurement: the mean over the steps of
-- the operating point's inst=1 real run of host_plan_s + time_s - compute_s (the part of a step's
-- cycle the GPU is not busy; docs/HDF5_SCHEMA.md), printed as "measured host".  Without a real half
-- it is -D host (default 0).  Every simulated point is also run at step_host_s = 0 and 0.035 (the
-- seed's regime: ~35 ms of host time per step; runs <point>:sim_host=0 / sim_host=0.035).
--
-- Runs: multi:<op>:<point>:sim / :real / :device (hw_lib.lua), paired by `dkv compare`.  Columns:
-- throughput (req/s, tokens/s), p50 / p99 latency, GPU busy fraction, peak KV, KV fragmentation
-- (internal peak, external at the peak and mean) and block reuse rate, for both halves; speed-up over
-- the same half's inst=1.
--
-- Expected device time (H200, 2026-11-29 timings: batch-1 dual step ~7 ms, real/sim ~1.35): printed
-- per point (expect_s) and in total by the footer; each dkv.execute is deadline-bounded by the caller
-- (scripts/hw_session.sh, step multi).
local dkv = require "dkv"
local hw = require "hw_lib"

local model = hw.param("model", "llada-8b", "model preset (datasets/presets/model/)")
local gpu = hw.param("gpu", "h200", "GPU preset of the simulated halves and the sizing (datasets/presets/gpu/)")
local prompt = hw.param("prompt", 512, "prompt tokens per request")
local gen = hw.param("gen", 64, "generated tokens per request (a multiple of 32)")
local steps = hw.param("steps", 16, "denoising steps per 32-token block")
local n1 = hw.param("n1", 16, "requests of the b1 and arrive operating points")
local n8 = hw.param("n8", 32, "requests of the b8 operating point")
local seqs = hw.param("seqs", 8, "b8: most sequences per instance (max_num_seqs)")
local rate = hw.param("rate", 4, "arrive: Poisson arrival rate, requests/s")
local cap_gib = hw.param("capacity_gib", 4, "KV pool of all instances together, GiB")
-- -D host / -D release: a number (s, every operating point) or per point, "b1=4e-05,b8=6e-05"
-- (hw_session.sh post)
local function per_op(name, help)
  local arg, t = tostring(hw.param(name, "0", help .. " (a number, or OP=S,OP=S per operating point)")), {}
  if arg:find("=") then
    for op, v in arg:gmatch("([%w_]+)=([^,]+)") do
      t[op] = tonumber(v) or error("hw_multi_instance: -D " .. name .. ": '" .. v .. "' for " .. op .. " is not a number", 0)
    end
  else
    t.all = tonumber(arg) or error("hw_multi_instance: -D " .. name .. " must be a number or OP=S,..., got " .. arg, 0)
  end
  return t
end
local host_of = per_op("host", "step_host_s of the simulated halves when no real half measured it, s")
local release_of = per_op("release", "step_release_s of the simulated halves when no real half measured it, s")
local function list(s)
  local t = {}
  for x in tostring(s):gmatch("[^,]+") do t[#t + 1] = x end
  return t
end
local insts = {}
local ops = list(hw.param("ops", "b1,b8,arrive", "comma-separated operating points: b1, b8, arrive"))
for _, x in ipairs(list(hw.param("insts", "1,2,4,8", "comma-separated instance counts"))) do insts[#insts + 1] = tonumber(x) end

local function config(op, k, placement, copies)
  local wl = {kind = "fixed", n = op == "b8" and n8 or n1, interval_s = 0, prompt = prompt, gen = gen}
  if op == "arrive" then wl = {kind = "poisson", n = n1, rate = rate, seed = 5, prompt = prompt, gen = gen} end
  return {model = model, gpu = gpu, seed = 1, workload = wl,
    decode = {cache = "dual", block_len = 32, steps = steps},
    scheduler = {kind = "phase", max_num_seqs = op == "b8" and seqs or 1},
    mem = {kind = "blockpool", capacity_bytes = cap_gib * hw.GiB},
    -- the settings of several instances only with several (with one they cannot take effect: an error)
    instances = k > 1 and {n = k, placement = placement, shared_weights = not copies, gpu_share = "timeslice"}
                or {n = 1},
    record = {kernels = true}}   -- per-class records: the single-instance points are in the calibration fit set
end

-- -D handover: scheduler.handover_s of the simulated halves (s); not given: the GPU preset's profile
-- (its host table's handover_s - resume_s, dkv profile's host section; 0 without one)
local handover = hw.param("handover", "", "scheduler.handover_s of the simulated halves, s (default: the profile's)")
handover = handover ~= "" and (tonumber(handover) or error("hw_multi_instance: -D handover must be a number", 0)) or nil

local function with_host(cfg, h, rel)
  local c = {}
  for key, v in pairs(cfg) do c[key] = v end
  c.scheduler = {}
  for key, v in pairs(cfg.scheduler) do c.scheduler[key] = v end
  c.scheduler.step_host_s = h
  c.scheduler.step_release_s = rel
  c.scheduler.handover_s = handover
  return c
end

-- The measured host time of a step, from the inst=1 real run's steps: the GPU's idle time between
-- two consecutive steps, start_s[j+1] - start_s[j] - compute_s[j] (the cycle less the step's GPU
-- span), averaged over the pairs where the engine did not wait for work (idle shorter than the
-- step's span), is split into the engine's planning and commit (host_plan_s, mean: step_host_s,
-- which other instances' steps fill) and the rest (step_release_s: the wait's tail, the backend's
-- preparation and post-step bookkeeping, the next launch reaching the GPU, during which the
-- instance holds the GPU).  scripts/hw_session.sh post_multi computes the same.  Returns h, rel.
local function measured_host(r)
  local s = r and r:steps()
  if not s or not s.start_s or #s.start_s < 2 then return nil end
  local order = {}
  for i = 1, #s.start_s do order[i] = i end
  table.sort(order, function(a, b) return s.start_s[a] < s.start_s[b] end)
  local idle, plan, n = 0, 0, 0
  for j = 1, #order - 1 do
    local a, b = order[j], order[j + 1]
    local g = s.start_s[b] - s.start_s[a] - s.compute_s[a]
    if g >= 0 and g < s.compute_s[a] then idle, plan, n = idle + g, plan + s.host_plan_s[a], n + 1 end
  end
  if n == 0 then return nil end
  return plan / n, math.max(0, (idle - plan) / n)
end

-- the executed copies point (b1): k = 4, or the largest k in insts below it
local copies_k = 0
for _, k in ipairs(insts) do if k > 1 and k <= 4 and k > copies_k then copies_k = k end end

local rows, base, hosts = {}, {}, {}
local function add(op, label, cfg, eopts, host)
  local p = hw.pair("multi", op .. ":" .. label, cfg, eopts)
  local row = hw.row(p)
  row.op, row.host_ms = op, host and host * 1e3
  local function fill(prefix, s)
    row[prefix .. "rps"], row[prefix .. "tok_s"] = s.throughput_rps, s.tokens_per_s
    row[prefix .. "p50"], row[prefix .. "p99"] = s.latency_p50_s, s.latency_p99_s
    row[prefix .. "busy"], row[prefix .. "peak_kv"] = s.gpu_busy_frac, s.peak_kv_bytes / hw.GiB
    row[prefix .. "int_frag"], row[prefix .. "ext_peak"] = s.kv_internal_frag_peak, s.kv_external_frag_at_peak
    row[prefix .. "ext_mean"], row[prefix .. "reuse"] = s.kv_external_frag_mean, s.block_reuse_rate
    row[prefix .. "done"] = string.format("%d/%d", s.n_done, s.n_requests)
  end
  if p.sim then fill("s_", p.sim.summary) end
  if p.real then fill("r_", p.real.summary) end
  rows[#rows + 1] = row
  return p, row
end

for _, op in ipairs(ops) do
  local host_default = host_of[op] or host_of.all or 0
  local rel_default = release_of[op] or release_of.all or 0
  local host, rel = host_default, rel_default   -- from the inst=1 real run (the first point, its real half first)
  local ks = insts
  for _, k in ipairs(ks) do
    for _, placement in ipairs(k == 1 and {"shared"} or {"shared", "partitioned"}) do
      local label = k == 1 and "inst=1,clock=real" or string.format("inst=%d,%s", k, placement)
      local cfg = config(op, k, placement)
      local eopts = k == 1 and {clock = "real", real_first = true} or {}
      eopts.sim_patch = function(c, pr)
        if k == 1 then
          local h, r = measured_host(pr.real)
          host, rel = h or host_default, r or rel_default
        end
        return with_host(c, host, rel)
      end
      local p, row = add(op, label, cfg, eopts, host)
      if k == 1 then
        hosts[op] = {host, rel}
        row.host_ms = host * 1e3
      end
      row.rel_ms = rel * 1e3
      row.k, row.placement = k, placement
      if p.sim then base[op .. "s"] = base[op .. "s"] or (k == 1 and p.sim.summary.throughput_rps) end
      if p.real then base[op .. "r"] = base[op .. "r"] or (k == 1 and p.real.summary.throughput_rps) end
      row.s_speedup = base[op .. "s"] and row.s_rps and row.s_rps / base[op .. "s"]
      row.r_speedup = base[op .. "r"] and row.r_rps and row.r_rps / base[op .. "r"]
      for _, h in ipairs{0, 0.035} do   -- the step_host_s sweep (simulated only)
        if hw.mode() ~= "real" then
          dkv.save(dkv.simulate(with_host(cfg, h, rel)), "multi:" .. op .. ":" .. label .. ":sim_host=" .. h)
        end
      end
      if k == 1 and op ~= "arrive" then   -- today's path (clock = sum of step times): the identity check
        local q, r2 = add(op, "inst=1,clock=steps", cfg, {sim_only = false,
                                                           sim_patch = function(c) return with_host(c, host, rel) end}, host)
        r2.k, r2.placement = 1, "shared"
        if q.real and p.real then
          r2.identity = q.real.summary.tokens_per_s / p.real.summary.tokens_per_s - 1
        end
      end
    end
  end
  for _, k in ipairs(insts) do   -- a weight copy per instance: the in-process twin of k separate processes
    if k > 1 then
      local cfg, label = config(op, k, "partitioned", true), string.format("inst=%d,partitioned,copies", k)
      -- k weight copies may not fit the GPU preset (8 x LLaDA-8B on an 80 GB stand-in): said, not run
      local ok, p, row = pcall(add, op, label, cfg, {sim_only = not (op == "b1" and k == copies_k),
                                                     sim_patch = function(c) return with_host(c, host, rel) end}, host)
      if not ok and tostring(p):find("do not fit", 1, true) then
        print(string.format("hw: multi:%s:%s: not run: %s", op, label, tostring(p):match("cfg: .*") or tostring(p)))
      elseif not ok then
        error(p, 0)
      else
        row.k, row.placement = k, "partitioned"
        row.s_speedup = base[op .. "s"] and row.s_rps and row.s_rps / base[op .. "s"]
        row.r_speedup = base[op .. "r"] and row.r_rps and row.r_rps / base[op .. "r"]
      end
    end
  end
end

print(string.format("hw multi-instance: %s on %s, P=%d G=%d, dual, %d steps/block, pool %g GiB, timeslice; b1: %d "
                    .. "requests, batch 1/instance; b8: %d requests, <= %d/instance; arrive: b1 at %g req/s",
                    model, gpu, prompt, gen, steps, cap_gib, n1, n8, seqs, rate))
for _, op in ipairs(ops) do   -- in the order of -D ops (pairs() would print them in a varying order)
  local h = hosts[op]
  if h then
    print(string.format("measured host per step (%s, inst=1 real): %.2f ms (planning %.3f ms; release %.3f ms)", op,
                        (h[1] + h[2]) * 1e3, h[1] * 1e3, h[2] * 1e3))
  end
end
hw.print_table(rows, {{"point", "point"}, {"expect_s", "expect_s", "%.1f"}, {"host_ms", "host_ms", "%.3f"},
  {"s_done", "s_done"}, {"r_done", "r_done"},
  {"s_rps", "sim_req/s", "%.3f"}, {"r_rps", "real_req/s", "%.3f"}, {"s_speedup", "sim_x", "%.2f"},
  {"r_speedup", "real_x", "%.2f"}, {"identity", "k1_ident", "%+.3f"},
  {"s_p50", "sim_p50", "%.3f"}, {"r_p50", "real_p50", "%.3f"}, {"s_p99", "sim_p99", "%.3f"}, {"r_p99", "real_p99", "%.3f"},
  {"s_busy", "sim_busy", "%.2f"}, {"r_busy", "real_busy", "%.2f"},
  {"s_peak_kv", "sim_kvGiB", "%.3f"}, {"r_peak_kv", "real_kvGiB", "%.3f"},
  {"s_int_frag", "sim_int", "%.4f"}, {"r_int_frag", "real_int", "%.4f"},
  {"s_ext_peak", "sim_ext@pk", "%.4f"}, {"r_ext_peak", "real_ext@pk", "%.4f"},
  {"s_ext_mean", "sim_extm", "%.4f"}, {"r_ext_mean", "real_extm", "%.4f"},
  {"s_reuse", "sim_reuse", "%.3f"}, {"r_reuse", "real_reuse", "%.3f"}, {"dev_used_gib", "dev_GiB", "%.2f"},
  {"sim_s", "sim_s", "%.3f"}, {"real_s", "real_s", "%.3f"}, {"rel_ms", "release_ms", "%.3f"}})
print("claim (Flash-dLLM): 3.8x throughput with 4 instances")
hw.footer("hw_multi_instance", rows)
