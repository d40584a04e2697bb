-- experiments/hw_select_keys.lua - the sparse selection (kernel class kv_gather: score GEMMs, row
-- statistics, column sums, top-k, pack) per selection and layer, measured against the simulator, at
-- key counts that are and are not multiples of 32, for LLaDA-8B (32 / 32 heads) and Dream-7B (28 / 4).
-- Session 12 (issue 9, held-out dream:az:sparse_head): in call 10's instrumented runs the selection
-- of the in-sample points (keys 288, 416, 1,056: multiples of 32) came within 3-11 % of the
-- simulator, that of the held-out points' prompts (580, 841, 1,973 keys: any count) 15-27 %
-- above it, LLaDA-8B and Dream-7B alike; the profile's rows are all at multiples of 256.  The score
-- GEMM's output S has `keys` floats a row (cuda/backend_scores.cu), so an odd count leaves its rows
-- unaligned.  This separates the two (alignment, head configuration) on one device.
--
--   dkv run experiments/hw_select_keys.lua -o sel.h5 -D warmup=each [-D backend=auto|sim|cuda]
--
-- Each point: one request of P + 32 tokens (prompt P, one block of 32 in 4 steps), sparse per head
-- rho 0.5; one of its steps selects once per layer over the P + 32 keys (the table: per selection and
-- layer).  Runs sel:<model>:<keys>:real / :sim.  -D warmup=each runs every point once untimed first
-- (the cuBLAS plan of its GEMM shapes), as the held-out runs' later steps found them.  Expected device
-- time: ~3 s per dkv.execute, two per point (warm-up and timed): ~90 s for the 14 points.
local dkv = require "dkv"
local hw = require "hw_lib"

local models = {"llada-8b", "dream-7b"}
-- keys = P + 32: multiples of 32 (832, 1,280), of 16, 8, 4, and odd; 1,264 is Dream's first held-out
-- request (its selecting step measured 216 us a layer against 98 simulated in call 10)
local prompts = {800, 801, 804, 808, 816, 1232, 1248}
local only = hw.param("point", nil, "run only this point (e.g. dream-7b:833; nil: all points)")

local function per_sel(r)   -- seconds per selection and layer (5 launches each), and the count
  local g = hw.kernel_classes(r).kv_gather
  if not g or g.launches == 0 then return nil, 0 end
  return g.time_s / (g.launches / 5), g.launches / 5
end

local rows = {}
for _, model in ipairs(models) do
  for _, P in ipairs(prompts) do
    local point = string.format("%s:%d", model, P + 32)
    if not only or only == point then
      local cfg = {model = model, gpu = hw.param("gpu", "h200", "GPU preset (datasets/presets/gpu/)"), seed = 1,
        workload = {kind = "fixed", n = 1, interval_s = 0, prompt = P, gen = 32},
        decode = {cache = "sparse", block_len = 32, steps = 4},
        mem = {kind = "blockpool", capacity_bytes = 2 * hw.GiB},
        policies = {retention = {set = "per_head", mode = "fixed", rho = 0.5}},
        record = {kernels = true}}
      local p = hw.pair("sel", point, cfg)
      local row = {point = point, keys = P + 32, align = (P + 32) % 32 == 0 and 32 or (P + 32) % 16 == 0 and 16
                   or (P + 32) % 8 == 0 and 8 or (P + 32) % 4 == 0 and 4 or 1}
      local s, ns = per_sel(p.sim)
      local r, nr = per_sel(p.real)
      row.sim_us, row.real_us, row.n_sel = s and s * 1e6, r and r * 1e6, p.real and nr or ns
      row.err = s and r and (s - r) / r or nil
      row.expect_s = p.sim and 2 * hw.expected_s(p.sim)   -- the point and its warm-up
      rows[#rows + 1] = row
    end
  end
end
assert(#rows > 0, "hw_select_keys: no point matches -D point=" .. tostring(only))
print("hw select keys: one request of keys = P + 32, sparse per head rho 0.5, one block of 32 in 4 steps; "
      .. "kv_gather per selection and layer (real: with per-class events, ~1-2 us each)")
hw.print_table(rows, {{"point", "point"}, {"keys", "keys"}, {"align", "align"}, {"n_sel", "sel x layers"},
  {"sim_us", "sim_us", "%.1f"}, {"real_us", "real_us", "%.1f"}, {"err", "sim_err", "%+.3f"}})
hw.footer("hw_select_keys", rows)
