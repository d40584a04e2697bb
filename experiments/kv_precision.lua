-- experiments/kv_precision.lua - KV precision: "fp16 KV under mixed precision" (Flash-dLLM) and
-- "FP8 KV" (dLLM-Serve future work), in bytes, concurrency and time.  Simulated: the byte model
-- follows the KV dtype (bf16 = fp16 = 2 B, fp8 = 1 B per element); quality is not modelled
-- (a hardware run with real weights is needed for that).
--
-- Every GPU preset, LLaDA-8B (and Dream-7B), dual cache, n requests all at once, KV dtype
-- bf16 / fp16 / fp8: KV per request, peak KV, mean batch (concurrency the KV budget allows),
-- tokens/s and P99 latency.
--
--   dkv run experiments/kv_precision.lua [-D n=96] [-D prompt=1024] [-D gen=256] [-D block=32]
local dkv = require("dkv")

local n, prompt, gen, block = dkv.param("n", 96, "requests (all at once)", {integer = true, min = 1}), dkv.param("prompt", 1024, "prompt tokens per request", {integer = true, min = 1}), dkv.param("gen", 256, "generated tokens per request", {integer = true, min = 1}), dkv.param("block", 32, "block length in tokens (tokens decoded per block)", {integer = true, min = 1})
local GiB, MiB = 2 ^ 30, 2 ^ 20

print(string.format("KV precision: %d x (P=%d, G=%d) at once, dual cache, B=%d (simulated; bytes only)", n, prompt,
                    gen, block))
print(string.format("%-9s %-9s %-5s %9s %9s %7s %9s %9s %6s", "gpu", "model", "kv", "KV/req", "peakKV", "batch", "tok/s",
                    "p99_s", "done"))
local cols = {gpu = {}, model = {}, kv_dtype = {}, kv_mib_per_req = {}, peak_kv_gib = {}, mean_batch = {},
              tokens_per_s = {}, latency_p99_s = {}, n_done = {}}
local base = {}
for _, gname in ipairs{"rtx4090", "l40s", "a100-80g", "h200"} do
  for _, mname in ipairs{"llada-8b", "dream-7b"} do
    for _, kv in ipairs{"bf16", "fp16", "fp8"} do
      local ok, r = pcall(dkv.simulate, {
        model = {base = mname, kv_dtype = kv}, gpu = gname,
        workload = {kind = "fixed", n = n, interval_s = 0, prompt = prompt, gen = gen},
        decode = {cache = "dual", block_len = block},
        scheduler = {max_num_seqs = 256},
        record = {memory_every = 0, steps = false},
      })
      if ok then
        local s = r.summary
        local kvreq = (prompt + gen) * dkv.model_info({base = mname, kv_dtype = kv}).kv_bytes_per_token
        local row = {gpu = gname, model = mname, kv_dtype = kv, kv_mib_per_req = kvreq / MiB,
                     peak_kv_gib = s.peak_kv_bytes / GiB, mean_batch = s.mean_batch, tokens_per_s = s.tokens_per_s,
                     latency_p99_s = s.latency_p99_s, n_done = s.n_done}
        for c, t in pairs(cols) do t[#t + 1] = row[c] end
        local key = gname .. "/" .. mname
        if kv == "bf16" then base[key] = s.tokens_per_s end
        print(string.format("%-9s %-9s %-5s %8.0fM %8.2fG %7.1f %9.1f %9.2f %6d%s", gname, mname, kv, kvreq / MiB,
                            s.peak_kv_bytes / GiB, s.mean_batch, s.tokens_per_s, s.latency_p99_s, s.n_done,
                            kv == "fp8" and base[key] and string.format("   fp8/bf16 tok/s %.2fx",
                                                                         s.tokens_per_s / base[key]) or ""))
        dkv.save(r, string.format("kvprec_%s_%s_%s", gname, mname, kv))
      else
        print(string.format("%-9s %-9s %-5s %s", gname, mname, kv, tostring(r):gsub("\n.*", "")))
      end
    end
  end
end
dkv.write_run("kv_precision_table", {params = {n = n, prompt = prompt, gen = gen, block = block},
                                     tables = {rows = {columns = cols,
                                                       units = {kv_mib_per_req = "MiB", peak_kv_gib = "GiB",
                                                                tokens_per_s = "tokens/s", latency_p99_s = "s",
                                                                mean_batch = "requests", n_done = "requests"}}}})
print("claims: fp16 KV under mixed precision (Flash-dLLM); FP8 KV (dLLM-Serve future work)")
