-- scripts/profile_standin.lua - a STAND-IN profile (docs/PROFILE_FORMAT.md): every kernel call of the
-- measured grid costed by the GPU preset's roofline (max(FLOPs / peak, bytes / hbm_bw) + launches x
-- launch_overhead_s), copies at the preset's pinned rates, no first-use or host time.  It is NOT a
-- measurement (provenance.measured = false); it exists to test the loader and the interpolation and
-- to rehearse the post-processing before hardware data exists.  Prints the file to stdout:
--
--   build/release/dkv run scripts/profile_standin.lua -D gpu=h200 -D models=llada-8b,dream-7b \
--       > datasets/profiles/h200-standin.lua
local dkv = require("dkv")
local P = dkv.params
local gname = P.gpu or "h200"
local g = dkv.preset.gpu(gname)
local models = {}
for name in string.gmatch(P.models or "llada-8b,dream-7b", "[^,]+") do models[#models + 1] = dkv.preset.model(name) end
local peak, bw, launch = g.flops_bf16, g.hbm_bw, g.launch_overhead_s
local function roof(flops, bytes, launches) return math.max(flops / peak, bytes / bw) + launches * launch end
local MS = {32, 64, 128, 256, 512, 1024, 2048, 4096, 8192}
local AS = {64, 128, 256, 512, 1024, 2048, 4096, 8192}

local out = {}
local function emit(s) out[#out + 1] = s end
local function rows_of(name, fields, rows)
  emit(string.format("    %s = { fields = {%s}, rows = {", name, table.concat(fields, ", ")))
  for _, r in ipairs(rows) do
    local t = {}
    for i, v in ipairs(r) do t[i] = string.format("%.10g", v) end
    emit("      {" .. table.concat(t, ", ") .. "},")
  end
  emit("    } },")
end
local function q(s) return '"' .. s .. '"' end
local MNK = {q "m", q "n", q "k"}
local function gemm(m, n, k, beta)
  return roof(2 * m * n * k, 2 * (m * k + n * k + m * n * (1 + beta)), 1)
end

local T = {qkv = {}, o = {}, ffn = {}, lm_head = {}, gemm = {}, attn = {}, kv_store = {}, kv_gather = {},
           elementwise = {}, compress = {}}
local seen = {}
local function add(tab, row)
  local key = tab .. ":" .. table.concat(row, ",", 1, #row - 2)
  if not seen[key] then seen[key] = true; table.insert(T[tab], row) end
end
for _, m in ipairs(models) do
  local d, f, H, Hk, D, V = m.hidden, m.ffn, m.n_heads, m.n_kv_heads, m.head_dim, m.vocab
  local hq, hkv = H * D, Hk * D
  for _, M in ipairs(MS) do
    add("qkv", {M, hq + 2 * hkv, d, gemm(M, hq + 2 * hkv, d, 0), 1})
    add("o", {M, d, hq, gemm(M, d, hq, 1), 1})
    add("ffn", {M, 2 * f, d, gemm(M, 2 * f, d, 0), 1})
    add("ffn", {M, d, f, gemm(M, d, f, 1), 1})
    if M <= 1024 then
      add("lm_head", {M, V, d, roof(2 * M * V * d, 2 * (V * d + M * d + 2 * M * V), 2), 2})
    end
    for _, A in ipairs(AS) do
      for mode = 0, 2 do
        -- the profile's batch (PROFILE_FORMAT.md): M < A: items of 32 queries each reading A keys;
        -- M >= A: M / A items attending their own A rows
        local items = M < A and math.ceil(M / 32) or M / A
        add("attn", {M, A, H, Hk, D, mode, roof(4 * M * A * hq, 2 * (2 * M * hq + items * A * 2 * hkv), 1), 1})
      end
    end
    add("kv_store", {M, H, Hk, D, roof(0, 2 * M * (hq + 2 * hkv) + 2 * M * (hq + 2 * hkv), 1), 1})
    for kind, cols in pairs({[0] = d, [1] = hq + hkv, [2] = f, [3] = d}) do
      add("elementwise", {kind, M, cols, roof(0, 2 * 2 * M * cols, 1), 1})
    end
  end
  for _, items in ipairs({1, 2, 4, 8, 16, 32, 64, 128, 256}) do
    add("elementwise", {4, items, 1, roof(0, 64 * items, 1), 1})
  end
  for _, K in ipairs(AS) do
    local rows, keep = 32, math.ceil(0.3 * K)
    local sc, col = H * rows * K * 4, Hk * K * 4
    local rd = 2 * (rows * hq + K * hkv) + 2 * sc + col + 2 * keep * 2 * hkv
    local wr = sc + col + Hk * keep * 4 + keep * 2 * hkv
    add("kv_gather", {rows, K, keep, H, Hk, D, roof(2 * rows * K * hq, rd + wr, 5), 5})
  end
end
for e = 10, 22 do   -- low-rank compression: rows of all projected matrices x head_dim 128, ranks 38 and 64
  local rows = 2 ^ e
  for _, r in ipairs({38, 64}) do
    add("compress", {rows, 128, r, roof(4 * rows * 128 * r, 2 * (rows * 128 + rows * r + r * 128), 16), 16})
  end
end
for _, M in ipairs(MS) do
  for _, N in ipairs({2048, 4096, 8192, 16384, 32768, 65536}) do
    for _, K in ipairs({2048, 4096, 8192, 16384, 32768}) do add("gemm", {M, N, K, gemm(M, N, K, 0), 1}) end
  end
end

emit("-- STAND-IN profile: NOT MEASURED. Every value is the roofline of the '" .. gname .. "' preset")
emit("-- (scripts/profile_standin.lua; docs/PROFILE_FORMAT.md, \"The stand-in profile\").  For tests only;")
emit("-- never a shipped preset's profile.")
emit("return {")
emit("  format = 1,")
emit(string.format("  name = %q,", gname .. "-standin"))
emit(string.format("  provenance = { gpu = %q, date = \"n/a\", command = \"dkv run scripts/profile_standin.lua -D gpu=%s\",",
                   "stand-in for " .. gname, gname))
emit("                 statistic = \"roofline\", measured = false },")
emit("  kernels = {")
rows_of("qkv", MNK, T.qkv)
rows_of("o", MNK, T.o)
rows_of("ffn", MNK, T.ffn)
rows_of("gemm", MNK, T.gemm)
rows_of("lm_head", MNK, T.lm_head)
rows_of("attn", {q "q_rows", q "kv_tokens", q "heads", q "kv_heads", q "head_dim", q "mode"}, T.attn)
rows_of("kv_store", {q "rows", q "heads", q "kv_heads", q "head_dim"}, T.kv_store)
rows_of("kv_gather", {q "rows", q "keys", q "keep", q "heads", q "kv_heads", q "head_dim"}, T.kv_gather)
rows_of("elementwise", {q "kind", q "rows", q "cols"}, T.elementwise)
rows_of("compress", {q "rows", q "cols", q "rank"}, T.compress)
emit("  },")
local alone = {}
for e = 12, 30, 2 do
  local b = 2 ^ e
  alone[#alone + 1] = {0, b, b / g.pcie_h2d_pinned}
  alone[#alone + 1] = {1, b, b / g.pcie_d2h_pinned}
end
emit("  copy = { fields = {\"dir\", \"bytes\"},")
for _, which in ipairs({"alone", "contended"}) do
  local t = {}
  for i, r in ipairs(alone) do t[i] = string.format("{%d, %.10g, %.10g}", r[1], r[2], r[3]) end
  emit(string.format("    %s = { %s },", which, table.concat(t, ", ")))
end
emit("  },")
emit("  first_use = { gemm_s = 0, attn_s = 0, other_s = 0 },")
emit("  host = { base_s = 0, per_item_s = 0, per_launch_s = 0 },")
emit("}")
print(table.concat(out, "\n"))
