-- experiments/layout.lua - Flash-dLLM's cross-timestep KV layout claim:
-- "layer-major, step-minor, heads contiguous instead of (step, layer, head) nesting:
--  bandwidth utilisation 38 % -> 81 %, reorder cost 0.7 %".
--
-- The layout policy (core/policy/layout.h, docs/POLICIES.md section 2) turns a layout into the
-- contiguous run one attention read stream sees (t-major: head_dim * b; layer-major: a block's
-- tokens * head_dim * b) and the GPU's bw_curve into an efficiency.  This script runs the same
-- dual-cache workload under both layouts, with two curves: the curve the H200 preset assumed until
-- 2026-12-01 (a 32-byte sector model, "assumed" below) and the curve measured on the H200
-- (docs/POLICIES.md, "Measured on the H200"), and reports the attention kernels' bandwidth
-- utilisation, latency and the reorder copies' share of GPU time.  It studies the layout policy's
-- model, so it costs with the roofline (profile = "": a measured profile's attention times do not
-- depend on the layout's run length; on the H200 the layouts measured the same, docs/CLAIMS.md).
--
--   dkv run experiments/layout.lua [-D model=llada-8b] [-D gpu=h200] [-D n=8] [-D prompt=512]
--                                  [-D gen=256] [-D block=32] [-D block_tokens=32]
local dkv = require("dkv")

local model = dkv.param("model", "llada-8b", "model preset (datasets/presets/model/)")
local gpu_name = dkv.param("gpu", "h200", "GPU preset (datasets/presets/gpu/)")
local n, prompt, gen = dkv.param("n", 8, "number of requests", {integer = true, min = 1}), dkv.param("prompt", 512, "prompt tokens per request", {integer = true, min = 1}), dkv.param("gen", 256, "generated tokens per request", {integer = true, min = 1})
local block, block_tokens = dkv.param("block", 32, "block length in tokens (tokens decoded per block)", {integer = true, min = 1}), dkv.param("block_tokens", 32, "tokens per KV block", {integer = true, min = 1})

-- the curve the h200 preset carried until 2026-12-01: an assumption, not a measurement
local assumed = {
  {32, 0.12}, {64, 0.22}, {128, 0.40}, {256, 0.62}, {512, 0.78}, {1024, 0.88}, {4096, 0.95}, {65536, 1.0},
}
-- read efficiency vs contiguous run, measured on the H200 (relative to a contiguous read)
local measured = {
  {16, 0.14}, {32, 0.28}, {64, 0.56}, {128, 0.90}, {256, 0.94}, {512, 0.94}, {1024, 0.93},
  {2048, 0.975}, {8192, 0.97}, {16384, 0.99}, {65536, 0.99}, {262144, 1.0},
}

local function eff(curve, run) -- dkv_gpu_bw_efficiency: log-linear in run bytes
  if run <= curve[1][1] then return curve[1][2] end
  if run >= curve[#curve][1] then return curve[#curve][2] end
  for i = 2, #curve do
    if run <= curve[i][1] then
      local a, b = curve[i - 1], curve[i]
      local t = (math.log(run) - math.log(a[1])) / (math.log(b[1]) - math.log(a[1]))
      return a[2] + t * (b[2] - a[2])
    end
  end
end

local m = dkv.preset.model(model)
local kvb = ({bf16 = 2, fp16 = 2, fp32 = 4, fp8 = 1})[m.kv_dtype or "bf16"] or 2
local cached = prompt + gen - block           -- a dual-cache Reuse step reads L - B cached tokens
local runs_t = m.head_dim * kvb
local nblk = math.ceil(cached / block_tokens)
local runs_l = cached * m.head_dim * kvb / nblk

local rows = {}
local cols = {curve = {}, layout = {}, reorder = {}, run_bytes = {}, model_eff = {}, attn_bw_util = {},
              step_bw_util = {}, latency_s = {}, tokens_per_s = {}, reorder_frac = {}}

local function run_one(curve_name, curve, layout, reorder)
  local g = dkv.preset.gpu(gpu_name)
  g.bw_curve = curve
  g.profile = nil   -- the layout policy's roofline model (see the header)
  local r = dkv.simulate{
    model = model, gpu = g,
    workload = {kind = "fixed", n = n, interval_s = 0, prompt = prompt, gen = gen},
    decode = {cache = "dual", block_len = block},
    mem = {kind = "blockpool", block_tokens = block_tokens},
    policies = {layout = {layout = layout, reorder = reorder}},
    record = {kernels = true, memory_every = 0},
  }
  local s = r.summary
  local k = r:kernels()
  local t_all, t_attn, b_attn, t_reo = 0, 0, 0, 0
  for i = 1, #k.kind do
    local cls = k.class_names[k.kind[i]]
    t_all = t_all + k.time_s[i]
    if cls == "attn" then
      t_attn = t_attn + k.time_s[i]
      b_attn = b_attn + k.read_bytes[i] + k.write_bytes[i]
    elseif cls == "reorder" then
      t_reo = t_reo + k.time_s[i]
    end
  end
  local st = r:steps()
  local comp = 0
  for i = 1, #st.compute_s do comp = comp + st.compute_s[i] end
  local run = layout == "tmajor" and runs_t or runs_l
  local row = {
    curve = curve_name, layout = layout, reorder = layout == "tmajor" and "-" or reorder, run_bytes = run,
    model_eff = eff(g.bw_curve, run),
    attn_bw_util = t_attn > 0 and b_attn / (t_attn * g.hbm_bw) or 0,
    step_bw_util = (s.hbm_read_bytes + s.hbm_write_bytes) / (comp * g.hbm_bw),
    latency_s = s.latency_mean_s, tokens_per_s = s.tokens_per_s,
    reorder_frac = t_all > 0 and t_reo / t_all or 0,
  }
  rows[#rows + 1] = row
  for c, v in pairs(cols) do v[#v + 1] = row[c] end
  dkv.save(r, string.format("layout_%s_%s_%s", curve_name, layout, reorder))
end

for _, cv in ipairs{{"assumed", assumed}, {"measured", measured}} do
  run_one(cv[1], cv[2], "tmajor", "per_step")
  run_one(cv[1], cv[2], "layer_major", "per_step")
  run_one(cv[1], cv[2], "layer_major", "per_block")
end

print(string.format("layout: %s on %s, %d x (P=%d, G=%d), dual cache, B=%d, %d-token pool blocks",
                    model, gpu_name, n, prompt, gen, block, block_tokens))
print(string.format("%-9s %-12s %-9s %9s %9s %9s %9s %9s %9s %9s", "curve", "layout", "reorder", "run_B",
                    "model_eff", "attn_util", "step_util", "lat_s", "tok/s", "reorder%"))
for _, r in ipairs(rows) do
  print(string.format("%-9s %-12s %-9s %9.0f %9.3f %9.3f %9.3f %9.3f %9.1f %9.3f", r.curve, r.layout, r.reorder,
                      r.run_bytes, r.model_eff, r.attn_bw_util, r.step_bw_util, r.latency_s, r.tokens_per_s,
                      100 * r.reorder_frac))
end
print("claim: bandwidth utilisation 38 % -> 81 %, reorder cost 0.7 %")

dkv.write_run("layout_table", {
  params = {model = model, gpu = gpu_name, n = n, prompt = prompt, gen = gen, block = block,
            block_tokens = block_tokens},
  tables = {layout = {columns = cols, units = {run_bytes = "bytes", latency_s = "s", tokens_per_s = "tokens/s"},
                      docs = {model_eff = "policy efficiency of the cached-KV read run (bw_curve)",
                              attn_bw_util = "attention kernels: HBM bytes / (time x hbm_bw)",
                              step_bw_util = "all kernels: HBM bytes / (compute time x hbm_bw)",
                              reorder_frac = "reorder kernels' share of kernel time"}}},
})
