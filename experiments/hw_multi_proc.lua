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
--       [-D op=b1|b8|arrive] [-D prompt=512] [-D gen=64] [-D steps=16] [-D n1=16] [-D n8=32] [-D seqs=8]
--       [-D rate=4] [-D capacity_gib=4] [-D gpu=h200]
--   dkv run experiments/hw_multi_proc.lua -D op=arrive -D list_arrivals=1 -o x.h5   (prints the arrivals)
--
-- arrive: the process's share of hw_multi_instance.lua's Poisson workload (n1 requests at `rate`
-- req/s, seed 5) comes as a Vidur trace, -D trace=FILE (arrived_at,num_prefill_tokens,
-- num_decode_tokens), which scripts/hw_multi_proc.sh writes from `-D list_arrivals=1`'s lines
-- ("arrival ID SECONDS").  A trace's times count from its first row, so the process's clock zero is
-- start_at + -D offset (its first request's arrival in the whole workload): the device run records
-- arrival_offset_s, and the merge (scripts/hw_multi_table.py) adds it to the process's times.
--
-- Runs: mproc:<op>:k=<k>:p<proc>:real and :device (device table, with start_late_s: how long after
-- start_at the process was ready; > 0 means its first step started late).  Without a GPU (or with
-- -D backend=sim) the process simulates its share instead and saves :sim (tests of the merge).
local dkv = require "dkv"
local hw = require "hw_lib"

local k, proc = tonumber(hw.param("k", 2, "number of processes")), tonumber(hw.param("proc", 0, "this process's index, 0 .. k-1"))
assert(k and k >= 1 and proc and proc >= 0 and proc < k, "hw_multi_proc: -D k >= 1 and 0 <= -D proc < k")
local op = hw.param("op", "b1", "operating point of hw_multi_instance.lua: b1, b8 or arrive")
assert(op == "b1" or op == "b8" or op == "arrive", "hw_multi_proc: -D op must be b1, b8 or arrive, got " .. tostring(op))
local model, gpu = hw.param("model", "llada-8b", "model preset"), hw.param("gpu", "h200", "GPU preset (sizing; the simulated share)")
local prompt, gen, steps = hw.param("prompt", 512, "prompt tokens per request"), hw.param("gen", 64, "generated tokens per request"), hw.param("steps", 16, "denoising steps per 32-token block")
local n8, n1 = hw.param("n8", 32, "requests of b8 (all processes)"), hw.param("n1", 16, "requests of b1 (all processes)")
local seqs = hw.param("seqs", 8, "b8: most sequences per process (max_num_seqs)")
local rate = hw.param("rate", 4, "arrive: Poisson arrival rate of the whole workload, requests/s")
local n = op == "b8" and n8 or n1
local cap_gib = hw.param("capacity_gib", 4, "KV pool of all processes together, GiB (each gets 1/k)")
local function base_cfg(wl, nproc)
  return {model = model, gpu = gpu, seed = 1, workload = wl,
    decode = {cache = "dual", block_len = 32, steps = steps},
    scheduler = {kind = "phase", max_num_seqs = op == "b8" and seqs or 1},
    mem = {kind = "blockpool", capacity_bytes = math.floor(cap_gib * hw.GiB / nproc)},
    record = {kernels = false}}
end
if tonumber(hw.param("list_arrivals", 0, "arrive: print the whole workload's arrivals ('arrival ID SECONDS') and stop")) == 1 then
  assert(op == "arrive", "hw_multi_proc: -D list_arrivals=1 is for -D op=arrive")
  local r = dkv.simulate(base_cfg({kind = "poisson", n = n1, rate = rate, seed = 5, prompt = prompt, gen = gen}, 1))
  local q = r:requests()
  for i = 1, #q.id do print(string.format("arrival %d %.9f %d %d", q.id[i], q.arrival_s[i], q.prompt_tokens[i], q.gen_tokens[i])) end
  return
end
local mine = 0   -- workload indices proc, proc + k, ... below n
for g = 0, n - 1 do if g % k == proc then mine = mine + 1 end end
assert(mine > 0, string.format("hw_multi_proc: process %d of %d gets no request of %d", proc, k, n))
local wl = {kind = "fixed", n = mine, interval_s = 0, prompt = prompt, gen = gen}
local trace, offset = hw.param("trace", nil, "arrive: this process's share as a Vidur trace (hw_multi_proc.sh writes it)"),
                      tonumber(hw.param("offset", 0, "arrive: the share's first arrival in the whole workload, s"))
if op == "arrive" then
  assert(trace, "hw_multi_proc: -D op=arrive needs -D trace=FILE (scripts/hw_multi_proc.sh writes it)")
  wl = {kind = "trace", file = trace, format = "vidur"}
else
  assert(not trace, "hw_multi_proc: -D trace is for -D op=arrive")
end
local cfg = base_cfg(wl, k)
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
  dkv.write_run(name .. ":device", {summary = {process = proc, processes = k, arrival_offset_s = offset,
                                               standin = standin or "none (simulated share)"}})
  print(string.format("hw_multi_proc %s: simulated (no device%s): %d requests", name,
                      standin and ", STAND-IN :real on " .. standin or "", mine))
  return
end
local eopts = {clock = "real", start_at = start_at > 0 and start_at + offset or nil, class_timing = hw.class_timing()}
hw.warmup(cfg, {})
local r, dev = dkv.execute(cfg, eopts)
dkv.save(r, name .. ":real")
local d = {}
for key, v in pairs(dev) do if type(v) ~= "table" then d[key] = v end end
d.process, d.processes, d.arrival_offset_s = proc, k, offset
dkv.write_run(name .. ":device", {summary = d})
local s = r.summary
print(string.format("hw_multi_proc %s: %d/%d done, %.3f s, %.2f req/s, p99 %.3f s, ready %.3f s after start_at",
                    name, s.n_done, s.n_requests, s.sim_time_s, s.throughput_rps, s.latency_p99_s, dev.start_late_s or 0))
