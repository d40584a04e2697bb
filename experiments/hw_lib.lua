-- experiments/hw_lib.lua - what the hardware experiments (hw_*.lua) share: one configuration run
-- through dkv.execute (the CUDA backend) and dkv.simulate (the simulator), both saved into the one
-- output file under paired names, so `dkv compare F.h5 F.h5 --real-run S:P:real --sim-run S:P:sim`
-- pairs them (docs/COMPARE.md, "The pair of runs" and "Hardware session plan").
--
--   local hw = require "hw_lib"
--   local p = hw.pair("ret", "dense", cfg)      -- saves ret:dense:sim, and with a GPU ret:dense:real
--                                                -- and ret:dense:device (dkv.execute's device table)
--
-- Which halves run: -D backend=auto (default) probes dkv.execute: without a CUDA device only the
-- simulated half runs, and one line says so; -D backend=sim runs only the simulated half (and refuses
-- the real half's -D class_timing, sm_clock, clock_probe, l2_flush and half, which cannot take effect);
-- -D backend=cuda requires the device (an error without one: the GPU session must not silently
-- simulate).  -D half=real skips the simulated half (the sim runs can then be made elsewhere).
-- -D standin=PRESET (without a GPU; tests only): the :real runs are dkv.simulate under that GPU
-- preset, so the post-processing (compare, ncu-import, calibrate) can be exercised end to end.
--
-- Run names: <study>:<point>:sim, <study>:<point>:real, <study>:<point>:device.  The device run
-- holds what dkv.save does not write: cudaMemGetInfo per step (table `memory`), the arena, scratch
-- and host-tier sizes, copied bytes, and output-agreement columns when the backend exposes them.
local dkv = require "dkv"

local M = {GiB = 2 ^ 30, MiB = 2 ^ 20, failures = {}}
-- Parameters (dkv.param): a study declares its own with M.param(name, default, help); these are
-- the library's, declared when it is required.
local HELP = {
  backend = "auto, sim or cuda (auto: the real half too when a GPU is present)",
  standin = "tests without a GPU: the GPU preset whose dkv.simulate stands in for the real half (nil: none)",
  half = "with a GPU: both (real + sim) or real (the real half only)",
  warmup = "warm-up before the points: true (once), each (every point first), false (nil: true)",
  class_timing = "the real half's CUDA events around every kernel class: true (per-class times; each event costs the "
    .. "step ~2-3 us, docs/COMPARE.md) or false (step and run times uninstrumented, per-class times NaN)",
  warm_gemms = "the real half's GEMM warm-up at begin (dkv.execute's warm_gemms): true (cuBLASLt's kernels loaded before "
    .. "the first step; docs/COST_MODEL.md \"Cold shapes\") or false (each new row count loads its kernels in its step)",
  warm_compressor = "the low-rank compressor's first call at begin, with warm_gemms (dkv.execute's warm_compressor and "
    .. "the simulated half's sim.warm_compressor): true (since 2026-12-04T14:00Z) or false (the first compression pays its "
    .. "kernels' loading in its step, as runs recorded before did: hw_session.sh post's value for them)",
  kernel_scale = "the simulated half's sim.kernel_scale: the machine calibration (docs/COST_MODEL.md \"Machine "
    .. "calibration\"), every kernel time x this number > 0 (1: the profile as measured)",
  sm_clock = "the real half's SM clock (dkv.execute's sm_clock): true (each step's mean SM clock, NVML sampled every "
    .. "millisecond on a thread, in the steps' sm_mhz) or false (not sampled: sm_mhz 0)",
  l2_flush = "the real half's L2 flush diagnostic (dkv.execute's l2_flush, docs/GPU.md): LAYER:POINT[:READ][,...], "
    .. "POINT one of norm, qkv, rope, attn, o, ffn_norm, gate_up, swiglu, down, READ one of flush (default), x, h, "
    .. "qkv, att, gu, ff (nil: none; for Nsight Compute runs)",
  clock_probe = "the real half's clock probe (dkv.execute's clock_probe): true (each step's SM clock from every SM's "
    .. "cycle counter against the global timer, two small launches a step, in the steps' sm_probe_mhz) or false (0)",
  l2_mib = "the simulated half's L2 in MiB over its GPU preset's (a number > 0; nil: the preset's): e.g. 50 to count "
    .. "the HBM bytes of a run recorded on an H100 with the h200 preset's replay (docs/COST_MODEL.md, session 48)",
}
function M.param(k, d, help)
  return dkv.param(k, d, help or HELP[k] or error("hw.param: '" .. tostring(k) .. "' needs a help text", 2))
end
M.param("backend", "auto")
M.param("standin", nil)
M.param("half", "both")
M.param("warmup", nil)
-- A true | false parameter of the real half (-D name=...); anything else is an error, checked when
-- the library is required, so a mistyped value fails in every mode, not only with a device.
local function bool_param(k, d)
  M.param(k, d)
  local function get()
    local v = tostring(M.param(k, d))
    if v ~= "true" and v ~= "false" then error("hw: -D " .. k .. " must be true or false, got '" .. v .. "'", 0) end
    return v == "true"
  end
  get()
  return get
end
M.class_timing = bool_param("class_timing", "true")   -- dkv.execute's class_timing
M.warm_gemms = bool_param("warm_gemms", "true")       -- dkv.execute's warm_gemms
M.warm_compressor = bool_param("warm_compressor", "true")   -- dkv.execute's and sim's warm_compressor
M.sm_clock = bool_param("sm_clock", "true")           -- dkv.execute's sm_clock
M.clock_probe = bool_param("clock_probe", "false")    -- dkv.execute's clock_probe
-- -D l2_flush=LAYER:POINT[:READ],...: dkv.execute's l2_flush list (nil: none); the format is checked here, the points
-- and buffers by dkv.execute (which names the nearest one)
M.param("l2_flush", nil)
function M.l2_flush()
  local v = M.param("l2_flush", nil)
  if v == nil then return nil end
  local t = {}
  for item in (tostring(v) .. ","):gmatch("([^,]*),") do
    local layer, point, read = item:match("^(%d+):([%a_]+):([%a_]+)$")
    if not layer then layer, point = item:match("^(%d+):([%a_]+)$") end
    if not layer then
      error("hw: -D l2_flush: '" .. item .. "' is not LAYER:POINT[:READ] (e.g. 3:attn or 3:attn:qkv), in '"
            .. tostring(v) .. "'", 0)
    end
    t[#t + 1] = {layer = tonumber(layer), after = point, read = read}
  end
  return t
end
M.l2_flush()
-- A number > 0 of the simulated half (-D name=x; d nil: none given is nil), checked when the library is required.
local function positive_param(k, d, what)
  M.param(k, d)
  local function get()
    local s = M.param(k, d)
    if s == nil then return nil end
    local v = tonumber(s)
    if not v or v <= 0 or v ~= v or v == math.huge then
      error("hw: -D " .. k .. " must be " .. what .. ", got '" .. tostring(s) .. "'", 0)
    end
    return v
  end
  get()
  return get
end
M.kernel_scale = positive_param("kernel_scale", "1", "a number > 0")   -- the machine calibration
M.l2_mib = positive_param("l2_mib", nil, "a number of MiB > 0")          -- the L2 size (since session 48)
-- -D backend=sim runs only the simulated half: a -D of the real half (dkv.execute's options, -D half) cannot take
-- effect and is an error, checked here (after the values' own checks above) before any run.  -D warm_gemms and
-- -D warm_compressor stay: the simulated half takes them too (sim.warm_gemms, sim.warm_compressor).
M.REAL_ONLY = {"class_timing", "sm_clock", "clock_probe", "l2_flush", "half"}
if tostring(M.param("backend", "auto")) == "sim" then
  for _, k in ipairs(M.REAL_ONLY) do
    if dkv.params[k] ~= nil then
      error("hw: -D " .. k .. "=" .. tostring(dkv.params[k]) .. " is for the real half (dkv.execute): -D backend=sim "
            .. "runs only the simulated half (drop -D " .. k .. ")", 0)
    end
  end
end

-- "sim", "both" (sim + real) or "real" (-D half=real, with a device).  Probes once: dkv.execute raises "no CUDA device (...)" before
-- it parses its argument when there is no usable GPU; with one, the empty table fails on a
-- configuration error instead (nothing runs).
function M.mode()
  if M._mode then return M._mode end
  local want = tostring(M.param("backend", "auto"))
  assert(want == "auto" or want == "sim" or want == "cuda", "hw: -D backend must be auto, sim or cuda, got " .. want)
  if want == "sim" then
    M._mode, M.why = "sim", "-D backend=sim"
  else
    local ok, err = pcall(dkv.execute, {})
    local nodev = (not ok) and tostring(err):match("(dkv%.execute: no CUDA device.*)")
    if nodev then
      if want == "cuda" then error("hw: -D backend=cuda, but " .. nodev, 0) end
      M._mode, M.why = "sim", nodev
    else
      M._mode = "both"
    end
  end
  local standin = M.param("standin", nil)
  if standin and want == "cuda" then error("hw: -D standin is for tests without a GPU; not with -D backend=cuda", 0) end
  if M._mode == "sim" and standin then
    print("hw: " .. M.why .. ": STAND-IN runs: <study>:<point>:real are dkv.simulate on the '" .. tostring(standin)
          .. "' preset, not hardware (tests of the post-processing)")
  elseif M._mode == "sim" then
    print("hw: " .. M.why .. ": only the simulated half runs (runs <study>:<point>:sim; no :real runs)")
  end
  if M._mode == "both" and M.param("half", "both") == "real" then M._mode = "real" end
  return M._mode
end

function M.real_enabled() return M.mode() ~= "sim" end

local function scalars(t)
  local s = {}
  for k, v in pairs(t) do
    if type(v) == "number" or type(v) == "string" or type(v) == "boolean" then s[k] = v end
  end
  return s
end

-- The device table of dkv.execute as a run (write_run): scalars as summary, memory per step as a
-- table, plus `extra` summary values (agreement figures).
local function save_device(name, dev, extra)
  local summary = scalars(dev)
  for k, v in pairs(extra or {}) do summary[k] = v end
  local tables = {}
  if dev.memory and dev.memory.step and #dev.memory.step > 0 then tables.memory = dev.memory end
  local units = {}   -- the units of the values this device table has (write_run refuses a unit beside no value)
  for k, u in pairs{weights_bytes = "bytes", arena_bytes = "bytes", scratch_bytes = "bytes", mem_total_bytes = "bytes",
                    mem_free_min_bytes = "bytes", gpu_time_s = "s", wall_time_s = "s", copy_time_s = "s",
                    pcie_h2d_bytes = "bytes", pcie_d2h_bytes = "bytes", mem_used_peak_bytes = "bytes"} do
    if summary[k] ~= nil then units[k] = u end
  end
  -- the measured :real run is already saved: a device table write_run cannot take costs only itself
  local ok, err = pcall(dkv.write_run, name, {summary = summary, tables = tables, units = units})
  if not ok then
    print(string.format("hw: %s: device table not written with its memory series (%s); summary only", name,
                        tostring(err)))
    ok, err = pcall(dkv.write_run, name, {summary = summary, units = units})
    if not ok then print(string.format("hw: %s: device table not written: %s", name, tostring(err))) end
  end
end

-- Before the first timed dkv.execute of a process: one short untimed execution of the same
-- model and cache mode (1 request, one block, 2 steps), so CUDA's lazy module loading and the
-- cuBLASLt plan cache do not land in the first point's steps.  -D warmup=false skips it (ncu
-- runs: its kernels would be profiled too).  Not saved.  -D warmup=each: before every timed point,
-- the point's own configuration once, untimed, so every GEMM shape the point runs is warm (the
-- 2026-11-29 session showed 3-5x slower GEMMs in the first step of a shape not seen before:
-- docs/CLAIMS.md, "Simulation against hardware").
local function warmup_mode()
  local mode = M.param("warmup", nil)
  if mode == nil or mode == "true" then return true end
  if mode == "false" then return false end
  return mode
end

-- The one-off warm-up configuration: the point's model and cache mode, 1 request, one block, 2 steps.
local function warmup_cfg(cfg)
  local w = {}
  for k, v in pairs(cfg) do w[k] = v end
  local B = (cfg.decode and cfg.decode.block_len) or 32
  w.workload = {kind = "fixed", n = 1, interval_s = 0, prompt = 128, gen = B}
  w.decode = {cache = cfg.decode and cfg.decode.cache or "dual", block_len = B, steps = 2}
  w.instances, w.policies = nil, nil
  w.record = {steps = false, memory_every = 0}
  return w
end

function M.warmup(cfg, eopts)
  local mode = warmup_mode()
  if mode == "each" then
    local ok, err = pcall(dkv.execute, cfg, eopts)
    print(ok and "hw: warm-up of the point done (not saved)" or ("hw: warm-up failed (continuing): " .. tostring(err)))
    return
  end
  if M._warm or not mode then return end
  M._warm = true
  local ok, err = pcall(dkv.execute, warmup_cfg(cfg), eopts)
  print(ok and "hw: warm-up execution done (not saved)" or ("hw: warm-up failed (continuing): " .. tostring(err)))
end

-- The simulated half handles cold shapes as the real half's process does (docs/COST_MODEL.md, "Cold
-- shapes"): its runs share this process's set of warm shapes (sim.first_use = "process", unless the
-- configuration says otherwise), and the warm-up above is simulated into that set, untimed and not
-- saved: once per process, or the point itself first with -D warmup=each.
-- A shallow copy of cfg whose section `key` is a copy too (so it can be changed).
local function with_own(cfg, key)
  local c = {}
  for k, v in pairs(cfg) do c[k] = v end
  c[key] = {}
  for k, v in pairs(cfg[key] or {}) do c[key][k] = v end
  return c
end

local function sim_cold_as_real(cfg)
  local c = with_own(cfg, "sim")
  if M.l2_mib() then   -- the preset, its L2 replaced (dkv.preset.gpu's base form)
    local g = type(c.gpu) == "table" and c.gpu or {base = c.gpu}
    c.gpu = {}
    for k, v in pairs(g) do c.gpu[k] = v end
    c.gpu.l2_bytes = M.l2_mib() * 2 ^ 20
  end
  if c.sim.first_use == nil then c.sim.first_use = "process" end
  if c.sim.warm_gemms == nil then c.sim.warm_gemms = M.warm_gemms() end   -- as the real half's backend
  if c.sim.warm_compressor == nil and c.sim.warm_gemms then c.sim.warm_compressor = M.warm_compressor() end
  if c.sim.kernel_scale == nil and M.kernel_scale() ~= 1 then c.sim.kernel_scale = M.kernel_scale() end
  if c.sim.first_use ~= "process" then return c end
  local mode = warmup_mode()
  local w = mode == "each" and c or (mode and not M._sim_warm) and warmup_cfg(c) or nil
  if w then
    M._sim_warm = true
    dkv.simulate(w)
  end
  return c
end

-- Runs cfg through both backends (as mode() allows) and saves the runs.  opts: dkv.execute's
-- options, plus allow_refusal (dkv.execute refusing the configuration is not an error: the
-- message goes to out.err and the real half is skipped) and sim_only (no real half for this
-- point); on_device(dev) -> extra summary values for the device run (may return nil).
-- Returns {name, sim, real, dev, err}.
function M.pair(study, point, cfg, opts, on_device)
  local name = study .. ":" .. point
  local out = {name = name}
  local mode = M.mode()
  -- opts.sim_patch(cfg) -> cfg: what only the simulated half models (e.g. scheduler.step_host_s,
  -- which an executed run spends for real; it gets the pair so far); opts.real_first: the real half
  -- runs first, so sim_patch may use what it measured (out.real)
  -- the real half's default clock ("steps") leaves the engine's planning between steps out of its
  -- latencies: a single-instance simulated half then models no planning either (scheduler.step_host_s
  -- = 0 unless the configuration or sim_patch gives it; the profile's fitted planning applies elsewhere)
  local function clock_as_real(c)
    local n = c.instances and c.instances.n or 1
    if (opts and opts.clock or "steps") ~= "steps" or n > 1 or (c.scheduler and c.scheduler.step_host_s ~= nil) then
      return c
    end
    local x = with_own(c, "scheduler")
    x.scheduler.step_host_s = 0
    return x
  end
  local function sim_half()
    if mode ~= "real" or (opts and opts.sim_only) then
      out.sim = dkv.simulate(sim_cold_as_real(clock_as_real(opts and opts.sim_patch and opts.sim_patch(cfg, out) or cfg)))
      dkv.save(out.sim, name .. ":sim")
    end
  end
  if not (opts and opts.real_first) then sim_half() end
  local standin = M.param("standin", nil)
  if mode == "sim" and standin and not (opts and opts.sim_only) then
    -- tests of the post-processing only: a simulated run under another GPU preset stands in
    -- for the hardware run (same plans, other speeds)
    local c = {}
    for k, v in pairs(cfg) do c[k] = v end
    c.gpu = standin
    out.real = dkv.simulate(c)
    dkv.save(out.real, name .. ":real")
    -- device figures made up from the stand-in's accounting (weights, the whole arena, 0.5 GiB of
    -- context and scratch), so the post-processing's device-memory table has input
    local rs = out.real.summary
    local used = rs.peak_allocated - rs.peak_kv_bytes + rs.kv_capacity_bytes + 0.5 * M.GiB
    dkv.write_run(name .. ":device", {summary = {standin = standin, mem_total_bytes = 141 * 1e9,
      mem_free_min_bytes = 141 * 1e9 - used, mem_used_peak_bytes = used, arena_bytes = rs.kv_capacity_bytes,
      weights_bytes = rs.peak_weights_bytes}})
  end
  if mode ~= "sim" and not (opts and opts.sim_only) then
    local eopts = {}
    for k, v in pairs(opts or {}) do
      if k ~= "allow_refusal" and k ~= "sim_only" and k ~= "sim_patch" and k ~= "real_first" then eopts[k] = v end
    end
    if (eopts.backend or "cuda") == "cuda" then   -- the CUDA backend's options (backend = "cpu" refuses them)
      if eopts.class_timing == nil then eopts.class_timing = M.class_timing() end
      if eopts.warm_gemms == nil then eopts.warm_gemms = M.warm_gemms() end
      if eopts.warm_compressor == nil and eopts.warm_gemms then eopts.warm_compressor = M.warm_compressor() end
      if eopts.sm_clock == nil then eopts.sm_clock = M.sm_clock() end
      if eopts.clock_probe == nil then eopts.clock_probe = M.clock_probe() end
      if eopts.l2_flush == nil then eopts.l2_flush = M.l2_flush() end
    end
    M.warmup(cfg, eopts)
    local ok, r, dev = pcall(dkv.execute, cfg, eopts)
    if not ok then
      -- a failed point must not cost the study's other points (one device session): the error is
      -- printed, counted, and hw.footer makes the script exit 1 at its end
      out.err = tostring(r):match("(dkv%.execute:.*)") or tostring(r)
      if opts and opts.allow_refusal then
        print(string.format("hw: %s: the real half was refused: %s", name, out.err))
      else
        M.failures[#M.failures + 1] = name .. ": " .. out.err
        print(string.format("hw: %s: dkv.execute FAILED: %s", name, out.err))
      end
      if opts and opts.real_first then sim_half() end
      return out
    end
    out.real, out.dev = r, dev
    dkv.save(r, name .. ":real")
    local extra = on_device and on_device(dev) or {}
    if dev.mem_total_bytes and dev.mem_free_min_bytes then
      extra.mem_used_peak_bytes = dev.mem_total_bytes - dev.mem_free_min_bytes
    end
    save_device(name .. ":device", dev, extra)
  end
  if opts and opts.real_first then sim_half() end
  return out
end

-- Expected device seconds of one point from its simulated run: the measured/simulated wall-time
-- ratio of the backend runs so far (docs/GPU.md: 0.55-0.78 of the simulator's tokens/s, i.e.
-- x1.3-x1.8 its time; x2 taken) plus a fixed cost per dkv.execute (weights filled and the arena
-- allocated: about 3 s assumed, not yet measured).
M.real_over_sim, M.per_execute_s = 2.0, 3.0
function M.expected_s(sim)
  if not sim then return nil end
  return M.real_over_sim * sim.summary.sim_time_s + M.per_execute_s
end

-- ---- output agreement (retention): tokens and confidences per request from the device table
-- dkv.execute(cfg, {outputs = true}) returns (docs/LUA_API.md):
--   dev.outputs = {id = {request ids}, tokens = {{generated token ids}, ...},
--                  conf = {{softmax probability of each token when it was unmasked}, ...},
--                  step = {{engine step that unmasked it}, ...}}   -- requests in id order
-- A `logit` column ({{raw logit of each token}}) is read when present; the backend does not report it yet.
-- Everything here is nil-safe: without the field it returns nil.
function M.outputs(dev)
  local o = dev and dev.outputs
  if type(o) ~= "table" or type(o.tokens) ~= "table" then return nil end
  local by_id = {}
  for i, toks in ipairs(o.tokens) do
    local id = o.id and o.id[i] or (i - 1)
    by_id[id] = {tokens = toks, conf = o.conf and o.conf[i], logit = o.logit and o.logit[i]}
  end
  return by_id
end

-- Agreement of a run's outputs with the reference (dense) run's: fraction of identical generated
-- tokens over every request (paired by request id and position); mean |conf - conf_ref|; logit
-- error sum |l - l_ref| / sum |l_ref| over all generated positions (l: the logit of the token each
-- run chose, at the step it chose it).  nil when either side lacks outputs.
function M.agreement(ref_dev, dev)
  local a, b = M.outputs(ref_dev), M.outputs(dev)
  if not a or not b then return nil end
  local same, total, dconf, nconf, dlog, slog, nlog = 0, 0, 0, 0, 0, 0, 0
  for id, ra in pairs(a) do
    local rb = b[id]
    if rb then
      for j, t in ipairs(ra.tokens) do
        total = total + 1
        if rb.tokens[j] == t then same = same + 1 end
        if ra.conf and rb.conf and ra.conf[j] and rb.conf[j] then
          dconf, nconf = dconf + math.abs(rb.conf[j] - ra.conf[j]), nconf + 1
        end
        if ra.logit and rb.logit and ra.logit[j] and rb.logit[j] then
          dlog, slog, nlog = dlog + math.abs(rb.logit[j] - ra.logit[j]), slog + math.abs(ra.logit[j]), nlog + 1
        end
      end
    end
  end
  if total == 0 then return nil end
  return {token_agreement = same / total, tokens_compared = total,
          conf_err_mean = nconf > 0 and dconf / nconf or nil,
          logit_rel_err = (nlog > 0 and slog > 0) and dlog / slog or nil}
end

-- ---- printing
function M.fmt(v, f)
  if v == nil then return "-" end
  if type(v) == "number" then return string.format(f or "%.4g", v) end
  return tostring(v)
end

-- rows: array of tables; cols: {{key, header, format}, ...}
function M.print_table(rows, cols)
  local w = {}
  for i, c in ipairs(cols) do
    w[i] = #c[2]
    for _, r in ipairs(rows) do w[i] = math.max(w[i], #M.fmt(r[c[1]], c[3])) end
  end
  local line = {}
  for i, c in ipairs(cols) do line[i] = string.format("%-" .. w[i] .. "s", c[2]) end
  print(table.concat(line, "  "))
  for _, r in ipairs(rows) do
    for i, c in ipairs(cols) do line[i] = string.format("%-" .. w[i] .. "s", M.fmt(r[c[1]], c[3])) end
    print(table.concat(line, "  "))
  end
end

-- Sums of a kernels table by class name: {class = {time_s=, bytes=, launches=}}.
function M.kernel_classes(r)
  if not r then return {} end
  local k, out = r:kernels(), {}
  if not k.kind then return out end
  for i = 1, #k.kind do
    local c = k.class_names[k.kind[i]]
    local e = out[c] or {time_s = 0, bytes = 0, launches = 0}
    e.time_s = e.time_s + k.time_s[i]
    e.bytes = e.bytes + k.read_bytes[i] + k.write_bytes[i]
    e.launches = e.launches + (k.n_launches and k.n_launches[i] or 0)
    out[c] = e
  end
  return out
end

-- The columns both halves share, for a study's table (real columns nil without the real half).
function M.row(p)
  local s, r = p.sim and p.sim.summary, p.real and p.real.summary
  local row = {point = p.name:match("^[^:]*:(.*)$")}
  if s then
    row.sim_s, row.sim_tok_s, row.sim_lat_s = s.sim_time_s, s.tokens_per_s, s.latency_mean_s
    row.sim_peak_kv_gib, row.sim_hbm_gb = s.peak_kv_bytes / M.GiB, (s.hbm_read_bytes + s.hbm_write_bytes) / 1e9
    row.sim_pcie_gb = (s.pcie_h2d_bytes + s.pcie_d2h_bytes) / 1e9
    row.expect_s = M.expected_s(p.sim)
  end
  if r then
    row.real_s, row.real_tok_s, row.real_lat_s = r.sim_time_s, r.tokens_per_s, r.latency_mean_s
    row.real_pcie_gb = (r.pcie_h2d_bytes + r.pcie_d2h_bytes) / 1e9
    row.lat_err = s and (s.latency_mean_s - r.latency_mean_s) / r.latency_mean_s or nil
  end
  if p.dev and p.dev.mem_total_bytes then
    row.dev_used_gib = (p.dev.mem_total_bytes - p.dev.mem_free_min_bytes) / M.GiB
  end
  return row
end

M.common_cols = {
  {"point", "point"}, {"expect_s", "expect_s", "%.1f"}, {"sim_s", "sim_s", "%.3f"}, {"real_s", "real_s", "%.3f"},
  {"sim_lat_s", "sim_lat", "%.3f"}, {"real_lat_s", "real_lat", "%.3f"}, {"lat_err", "lat_err", "%+.3f"},
  {"sim_tok_s", "sim_tok/s", "%.1f"}, {"real_tok_s", "real_tok/s", "%.1f"},
}

-- Prints the closing lines every study prints: what ran, and the expected device time.
function M.footer(study, rows)
  local e = 0
  for _, r in ipairs(rows) do e = e + (r.expect_s or 0) end
  print(string.format("%s: %d points, halves: %s; expected device time %.0f s (x%.1f the simulated time + %.0f s per "
                      .. "dkv.execute)", study, #rows, M.mode() == "both" and "real + sim" or M.mode(), e,
                      M.real_over_sim, M.per_execute_s))
  if #M.failures > 0 then
    error(string.format("%s: %d point(s) failed on the device (the others are saved in the .partial file named below):\n  %s", study, #M.failures,
                        table.concat(M.failures, "\n  ")), 0)
  end
end

return M
