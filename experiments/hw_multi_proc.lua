-- experiments/hw_multi_proc.lua - ONE of k separate serving processes on one GPU (issue 11's ground
-- truth for "instances"): scripts/hw_multi_proc.sh starts k of these at once, each with its own
-- index, and merges their files.  Process `proc` serves the requests a simulated run of k instances
-- routes to instance `proc` (round_robin: workload indices proc, proc + k, ...) of experiments/
-- hw_multi_instance.lua's operating point `op`, with its own engine, weight copy and KV pool of
-- capacity_gib / k (what a separate process has: a partitioned pool, no shared weights), on the
-- host clock from a common start (-D start_at, Unix seconds: every process's clock zero, so their
-- timelines line up).
--
--   dkv run experiments/hw_multi_proc.lua -D k=4 -D proc=0 -D start_at=1764590000 -o p0.h5
--       [-D op=b1|b8] [-D prompt=512] [-D gen=64] [-D steps=16] [-D n1=16] [-D n8=32] [-D capacity_gib=4]
--
-- Runs: mproc:<op>:k=<k>:p<proc>:real and :device (device table, with start_late_s: how long after
-- start_at the process was ready; > 0 means its first step started late).  Without a GPU (or with
-- -D backend=sim) the process simulates its share instead and saves :sim (tests of the merge).
local dkv = require "dkv"
local hw = require "hw_lib"

local k, proc = tonumber(hw.param("k", 2, "number of processes")), tonumber(hw.param("proc", 0, "this process's index, 0 .. k-1"))
assert(k and k >= 1 and proc and proc >= 0 and proc < k, "hw_multi_proc: -D k >= 1 and 0 <= -D proc < k")
local op = hw.param("op", "b1", "operating point of hw_multi_instance.lua: b1 or b8")
assert(op == "b1" or op == "b8", "hw_multi_proc: -D op must be b1 or b8")
local model, gpu = hw.param("model", "llada-8b", "model preset"), hw.param("gpu", "h200-calibrated", "GPU preset (sizing; the simulated share)")
local prompt, gen, steps = hw.param("prompt", 512, "prompt tokens per request"), hw.param("gen", 64, "generated tokens per request"), hw.param("steps", 16, "denoising steps per 32-token block")
local n8, n1 = hw.param("n8", 32, "requests of b8 (all processes)"), hw.param("n1", 16, "requests of b1 (all processes)")
local n = op == "b8" and n8 or n1
local cap_gib = hw.param("capacity_gib", 4, "KV pool of all processes together, GiB (each gets 1/k)")
local mine = 0   -- workload indices proc, proc + k, ... below n
for g = 0, n - 1 do if g % k == proc then mine = mine + 1 end end
assert(mine > 0, string.format("hw_multi_proc: process %d of %d gets no request of %d", proc, k, n))
local cfg = {model = model, gpu = gpu, seed = 1,
  workload = {kind = "fixed", n = mine, interval_s = 0, prompt = prompt, gen = gen},
  decode = {cache = "dual", block_len = 32, steps = steps},
  scheduler = {kind = "phase", max_num_seqs = op == "b8" and 8 or 1},
  mem = {kind = "blockpool", capacity_bytes = math.floor(cap_gib * hw.GiB / k)},
  record = {kernels = false}}
local name = string.format("mproc:%s:k=%d:p%d", op, k, proc)
local start_at = tonumber(hw.param("start_at", 0, "common start, Unix seconds (0: when ready)"))
if hw.mode() == "sim" then
  dkv.save(dkv.simulate(cfg), name .. ":sim")
  local standin = hw.param("standin", nil)
  if standin then   -- tests of the post-processing: a simulation on another preset stands in for the process
    local c = {}
    for key, v in pairs(cfg) do c[key] = v end
    c.gpu = standin
    dkv.save(dkv.simulate(c), name .. ":real")
  end
  print(string.format("hw_multi_proc %s: simulated (no device%s): %d requests", name,
                      standin and ", STAND-IN :real on " .. standin or "", mine))
  return
end
local eopts = {clock = "real", start_at = start_at > 0 and start_at or nil}
hw.warmup(cfg, {})
local r, dev = dkv.execute(cfg, eopts)
dkv.save(r, name .. ":real")
local d = {}
for key, v in pairs(dev) do if type(v) ~= "table" then d[key] = v end end
d.process, d.processes = proc, k
dkv.write_run(name .. ":device", {summary = d})
local s = r.summary
print(string.format("hw_multi_proc %s: %d/%d done, %.3f s, %.2f req/s, p99 %.3f s, ready %.3f s after start_at",
                    name, s.n_done, s.n_requests, s.sim_time_s, s.throughput_rps, s.latency_p99_s, dev.start_late_s or 0))
