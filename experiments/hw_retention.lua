-- experiments/hw_retention.lua - issue 6, hardware study 1: dynamic retention on the H200 and in
-- the simulator, the same configurations through dkv.execute and dkv.simulate, one file.
-- (The simulated-only sweep is experiments/retention.lua.)
--
--   dkv run experiments/hw_retention.lua -o ret.h5 [-D backend=auto|sim|cuda] [-D n=4]
--       [-D prompt=512] [-D gen=128] [-D block=32] [-D steps=32] [-D model=llada-8b] [-D gpu=h200]
--
-- Points (runs ret:<point>:real, ret:<point>:sim, ret:<point>:device; pair them with
-- `dkv compare ret.h5 ret.h5 --real-run ret:<point>:real --sim-run ret:<point>:sim`):
--   dense                   no cache: every step a full forward (dLLM-Serve's dense baseline, and
--                           the reference of the output agreement)
--   per_head,rho=0.3/0.5    sparse cache, each head its own top-k, fixed rho
--   shared,rho=0.3/0.5      sparse cache, one token set for all heads, fixed rho
--   per_head,entropy        rho per block from the entropy rule (Beta(2,5) draws, seeded:
--   shared,entropy          rho = 0.1 + 0.8 e, mean 0.33), per head and shared
-- LLaDA-8B shapes, seeded random weights, 4 requests x (512 + 128) all at t = 0, block 32, 32
-- steps per block, a 8 GiB pool (t-major), record.kernels = true (per-class times: calibration).
--
-- Output agreement with the dense run (fraction of identical generated tokens and the error of
-- each token's confidence) comes from dkv.execute{..., outputs = true} (docs/LUA_API.md): the
-- device table's `outputs` hold every request's generated tokens and the softmax probability each
-- had when it was unmasked.  -D outputs=false turns it off: collecting them synchronises after
-- every step (the on_item report), which adds to the measured latency of these points.  The
-- backend reports no raw logit per token, so the logit error column stays "-".  With random
-- weights the agreement measures the mechanism, not the quality of a trained model.
--
-- Expected device time (simulated H200 time of each point, from a run of this script in
-- simulation; x2 + 3 s per dkv.execute, hw_lib.expected_s):
--   dense 6.46 s sim -> ~16 s; each sparse point ~0.99 s sim -> ~5 s; all 7 points ~46 s.
local dkv = require "dkv"
local hw = require "hw_lib"

local model, gpu = hw.param("model", "llada-8b", "model preset (datasets/presets/model/)"), hw.param("gpu", "h200", "GPU preset (datasets/presets/gpu/)")
local n, prompt, gen = hw.param("n", 4, "number of requests"), hw.param("prompt", 512, "prompt tokens per request"), hw.param("gen", 128, "generated tokens per request")
local block, steps = hw.param("block", 32, "block length in tokens (tokens decoded per block)"), hw.param("steps", 32, "denoising steps per block")
local cap_gib = hw.param("capacity_gib", 8, "KV arena / pool capacity, GiB")

local points = {
  {"dense", "none"},
  {"per_head,rho=0.3", "sparse", {set = "per_head", mode = "fixed", rho = 0.3}},
  {"per_head,rho=0.5", "sparse", {set = "per_head", mode = "fixed", rho = 0.5}},
  {"shared,rho=0.3", "sparse", {set = "shared", mode = "fixed", rho = 0.3}},
  {"shared,rho=0.5", "sparse", {set = "shared", mode = "fixed", rho = 0.5}},
  {"per_head,entropy", "sparse", {set = "per_head", mode = "entropy", ent_a = 2, ent_b = 5}},
  {"shared,entropy", "sparse", {set = "shared", mode = "entropy", ent_a = 2, ent_b = 5}},
}
local only = hw.param("point", nil, "run only this point (name as printed; nil: all points)")

local function cfg_of(cache, ret)
  return {model = model, gpu = gpu, seed = 1,
    workload = {kind = "fixed", n = n, interval_s = 0, prompt = prompt, gen = gen},
    decode = {cache = cache, block_len = block, steps = steps},
    mem = {kind = "blockpool", capacity_bytes = cap_gib * hw.GiB},
    policies = {retention = ret},
    record = {kernels = true}}
end

local want_outputs = hw.param("outputs", true, "compare generated tokens with the dense run (needs dkv.execute)") ~= false
local rows, dense_dev = {}, nil
for _, pt in ipairs(points) do
  if not only or only == pt[1] then
    local agree
    local p = hw.pair("ret", pt[1], cfg_of(pt[2], pt[3]), {outputs = want_outputs}, function(dev)
      if pt[1] == "dense" then dense_dev = dev; return nil end
      agree = hw.agreement(dense_dev, dev)
      return agree
    end)
    local row = hw.row(p)
    local s = (p.real or p.sim).summary
    row.hbm_gb_per_tok = (s.hbm_read_bytes + s.hbm_write_bytes) / math.max(1, s.gen_tokens) / 1e9
    row.peak_kv_gib = s.peak_kv_bytes / hw.GiB
    if agree then
      row.token_agree, row.conf_err, row.logit_err = agree.token_agreement, agree.conf_err_mean, agree.logit_rel_err
    end
    rows[#rows + 1] = row
  end
end

print(string.format("hw retention: %s on %s, %d x (P=%d, G=%d), B=%d, %d steps/block, pool %d GiB", model, gpu, n,
                    prompt, gen, block, steps, cap_gib))
local cols = {}
for _, c in ipairs(hw.common_cols) do cols[#cols + 1] = c end
for _, c in ipairs{{"sim_hbm_gb", "sim_HBM_GB", "%.1f"}, {"hbm_gb_per_tok", "HBM_GB/tok", "%.3f"},
                   {"peak_kv_gib", "peakKV_GiB", "%.3f"}, {"dev_used_gib", "dev_GiB", "%.2f"},
                   {"token_agree", "tok_agree", "%.4f"}, {"conf_err", "conf_err", "%.4f"},
                   {"logit_err", "logit_err", "%.4f"}} do
  cols[#cols + 1] = c
end
hw.print_table(rows, cols)
if not hw.real_enabled() then
  print("agreement: needs the real half (the simulator computes no tokens)")
elseif not dense_dev then
  print("agreement: not computed (the dense point did not run: -D point left it out)")
elseif not hw.outputs(dense_dev) then
  print("agreement: not computed (dkv.execute's device table has no `outputs`: run without -D outputs=false)")
end
hw.footer("hw_retention", rows)
