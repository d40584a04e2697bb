-- experiments/cpu_speed.lua - speed of the CPU backend (cpu/backend.h) on the tiny dLLM: one
-- request, canvas 256 (prompt + gen), block 32, one token per step, one core (OpenBLAS, 1 thread).
-- Prints generated tokens per second by the steps' thread CPU time (one core's work, independent
-- of other load on the machine) and by the steps' wall clock; both are CPU time, not GPU time.
--
--   dkv run experiments/cpu_speed.lua [-D cache=dual] [-D prompt=192] [-D gen=64] [-D block=32]
local dkv = require "dkv"

local cache = dkv.param("cache", "dual", "cache mode: none, prefix, dual or sparse")
local prompt = dkv.param("prompt", 192, "prompt tokens (random ids)", {integer = true, min = 1})
local gen = dkv.param("gen", 64, "generated tokens (a multiple of block)", {integer = true, min = 1})
local block = dkv.param("block", 32, "block length; steps per block = block (one token per step)", {integer = true, min = 1})
local r, dev = dkv.execute({model = "tiny-dllm", gpu = "h200",
                            workload = {kind = "fixed", n = 1, interval_s = 0, prompt = prompt, gen = gen},
                            decode = {cache = cache, block_len = block}, mem = {capacity_bytes = 64 * 2 ^ 20}},
                           {backend = "cpu", weights = "datasets/models/tiny-dllm/model.safetensors"})
local tps_cpu, tps_wall = gen / dev.thread_cpu_s, gen / dev.cpu_time_s
print(string.format("cpu backend, tiny-dllm, canvas %d, block %d, cache %s, %d steps", prompt + gen, block, cache,
                    dev.steps))
print(string.format("%d tokens: thread CPU %.3f s = %.1f tokens/s; step wall clock %.3f s = %.1f tokens/s", gen,
                    dev.thread_cpu_s, tps_cpu, dev.cpu_time_s, tps_wall))
dkv.write_run("cpu_speed", {params = {cache = cache, prompt = prompt, gen = gen, block = block},
                            tables = {speed = {columns = {tokens = {gen}, thread_cpu_s = {dev.thread_cpu_s},
                                                          wall_s = {dev.cpu_time_s}, tokens_per_s_cpu = {tps_cpu},
                                                          tokens_per_s_wall = {tps_wall}},
                                               units = {tokens = "tokens", thread_cpu_s = "s", wall_s = "s",
                                                        tokens_per_s_cpu = "tokens/s", tokens_per_s_wall = "tokens/s"}}}})
