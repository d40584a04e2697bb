-- test_cpu_follow.lua - trajectory replay (opts.follow, decode/follow.h) and the tie classification of
-- docs/CPU.md "CPU against CUDA", selection replay (opts.follow.select), on the CPU backend with the
-- tiny dLLM; and retention from the attention entropy the backend measures (policies.retention.measured).
local dkv = require "dkv"
local W = "datasets/models/tiny-dllm/model.safetensors"
local P = "tests/data/prompts_cpu.jsonl"
local TOL_REL = 4 / 256   -- the protocol's tie tolerance: 4 bf16 unit roundoffs x max|z|

local function run(decode, policies, opts)
  local o = {backend = "cpu", weights = W, outputs = true}
  for k, v in pairs(opts or {}) do o[k] = v end
  return dkv.execute({model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}},
                      decode = decode or {cache = "dual", block_len = 32}, mem = {capacity_bytes = 64 * 2 ^ 20},
                      policies = policies}, o)
end

-- follower F replaying leader L: same, ties, mismatches (the experiment's classification)
local function classify(L, F)
  local same, ties, bad, n = 0, 0, 0, 0
  for i = 1, #L.tokens do
    for g = 1, #L.tokens[i] do
      local t = L.tokens[i][g]
      assert(F.tokens[i][g] == t, "the follower commits the leader's token")
      assert(F.step[i][g] == L.step[i][g], "at the leader's step")
      n = n + 1
      assert(F.gap[i][g] >= 0 and F.margin[i][g] >= 0 and F.zmax[i][g] > 0)
      if F.argmax[i][g] == t then
        same = same + 1
        assert(F.gap[i][g] == 0)
      elseif F.gap[i][g] <= TOL_REL * F.zmax[i][g] then
        ties = ties + 1
      else
        bad = bad + 1
      end
    end
  end
  return same, ties, bad, n
end

-- 1. a backend following its own trajectory agrees everywhere, and its argmax is what it committed
local _, a = run()
assert(a.outputs.argmax and a.outputs.margin and a.outputs.gap and a.outputs.zmax, "logit columns reported")
for i = 1, #a.outputs.tokens do
  for g = 1, #a.outputs.tokens[i] do
    assert(a.outputs.argmax[i][g] == a.outputs.tokens[i][g] and a.outputs.gap[i][g] == 0)
  end
end
local _, f = run(nil, nil, {follow = a.outputs})
local same, ties, bad, n = classify(a.outputs, f.outputs)
assert(n == 64 and same == n and ties == 0 and bad == 0, string.format("%d %d %d %d", same, ties, bad, n))

-- 2. bf16 activations (the CUDA path's precision, emulated) following fp32: every difference a tie
local _, h = run(nil, nil, {follow = a.outputs, bf16_activations = true})
same, ties, bad, n = classify(a.outputs, h.outputs)
print(string.format("bf16 emulation follows fp32: same %d, ties %d, mismatches %d of %d", same, ties, bad, n))
assert(bad == 0 and (same + ties) / n >= 0.99)
local diff = 0   -- the emulation is applied: some logits differ from fp32's
for i = 1, #a.outputs.tokens do
  for g = 1, #a.outputs.tokens[i] do diff = diff + (h.outputs.margin[i][g] ~= a.outputs.margin[i][g] and 1 or 0) end
end
assert(diff > n / 2, "bf16 activations change the logits: " .. diff)

-- 3. a real mismatch is detected: sparse retention at rho 0.1 (a different model of the context)
-- following the dense decode disagrees beyond the tie tolerance somewhere
local _, sp = run({cache = "sparse", block_len = 32}, {retention = {rho = 0.1}}, {follow = a.outputs})
same, ties, bad, n = classify(a.outputs, sp.outputs)
print(string.format("sparse rho 0.1 follows dual: same %d, ties %d, mismatches %d of %d", same, ties, bad, n))
assert(bad > 0, "a lossy policy must show non-tie mismatches")

-- 4. a trajectory that does not fit the schedule is an error, not a silent skip
local function fails(pat, ...)
  local ok, e = pcall(...)
  assert(not ok and tostring(e):find(pat, 1, true), tostring(e))
end
local bent = {id = a.outputs.id, tokens = a.outputs.tokens, step = {}}
for i = 1, #a.outputs.step do
  bent.step[i] = {}
  for g = 1, #a.outputs.step[i] do bent.step[i][g] = a.outputs.step[i][g] end
end
bent.step[1][1], bent.step[1][2] = bent.step[1][2], bent.step[1][1] + 0   -- keep counts ...
bent.step[1][3] = bent.step[1][3] + 1                                      -- ... but move one commitment
fails("schedules differ", run, nil, nil, {follow = bent})
fails("needs outputs = true", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {backend = "cpu", weights = W, follow = a.outputs})
fails("bf16_activations", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {weights = W, bf16_activations = true})
fails("warm_gemms", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {backend = "cpu", weights = W, warm_gemms = false})
fails("warm_gemms", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {backend = "cpu", weights = W, warm_gemms = "yes"})
fails("warm_compressor", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {backend = "cpu", weights = W, warm_compressor = false})
fails("warm_compressor", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {weights = W, warm_compressor = "yes"})
fails("takes effect only with warm_gemms", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {weights = W, warm_gemms = false, warm_compressor = true})
fails("sm_clock", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {backend = "cpu", weights = W, sm_clock = true})
fails("sm_clock", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {backend = "cpu", weights = W, sm_clock = "on"})
fails("clock_probe", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {backend = "cpu", weights = W, clock_probe = true})
fails("clock_probe", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {backend = "cpu", weights = W, clock_probe = 1})
-- every other option of the CUDA backend that the CPU backend does not read: an error naming it
for k, v in pairs({device = 0, attn_streams = 2, class_timing = false, max_logit_rows = 64, layout = "tmajor",
                   staging_bytes = 2 ^ 20, host_bytes = 2 ^ 20}) do
  fails("opts." .. k .. ": is for backend = 'cuda'", dkv.execute,
        {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}}, {backend = "cpu", weights = W, [k] = v})
end
-- cfg.sim is the simulator's: no field of it takes effect in an executed run (nor is it written into its provenance)
fails("cfg.sim: is the simulator's", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}},
                                                    sim = {gemm_eff = 0.5}}, {backend = "cpu", weights = W})
fails("cfg.sim: is the simulator's", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}},
                                                    sim = {kernel_scale = 2}}, {weights = W})

-- 5. selection replay (docs/CPU.md "Selection replay"): a sparse leader's outputs carry its kept
-- key sets; a follower keeps them and reports, per set, whether its own top-k differs
local TOL_SEL = 48 / 256   -- the protocol's selection tie tolerance: -margin <= 48 u x mag
local sparse = {cache = "sparse", block_len = 32}
for _, set in ipairs({"per_head", "shared"}) do
  local pol = {retention = {rho = 0.5, set = set}}
  local _, ls = run(sparse, pol)
  local S = ls.outputs.select
  assert(S and #S.request == 2 * 6 * (set == "shared" and 1 or 2), "one row per request, layer and set")
  for i = 1, #S.request do   -- the leader's own sets: no difference, a non-negative margin
    assert(S.followed[i] == 0 and S.differs[i] == 0 and S.margin[i] >= 0 and #S.kept[i] == S.keep[i])
  end
  -- a fabricated selection (the first keep candidates of the canvas, not the top-k): a follower that
  -- replays it must see its own top-k differ with a negative margin, and other logits than a
  -- follower with its own selections; ignoring the replay fails here
  local fab = {request = {}, step = {}, layer = {}, set = {}, sets = {}, keep = {}, kept = {}}
  for i = 1, #S.request do
    for _, c in ipairs({"request", "step", "layer", "set", "sets", "keep"}) do fab[c][i] = S[c][i] end
    local P0 = #ls.outputs.prompt[S.request[i] + 1]   -- the block starts at the prompt's end
    local k = {}
    for j = 0, S.keep[i] - 1 do k[#k + 1] = j < P0 and j or j + 32 end
    fab.kept[i] = k
  end
  local trj = {id = ls.outputs.id, tokens = ls.outputs.tokens, step = ls.outputs.step, select = fab}
  local _, ff = run(sparse, pol, {follow = trj})
  local _, fo = run(sparse, pol, {follow = {id = ls.outputs.id, tokens = ls.outputs.tokens, step = ls.outputs.step}})
  local F, nd, nl = ff.outputs.select, 0, 0
  for i = 1, #F.request do
    assert(F.followed[i] == 1 and table.concat(F.kept[i], ",") == table.concat(fab.kept[i], ","))
    if F.differs[i] == 1 then nd = nd + 1; assert(F.margin[i] < 0, "a differing set has a negative margin") end
  end
  for i = 1, #fo.outputs.select.request do assert(fo.outputs.select.followed[i] == 0) end
  for i = 1, #ff.outputs.margin do
    for g = 1, #ff.outputs.margin[i] do nl = nl + (ff.outputs.margin[i][g] ~= fo.outputs.margin[i][g] and 1 or 0) end
  end
  print(string.format("%s: fabricated selection: %d of %d sets differ from the follower's own; %d logit rows changed",
                      set, nd, #F.request, nl))
  assert(nd > #F.request / 2 and nl > 0, "the replayed selection is used")
  -- bf16 emulation following fp32 with selection replay: the same tokens, and every selection
  -- difference within the tie tolerance
  local _, hb = run(sparse, pol, {follow = ls.outputs, bf16_activations = true})
  same, ties, bad, n = classify(ls.outputs, hb.outputs)
  local H, hd, hbad = hb.outputs.select, 0, 0
  for i = 1, #H.request do
    if H.differs[i] == 1 then
      hd = hd + 1
      hbad = hbad + (-H.margin[i] > TOL_SEL * H.mag[i] and 1 or 0)
    end
  end
  print(string.format("%s: bf16 emulation follows fp32 with its selections: same %d, ties %d, mismatches %d of %d; " ..
                      "selections differing %d of %d, beyond tolerance %d", set, same, ties, bad, n, hd, #H.request,
                      hbad))
  assert(bad == 0 and (same + ties) / n >= 0.99 and hbad == 0)
  -- a selection record that does not fit is an error
  local bent_sel = {}
  for c, col in pairs(S) do bent_sel[c] = col end
  bent_sel.keep = {}
  for i = 1, #S.keep do bent_sel.keep[i] = S.keep[i] end
  local bk = {}
  for i = 1, #S.kept do bk[i] = S.kept[i] end
  bent_sel.kept = bk
  bent_sel.keep[1], bk[1] = S.keep[1] - 1, {table.unpack(S.kept[1], 1, S.keep[1] - 1)}
  if set == "per_head" then   -- the set rows of a record share one keep
    fails("does not continue", run, sparse, pol, {follow = {id = ls.outputs.id, tokens = ls.outputs.tokens,
                                                            step = ls.outputs.step, select = bent_sel}})
  else
    fails("retention settings differ", run, sparse, pol, {follow = {id = ls.outputs.id, tokens = ls.outputs.tokens,
                                                                    step = ls.outputs.step, select = bent_sel}})
  end
  local none = {request = {}, step = {}, layer = {}, set = {}, sets = {}, keep = {}, kept = {}}
  fails("records no selection", run, sparse, pol, {follow = {id = ls.outputs.id, tokens = ls.outputs.tokens,
                                                             step = ls.outputs.step, select = none}})
end

-- 6. retention from the measured attention entropy: the CPU backend measures each sparse block's
-- normalised entropy at its first step, and the selecting step keeps ceil(rho(e) (L - B)) rows
local ret = {mode = "entropy", measured = true, rho_min = 0.1, rho_max = 0.9}
local r5, me = run({cache = "sparse", block_len = 16}, {retention = ret})
assert(r5.summary.n_done == 2)
local E = me.entropy
assert(E and #E.entropy == 4, "two blocks of two requests measured")
local L, B = nil, 16
for i = 1, #E.entropy do
  local e = E.entropy[i]
  assert(e > 0 and e < 1, e)
  local q = r5:requests()
  L = q.prompt_tokens[E.request[i] + 1] + q.gen_tokens[E.request[i] + 1]
  local rho = math.min(0.9, math.max(0.1, 0.1 + 0.8 * e))
  local k = math.ceil(rho * (L - B) - 1e-9)
  assert(E.keep[i] == k, string.format("request %d block %d: kept %d, rho(e = %.4f) gives %d", E.request[i],
                                       E.block[i], E.keep[i], e, k))
end
print(string.format("measured entropies: %.3f %.3f %.3f %.3f", E.entropy[1], E.entropy[2], E.entropy[3], E.entropy[4]))
-- the simulator measures nothing: a setting that cannot take effect is an error
local ok, err = pcall(dkv.simulate, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}},
                                     decode = {cache = "sparse", block_len = 16}, mem = {capacity_bytes = 64 * 2 ^ 20},
                                     policies = {retention = ret}})
assert(not ok and tostring(err):find("measured no attention entropy", 1, true), tostring(err))
fails("not used when retention.measured", run, {cache = "sparse", block_len = 16},
      {retention = {mode = "entropy", measured = true, ent_a = 3}})
print("test_cpu_follow: ok")
-- start_at far ahead would make the run wait until then (until session 51 1e12, a time in milliseconds, slept on):
-- refused when the options are read, before any backend's check
fails("s after now, more than an hour", dkv.execute, {model = "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}},
      {backend = "cpu", weights = W, clock = "real", start_at = 1e12})
