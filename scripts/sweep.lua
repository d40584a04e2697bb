-- sweep.lua - run one experiment over a parameter grid, honouring `dkv run --shard i/N`.
--
--   local sweep = require "sweep"          -- also installs dkv.sweep
--   local rows = dkv.sweep{
--     name = "sched",                       -- run names: "sched:gpu=h200,kind=phase"
--     grid = {gpu = {"h200", "l40s"}, kind = {"static", "fcfs", "phase"}},
--     order = {"gpu", "kind"},              -- optional: key order (default: sorted keys), each key once
--     run = function(p) return dkv.simulate{... scheduler = {kind = p.kind} ...} end,
--     save = true,                          -- dkv.save each dkv.simulate result (default true)
--   }
--   sweep.print(rows, {"gpu", "kind", "throughput_rps", "latency_p99_s"})
--
-- Points are numbered 1..N in grid order (the first key varies slowest); with --shard i/N this
-- shard runs the points dkv.shard.mine(k) selects, so a Slurm job array covers the grid once.
-- Each row is {index = k, name = ..., params = p, summary = <result summary or the table run
-- returned>, result = <what run returned>}; rows keep grid order.
-- Before any point runs, these are errors naming the key or the points, at the calling script's line: a spec
-- key other than the five above (sav = false), a grid entry that is not a non-empty array, a key named twice
-- in order, a name in order that is not a key of grid (or a grid key order leaves out), and two points of the
-- grid (any shard's) with one run name (values differing only in characters a name cannot hold: "a b" and
-- "a_b" both give a_b).
local dkv = require "dkv"

local M = {}

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

local function points(grid, order, level)
  if type(grid) ~= "table" then
    error("sweep: grid must be a table of {key = {values...}}, got " .. type(grid), level)
  end
  if order ~= nil and type(order) ~= "table" then
    error("sweep: order must be an array of the grid's keys, got " .. type(order), level)
  end
  for k in pairs(grid) do
    if type(k) ~= "string" then
      error(string.format("sweep: grid keys must be names (strings), got %s %s", type(k), tostring(k)), level)
    end
  end
  local keys = order or sorted_keys(grid)
  local seen = {}
  for i, k in ipairs(keys) do
    if seen[k] then   -- a key named twice would run every point twice
      error(string.format("sweep: order names '%s' twice (entries %d and %d)", tostring(k), seen[k], i), level)
    end
    seen[k] = i
  end
  for i, k in ipairs(keys) do
    local v = grid[k]
    if v == nil and order ~= nil then   -- a misspelt or stale name in order, not an empty grid entry
      error(string.format("sweep: order names '%s' (entry %d), which is not a key of grid", tostring(k), i), level)
    end
    if type(v) ~= "table" or #v == 0 then
      error("sweep: grid." .. tostring(k) .. " must be a non-empty array of values, got "
        .. (type(v) ~= "table" and type(v) or next(v) == nil and "an empty table" or "a table with no array part"), level)
    end
  end
  local missing = {}
  for k in pairs(grid) do
    if not seen[k] then missing[#missing + 1] = k end
  end
  if #missing > 0 then
    table.sort(missing)
    error("sweep: grid key '" .. missing[1] .. "' is missing from order", level)
  end
  local pts = {{}}
  for _, k in ipairs(keys) do
    local nxt = {}
    for _, p in ipairs(pts) do
      for _, v in ipairs(grid[k]) do
        local q = {}
        for a, b in pairs(p) do q[a] = b end
        q[k] = v
        nxt[#nxt + 1] = q
      end
    end
    pts = nxt
  end
  return pts, keys
end

--- All points of the grid, in order (first key slowest).
function M.points(grid, order)
  local pts, keys = points(grid, order, 3)
  return pts, keys
end

local function clean(s)
  return (tostring(s):gsub("[^A-Za-z0-9_.:=,+-]", "_"))
end

--- Run name of a point: "<prefix>:k1=v1,k2=v2" in key order.
function M.name(prefix, p, keys)
  local parts = {}
  for _, k in ipairs(keys or sorted_keys(p)) do parts[#parts + 1] = clean(k) .. "=" .. clean(p[k]) end
  local s = table.concat(parts, ",")
  return prefix and (clean(prefix) .. ":" .. s) or s
end

local function is_result(r)
  return type(r) == "userdata" and pcall(function() return r.summary end)
end

local SPEC_KEYS = {name = "string", grid = "table", order = "table", run = "function", save = "boolean"}

local function describe(p, keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = p[k]
    parts[#parts + 1] = tostring(k) .. "=" .. (type(v) == "string" and string.format("%q", v) or tostring(v))
  end
  return table.concat(parts, ", ")
end

--- Runs spec.run(point) for this shard's points; returns the rows.
function M.run(spec)
  if type(spec) ~= "table" or spec.run == nil then
    error("sweep: needs {grid = ..., run = function(p)}", 2)
  end
  for k, v in pairs(spec) do   -- a misspelt key (sav = false) would be ignored: an error instead
    local want = SPEC_KEYS[k]
    if want == nil then
      error(string.format("sweep: unknown key '%s' in the spec (known: grid, name, order, run, save)", tostring(k)), 2)
    elseif type(v) ~= want then
      error(string.format("sweep: %s must be a %s, got %s", k, want, type(v)), 2)
    end
  end
  local pts, keys = points(spec.grid, spec.order, 3)
  -- every point's run name, over the whole grid (every shard's), before anything runs: values that differ only in
  -- the characters a name cannot hold ("a b" and "a_b") would otherwise be found at the second dkv.save
  local names, named = {}, {}
  for k, p in ipairs(pts) do
    local name = M.name(spec.name or "sweep", p, keys)
    names[k] = name
    local j = named[name]
    if j then
      error(string.format("sweep: points %d (%s) and %d (%s) have one run name, '%s' (a character outside "
        .. "A-Za-z0-9_.:=,+- becomes _): make those values differ otherwise", j, describe(pts[j], keys), k,
        describe(p, keys), name), 2)
    end
    named[name] = k
  end
  local rows = {}
  local save = spec.save ~= false
  for k, p in ipairs(pts) do
    if dkv.shard.mine(k) then
      local name = names[k]
      local r = spec.run(p)
      local row = {index = k, name = name, params = p, result = r}
      if is_result(r) then
        row.summary = r.summary
        if save and dkv.output then dkv.save(r, name) end
      else
        row.summary = r
      end
      rows[#rows + 1] = row
      dkv.progress("sweep", k, #pts)
    end
  end
  return rows
end

local function fmt(v)
  if type(v) == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    if v ~= v then return "nan" end
    local a = math.abs(v)
    if a ~= 0 and (a >= 1e6 or a < 1e-3) then return string.format("%.3g", v) end
    return string.format("%.4g", v)
  end
  return tostring(v)
end

--- Prints rows as a text table; a column is a params key, a summary key, or
--- {title, function(row) -> value}.
function M.print(rows, columns)
  local heads, cells = {}, {}
  for j, c in ipairs(columns) do heads[j] = type(c) == "table" and c[1] or c end
  for i, row in ipairs(rows) do
    cells[i] = {}
    for j, c in ipairs(columns) do
      local v
      if type(c) == "table" then v = c[2](row)
      elseif row.params[c] ~= nil then v = row.params[c]
      elseif type(row.summary) == "table" then v = row.summary[c] end
      cells[i][j] = fmt(v)
    end
  end
  local w = {}
  for j, h in ipairs(heads) do
    w[j] = #h
    for i = 1, #rows do w[j] = math.max(w[j], #cells[i][j]) end
  end
  local function line(vals)
    local out = {}
    for j, v in ipairs(vals) do out[j] = string.rep(" ", w[j] - #v) .. v end
    print(table.concat(out, "  "))
  end
  line(heads)
  for i = 1, #rows do line(cells[i]) end
end

setmetatable(M, {__call = function(_, spec) return M.run(spec) end})
dkv.sweep = M
return M
