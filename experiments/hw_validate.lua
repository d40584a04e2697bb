-- experiments/hw_validate.lua - issue 6's validation targets: three workloads x three cache modes,
-- each through dkv.execute and dkv.simulate (runs val:<workload>:<cache>:real / :sim / :device),
-- short enough to run again under Nsight Compute (scripts/hw_session.sh profiles each point in its
-- own process and imports the figures into the :real run with dkv ncu-import).
--
--   dkv run experiments/hw_validate.lua -o val.h5 [-D backend=auto|sim|cuda] [-D point=w1:dual]
--       [-D gpu=h200] [-D gemm_eff=0.7] [-D half=real] [-D warmup=false|each] [-D set=classic|heldout|novel]
--
-- -D set=heldout: issue 9's held-out points instead (experiments/hw_heldout_points.lua: trace-sample
-- arrivals, batch 1-32, prompts 256-3,072, every cache mode, progressive offload, LLaDA-8B and
-- Dream-7B; runs ho:<point>:real / :sim / :device; docs/COMPARE.md section 6).
-- -D set=novel: the same kind of points at other block lengths and steps per block (the held-out set's `novel`
-- list; runs nv:<point>:real / :sim / :device; since session 34).
--
-- VALIDATION ONLY: these workloads are disjoint from the calibration (fit) set.  The fit set is
-- every run of hw_retention.lua, hw_offload.lua, hw_multi_instance.lua and hw_layout.lua (fixed
-- workloads of 4, 8 or 16 requests x (512 + 128) tokens); the validation workloads below have
-- other request counts, prompts and generation lengths, so their workload fingerprints differ
-- (`dkv compare --calibration PRESET.lua` checks that mechanically: scripts/hw_session.sh post).
--   w1  1 request  x (256 + 32)
--   w2  2 requests x (1024 + 32)
--   w3  4 requests x (384 + 32)
-- and, only when named by -D point (not among the 9): w5 and w6, 5 and 6 requests x (256 + 32) (Reuse
-- steps of 160 and 192 rows, where cuBLASLt's split-K differs from the replay's old rule: session 19's
-- held-out check of the profile's gemm_splitk block, device call 67); w7 and w8, 3 requests x (768 + 32) and 2
-- x (1504 + 32) (Refresh steps of 2,400 and 3,072 rows: session 20's held-out check of the profile's
-- gemm_reads block at row counts no Nsight Compute run had seen, device call 70); w9 and w10, 2 x (1760 + 32)
-- and 4 x (288 + 32) (Refresh steps of 3,584 and 1,280 rows: session 24's held-out check of the walk after a
-- GEMM, device call 81); w11 and w12, 4 x (304 + 32) and 2 x (1632 + 32) (1,344 and 3,328 rows: the check of the
-- session's three replay changes after their commits, device call 82); w13 and w14, 3 x (640 + 32) and 8 x (160 + 32)
-- (Refresh steps of 2,016 and 1,536 rows, Reuse steps of 96 and 256: session 31's fresh Nsight Compute set for a
-- dirty bound chosen on the older ones, device call 103); w15 and w16, 5 x (480 + 32) and 7 x (192 + 32) (Refresh
-- steps of 2,560 and 1,568 rows, Reuse steps of 160 and 224: session 32's fresh Nsight Compute set, recorded before
-- any rule it judges was chosen, device call 104); w17 and w18, 6 x (352 + 32) and 3 x (1056 + 32) (Refresh steps of
-- 2,304 and 3,264 rows, Reuse steps of 192 and 96: a fresh set recorded at session 32's end for the next session's
-- trials, device call 108); w19 and w20, 5 x (608 + 32) and 12 x (128 + 32) (Refresh steps of 3,200 and 1,920 rows,
-- Reuse steps of 160 and 384: session 37's fresh set, recorded with the L2 order probe before any write rule it
-- judges was chosen, device call 117); w21 and w22, 4 x (832 + 32) and 11 x (176 + 32) (Refresh steps of 3,456 and
-- 2,288 rows, Reuse steps of 128 and 352: session 38's fresh set, to judge session 37's nineteenth write trial
-- unchanged, device call 119); w23 and w24, 7 x (416 + 32) and 9 x (256 + 32) (Refresh steps of 3,136 and 2,592
-- rows, Reuse steps of 224 and 288: a reserve set recorded in the same call, kept unscored until a trial chosen
-- after call 119 is judged on it; session 39's twenty-second trial used it); w25 and w26, 6 x (448 + 32) and
-- 13 x (160 + 32) (Refresh steps of 2,880 and 2,496 rows, Reuse steps of 192 and 416), and w27 and w28, 5 x (704 + 32)
-- and 8 x (320 + 32) (Refresh steps of 3,680 and 2,816 rows, Reuse steps of 160 and 256): two fresh sets recorded at
-- session 39's end (device call 120), both kept unscored for the next trials; w29 and w30, 3 x (1184 + 32) and
-- 14 x (128 + 32) (Refresh steps of 3,648 and 2,240 rows, Reuse steps of 96 and 448), and w31 and w32, 7 x (352 + 32)
-- and 10 x (240 + 32) (Refresh steps of 2,688 and 2,720 rows, Reuse steps of 224 and 320): two fresh sets recorded in
-- session 40 (device call 122) before any trial they judge was chosen; w33 and w34, 9 x (288 + 32) and 4 x (928 + 32)
-- (Refresh steps of 2,880 and 3,840 rows, Reuse steps of 288 and 128), a set recorded in session 41 (device call 123)
-- beside the L2's in-place probe; w35 and w36, 6 x (576 + 32) and 12 x (192 + 32) (Refresh steps of 3,648 and 2,688 rows,
-- Reuse steps of 192 and 384), a set with two sparse points a model recorded in session 43 (device call 128) for the
-- trials on the selection's reads; w37 and w38, 6 x (512 + 32) and 15 x (176 + 32) (Refresh steps of 3,264 and 3,120
-- rows, Reuse steps of 192 and 480), a set recorded in session 50 (device call 142) on the GPU the pool lent.
-- Cache modes: prefix, dual, sparse (per head, rho 0.5).  One block of 32 in 4 steps (so a sparse
-- request runs its dense, selecting and Reuse steps), all requests at t = 0 (plans independent of
-- timing: the profiled run's kernels are those of the unprofiled run), a 2 GiB pool,
-- record.kernels = true.
-- -D gpu / -D gemm_eff: the simulated half under a calibrated preset (scripts/hw_session.sh post
-- re-simulates with the preset it fitted; compare ignores gpu.* and sim.* differences).
--
-- Expected device time: each point 0.01-0.07 s simulated; ~3 s per dkv.execute (weights, arena):
-- ~30 s for the 9 points in one process.  Under ncu (one process per point) the time is set by
-- the ~1,500 kernel launches per point (4 steps x ~330 + ~200 weight fills): not known yet.
local dkv = require "dkv"
local hw = require "hw_lib"

local model, gpu = hw.param("model", "llada-8b", "model preset (datasets/presets/model/)"), hw.param("gpu", "h200", "GPU preset (datasets/presets/gpu/)")
local set = hw.param("set", "classic", "classic: issue 6's 9 points (w1-w3 x prefix/dual/sparse); heldout: issue 9's "
                     .. "held-out points (experiments/hw_heldout_points.lua); novel: its points at other block lengths "
                     .. "and steps per block")
assert(set == "classic" or set == "heldout" or set == "novel",
       "hw_validate: -D set must be classic, heldout or novel, got " .. tostring(set))
local steps = hw.param("steps", set == "heldout" and 8 or 4, "denoising steps per block (default 4; 8 with -D set=heldout; "
                       .. "with -D set=novel each point's own)")
assert(set ~= "novel" or dkv.params.steps == nil,
       "hw_validate: -D steps does not apply to -D set=novel (each of its points sets its own steps per block)")
local gemm_eff = hw.param("gemm_eff", nil, "override the preset's GEMM efficiency (nil: the preset's)")
local l2k = tostring(hw.param("l2_kernels", "false", "with -D backend=sim: true records the L2 replay's kernels of "
                              .. "every step (record.l2_kernels; scripts/ncu_layer.py sets them beside Nsight Compute's)"))
assert(l2k == "true" or l2k == "false", "hw_validate: -D l2_kernels must be true or false, got " .. l2k)
local function record() return {kernels = true, l2_kernels = l2k == "true" or nil} end

local workloads = {
  {"w1", 1, 256, 32},
  {"w2", 2, 1024, 32},
  {"w3", 4, 384, 32},
  {"w5", 5, 256, 32, named = true},   -- only when -D point names them
  {"w6", 6, 256, 32, named = true},
  {"w7", 3, 768, 32, named = true},
  {"w8", 2, 1504, 32, named = true},
  {"w9", 2, 1760, 32, named = true},
  {"w10", 4, 288, 32, named = true},
  {"w11", 4, 304, 32, named = true},
  {"w12", 2, 1632, 32, named = true},
  {"w13", 3, 640, 32, named = true},
  {"w14", 8, 160, 32, named = true},
  {"w15", 5, 480, 32, named = true},
  {"w16", 7, 192, 32, named = true},
  {"w17", 6, 352, 32, named = true},
  {"w18", 3, 1056, 32, named = true},
  {"w19", 5, 608, 32, named = true},
  {"w20", 12, 128, 32, named = true},
  {"w21", 4, 832, 32, named = true},
  {"w22", 11, 176, 32, named = true},
  {"w23", 7, 416, 32, named = true},
  {"w24", 9, 256, 32, named = true},
  {"w25", 6, 448, 32, named = true},
  {"w26", 13, 160, 32, named = true},
  {"w27", 5, 704, 32, named = true},
  {"w28", 8, 320, 32, named = true},
  {"w29", 3, 1184, 32, named = true},
  {"w30", 14, 128, 32, named = true},
  {"w31", 7, 352, 32, named = true},
  {"w32", 10, 240, 32, named = true},
  {"w33", 9, 288, 32, named = true},
  {"w34", 4, 928, 32, named = true},
  {"w35", 6, 576, 32, named = true},
  {"w36", 12, 192, 32, named = true},
  {"w37", 6, 512, 32, named = true},
  {"w38", 15, 176, 32, named = true},
}
local caches = {
  {"prefix", nil},
  {"dual", nil},
  {"sparse", {set = "per_head", mode = "fixed", rho = 0.5}},
}
local only = hw.param("point", nil, "run only this point (name as printed; nil: all points)")
assert(l2k == "false" or hw.mode() == "sim", "hw_validate: -D l2_kernels=true is for the simulated half alone: add "
       .. "-D backend=sim (the executed half records no replay)")

local rows = {}
if set == "heldout" or set == "novel" then
  -- issue 9's held-out points (experiments/hw_heldout_points.lua): arrivals over time, batch 1-32, prompts
  -- 256-3,072, every cache mode, progressive offload, LLaDA-8B and Dream-7B; runs ho:<point>:real/sim/device
  -- (set novel: nv:<point>, each at its own block length and steps per block)
  local dsteps = steps
  local pts = require "hw_heldout_points"
  if set == "novel" then pts = pts.novel end
  local study = set == "novel" and "nv" or "ho"
  for _, h in ipairs(pts) do
    if not only or only == h[1] then
      local cfg = {model = h[2], gpu = gpu, seed = 1, workload = h[3],
        decode = {cache = h[4], block_len = h[7] or 32, steps = h[8] or dsteps},
        scheduler = {kind = "phase", max_num_seqs = h[5]},
        mem = {kind = "blockpool", capacity_bytes = 16 * hw.GiB},
        policies = h[6],
        sim = gemm_eff and {gemm_eff = gemm_eff} or nil,
        record = record()}
      local p = hw.pair(study, h[1], cfg)
      local row = hw.row(p)
      local x = p.real or p.sim
      if x then
        row.n_steps, row.n_req = x.summary.n_steps, x.summary.n_requests
        row.p99 = x.summary.latency_p99_s
      end
      if p.sim then row.sim_p99 = p.sim.summary.latency_p99_s end
      if p.real then row.real_p99 = p.real.summary.latency_p99_s end
      rows[#rows + 1] = row
    end
  end
  if #rows == 0 then
    local names = {}
    for _, h in ipairs(pts) do names[#names + 1] = h[1] end
    error(string.format("hw_validate: no point of -D set=%s matches -D point=%s (the names as printed, without the "
                        .. "%s: prefix): %s", set, tostring(only), study, table.concat(names, ", ")))
  end
  if set == "novel" then
    print(string.format("hw validate (novel): on %s, each point's own blocks and steps, phase scheduler, pool 16 GiB", gpu))
  else
    print(string.format("hw validate (held-out): on %s, blocks of 32 in %d steps, phase scheduler, pool 16 GiB", gpu, dsteps))
  end
  hw.print_table(rows, {{"point", "point"}, {"n_req", "req"}, {"n_steps", "steps"}, {"expect_s", "expect_s", "%.1f"},
    {"sim_s", "sim_s", "%.3f"}, {"real_s", "real_s", "%.3f"}, {"sim_lat_s", "sim_lat", "%.3f"},
    {"real_lat_s", "real_lat", "%.3f"}, {"sim_p99", "sim_p99", "%.3f"}, {"real_p99", "real_p99", "%.3f"},
    {"sim_tok_s", "sim_tok/s", "%.1f"}, {"real_tok_s", "real_tok/s", "%.1f"}, {"dev_used_gib", "dev_GiB", "%.2f"}})
  hw.footer("hw_validate", rows)
  return
end
for _, w in ipairs(workloads) do
  for _, c in ipairs(caches) do
    local point = w[1] .. ":" .. c[1]
    if (not only and not w.named) or only == point then
      local cfg = {model = model, gpu = gpu, seed = 1,
        workload = {kind = "fixed", n = w[2], interval_s = 0, prompt = w[3], gen = w[4]},
        decode = {cache = c[1], block_len = 32, steps = steps},
        mem = {kind = "blockpool", capacity_bytes = 2 * hw.GiB},
        policies = {retention = c[2]},
        sim = gemm_eff and {gemm_eff = gemm_eff} or nil,
        record = record()}
      local p = hw.pair("val", point, cfg)
      local row = hw.row(p)
      local x = p.real or p.sim
      if x then row.n_steps = x.summary.n_steps end
      local k = hw.kernel_classes(p.real or p.sim)
      local launches = 0
      for _, e in pairs(k) do launches = launches + e.launches end
      row.launches = launches
      rows[#rows + 1] = row
    end
  end
end
assert(#rows > 0, "hw_validate: no point matches -D point=" .. tostring(only))

print(string.format("hw validate: %s on %s%s, one block of 32 in %d steps, pool 2 GiB", model, gpu,
                    gemm_eff and string.format(" (gemm_eff %.3g)", gemm_eff) or "", steps))
hw.print_table(rows, {{"point", "point"}, {"n_steps", "steps"}, {"launches", "launches"},
  {"expect_s", "expect_s", "%.1f"}, {"sim_s", "sim_s", "%.4f"}, {"real_s", "real_s", "%.4f"},
  {"sim_lat_s", "sim_lat", "%.4f"}, {"real_lat_s", "real_lat", "%.4f"}, {"lat_err", "lat_err", "%+.3f"},
  {"sim_hbm_gb", "sim_HBM_GB", "%.2f"}, {"dev_used_gib", "dev_GiB", "%.2f"}})
hw.footer("hw_validate", rows)
