-- test_mem.lua - dkv.mem from Lua: each manager's numbers on a small hand-checked sequence,
-- failures returned as nil + message, option errors naming the key, the saved run, requests.
local dkv = require "dkv"
local MiB = 1 << 20

local function expect_error(f, want)
  local ok, msg = pcall(f)
  assert(not ok, "expected an error containing '" .. want .. "'")
  assert(tostring(msg):find(want, 1, true), "error '" .. tostring(msg) .. "' lacks '" .. want .. "'")
end

-- caching: PyTorch's rounding and segments
do
  local m <close> = dkv.mem.new{kind = "caching", capacity = 64 * MiB}
  local a = assert(m:acquire(1000, {tag = "activation", request = 1}))
  local b = assert(m:acquire(5 * MiB, "kv"))
  local s = m:stats()
  assert(s.allocated == 1024 + 5 * MiB, "allocated " .. s.allocated)
  assert(s.reserved == 22 * MiB, "reserved " .. s.reserved)
  assert(s.tags.activation.allocated == 1024 and s.tags.kv.n_acquire == 1)
  assert(m:info(a).allocated == 1024 and m:info(b).tag == "kv")
  assert(m:release(a) and m:release(b))
  local ok, msg, code = m:release(a)
  assert(ok == nil and code == "ESTATE" and msg:find("already released"), "double release: " .. tostring(msg))
  ok, msg, code = m:acquire(100 * MiB)
  assert(ok == nil and code == "ENOMEM", "exhaustion")
  ok, msg, code = m:acquire(0)
  assert(ok == nil and code == "EINVAL" and msg:find("size"))
  ok, msg, code = m:release(12345)
  assert(ok == nil and code == "ENOENT")
  s = m:stats()
  assert(s.bad_double_release == 1 and s.bad_size == 1 and s.bad_unknown_id == 1 and s.n_failed == 1)
  assert(s.num_ooms == 1 and s.num_alloc_retries == 1, "one flush-and-retry before the oom")
  assert(m:check())
  local ser = m:series()
  assert(ser.n == 4 and ser.allocated[2] == 1024 + 5 * MiB and ser.allocated[4] == 0)
end

-- blockpool: blocks, refcounts, deferred release, resize
do
  local m <close> = dkv.mem.new{kind = "blockpool", block_bytes = MiB, chunk_blocks = 4,
                                 capacity = 16 * MiB, release_delay = 0.5}
  assert(m:block_bytes() == MiB)
  local a = assert(m:acquire(3 * MiB - 5, {tag = "kv", request = 3, layer = 2}))
  local blocks = m:blocks(a)
  assert(#blocks == 3 and blocks[1] == 0 and blocks[3] == 2)
  assert(m:retain(a))
  assert(m:release(a) and m:release(a))          -- refcount 0: pending for 0.5 s
  assert(m:info(a).pending)
  assert(m:stats().allocated == 3 * MiB)
  assert(m:tick(0.4) and m:stats().allocated == 3 * MiB)
  assert(m:tick(0.5) and m:stats().allocated == 0)
  assert(m:stats().reuse_total == 3)
  local b = assert(m:acquire(2 * MiB))
  assert(m:stats().reuse_hits == 2, "LIFO: both blocks were used before")
  local ok, msg = m:tick(0.1)
  assert(ok == nil and msg:find("before the clock"))
  assert(m:grow(12 * MiB) and m:stats().reserved == 12 * MiB)
  assert(m:shrink(0) == 8 * MiB and m:stats().reserved == 4 * MiB)
  assert(m:release(b))
  m:flush()
  assert(m:stats().live == 0)
  m:close()
  expect_error(function() m:stats() end, "closed")
end

-- instances with quotas
do
  local m <close> = dkv.mem.new{kind = "blockpool", block_bytes = MiB, chunk_blocks = 1,
                                 capacity = 8 * MiB, quotas = {2 * MiB, 2 * MiB}}
  assert(m:acquire(6 * MiB, {instance = 0}))
  local ok, msg, code = m:acquire(MiB, {instance = 0})
  assert(ok == nil and code == "ENOMEM" and msg:find("guaranteed"))
  assert(m:acquire(2 * MiB, {instance = 1}))
  assert(m:stats().instance_used[2] == 2 * MiB)
end

-- static: reservation at admission
do
  local m <close> = dkv.mem.new{kind = "static", capacity = 8 * MiB}
  assert(m:reserve(1, 4 * MiB))
  local a = assert(m:acquire(MiB, {tag = "kv", request = 1}))
  local s = m:stats()
  assert(s.reserved == 4 * MiB and s.allocated == MiB and s.external_frag == 0.75)
  local ok, msg, code = m:unreserve(1)
  assert(ok == nil and code == "ESTATE")
  assert(m:release(a) and m:unreserve(1))
  assert(m:stats().reserved == 0)
end

-- option errors name the key
expect_error(function() dkv.mem.new{kind = "blockpool", capcity = 1} end, "capcity")
expect_error(function() dkv.mem.new{kind = "blockpool", capcity = 1} end, "capacity")
expect_error(function() dkv.mem.new{kind = "vmm"} end, "kind")
expect_error(function() dkv.mem.new{} end, "kind")
expect_error(function() dkv.mem.new{kind = "caching", max_split_size = MiB} end, "max_split_size")
expect_error(function() dkv.mem.new{kind = "blockpool", quotas = {1, 2}, instances = 3} end, "quotas")
-- options of another kind cannot take effect: errors naming the option
expect_error(function() dkv.mem.new{kind = "static", block_tokens = 1, chunk_blocks = 1, token_bytes = 1,
                                    max_split_size = 1} end, "dkv.mem.new.max_split_size: is for kind = 'caching' (kind is 'static')")
expect_error(function() dkv.mem.new{kind = "blockpool", max_split_size = 1} end,
             "dkv.mem.new.max_split_size: is for kind = 'caching' (kind is 'blockpool')")
for _, kind in ipairs({"static", "caching"}) do
  for k, v in pairs({block_tokens = 1, token_bytes = 1, block_bytes = MiB, chunk_blocks = 1, initial = MiB,
                     grow = false, shrink = true, share = "partitioned", quotas = {MiB, MiB}}) do
    expect_error(function() dkv.mem.new{kind = kind, [k] = v} end,
                 "dkv.mem.new." .. k .. ": is for kind = 'blockpool' (kind is '" .. kind .. "')")
  end
end
expect_error(function() dkv.mem.new{kind = "blockpool", share = "partitioned"} end, "dkv.mem.new.share: is not used with one instance")
expect_error(function() dkv.mem.new{kind = "blockpool", block_bytes = MiB, block_tokens = 16} end,
             "dkv.mem.new.block_tokens: is not used when block_bytes is given")
do
  local m <close> = dkv.mem.new{kind = "caching", capacity = 64 * MiB, max_split_size = 32 * MiB, instances = 2}
  assert(m:acquire(MiB, {instance = 1}))
  local ok, msg, code = m:acquire(-5)   -- the message gives the size passed
  assert(ok == nil and code == "EINVAL" and msg:find("size -5 bytes is not valid", 1, true), tostring(msg))
  assert(m:stats().bad_size == 1)
  expect_error(function() m:reserve(1, -1) end, "a byte count must be >= 0 (got -1)")
  local b <close> = dkv.mem.new{kind = "blockpool", capacity = 64 * MiB, block_bytes = MiB, chunk_blocks = 4}
  expect_error(function() b:grow(-1) end, "a byte count must be >= 0 (got -1)")
  expect_error(function() b:shrink(-1) end, "a byte count must be >= 0 (got -1)")
end
do
  local m <close> = dkv.mem.new{kind = "caching"}
  expect_error(function() m:acquire(10, {tga = "kv"}) end, "tga")
  expect_error(function() m:acquire(10, "kvv") end, "kvv")
  expect_error(function() m:acquire("x") end, "number expected")
end

-- the saved run
do
  local m <close> = dkv.mem.new{kind = "caching", capacity = 64 * MiB}
  local a = assert(m:acquire(3 * MiB))
  assert(m:release(a))
  local wrote = m:write("mem_caching", {params = {note = "test", rate = 2.5}, summary = {extra = 7}})
  assert(wrote == true, "m:write wrote the run (tests/run.sh gives every Lua test an output file)")
  local ok, err = pcall(m.write, m, "mem_caching")   -- a run name is written once
  assert(not ok and tostring(err):find("already exists", 1, true), tostring(err))
end

-- request streams: a synthetic one of the Azure code shape, and a missing file
do
  local r = dkv.mem.requests{synth = {n = 4000, rate = 10, seed = 3}}
  assert(r.n == 4000 and #r.prompt == 4000 and #r.arrival_s == 4000)
  local sum, sumg = 0, 0
  for i = 1, r.n do sum = sum + r.prompt[i]; sumg = sumg + r.gen[i] end
  assert(math.abs(sum / r.n - 2048) < 120, "prompt mean " .. sum / r.n)
  assert(math.abs(sumg / r.n - 28) < 4, "gen mean " .. sumg / r.n)
  local none, msg = dkv.mem.requests{file = "no/such/trace.csv"}
  assert(none == nil and msg:find("no such readable file"))
  expect_error(function() dkv.mem.requests{fil = "x"} end, "fil")
  -- a file and a synthetic stream: one is used, so giving both is an error; format is a file's
  expect_error(function() dkv.mem.requests{file = "datasets/workloads/azure_sample.csv", synth = {n = 5}} end,
               "dkv.mem.requests.synth: and file are both given")
  expect_error(function() dkv.mem.requests{synth = {n = 5}, format = "azure"} end, "dkv.mem.requests.format")
  assert(dkv.mem.requests{file = "datasets/workloads/azure_sample.csv", format = "azure"}.n == 48)
end
print("test_mem.lua ok")
