-- experiments/quality_frontier.lua - memory against quality (issue 10): every lossy KV policy
-- applied for real on the CPU backend (cpu/backend.h) or the CUDA backend (cuda/backend.h,
-- -D backend=cuda) with the trained tiny byte-level dLLM (docs/MODELS.md) on held-out text
-- (datasets/prompts/heldout*.jsonl, scripts/heldout_prompts.py).
--
-- Points: cache none / prefix / dual; sparse rho x per-head/shared x fixed/entropy (drawn) /
-- measured (the block's attention entropy the backend measured, retention.measured); progressive
-- offload with low-rank ratio r (compress on offload, the reconstruction read back); FP8 (and,
-- in the full sweep, fp16) vs bf16 KV (dual).  Each point runs twice:
--   generation   greedy decode (one token per step): token agreement with the dense no-cache
--                decode of the same prompts (per position, per request, first divergence step);
--   scoring      teacher-forced on the held-out continuation (opts.targets): masked-token NLL in
--                bits per byte and accuracy under the policy's KV state (docs/CPU.md; the CUDA
--                backend scores its own logits with the same arithmetic, core/decode/score.h).
-- Agreement is against the same backend's no-cache decode.  Bytes: the engine's peak device KV
-- and peak host KV of the run (what the policy holds; the same plans on either backend, FP8
-- priced at 1 byte an element although the CUDA pool holds it as bf16, docs/GPU.md).  On CUDA
-- the fp16 point is left out (the device pool is bf16: dkv.execute refuses fp16 KV).
--
--   dkv run experiments/quality_frontier.lua -o frontier.h5              CI subset, 2 prompts
--   dkv run experiments/quality_frontier.lua -D full=true -o frontier.h5 every point, 8 prompts
--   ... -D only=fp8,dual                                                 those points (and none)
--   ... -D backend=cuda                                                  on the GPU
--   /usr/bin/python3 scripts/plot_quality_frontier.py frontier.h5 frontier.png
--   /usr/bin/python3 scripts/quality_compare.py cpu.h5 cuda.h5           the two backends' frontiers
local dkv = require "dkv"

local full = dkv.param("full", false, "every point on the 8 held-out prompts (false: a subset on 2)")
local block = dkv.param("block", 32, "block length (one token per step: steps = block)", {integer = true, min = 1})
local W = dkv.param("weights", "datasets/models/tiny-dllm/model.safetensors", "tiny dLLM weights")
local only = dkv.param("only", "", "comma-separated point names to run (empty: all; 'none' is always run)")
local backend = dkv.param("backend", "cpu", "the backend that executes every point: cpu or cuda")
local keep_going = dkv.param("keep_going", false, "a point whose runs fail is printed FAILED and left out of the "
                             .. "tables (params.failed lists it) instead of stopping the sweep; 'none' must run")
if backend ~= "cpu" and backend ~= "cuda" then error("-D backend: '" .. tostring(backend) .. "' (cpu or cuda)") end
local emulate = dkv.param("bf16_activations", false, "cpu only: bf16-rounded activations (the CUDA backend's "
                          .. "precision emulated: a stand-in for a CUDA frontier where there is no GPU)")
if emulate and backend ~= "cpu" then error("-D bf16_activations: emulates the CUDA backend on backend=cpu only") end
local set = full and "heldout" or "heldout2"
local P = dkv.param("prompts", "datasets/prompts/" .. set .. ".jsonl", "prompts file (default: the held-out set)")
local T = dkv.param("targets", "datasets/prompts/" .. set .. "_targets.jsonl", "their true continuations")

local points = {}
local function add(name, group, decode, policies, model) points[#points + 1] = {name = name, group = group,
  decode = decode, policies = policies, model = model} end
for _, c in ipairs{"none", "prefix", "dual"} do add(c, "cache", {cache = c}) end
local rhos = full and {1, 0.75, 0.5, 0.25, 0.1} or {1, 0.25}
local sets = full and {"per_head", "shared"} or {"per_head"}
local modes = full and {"fixed", "entropy", "measured"} or {"fixed"}
for _, mode in ipairs(modes) do
  for _, s in ipairs(sets) do
    for _, rho in ipairs(rhos) do
      local ret = {rho = rho, set = s, mode = mode}
      if mode == "entropy" then   -- rho per block from a drawn entropy, mean rho (retention.h)
        local d = math.min(rho / 2, 1 - rho)
        ret = {rho = rho, set = s, mode = mode, rho_min = rho - d, rho_max = rho + d}
      elseif mode == "measured" then   -- the same range, e measured from the block's attention
        local d = math.min(rho / 2, 1 - rho)
        ret = {rho = rho, set = s, mode = "entropy", measured = true, rho_min = rho - d, rho_max = rho + d}
      end
      add(string.format("sparse_%s_%s_%g", mode, s, rho), "sparse", {cache = "sparse"}, {retention = ret})
    end
  end
end
for _, r in ipairs(full and {1, 0.5, 0.3, 0.1} or {1, 0.1}) do
  add(string.format("lowrank_%g", r), "lowrank", {cache = "dual"},
      {offload = {mode = "progressive", lowrank_ratio = r}})
end
add("fp8", "kv_dtype", {cache = "dual"}, nil, {base = "tiny-dllm", kv_dtype = "fp8"})
local fp16_left_out = full and backend == "cuda"   -- the device pool is bf16 (cuda/backend.c refuses fp16 KV)
if full and not fp16_left_out then add("fp16", "kv_dtype", {cache = "dual"}, nil, {base = "tiny-dllm", kv_dtype = "fp16"}) end
if only ~= "" then   -- the reference point first, then the named ones (an unknown name is an error)
  local keep, known = {none = true}, {}
  for n in only:gmatch("[^,]+") do keep[n] = true end
  for _, p in ipairs(points) do known[p.name] = true end
  for n in pairs(keep) do
    if n == "fp16" and backend == "cuda" then error("-D only: fp16 does not run on the CUDA backend (its KV pool is bf16)") end
    if not known[n] then error("-D only: no point '" .. n .. "' (see the table's names)") end
  end
  local sel = {}
  for _, p in ipairs(points) do if keep[p.name] then sel[#sel + 1] = p end end
  points = sel
end

local function cfg(p)
  local d = {block_len = block}
  for k, v in pairs(p.decode) do d[k] = v end
  return {model = p.model or "tiny-dllm", gpu = "h200", workload = {prompts = {file = P}}, decode = d,
          mem = {capacity_bytes = 64 * 2 ^ 20}, policies = p.policies}
end

-- agreement of the generated tokens of a with the reference ref (dev.outputs tables)
local function agreement(a, ref, pname, cols, rows)
  local same, n = 0, 0
  for i, id in ipairs(a.outputs.id) do
    local at, rt, st = a.outputs.tokens[i], ref.outputs.tokens[i], a.outputs.step[i]
    local s0, first, rs = math.huge, math.huge, 0
    for j = 1, #at do if st[j] >= 0 and st[j] < s0 then s0 = st[j] end end
    for j = 1, #at do
      local ok = at[j] == rt[j]
      if ok then rs = rs + 1 elseif st[j] >= 0 and st[j] < first then first = st[j] end
      cols.point[#cols.point + 1], cols.request[#cols.request + 1] = pname, id
      cols.position[#cols.position + 1], cols.agree[#cols.agree + 1] = j - 1, ok and 1 or 0
    end
    rows.point[#rows.point + 1], rows.request[#rows.request + 1] = pname, id
    rows.agreement[#rows.agreement + 1] = rs / #at
    rows.first_divergence_step[#rows.first_divergence_step + 1] = first < math.huge and first - s0 or -1
    same, n = same + rs, n + #at
  end
  return same / n
end

-- the time column: CPU time of the steps on one thread (cpu), or the steps' wall clock (cuda)
local tcol = backend == "cpu" and "thread_cpu_s" or "wall_time_s"
local Q = {point = {}, group = {}, agreement = {}, bits_per_byte = {}, accuracy = {}, peak_kv_bytes = {},
           peak_host_bytes = {}, pcie_bytes = {}, [tcol] = {}, tokens = {}, compress_rel_err = {},
           bpb_delta = {}, bpb_delta_se = {}, first_divergence_mean = {}}
local RQ = {point = {}, request = {}, agreement = {}, first_divergence_step = {}, bits_per_byte = {}, accuracy = {}}
local POS = {point = {}, request = {}, position = {}, agree = {}}
local ref, ref_bpb
-- paired difference of per-request bits per byte against the no-cache point: mean and its
-- standard error over requests (the same held-out bytes are scored under every policy)
local function paired(sc)
  local d, n = {}, #sc.score.per_request
  for i = 1, n do d[i] = sc.score.per_request[i].bits_per_byte - ref_bpb[i] end
  local m = 0
  for i = 1, n do m = m + d[i] / n end
  local v = 0
  for i = 1, n do v = v + (d[i] - m) ^ 2 / math.max(n - 1, 1) end
  return m, math.sqrt(v / n)
end
print(string.format("quality frontier: tiny-dllm on %s, block %d, %s backend%s%s", P, block, backend:upper(),
                    emulate and " with bf16 activations (STAND-IN for CUDA)" or "", full and "" or " (subset)"))
if fp16_left_out then print("fp16: left out on the CUDA backend (its KV pool is bf16; dkv.execute refuses fp16 KV)") end
print(string.format("%-28s %6s %6s %6s %15s %6s %9s %9s %6s", "point", "agree", "1stdiv", "bpb", "d_bpb +- se", "acc",
                    "kv_peak", "host_peak", backend == "cpu" and "cpu_s" or "wall_s"))
local device, failed = nil, {}
local function both_runs(p)   -- the greedy decode (outputs) and the teacher-forced scoring
  local r, gen = dkv.execute(cfg(p), {backend = backend, weights = W, bf16_activations = emulate or nil,
                                      outputs = true})
  local _, sc = dkv.execute(cfg(p), {backend = backend, weights = W, bf16_activations = emulate or nil, targets = T})
  -- never a NaN as a result (core/decode/score.c already stops a run on a non-finite logit row)
  if sc.score.bits_per_byte ~= sc.score.bits_per_byte then error(p.name .. ": bits per byte is NaN") end
  return r, gen, sc
end
for _, p in ipairs(points) do
  local ok, r, gen, sc = pcall(both_runs, p)
  if not ok and (not keep_going or p.name == "none") then error(r, 0) end
  if not ok then
    print(string.format("%-28s FAILED: %s", p.name, (tostring(r):gsub("\n.*", ""))))
    failed[#failed + 1] = p.name
    goto continue
  end
  dkv.save(r, "gen_" .. p.name)   -- the generated text, per request
  device = device or gen.device
  if p.name == "none" then
    ref, ref_bpb = gen, {}
    for i, q in ipairs(sc.score.per_request) do ref_bpb[i] = q.bits_per_byte end
  end
  local nrq0 = #RQ.point
  local ag = agreement(gen, ref, p.name, POS, RQ)
  local fd, nfd = 0, 0
  for i = nrq0 + 1, #RQ.point do
    local q = sc.score.per_request[i - nrq0]
    RQ.bits_per_byte[i], RQ.accuracy[i] = q.bits_per_byte, q.accuracy
    if RQ.first_divergence_step[i] >= 0 then fd, nfd = fd + RQ.first_divergence_step[i], nfd + 1 end
  end
  local dm, dse = paired(sc)
  local s = r.summary
  local row = {point = p.name, group = p.group, agreement = ag, bits_per_byte = sc.score.bits_per_byte,
               accuracy = sc.score.accuracy, peak_kv_bytes = s.peak_kv_bytes, peak_host_bytes = s.peak_host_bytes,
               pcie_bytes = s.pcie_h2d_bytes + s.pcie_d2h_bytes, [tcol] = gen[tcol] + sc[tcol],
               tokens = sc.score.n, compress_rel_err = gen.compress_rel_err_mean, bpb_delta = dm, bpb_delta_se = dse,
               first_divergence_mean = nfd > 0 and fd / nfd or -1}
  for k, t in pairs(Q) do t[#t + 1] = row[k] end
  print(string.format("%-28s %6.3f %6.1f %6.3f %+7.3f +-%5.3f %6.3f %9d %9d %6.1f", p.name, ag,
                      row.first_divergence_mean, row.bits_per_byte, dm, dse, row.accuracy, row.peak_kv_bytes,
                      row.peak_host_bytes, row[tcol]))
  ::continue::
end
if #failed > 0 then print(string.format("FAILED points (left out of the tables): %s", table.concat(failed, ", "))) end
dkv.write_run("quality", {params = {full = full, block = block, prompts = P, targets = T, weights = W,
                                    backend = backend, device = device, bf16_activations = emulate,
                                    failed = table.concat(failed, ",")},
                          tables = {points = {columns = Q,
                                              units = {peak_kv_bytes = "bytes", peak_host_bytes = "bytes",
                                                       pcie_bytes = "bytes", [tcol] = "s", tokens = "tokens",
                                                       bits_per_byte = "bits/byte", bpb_delta = "bits/byte",
                                                       bpb_delta_se = "bits/byte"}},
                                    requests = {columns = RQ, units = {bits_per_byte = "bits/byte"}},
                                    positions = POS}})
