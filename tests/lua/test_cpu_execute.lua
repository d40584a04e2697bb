-- test_cpu_execute.lua - dkv.execute(cfg, {backend = "cpu"}): the whole engine on the CPU with the
-- tiny dLLM's weights (cpu/backend.h): generated text saved per request, teacher-forced held-out
-- scores, lossy policies applied (low-rank at ratio 1 reproduces no offload exactly, its full blocks raw as the
-- CUDA backend stores them, sparse at
-- rho = 1 per head = shared), and clear errors for a wrong backend or targets file.
local dkv = require "dkv"
local W = "datasets/models/tiny-dllm/model.safetensors"
local P, T = "tests/data/prompts_cpu.jsonl", "tests/data/prompts_cpu_targets.jsonl"

local function run(decode, policies, opts, model)
  local o = {backend = "cpu", weights = W, outputs = true}
  for k, v in pairs(opts or {}) do o[k] = v end
  return dkv.execute({model = model or "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}},
                      decode = decode or {cache = "dual", block_len = 32}, mem = {capacity_bytes = 64 * 2 ^ 20},
                      policies = policies}, o)
end

local function agree(a, b)
  local same, n = 0, 0
  for i = 1, #a.outputs.tokens do
    for j = 1, #a.outputs.tokens[i] do
      n = n + 1
      if a.outputs.tokens[i][j] == b.outputs.tokens[i][j] then same = same + 1 end
    end
  end
  return same / n
end

local r, dual = run()
assert(dual.device:find("cpu"), dual.device)
assert(#dual.outputs.tokens == 2 and #dual.outputs.tokens[1] == 32)
assert(dual.steps == 32 and dual.pool_blocks_touched > 0 and dual.thread_cpu_s > 0)
for _, row in ipairs(dual.outputs.tokens) do
  for _, t in ipairs(row) do assert(t >= 0 and t < 264, t) end   -- every position unmasked
end
assert(r.summary.n_done == 2)
assert(dkv.save(r, "cpu_dual") == true)   -- the outputs go into the run (tokens and text)

-- low-rank compression of offloaded KV at ratio 1: an order whose form would be larger than its raw blocks goes raw
-- (the CUDA backend's rule, core/model/devmem.h); this run's orders are all of full blocks, so all go raw and no
-- matrix is projected (an order projected at full rank is tests/unit/test_cpu_offload_forms.c's)
local _, lr1 = run(nil, {offload = {mode = "progressive", lowrank_ratio = 1}})
assert(lr1.n_compress > 0 and lr1.n_fetch > 0, "progressive offload compressed and fetched")
assert(lr1.n_lowrank_stored < lr1.n_compress, "ratio 1: orders of full blocks go raw")
assert(lr1.n_lowrank_stored > 0 or lr1.compress_rel_err_mean ~= lr1.compress_rel_err_mean,
       "no projected matrix: no error mean (NaN)")
assert(lr1.n_lowrank_stored == 0, "ratio 1, full blocks: every order raw")
assert(agree(dual, lr1) == 1, "ratio 1 reproduces no offload")
local _, lr01 = run(nil, {offload = {mode = "progressive", lowrank_ratio = 0.1}})
assert(lr01.n_lowrank_stored == lr01.n_compress, "ratio 0.1 (rank 6): every form is smaller than its blocks")
assert(lr01.compress_rel_err_mean > 0.1, lr01.compress_rel_err_mean)   -- rank 6 of 64: applied

-- sparse at rho = 1 keeps every token: per head and shared give the same tokens
local sp = {cache = "sparse", block_len = 32}
local _, ph = run(sp, {retention = {rho = 1, set = "per_head"}})
local _, sh = run(sp, {retention = {rho = 1, set = "shared"}})
assert(agree(ph, sh) == 1)
-- the Lua retention callback reaches the backend through the plan: a callback giving 0.25 on
-- every block decodes as fixed 0.25 does, and differently from rho 1 (fewer keys attended)
local _, cb = run(sp, {retention = {rho = 0.5, callback = function(req, blk, rho) return 0.25 end,
                                    rho_min = 0.1, rho_max = 1}})
local _, fx = run(sp, {retention = {rho = 0.25}})
assert(agree(cb, fx) == 1 and agree(fx, ph) < 1, agree(fx, ph))

-- teacher-forced held-out scoring: every generated position scored once
local _, sc = run(nil, nil, {targets = T})
assert(sc.score.n == 64 and sc.score.accuracy > 0.2 and sc.score.accuracy <= 1, sc.score.accuracy)
assert(sc.score.bits_per_byte > 0 and sc.score.bits_per_byte < 8, sc.score.bits_per_byte)
assert(#sc.score.per_request == 2 and sc.score.per_request[1].n == 32)

-- FP8 KV (e4m3, per-block scales) runs and is a different decode state than bf16
local _, f8 = run(nil, nil, {targets = T}, {base = "tiny-dllm", kv_dtype = "fp8"})
assert(f8.score.n == 64 and f8.score.bits_per_byte ~= sc.score.bits_per_byte, "fp8 changes the KV read")
assert(math.abs(f8.score.bits_per_byte - sc.score.bits_per_byte) < 0.5)

local function fails(f, ...)
  local ok, err = pcall(f)
  assert(not ok, "expected an error")
  for _, s in ipairs{...} do assert(tostring(err):find(s, 1, true), tostring(err) .. "  [lacks: " .. s .. "]") end
end
fails(function() run(nil, nil, {backend = "cpux"}) end, "backend", "cpux", "cpu")
-- targets on the CUDA backend are accepted (scored there: tests/gpu/test_backend_score.c checks it
-- against this backend); without a GPU the call stops at the device probe, after the options
local okc, rc, dc = pcall(run, nil, nil, {backend = "cuda", targets = T})
if okc then
  assert(dc.score.n == 64 and #dc.score.per_request == 2, "cuda scores every generated position")
else
  assert(tostring(rc):find("no CUDA device", 1, true), tostring(rc))
end
fails(function() run(nil, nil, {backend = "cuda", targets = T, follow = dual.outputs}) end, "follow", "targets")
-- the L2 replay's kernels are the simulator's: both executing backends refuse record.l2_kernels (the CUDA one
-- after its device probe: without a GPU that error comes first)
local function l2rec(be)
  return dkv.execute({model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}},
                      decode = {cache = "dual", block_len = 32}, mem = {capacity_bytes = 64 * 2 ^ 20},
                      record = {l2_kernels = true}}, {backend = be, weights = W})
end
fails(function() l2rec("cpu") end, "cfg.record.l2_kernels", "dkv.simulate")
-- modelled host time has no place in an executed run (it would be added to the measured seconds): both executing
-- backends refuse the scheduler's host-time fields, naming each (the CPU backend ran them before session 42)
local function hostcfg(field, be)
  return dkv.execute({model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}},
                      decode = {cache = "dual", block_len = 32}, mem = {capacity_bytes = 64 * 2 ^ 20},
                      scheduler = {[field] = 0.5}}, {backend = be, weights = W})
end
for _, f in ipairs{"step_host_s", "step_release_s", "handover_s"} do
  fails(function() hostcfg(f, "cpu") end, "cfg.scheduler." .. f .. " = 0.5", "set it to 0")
end
-- the CUDA backend's L2 flush diagnostic (opts.l2_flush): its points are checked before any device; the CPU
-- backend refuses it
fails(function() run(nil, nil, {backend = "cuda", l2_flush = {{layer = 1, after = "attnn"}}}) end,
      "opts.l2_flush[1].after", "did you mean 'attn'")
fails(function() run(nil, nil, {backend = "cuda", l2_flush = {{layer = 1}}}) end, "opts.l2_flush[1].after", "missing")
-- (since session 48) an entry may read an activation buffer instead of the flush buffer
fails(function() run(nil, nil, {backend = "cuda", l2_flush = {{layer = 1, after = "o", read = "qkvv"}}}) end,
      "opts.l2_flush[1].read", "did you mean 'qkv'")
fails(function() run(nil, nil, {backend = "cuda", l2_flush = {{layer = 1, after = "o", reads = "qkv"}}}) end,
      "opts.l2_flush[1]", "reads")
fails(function() run(nil, nil, {backend = "cuda", l2_flush = {}}) end, "opts.l2_flush", "non-empty array")
fails(function() run(nil, nil, {backend = "cuda", l2_flush = {{layer = -1, after = "o"}}}) end, "opts.l2_flush[1].layer")
fails(function() run(nil, nil, {l2_flush = {{layer = 0, after = "o"}}}) end, "opts.l2_flush", "backend = 'cuda'")
local okl, el = pcall(l2rec, "cuda")
assert(not okl and (tostring(el):find("cfg.record.l2_kernels", 1, true) or tostring(el):find("no CUDA device", 1, true)),
       tostring(el))
fails(function() run(nil, nil, {targets = "tests/data/prompts_tiny.jsonl"}) end, "opts.targets", "3 lines for 2")
fails(function() run(nil, nil, {targets = "tests/data/none.jsonl"}) end, "opts.targets", "none.jsonl")
print("test_cpu_execute: ok")
