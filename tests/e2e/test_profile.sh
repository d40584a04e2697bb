#!/usr/bin/env bash
# test_profile.sh - measured GPU profiles (docs/PROFILE_FORMAT.md) end to end: the committed stand-in
# is what scripts/profile_standin.lua generates; a simulation costed from the stand-in (a roofline
# sampled on a grid and interpolated) lands within a few per cent of the roofline it was sampled from
# and says it used no roofline time; shipped GPU presets name only measured profiles; a bad profile
# is refused with the file and the field.
set -euo pipefail
: "${DKV:?}" "${T:?}" "${ROOT:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$ROOT"

"$DKV" run scripts/profile_standin.lua -D gpu=h200 >"$T/standin.lua"
cmp -s "$T/standin.lua" datasets/profiles/h200-standin.lua ||
    fail "datasets/profiles/h200-standin.lua is not what scripts/profile_standin.lua -D gpu=h200 prints (regenerate it)"

cat >"$T/cmp.lua" <<'LUA'
local dkv = require "dkv"
local function run(gpu, model, cache)
  return dkv.simulate{model = model, gpu = gpu, workload = {kind = "fixed", n = 8, interval_s = 0, prompt = 512, gen = 128},
    decode = {cache = cache, block_len = 32}, record = {memory_every = 0, steps = false}}.summary
end
for _, model in ipairs{"llada-8b", "dream-7b"} do
  for _, cache in ipairs{"none", "dual", "sparse"} do
    -- the stand-in's attention has no bandwidth curve: compare with the roofline without one
    local r = run({base = "h200", bw_curve = {}, profile = ""}, model, cache)
    local p = run({base = "h200", bw_curve = {}, profile = "h200-standin"}, model, cache)
    local e = p.tokens_per_s / r.tokens_per_s - 1
    print(string.format("%s %s roofline %.1f tok/s, stand-in %.1f tok/s (%+.2f %%), roofline_frac %.3f / %.3f",
                        model, cache, r.tokens_per_s, p.tokens_per_s, 100 * e, r.roofline_frac, p.roofline_frac))
    assert(math.abs(e) < 0.05, "stand-in and roofline disagree by more than 5 %")
    assert(r.roofline_frac > 0.999999 and p.roofline_frac < 0.01, "roofline_frac")
  end
end
-- a share of the kernel time whatever scales it (until session 51 the unscaled roofline seconds over the scaled
-- kernel seconds: 2.0 under kernel_scale 0.5 on a roofline-only preset, 1.003 on h200 with its clock model)
for _, ks in ipairs{0.5, 1, 2} do
  for _, gpu in ipairs{"rtx4090", "h200"} do
    local s = dkv.simulate{model = "llada-8b", gpu = gpu, workload = {kind = "fixed", n = 4, interval_s = 0, prompt = 512,
      gen = 64}, decode = {cache = "dual", block_len = 32}, sim = {kernel_scale = ks},
      record = {memory_every = 0, steps = false}}.summary
    print(string.format("%s kernel_scale %g: roofline_frac %.6f", gpu, ks, s.roofline_frac))
    assert(s.roofline_frac >= 0 and s.roofline_frac <= 1 + 1e-9, "roofline_frac past 1")
    if gpu == "rtx4090" then assert(s.roofline_frac > 0.999999, "a roofline-only preset: every kernel") end
  end
end
LUA
"$DKV" run "$T/cmp.lua" || fail "stand-in against the roofline"

# shipped presets: a profile they name exists and is measured
for f in datasets/presets/gpu/*.lua; do
    n=$(sed -n 's/^ *profile *= *"\([^"]*\)".*/\1/p' "$f")
    [ -z "$n" ] && continue
    [ -f "datasets/profiles/$n.lua" ] || fail "$f names profile $n, which does not exist"
    grep -q "measured *= *true" "datasets/profiles/$n.lua" || fail "$f names profile $n, which is not measured"
done

# bad profiles: a scratch root with the presets and broken profile files
mkdir -p "$T/root/datasets/profiles"
ln -s "$ROOT/datasets/presets" "$T/root/datasets/presets"
check() {   # check NAME EXPECTED-TEXT: a run with profile NAME fails naming it
    printf 'local dkv = require "dkv"\ndkv.simulate{model = "llada-8b", gpu = {base = "h200", profile = "%s"}, workload = {kind = "fixed", n = 1, prompt = 64, gen = 32}}\n' "$1" >"$T/root/x.lua"
    if out=$(cd "$T/root" && DKV_ROOT="$T/root" "$DKV" run x.lua 2>&1); then fail "profile $1 was accepted"; fi
    grep -q -- "$2" <<<"$out" || { echo "$out"; fail "profile $1: expected '$2'"; }
}
check nope "no profile file"
sed 's/measured = false/measured = "no"/' datasets/profiles/h200-standin.lua >"$T/root/datasets/profiles/p1.lua"
check p1 "provenance.measured"
sed '0,/{32, 12288, 4096, /s//{32, 12288, 4096, -/' datasets/profiles/h200-standin.lua >"$T/root/datasets/profiles/p2.lua"
check p2 "kernels.qkv.rows\[1\]: seconds must be > 0"
sed 's/"q_rows", "kv_tokens"/"q_rows", "kv_tokenz"/' datasets/profiles/h200-standin.lua >"$T/root/datasets/profiles/p3.lua"
check p3 "kernels.attn.fields: unknown field 'kv_tokenz'"
sed 's/kv_store = {/kv_stor = {/' datasets/profiles/h200-standin.lua >"$T/root/datasets/profiles/p4.lua"
check p4 "unknown field 'kv_stor' (did you mean 'kv_store'?)"
sed '0,/{32, 12288, 4096, /s//{32, 12288, /' datasets/profiles/h200-standin.lua >"$T/root/datasets/profiles/p5.lua"
check p5 "p5.lua.kernels.qkv.rows\[1\]: expected 5 numbers"
# the memory table (optional): checked field by field; loaded, it completes peak_device_bytes
# graft TABLE BODY: the stand-in profile with one more top-level table
graft() { sed '$d' datasets/profiles/h200-standin.lua; printf '  %s = {%s},\n}\n' "$1" "$2"; }
mem() { graft memory "total_bytes = 1.5e11, context_bytes = $1, libraries_bytes = 7e7, blas_handle_bytes = 3.5e7,
    first_launch_bytes = 4e6, method = \"cudaMemGetInfo\""; }
mem -5 >"$T/root/datasets/profiles/p6.lua"
check p6 "memory.context_bytes"
mem 5.6e8 | sed 's/libraries_bytes/librarie_bytes/' >"$T/root/datasets/profiles/p7.lua"
check p7 "unknown field 'librarie_bytes' (did you mean 'libraries_bytes'?)"
mem 5.6e8 >"$T/root/datasets/profiles/p8.lua"
cat >"$T/root/y.lua" <<'LUA'
local dkv = require "dkv"
local function run(profile)
  return dkv.simulate{model = "llada-8b", gpu = {base = "h200", profile = profile},
    workload = {kind = "fixed", n = 2, prompt = 256, gen = 32}, decode = {cache = "dual", block_len = 32}}.summary
end
local a, b = run("p8"), run("h200-standin")
print(string.format("fixed %.0f model %d / %d peak %d / %d", a.device_fixed_bytes, a.device_mem_model, b.device_mem_model,
                    a.peak_device_bytes, b.peak_device_bytes))
-- complete: context + libraries + one cuBLAS handle + first launches; without the table: partial, 0
assert(a.device_mem_model == 0 and a.device_fixed_bytes == 5.6e8 + 7e7 + 3.5e7 + 4e6, "fixed terms")
assert(b.device_mem_model == 1 and b.device_fixed_bytes == 0, "partial without a memory table")
assert(a.peak_device_bytes - b.peak_device_bytes == 5.6e8 + 7e7 + 3.5e7 + 4e6, "peak_device_bytes adds them")
assert(b.peak_device_bytes == b.peak_weights_bytes + b.device_arena_bytes + b.device_counted_bytes, "the sum")
LUA
ln -sf "$ROOT/datasets/profiles/h200-standin.lua" "$T/root/datasets/profiles/h200-standin.lua"
(cd "$T/root" && DKV_ROOT="$T/root" "$DKV" run y.lua) || fail "the memory table does not reach peak_device_bytes"
# the hold table (optional; docs/COST_MODEL.md "After a Refresh: the clocks' hold"): checked field by field;
# a step starting within window_s of the end of a step of >= after_s kernel time costs x (1 + slowdown)
hold() { graft hold "$1"; }
hold 'after_s = 0.02, window_s = 0.05, slowdwn = 0.03' >"$T/root/datasets/profiles/p9.lua"
check p9 "unknown field 'slowdwn' (did you mean 'slowdown'?)"
hold 'after_s = 0.02, window_s = 0.05' >"$T/root/datasets/profiles/p10.lua"
check p10 "hold.slowdown"
hold 'after_s = 0.02, window_s = -1, slowdown = 0.03' >"$T/root/datasets/profiles/p11.lua"
check p11 "hold.window_s"
hold 'after_s = 0.004, window_s = 0.02, slowdown = 0.25' >"$T/root/datasets/profiles/p12.lua"
cat >"$T/root/z.lua" <<'LUA'
local dkv = require "dkv"
local function run(profile)
  return dkv.simulate{model = "llada-8b", gpu = {base = "h200", profile = profile}, sim = {first_use = false},
    workload = {kind = "fixed", n = 2, prompt = 1024, gen = 64}, decode = {cache = "dual", block_len = 32, steps = 8}}:steps()
end
local a, b = run("p12"), run("h200-standin")
assert(#a.start_s == #b.start_s and #a.start_s > 8, "same plans")
local until_s, held, free = -math.huge, 0, 0
for j = 1, #a.start_s do
  local r = a.compute_s[j] / b.compute_s[j]
  if a.start_s[j] < until_s then
    assert(math.abs(r - 1.25) < 1e-9, string.format("step %d inside the hold: x %.9g, want 1.25", j, r)); held = held + 1
  else
    assert(math.abs(r - 1) < 1e-9, string.format("step %d after the hold: x %.9g, want 1", j, r)); free = free + 1
  end
  if a.compute_s[j] >= 0.004 then until_s = a.start_s[j] + a.time_s[j] + 0.02 end
end
assert(held > 0 and free > 0, string.format("steps held %d, free %d: both kinds", held, free))
print(string.format("hold: %d steps held, %d free", held, free))
LUA
(cd "$T/root" && DKV_ROOT="$T/root" "$DKV" run z.lua) || fail "the hold table is not applied as documented"
# attn_waves (optional; docs/PROFILE_FORMAT.md "attn_waves"): checked entry by entry
waves() { graft attn_waves "$1"; }
waves '{head_dim = 128, group = 0, clusters = {396, 198, 124, 92, 69, 62, 47}}' >"$T/root/datasets/profiles/p13.lua"
check p13 "attn_waves\[1\].clusters: expected 8 counts"
waves '{head_dim = 96, group = 0, clusters = {1, 1, 1, 1, 1, 1, 1, 1}}' >"$T/root/datasets/profiles/p14.lua"
check p14 "attn_waves\[1\].head_dim"
waves '{head_dim = 128, group = 0, clusters = {1, 1, 1, 1, 1, 1, 1, 1}}, {head_dim = 128, group = 0, clusters = {2, 2, 2, 2, 2, 2, 2, 2}}' >"$T/root/datasets/profiles/p15.lua"
check p15 "attn_waves\[2\]: head_dim 128, group 0 is given twice"
waves '{head_dim = 128, grup = 0, clusters = {1, 1, 1, 1, 1, 1, 1, 1}}' >"$T/root/datasets/profiles/p16.lua"
check p16 "unknown field 'grup' (did you mean 'group'?)"
waves '{head_dim = 128, group = 1, clusters = {396, 198, 124, 92, 0, 62, 47, 45}}' >"$T/root/datasets/profiles/p17.lua"
check p17 "attn_waves\[1\].clusters: count 5"
# the clock block (optional; docs/COST_MODEL.md "The step's clock"): checked field by field; applied as documented
clk() {   # BODY: max_mhz, lag_s, window_s, gemm_sens, attn_sens given; $1 the gemm_mhz table
    graft clock "max_mhz = 2000, lag_s = 0, window_s = 0, gemm_sens = {lo_rows = 1, hi_rows = 2, sens = 1},
    attn_sens = {reuse = 0, refresh = 0}, gemm_mhz = {$1}"; }
flat() { for k in qkv o ffn lm_head; do printf '%s = {rows = {16, 65536}, mhz = {%s, %s}}, ' "$k" "$1" "$1"; done; }
clk "$(flat 1000 | sed 's/lm_head/lm_hed/')" >"$T/root/datasets/profiles/p18.lua"
check p18 "unknown field 'lm_hed' (did you mean 'lm_head'?)"
clk "$(flat 1000 | sed 's/rows = {16, 65536}/rows = {65536, 16}/')" >"$T/root/datasets/profiles/p19.lua"
check p19 "clock.gemm_mhz.qkv.rows: value 2: expected a number in \[1, 1e+09\] above the one before"
clk "$(flat 1000 | sed '0,/mhz = {1000, 1000}/s//mhz = {1000}/')" >"$T/root/datasets/profiles/p20.lua"
check p20 "clock.gemm_mhz.qkv.mhz: has 1 values for 2 rows"
clk "$(flat 2500)" >"$T/root/datasets/profiles/p21.lua"
check p21 "clock.gemm_mhz.qkv.mhz: value 1: expected a number in \[1, 2000\]"
clk "$(flat 1000)" | sed 's/window_s = 0, //' >"$T/root/datasets/profiles/p22.lua"
check p22 "clock.window_s"
clk "$(flat 2000)" >"$T/root/datasets/profiles/p23.lua"
clk "$(flat 1000)" >"$T/root/datasets/profiles/p24.lua"
clk "$(flat 1000)" | sed 's/window_s = 0,/window_s = 10,/' >"$T/root/datasets/profiles/p25.lua"
# the follow form (docs/COST_MODEL.md "The clock that follows the work"): one form or the other, every field checked
clk "$(flat 1000)" | sed 's/lag_s = 0, /follow = {down_s = 0.01, up_s = 0.1}, /' >"$T/root/datasets/profiles/p34.lua"
check p34 "clock.window_s: cannot take effect beside follow"
clk "$(flat 1000)" | sed 's/lag_s = 0, window_s = 0, /follow = {down_s = 0.01}, /' >"$T/root/datasets/profiles/p35.lua"
check p35 "clock.follow.up_s"
clk "$(flat 1000)" | sed 's/lag_s = 0, window_s = 0, /follow = {down_s = 0, up_s = 0.1}, /' >"$T/root/datasets/profiles/p36.lua"
check p36 "clock.follow.down_s"
clk "$(flat 1000)" | sed 's/lag_s = 0, window_s = 0, /follow = {down_s = 0.01, up = 0.1}, /' >"$T/root/datasets/profiles/p37.lua"
check p37 "clock.follow: unknown field 'up' (did you mean 'up_s'?)"
clk "$(flat 1000)" | sed 's/lag_s = 0, window_s = 0, /follow = {down_s = 1e-10, up_s = 1e-10}, /' >"$T/root/datasets/profiles/p38.lua"
clk "$(flat 1000)" | sed 's/lag_s = 0, window_s = 0, /follow = {down_s = 0.004, up_s = 0.05}, /' >"$T/root/datasets/profiles/p39.lua"
# settle (optional; docs/COST_MODEL.md "The clock on the probe's scale"): the clocks sustained work settles at,
# apart from the rows' own; checked as gemm_mhz, other_mhz required and at most the maximum
stl() { clk "$(flat 2000)}, settle = {$1"; }
stl 'rows = {16, 65536}, mhz = {1000}, other_mhz = 2000' >"$T/root/datasets/profiles/p51.lua"
check p51 "clock.settle.mhz: has 1 values for 2 rows"
stl 'rows = {16, 65536}, mhz = {1000, 1000}' >"$T/root/datasets/profiles/p52.lua"
check p52 "clock.settle.other_mhz"
stl 'rows = {16, 65536}, mhz = {1000, 1000}, other_mhz = 2500' >"$T/root/datasets/profiles/p53.lua"
check p53 "clock.settle.other_mhz: must be in \[1, 2000\] (got 2500)"
stl 'rows = {16, 65536}, mhz = {1000, 1000}, other_mhz = 2000' >"$T/root/datasets/profiles/p54.lua"
# attn_mhz (optional): the clock the attention rows ran at, at most the maximum; with attention's sensitivity 1 and
# every step at the maximum, attention rows at 1,000 MHz take half their table time
clk "$(flat 2000)}, attn_mhz = {2500" | sed 's/, attn_mhz = {2500}/, attn_mhz = 2500/' >"$T/root/datasets/profiles/p55.lua"
check p55 "clock.attn_mhz: must be in \[1, 2000\] (got 2500)"
clk "$(flat 2000)" | sed 's/attn_sens = {reuse = 0, refresh = 0}/attn_sens = {reuse = 1, refresh = 1}/' >"$T/root/datasets/profiles/p56.lua"
sed 's/attn_sens = {reuse = 1, refresh = 1}/attn_sens = {reuse = 1, refresh = 1}, attn_mhz = 1000/' \
    "$T/root/datasets/profiles/p56.lua" >"$T/root/datasets/profiles/p57.lua"
grep -q "attn_mhz = 1000" "$T/root/datasets/profiles/p57.lua" || fail "p57 has no attn_mhz"
cat >"$T/root/c.lua" <<'LUA'
local dkv = require "dkv"
local function run(profile)
  return dkv.simulate{model = "llada-8b", gpu = {base = "h200", profile = profile}, sim = {first_use = false},
    workload = {kind = "fixed", n = 4, prompt = 2048, gen = 64}, decode = {cache = "dual", block_len = 32, steps = 8}}:steps()
end
local base, same, slow = run("h200-standin"), run("p23"), run("p24")
assert(#base.start_s == #same.start_s and #base.start_s == #slow.start_s and #base.start_s > 8, "same plans")
-- every row at the maximum: nothing moves, and the simulated step reports the maximum as its clock
for j = 1, #base.start_s do
  assert(math.abs(same.compute_s[j] / base.compute_s[j] - 1) < 1e-12, string.format("step %d moved with every row at the maximum", j))
  assert(math.abs(same.sm_mhz[j] - 2000) < 1e-9, string.format("step %d: clock %g, want 2000", j, same.sm_mhz[j]))
end
-- GEMM rows at 1,000 MHz, sensitivity 1, no lag or window: the step runs at its own settle clock f =
-- (1000 Tg + 2000 Tr) / (Tg + Tr), so Tg = (2000 - f) / 1000 x T, and its GEMMs take Tg x 1000 / f
local moved = 0
for j = 1, #base.start_s do
  local T, f = base.compute_s[j], slow.sm_mhz[j]
  local tg = (2000 - f) / 1000 * T
  local want = tg * 1000 / f + (T - tg)
  assert(f > 1000 and f < 2000, string.format("step %d: clock %g between the rows' 1000 and 2000", j, f))
  assert(math.abs(slow.compute_s[j] / want - 1) < 1e-9, string.format("step %d: %.9g s, want %.9g", j, slow.compute_s[j], want))
  if slow.compute_s[j] < T * (1 - 1e-6) then moved = moved + 1 end
end
assert(moved == #base.start_s, "every step's GEMMs ran faster than their rows")
-- a window of 10 s: the first step's clock is mostly the idle GPU's before it (the maximum); later steps'
-- fall as their window fills with work
local long = run("p25")
assert(long.sm_mhz[1] > slow.sm_mhz[1] + 500, string.format("step 1 with a 10 s window: %g MHz", long.sm_mhz[1]))
assert(long.sm_mhz[#base.start_s] < long.sm_mhz[1], "the clock falls as the window fills with work")
-- the follow form with time constants far below a step: each step runs at its own settle clock, as with
-- no lag or window
local quick = run("p38")
for j = 1, #base.start_s do
  assert(math.abs(quick.sm_mhz[j] / slow.sm_mhz[j] - 1) < 1e-6, string.format("step %d: quick follow %g MHz, settle %g",
         j, quick.sm_mhz[j], slow.sm_mhz[j]))
end
-- time constants of a few steps: each step's clock is the mean over its kernel time T of a clock moving from
-- where the last step left it (idle time toward the maximum) to the step's settle clock, 4 ms falling and
-- 50 ms rising; the clock at a step's end is carried over its GPU time (compute and stall; the allocator's
-- time and the gap to the next step are idle, toward the maximum)
local fol = run("p39")
local function go(x, u, dt)
  local tau = u < x and 0.004 or 0.05
  if dt <= 0 then return x, x end
  local e = math.exp(-dt / tau)
  return u + (x - u) * e, u + (x - u) * tau / dt * (1 - e)
end
local x, at, lagged = 2000, nil, 0
for j = 1, #base.start_s do
  if at then x = go(x, 2000, fol.start_s[j] - at) end
  local own, T = quick.sm_mhz[j], base.compute_s[j]
  local _, mean = go(x, own, T)
  assert(math.abs(fol.sm_mhz[j] / mean - 1) < 1e-7, string.format("step %d: follow %.6g MHz, want %.6g", j, fol.sm_mhz[j], mean))
  if math.abs(mean - own) > 1 then lagged = lagged + 1 end
  x = go(x, own, fol.compute_s[j] + fol.stall_s[j])
  at = fol.start_s[j] + fol.compute_s[j] + fol.stall_s[j]
end
assert(lagged > 0, "some step's clock lags its settle clock")
-- a settle block: the GEMMs settle at 1,000 MHz, the rest at 2,000, while every row ran at 2,000: each step runs
-- at the clock p24's rows gave it, and its GEMMs take Tg x 2000 / f (slower than their rows, where p24's were faster)
local st = run("p54")
for j = 1, #base.start_s do
  local T, f = base.compute_s[j], slow.sm_mhz[j]
  local tg = (2000 - f) / 1000 * T
  assert(math.abs(st.sm_mhz[j] / f - 1) < 1e-9, string.format("step %d: settle block's clock %g, want %g", j, st.sm_mhz[j], f))
  assert(math.abs(st.compute_s[j] / (tg * 2000 / f + (T - tg)) - 1) < 1e-9, string.format("step %d: %.9g s with the settle block", j, st.compute_s[j]))
  assert(st.compute_s[j] > T * (1 + 1e-6), string.format("step %d did not slow down", j))
end
local a1, a2 = run("p56"), run("p57")
for j = 1, #base.start_s do
  assert(math.abs(a1.compute_s[j] / base.compute_s[j] - 1) < 1e-12, string.format("step %d moved at the maximum", j))
  assert(a2.compute_s[j] < a1.compute_s[j] * (1 - 1e-3), string.format("step %d: attention rows at 1,000 MHz did not shorten it", j))
end
print(string.format("clock: %d steps, e.g. step 1 at %.0f MHz: %.3f -> %.3f ms", #base.start_s, slow.sm_mhz[1],
                    1e3 * base.compute_s[1], 1e3 * slow.compute_s[1]))
LUA
(cd "$T/root" && DKV_ROOT="$T/root" "$DKV" run c.lua) || fail "the clock block is not applied as documented"
# gemm_splitk (optional; docs/PROFILE_FORMAT.md "gemm_splitk"): checked entry by entry; applied, it moves
# the HBM bytes of the GEMMs whose split count it changes
sk() { graft gemm_splitk "$1"; }
sk '{n = 4096, k = 12288, rows = {16}, splitk = {1}}' >"$T/root/datasets/profiles/p26.lua"
check p26 "gemm_splitk\[1\].rows: must start at 8"
sk '{n = 4096, k = 12288, rows = {8, 64}, splitk = {4}}' >"$T/root/datasets/profiles/p27.lua"
check p27 "gemm_splitk\[1\].splitk: has 1 values for 2 rows"
sk '{n = 4096, k = 12288, rows = {8}, splitk = {1}}, {n = 4096, k = 12288, rows = {8}, splitk = {2}}' >"$T/root/datasets/profiles/p28.lua"
check p28 "gemm_splitk\[2\]: n 4096, k 12288 is given twice"
sk '{n = 4096, k = 12288, rows = {8}, splitk = {2.5}}' >"$T/root/datasets/profiles/p29.lua"
check p29 "gemm_splitk\[1\].splitk: value 1: expected a whole number"
sk '{n = 4096, k = 12288, rows = {8, 8}, splitk = {2, 1}}' >"$T/root/datasets/profiles/p30.lua"
check p30 "gemm_splitk\[1\].rows: value 2"
sk '{n = 4096, k = 12288, row = {8}, splitk = {2}}' >"$T/root/datasets/profiles/p31.lua"
check p31 "unknown field 'row' (did you mean 'rows'?)"
# LLaDA-8B's down projection (n 4,096, k 12,288) at 128 rows: the rule splits K 4 ways; 2 (cuBLASLt's
# count there) writes half the fp32 partials; 1 none
sk '{n = 4096, k = 12288, rows = {8}, splitk = {2}}' >"$T/root/datasets/profiles/p32.lua"
sk '{n = 4096, k = 12288, rows = {8}, splitk = {1}}' >"$T/root/datasets/profiles/p33.lua"
cat >"$T/root/k.lua" <<'LUA'
local dkv = require "dkv"
local function run(profile)
  local r = dkv.simulate{model = "llada-8b", gpu = {base = "h200", profile = profile}, sim = {first_use = false},
    workload = {kind = "fixed", n = 4, prompt = 512, gen = 32}, decode = {cache = "dual", block_len = 32, steps = 8}}
  return r:steps(), r.summary
end
local b, bs = run("h200-standin")
local two, ts = run("p32")
local one, os_ = run("p33")
assert(bs.n_steps == ts.n_steps and bs.n_steps == os_.n_steps, "the same plans")
local moved = 0
for j = 1, #b.q_tokens do
  if b.q_tokens[j] == 128 then   -- the Reuse steps: 4 items of 32 rows
    assert(two.hbm_write_bytes[j] < b.hbm_write_bytes[j] and one.hbm_write_bytes[j] < two.hbm_write_bytes[j],
           string.format("step %d: writes %g (rule) %g (2 splits) %g (none)", j, b.hbm_write_bytes[j],
                         two.hbm_write_bytes[j], one.hbm_write_bytes[j]))
    moved = moved + 1
  end
end
assert(moved > 0, "no step of 128 rows")
print(string.format("gemm_splitk: %d steps of 128 rows, writes %.1f -> %.1f -> %.1f MB", moved, b.hbm_write_bytes[#b.q_tokens] / 1e6,
                    two.hbm_write_bytes[#b.q_tokens] / 1e6, one.hbm_write_bytes[#b.q_tokens] / 1e6))
LUA
(cd "$T/root" && DKV_ROOT="$T/root" "$DKV" run k.lua) || fail "the gemm_splitk block is not applied as documented"
# gemm_reads (optional; docs/PROFILE_FORMAT.md "gemm_reads"): checked entry by entry; applied, a GEMM's
# counted reads move with the measurement one for one (the correction is measured - counted alone), in every
# layer, at every step whose rows the block holds, and nowhere else
gr() { graft gemm_reads "$1"; }
gr '{n = 12288, k = 4096, beta = 0, rows = {8, 12}, read = {1e8, 1e8}}' >"$T/root/datasets/profiles/p34.lua"
check p34 "gemm_reads\[1\].rows: value 2: 12 is not a warm-up row count (a multiple of 8)"
gr '{n = 12288, k = 4096, beta = 0, rows = {8, 16}, read = {1e8}}' >"$T/root/datasets/profiles/p35.lua"
check p35 "gemm_reads\[1\].read: has 1 values for 2 rows"
gr '{n = 12288, k = 4096, beta = 0, rows = {8}, read = {1e8}}, {n = 12288, k = 4096, beta = 0, rows = {8}, read = {1e8}}' >"$T/root/datasets/profiles/p36.lua"
check p36 "gemm_reads\[2\]: n 12288, k 4096 is given twice"
gr '{n = 12288, k = 4096, beta = 2, rows = {8}, read = {1e8}}' >"$T/root/datasets/profiles/p37.lua"
check p37 "gemm_reads\[1\].beta"
gr '{n = 12288, k = 4096, beta = 0, rows = {8}, read = {0}}' >"$T/root/datasets/profiles/p38.lua"
check p38 "gemm_reads\[1\].read: value 1: expected a number in \[1, 1e+13\]"
gr '{n = 12288, k = 4096, beta = 0, rows = {8, 8200}, read = {1e8, 1e8}}' >"$T/root/datasets/profiles/p39.lua"
check p39 "gemm_reads\[1\].rows: value 2: expected a number in \[8, 8192\]"
gr '{n = 12288, k = 4096, beta = 0, rows = {8}, reads = {1e8}}' >"$T/root/datasets/profiles/p40.lua"
check p40 "unknown field 'reads' (did you mean 'read'?)"
# LLaDA-8B's q|k|v (n 12,288, k 4,096) measured at 2.0e8 and 3.0e8 bytes at every bucket up to 1,024 rows:
# each step up to 1,024 rows reads 32 layers x 1e8 more in the second, the bigger steps the same
rows=$(seq -s ', ' 8 8 1024); reads() { seq -s ', ' 8 8 1024 | sed "s/[0-9][0-9]*/$1/g"; }
gr "{model = \"llada-8b\", class = \"qkv\", n = 12288, k = 4096, beta = 0, rows = {$rows}, read = {$(reads 2e8)}}" >"$T/root/datasets/profiles/p41.lua"
gr "{model = \"llada-8b\", class = \"qkv\", n = 12288, k = 4096, beta = 0, rows = {$rows}, read = {$(reads 3e8)}}" >"$T/root/datasets/profiles/p42.lua"
cat >"$T/root/r.lua" <<'LUA'
local dkv = require "dkv"
local function run(profile)
  return dkv.simulate{model = "llada-8b", gpu = {base = "h200", profile = profile}, sim = {first_use = false},
    workload = {kind = "fixed", n = 4, prompt = 256, gen = 32}, decode = {cache = "dual", block_len = 32, steps = 8}}:steps()
end
local b, lo, hi = run("h200-standin"), run("p41"), run("p42")
assert(#b.q_tokens == #lo.q_tokens and #b.q_tokens == #hi.q_tokens, "the same plans")
local moved, big = 0, 0
for j = 1, #b.q_tokens do
  local d = hi.hbm_read_bytes[j] - lo.hbm_read_bytes[j]
  if b.q_tokens[j] <= 1024 then
    assert(math.abs(d - 32 * 1e8) < 1e3, string.format("step %d (%d rows): %g bytes apart, want 3.2e9", j, b.q_tokens[j], d))
    assert(lo.hbm_read_bytes[j] ~= b.hbm_read_bytes[j], string.format("step %d: the block changed nothing", j))
    moved = moved + 1
  else
    assert(d == 0 and lo.hbm_read_bytes[j] == b.hbm_read_bytes[j], string.format("step %d (%d rows) moved", j, b.q_tokens[j]))
    big = big + 1
  end
end
assert(moved > 0 and big > 0, string.format("%d steps in the block's rows, %d above", moved, big))
print(string.format("gemm_reads: %d steps moved one for one with the measurement, %d above its rows unchanged", moved, big))
LUA
(cd "$T/root" && DKV_ROOT="$T/root" "$DKV" run r.lua) || fail "the gemm_reads block is not applied as documented"
# gemm_left (optional; docs/PROFILE_FORMAT.md "gemm_left"): checked entry by entry; applied, what the O and
# down projections leave of the residual decides what the norms after them read: left 0 at every row count
# makes every step the block reaches (up to 1,024 + 64 rows) read more than left = the whole output, and the
# bigger steps read the same
gl() { graft gemm_left "$1"; }
gl '{n = 4096, k = 4096, beta = 1, rows = {8}, left = {-1}}' >"$T/root/datasets/profiles/p43.lua"
check p43 "gemm_left\[1\].left: value 1: expected a number in \[0, 1e+13\]"
gl '{n = 4096, k = 4096, beta = 1, rows = {8, 20}, left = {0, 0}}' >"$T/root/datasets/profiles/p44.lua"
check p44 "gemm_left\[1\].rows: value 2: 20 is not a warm-up row count (a multiple of 8)"
gl '{n = 4096, k = 4096, beta = 1, rows = {8}, left = {0}}, {n = 4096, k = 4096, beta = 1, rows = {8}, left = {0}}' >"$T/root/datasets/profiles/p45.lua"
check p45 "gemm_left\[2\]: n 4096, k 4096 is given twice"
gl '{n = 4096, k = 4096, beta = 1, rows = {8}, lefts = {0}}' >"$T/root/datasets/profiles/p46.lua"
check p46 "unknown field 'lefts' (did you mean 'left'?)"
lrows=$(seq -s ', ' 16 16 1024); lvals() { seq -s ', ' 16 16 1024 | sed "s/[0-9][0-9]*/$1/g"; }
gl "{n = 4096, k = 4096, beta = 1, rows = {$lrows}, left = {$(lvals 0)}}, {n = 4096, k = 12288, beta = 1, rows = {$lrows}, left = {$(lvals 0)}}" >"$T/root/datasets/profiles/p47.lua"
gl "{n = 4096, k = 4096, beta = 1, rows = {$lrows}, left = {$(lvals 1e13)}}, {n = 4096, k = 12288, beta = 1, rows = {$lrows}, left = {$(lvals 1e13)}}" >"$T/root/datasets/profiles/p48.lua"
cat >"$T/root/l.lua" <<'LUA'
local dkv = require "dkv"
local function run(profile)
  return dkv.simulate{model = "llada-8b", gpu = {base = "h200", profile = profile}, sim = {first_use = false},
    workload = {kind = "fixed", n = 4, prompt = 256, gen = 32}, decode = {cache = "dual", block_len = 32, steps = 8}}:steps()
end
local none, all = run("p47"), run("p48")
local more, big = 0, 0
for j = 1, #none.q_tokens do
  if none.q_tokens[j] <= 1024 + 64 then
    assert(none.hbm_read_bytes[j] > all.hbm_read_bytes[j] + 1e6,
           string.format("step %d (%d rows): left 0 reads %g, left all %g", j, none.q_tokens[j], none.hbm_read_bytes[j], all.hbm_read_bytes[j]))
    more = more + 1
  else
    assert(none.hbm_read_bytes[j] == all.hbm_read_bytes[j], string.format("step %d (%d rows) moved", j, none.q_tokens[j]))
    big = big + 1
  end
end
assert(more > 0 and big > 0, string.format("%d steps in the block's reach, %d above", more, big))
print(string.format("gemm_left: %d steps read more when the projections leave nothing, %d beyond the block unchanged", more, big))
LUA
(cd "$T/root" && DKV_ROOT="$T/root" "$DKV" run l.lua) || fail "the gemm_left block is not applied as documented"
# gemm_store (optional; docs/PROFILE_FORMAT.md "gemm_store"): checked as gemm_left; applied, what the RoPE-store finds
# after the q|k|v GEMM (which leaves all its output here): found 0 makes each Refresh step (4 x 288 rows, every
# row's K and V stored) read more than found = all, by the q|k|v output of each of its 32 layers (28.3 MB), and by
# at most 2 % more: the output read again from HBM needs room, which the L2's soft edge (docs/COST_MODEL.md "The soft
# edge") takes partly from buffers read later in the layer (a strict LRU took it from weights never read again:
# exactly 28.3 MB; 1.1 % more since session 38)
gs() { graft gemm_store "$1"; }
gs '{n = 12288, k = 4096, beta = 0, rows = {8}, found = {-1}}' >"$T/root/datasets/profiles/p49.lua"
check p49 "gemm_store\[1\].found: value 1: expected a number in \[0, 1e+13\]"
gs '{n = 12288, k = 4096, beta = 0, rows = {8}, found = {0}}, {n = 12288, k = 4096, beta = 0, rows = {8}, found = {0}}' >"$T/root/datasets/profiles/p50.lua"
check p50 "gemm_store\[2\]: n 12288, k 4096 is given twice"
srows=$(seq -s ', ' 16 16 2048); svals() { seq -s ', ' 16 16 2048 | sed "s/[0-9][0-9]*/$1/g"; }
i=0; for v in 0 1e13; do i=$((i + 1))
    { sed '$d' datasets/profiles/h200-standin.lua
      printf '  gemm_left = {{n = 12288, k = 4096, beta = 0, rows = {%s}, left = {%s}}},\n' "$srows" "$(svals 1e13)"
      printf '  gemm_store = {{n = 12288, k = 4096, beta = 0, rows = {%s}, found = {%s}}},\n}\n' "$srows" "$(svals "$v")"
    } > "$T/root/datasets/profiles/s$i.lua"; done
cat >"$T/root/s.lua" <<'LUA'
local dkv = require "dkv"
local function run(profile)
  return dkv.simulate{model = "llada-8b", gpu = {base = "h200", profile = profile}, sim = {first_use = false},
    workload = {kind = "fixed", n = 4, prompt = 256, gen = 32}, decode = {cache = "dual", block_len = 32, steps = 8}}:steps()
end
local none, all = run("s1"), run("s2")
local refresh = 0
for j = 1, #none.q_tokens do
  local d = none.hbm_read_bytes[j] - all.hbm_read_bytes[j]
  assert(d >= 0, string.format("step %d: found 0 reads %g bytes less", j, -d))
  if none.q_tokens[j] == 4 * 288 then
    local x = d / (32 * 1152 * 12288 * 2)
    assert(x > 1 - 1e-3 and x < 1.02, string.format("step %d: %g bytes apart, want 32 x 28.3 MB to 2 %% more", j, d))
    refresh = refresh + 1
  end
end
assert(refresh > 0, "no Refresh step of 1,152 rows")
print(string.format("gemm_store: %d Refresh steps read the q|k|v output once more a layer when the store finds nothing", refresh))
LUA
(cd "$T/root" && DKV_ROOT="$T/root" "$DKV" run s.lua) || fail "the gemm_store block is not applied as documented"
# gemm_steps (optional; docs/PROFILE_FORMAT.md "gemm_steps"): checked as gemm_left, ratios in [0.25, 4]; applied, the
# q|k|v GEMM's time at a measured row count is the interpolated time times the ratio: ratio 2 everywhere to 2,048 rows
# makes each step of at most 2,048 rows longer than ratio 1 by exactly its q|k|v time (the class's kernel time
# doubles), and the HBM bytes and the plans do not move
gt() { graft gemm_steps "$1"; }
gt '{n = 12288, k = 4096, beta = 0, rows = {8}, ratio = {5}}' >"$T/root/datasets/profiles/p66.lua"
check p66 "gemm_steps\[1\].ratio: value 1: expected a number in \[0.25, 4\]"
gt '{n = 12288, k = 4096, beta = 0, rows = {8, 12}, ratio = {1, 1}}' >"$T/root/datasets/profiles/p67.lua"
check p67 "gemm_steps\[1\].rows: value 2: 12 is not a warm-up row count (a multiple of 8)"
gt '{n = 12288, k = 4096, beta = 0, rows = {8}, ratios = {1}}' >"$T/root/datasets/profiles/p68.lua"
check p68 "unknown field 'ratios' (did you mean 'ratio'?)"
for v in 1 2; do
    gt "{n = 12288, k = 4096, beta = 0, rows = {$srows}, ratio = {$(svals $v)}}" >"$T/root/datasets/profiles/st$v.lua"; done
cat >"$T/root/st.lua" <<'LUA'
local dkv = require "dkv"
local function run(profile)
  return dkv.simulate{model = "llada-8b", gpu = {base = "h200", profile = profile}, sim = {first_use = false},
    workload = {kind = "fixed", n = 4, prompt = 256, gen = 32}, decode = {cache = "dual", block_len = 32, steps = 8},
    record = {kernels = true}}
end
local one, two = run("st1"), run("st2")
local s1, s2 = one:steps(), two:steps()
local k1 = one:kernels()
assert(#s1.q_tokens == #s2.q_tokens, "the same plans")
local qkv = {}
for i = 1, #k1.step_index do
  if k1.class_names[k1.kind[i]] == "qkv" then qkv[k1.step_index[i]] = (qkv[k1.step_index[i]] or 0) + k1.time_s[i] end
end
local n = 0
for j = 1, #s1.q_tokens do
  assert(s1.q_tokens[j] == s2.q_tokens[j] and s1.hbm_read_bytes[j] == s2.hbm_read_bytes[j], string.format("step %d moved", j))
  local d, want = s2.time_s[j] - s1.time_s[j], qkv[s1.index[j]]
  assert(want and want > 0 and math.abs(d / want - 1) < 1e-6,
         string.format("step %d (%d rows): %g s longer, its q|k|v %s s", j, s1.q_tokens[j], d, tostring(want)))
  n = n + 1
end
print(string.format("gemm_steps: %d steps longer by their q|k|v time at ratio 2", n))
LUA
(cd "$T/root" && DKV_ROOT="$T/root" "$DKV" run st.lua) || fail "the gemm_steps block is not applied as documented"
# sustained (optional; dkv profile --sustain, docs/PROFILE_FORMAT.md "sustained"): checked, not costed
su() { graft sustained "seconds = 2, windows = 4, lead_s = 0.3, runs = {$1}"; }
run1='{model = "llada-8b", kind = "gemm", rows = 4096, keys = 0, calls = 812, call_s = 0.00246, nvml_mhz = 1530, mhz = {1702.5, 1410, 1390.2, 1388}}'
su "${run1/\"gemm\"/\"gemn\"}" >"$T/root/datasets/profiles/p60.lua"
check p60 'sustained.runs\[1\].kind: must be "gemm", "attn", "layer" or "duty", got "gemn"'
duty='{model = "llada-8b", kind = "duty", rows = 2048, keys = 1024, calls = 640, call_s = 0.0025, nvml_mhz = 0, mhz = {1700, 1650, 1640, 1642}, gap_s = 0.01, step_calls = 32, cycle_s = 0.09}'
su "${duty/, step_calls = 32/}" >"$T/root/datasets/profiles/p66.lua"
check p66 "sustained.runs\[1\].step_calls"
su "${duty/cycle_s = 0.09/cycle_s = 0.005}" >"$T/root/datasets/profiles/p67.lua"
check p67 "sustained.runs\[1\].cycle_s: 0.005 s is shorter than gap_s 0.01 s"
su "${run1/\}\}/\}, gap_s = 0.01\}}" >"$T/root/datasets/profiles/p68.lua"
check p68 'sustained.runs\[1\].gap_s: only a run of kind "duty" has it'
su "${run1/1390.2, 1388/1390.2}" >"$T/root/datasets/profiles/p61.lua"
check p61 "sustained.runs\[1\].mhz: expected 4 values (sustained.windows)"
su "${run1/calls = 812/calls = 0}" >"$T/root/datasets/profiles/p62.lua"
check p62 "sustained.runs\[1\].calls"
su "${run1/nvml_mhz/nvml_mhzz}" >"$T/root/datasets/profiles/p63.lua"
check p63 "unknown field 'nvml_mhzz'"
su "$run1, ${run1/\"gemm\", rows = 4096, keys = 0/\"attn\", rows = 256, keys = 2048}, $duty" >"$T/root/datasets/profiles/p64.lua"
cp datasets/profiles/h200-standin.lua "$T/root/datasets/profiles/p65.lua"
for q in p64 p65; do
    printf 'local dkv = require "dkv"\nlocal r = dkv.simulate{model = "llada-8b", gpu = {base = "h200", profile = "%s"}, workload = {kind = "fixed", n = 4, prompt = 512, gen = 64}}\nprint(string.format("%%.9e %%.9e", r.summary.throughput_rps, r.summary.latency_p99_s))\n' "$q" >"$T/root/$q.lua"
    (cd "$T/root" && DKV_ROOT="$T/root" "$DKV" run "$q.lua" -o "$T/$q.h5" >"$T/$q.out" 2>&1) || { cat "$T/$q.out"; fail "profile $q (a sustained block) was refused"; }
done
cmp -s <(grep -E '^[0-9]' "$T/p64.out") <(grep -E '^[0-9]' "$T/p65.out") && grep -qE '^[0-9]' "$T/p64.out" ||
    fail "a sustained block changed the simulation ($(cat "$T/p64.out") vs $(cat "$T/p65.out"))"
echo "ok: stand-in regenerates, agrees with its roofline, bad profiles are refused, the memory, hold, attn_waves, clock, gemm_splitk, gemm_reads, gemm_left, gemm_store and gemm_steps tables are checked and used, the sustained block checked and not costed"
