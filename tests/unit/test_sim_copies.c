/* test_sim_copies.c - the stream copy model's compressions (cuda/arena.c compress), the low-rank
 * forms fetched and rebuilt (bk_xfers_before), and the first-use costs with a shared set of warm
 * shapes (docs/COST_MODEL.md, "Copies", "Low-rank forms on the copy stream" and "Cold shapes"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "cost/profile.h"
#include "sim/sim.h"

static dkv_model llada(void)
{
    dkv_model m = {.name = "llada-8b", .n_layers = 32, .hidden = 4096, .ffn = 12288, .n_heads = 32,
                   .n_kv_heads = 32, .head_dim = 128, .vocab = 126464, .mask_id = 126336, .max_len = 4096,
                   .rope_theta = 500000, .weight_dtype = DKV_DTYPE_BF16, .kv_dtype = DKV_DTYPE_BF16,
                   .act_dtype = DKV_DTYPE_BF16};
    return m;
}

static dkv_gpu h200(void)
{
    dkv_gpu g = {.name = "h200", .hbm_bytes = 139.8 * 1073741824.0, .hbm_bw = 4.292e12, .flops_bf16 = 790e12,
                 .flops_fp32 = 60e12, .pcie_h2d_pinned = 55.5e9, .pcie_d2h_pinned = 55.3e9,
                 .pcie_bidir_pinned = 101.4e9, .pcie_h2d_pageable = 8.8e9, .pcie_d2h_pageable = 15.5e9,
                 .launch_overhead_s = 2e-6, .cost_per_hour = 3.5};
    return g;
}

static dkv_step_item reuse_item(uint32_t L, uint32_t B)
{
    dkv_step_item it = {.phase = DKV_STEP_REUSE, .q_tokens = B, .kv_tokens = L, .kv_cached_tokens = L - B,
                        .kv_write_tokens = B, .logit_rows = B};
    return it;
}

/* 608 tokens of LLaDA-8B KV (524,288 bytes each) compressed at ratio 0.3: rank llround(0.3 x 128) =
 * 38; the backend copies 2048 matrices x (608 x 38 + 38 x 128) bf16 values (Q and the basis B). */
static dkv_xfer compress_order(uint32_t request)
{
    uint64_t raw = 608ull * 524288;
    dkv_xfer x = {.kind = DKV_XFER_COMPRESS, .request = request, .pinned = true, .device_bytes = raw,
                  .pcie_bytes = (uint64_t)(0.3 * raw)};
    return x;
}
static const double form_bytes = 2048.0 * (608 * 38 + 38 * 128) * 2;

typedef struct recs {
    double t[DKV_KCLASS_N];
} recs;
static void on_rec(void *user, const dkv_kernel_record *r) { ((recs *)user)->t[r->kind] = r->time_s; }

/* Two compressions in one step: the second's kernels wait for the first's result to leave (the
 * backend reuses its staging buffer), inside the compress class; both copies are the rank-r form. */
static void test_compress_alternates_with_its_copies(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    g.pcie_d2h_pinned = 20e9;   /* a result's copy (5.7 ms) outlasts the next step's forward */
    dkv_sim_options o = dkv_sim_options_default();
    o.copy_model = DKV_SIM_COPY_STREAM;
    dkv_step_item it[2] = {reuse_item(800, 32), reuse_item(800, 32)};
    it[1].request = 1;
    dkv_xfer x[2] = {compress_order(0), compress_order(1)};
    dkv_step_plan p1 = {.items = it, .n_items = 2, .xfers = x, .n_xfers = 1};
    dkv_step_plan p2 = p1;
    p2.n_xfers = 2;
    dkv_step_cost c1, c2;
    recs r1 = {{0}}, r2 = {{0}};
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &p1, &c1, on_rec, &r1, NULL), DKV_OK);
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &p2, &c2, on_rec, &r2, NULL), DKV_OK);
    double c = form_bytes / g.pcie_d2h_pinned, K = r1.t[DKV_KCLASS_COMPRESS];
    assert_true(K > 0);
    assert_true(fabs(c1.pcie_s - c) < 1e-12);
    assert_true(fabs(c2.pcie_s - 2 * c) < 1e-12);
    /* the step: + one more compression + the wait for the first result's copy */
    assert_true(fabs(c2.time_s - c1.time_s - (K + c)) < 1e-12);
    assert_true(fabs(r2.t[DKV_KCLASS_COMPRESS] - (2 * K + c)) < 1e-12);
    assert_true(fabs(c2.compute_s - c1.compute_s - (K + c)) < 1e-12);

    /* over a run: after that step only the second result is still in flight, so the next step's
     * 1 ms fetch waits for it alone (not for both copies) */
    dkv_backend be = {0};
    assert_int_equal(dkv_sim_backend_new(&o, &be, NULL), DKV_OK);
    dkv_backend_setup s = {.model = &m, .gpu = &g};
    assert_int_equal(dkv_backend_begin(&be, &s, NULL), DKV_OK);
    dkv_step_plan p0 = {.items = it, .n_items = 2};
    dkv_step_cost base, a, b;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &p0, &base, NULL, NULL, NULL), DKV_OK);
    dkv_xfer fx = {.kind = DKV_XFER_FETCH, .pinned = true, .pcie_bytes = 55500000};   /* 1 ms */
    dkv_step_plan pf = p0;
    pf.xfers = &fx, pf.n_xfers = 1;
    assert_int_equal(dkv_backend_run_step(&be, &p2, &a, NULL), DKV_OK);
    assert_true(fabs(a.time_s - c2.time_s) < 1e-12);
    assert_int_equal(dkv_backend_run_step(&be, &pf, &b, NULL), DKV_OK);
    assert_true(fabs(b.time_s - (c + 1e-3 + base.time_s)) < 1e-9);
    /* and a compression in the next step waits for that result when it is still being copied:
     * the step's forward (c1 less its compression) is shorter than the copy */
    assert_int_equal(dkv_backend_run_step(&be, &p2, &a, NULL), DKV_OK);
    assert_int_equal(dkv_backend_run_step(&be, &p1, &b, NULL), DKV_OK);
    double fwd = c1.time_s - K;
    assert_true(c > fwd);
    assert_true(fabs(b.time_s - (c1.time_s + (c - fwd))) < 1e-12);
    dkv_backend_end(&be);
    dkv_backend_free(&be);
}

/* A run over a block pool (the backend's geometry known): request 0, a prompt of 640 and one block
 * of 32 (L = 672, 21 blocks of 32 tokens).  A Reuse step compresses 19 blocks (608 tokens: blocks
 * [2, 21)); the backend copies the form (form_bytes), not the plan's 0.3 x raw.  A later fetch of
 * the plan's share plus one raw block, with the item holding 2 blocks on the device, copies that
 * block raw, then the form (form_bytes in place of the plan's share), then rebuilds the 608 rows on
 * the compute stream before the forward.  With the range still on the device (21 blocks held) the
 * fetch copies the plan's bytes raw (nothing rebuilt), as after an overlapping raw offload.  Under
 * the plan-bytes rule both fetches cost copy(plan bytes) and report them. */
static void test_lowrank_form_fetched_and_rebuilt(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_sim_options o = dkv_sim_options_default();
    o.copy_model = DKV_SIM_COPY_STREAM;
    dkv_request rq = {.id = 0, .prompt_tokens = 640, .gen_tokens = 32};
    dkv_workload *wl = NULL;
    assert_int_equal(dkv_workload_from_requests(&rq, 1, NULL, &wl, NULL), DKV_OK);
    dkv_decode_cfg dc = {.block_len = 32};
    const uint64_t blk = 32ull * 524288;
    dkv_backend_setup s = {.model = &m, .gpu = &g, .workload = wl, .decode = &dc,
                           .pool = {.kind = DKV_MEM_BLOCKPOOL, .block_tokens = 32, .block_bytes = blk, .n_blocks = 64}};
    dkv_step_item it = reuse_item(672, 32);
    it.kv_cached_tokens = 640, it.n_kv_blocks = 21;
    dkv_xfer cx = compress_order(0);
    dkv_step_plan pc = {.items = &it, .n_items = 1, .xfers = &cx, .n_xfers = 1};
    dkv_xfer fx = {.kind = DKV_XFER_FETCH, .request = 0, .pinned = true, .pcie_bytes = cx.pcie_bytes + blk};
    dkv_step_item held = it;
    held.n_kv_blocks = 2;   /* the compressed blocks are on the host */
    dkv_step_plan pf = {.items = &held, .n_items = 1, .xfers = &fx, .n_xfers = 1};
    dkv_step_plan p0 = {.items = &held, .n_items = 1};
    dkv_step_cost base, c, f;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &p0, &base, NULL, NULL, NULL), DKV_OK);

    dkv_backend be = {0};
    assert_int_equal(dkv_sim_backend_new(&o, &be, NULL), DKV_OK);
    assert_int_equal(dkv_backend_begin(&be, &s, NULL), DKV_OK);
    assert_int_equal(dkv_backend_run_step(&be, &pc, &c, NULL), DKV_OK);
    assert_true(c.pcie_d2h_bytes == (uint64_t)form_bytes);   /* the form, not 0.3 x raw */
    assert_int_equal(dkv_backend_run_step(&be, &pf, &f, NULL), DKV_OK);
    assert_true(f.pcie_h2d_bytes == blk + (uint64_t)form_bytes);
    double t_raw = (double)blk / g.pcie_h2d_pinned, t_form = form_bytes / g.pcie_h2d_pinned;
    double rebuild = (form_bytes + 2048.0 * 608 * 128 * 2) / g.hbm_bw + g.launch_overhead_s;
    assert_true(fabs(f.pcie_s - (t_raw + t_form)) < 1e-12);
    /* copy(plan bytes), the plan-bytes rule's cost (checked at the end); a precondition, not a check
     * of the simulator: it differs from the form's copies by > 5 %, so the checks tell the rules apart */
    double plan_only = (double)fx.pcie_bytes / g.pcie_h2d_pinned;
    assert_true(t_raw + t_form > plan_only * 1.05);
    dkv_backend_end(&be);

    /* the same fetch with the range on the device: the plan's bytes, raw */
    assert_int_equal(dkv_backend_begin(&be, &s, NULL), DKV_OK);
    assert_int_equal(dkv_backend_run_step(&be, &pc, &c, NULL), DKV_OK);
    dkv_step_plan pn = pf;
    pn.items = &it;
    dkv_step_cost n;
    assert_int_equal(dkv_backend_run_step(&be, &pn, &n, NULL), DKV_OK);
    assert_true(n.pcie_h2d_bytes == fx.pcie_bytes);
    assert_true(fabs(n.pcie_s - plan_only) < 1e-12);
    dkv_backend_end(&be);

    /* the rebuild on the compute stream: a step after an idle gap (no backlog) waits raw + form
     * copies, then the rebuild; a raw offload over the range (the request's last 19 blocks)
     * invalidates the form, and the next fetch copies the plan's bytes */
    assert_int_equal(dkv_backend_begin(&be, &s, NULL), DKV_OK);
    assert_int_equal(dkv_backend_run_step(&be, &pc, &c, NULL), DKV_OK);
    for (int i = 0; i < 50; i++)   /* drain the compression's copy: steps without orders */
        assert_int_equal(dkv_backend_run_step(&be, &p0, &n, NULL), DKV_OK);
    assert_int_equal(dkv_backend_run_step(&be, &pf, &f, NULL), DKV_OK);
    assert_true(fabs(f.time_s - (t_raw + t_form + rebuild + base.time_s)) < 1e-9);
    dkv_xfer ox = {.kind = DKV_XFER_OFFLOAD, .request = 0, .pinned = true, .pcie_bytes = 19 * blk};
    dkv_step_plan po = {.items = &it, .n_items = 1, .xfers = &ox, .n_xfers = 1};
    assert_int_equal(dkv_backend_run_step(&be, &po, &n, NULL), DKV_OK);
    assert_int_equal(dkv_backend_run_step(&be, &pf, &f, NULL), DKV_OK);
    assert_true(f.pcie_h2d_bytes == fx.pcie_bytes);
    dkv_backend_end(&be);

    /* the plan-bytes rule: without a block pool, or without a workload, the backend's geometry is
     * unknown; the compression reports the plan's bytes, and both fetches (the range on the host,
     * then on the device) copy and report the plan's bytes raw before the forward, nothing rebuilt */
    dkv_backend_setup no_geo[2] = {{.model = &m, .gpu = &g, .decode = &dc}, s};
    no_geo[1].workload = NULL;
    for (int k = 0; k < 2; k++)
        for (int on_device = 0; on_device < 2; on_device++) {
            assert_int_equal(dkv_backend_begin(&be, &no_geo[k], NULL), DKV_OK);
            assert_int_equal(dkv_backend_run_step(&be, &pc, &c, NULL), DKV_OK);
            assert_true(c.pcie_d2h_bytes == cx.pcie_bytes);
            for (int i = 0; i < 50; i++)   /* drain the compression's copy */
                assert_int_equal(dkv_backend_run_step(&be, &p0, &n, NULL), DKV_OK);
            dkv_step_plan pp = pf;
            if (on_device)
                pp.items = &it;
            assert_int_equal(dkv_backend_run_step(&be, &pp, &f, NULL), DKV_OK);
            assert_true(f.pcie_h2d_bytes == fx.pcie_bytes);
            assert_true(fabs(f.pcie_s - plan_only) < 1e-12);
            assert_true(fabs(f.time_s - (plan_only + base.time_s)) < 1e-9);
            dkv_backend_end(&be);
        }
    dkv_backend_free(&be);
    dkv_workload_free(wl);
}

/* With a profile that measured the decompress kernel (`decompress`: rows = tokens x matrices,
 * head_dim, rank), the rebuild costs the table's time, not the roofline. */
static void test_rebuild_from_profile(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_profile_info in = {.measured = true};
    strcpy(in.name, "test");
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(&in, &p, NULL), DKV_OK);
    static const char *const F[] = {"rows", "cols", "rank"};
    double rows[] = {2048.0 * 256, 128, 38, 1e-3, 1, 2048.0 * 608, 128, 38, 5e-3, 1, 2048.0 * 2048, 128, 38, 9e-3, 1};
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_DECOMPRESS, F, 3, 0, rows, 3, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    assert_true(fabs(dkv_profile_decompress(p, 2048.0 * 608, 128, 38) - 5e-3) < 1e-12);
    assert_true(isnan(dkv_profile_decompress(p, 2048.0 * 608, 128, 64)));   /* an unmeasured rank */
    g.profile = p;
    dkv_sim_options o = dkv_sim_options_default();
    o.copy_model = DKV_SIM_COPY_STREAM;
    o.first_use = false;
    dkv_request rq = {.id = 0, .prompt_tokens = 640, .gen_tokens = 32};
    dkv_workload *wl = NULL;
    assert_int_equal(dkv_workload_from_requests(&rq, 1, NULL, &wl, NULL), DKV_OK);
    dkv_decode_cfg dc = {.block_len = 32};
    const uint64_t blk = 32ull * 524288;
    dkv_backend_setup s = {.model = &m, .gpu = &g, .workload = wl, .decode = &dc,
                           .pool = {.kind = DKV_MEM_BLOCKPOOL, .block_tokens = 32, .block_bytes = blk, .n_blocks = 64}};
    dkv_step_item it = reuse_item(672, 32);
    it.kv_cached_tokens = 640, it.n_kv_blocks = 21;
    dkv_xfer cx = compress_order(0);
    dkv_step_plan pc = {.items = &it, .n_items = 1, .xfers = &cx, .n_xfers = 1};
    dkv_xfer fx = {.kind = DKV_XFER_FETCH, .request = 0, .pinned = true, .pcie_bytes = cx.pcie_bytes + blk};
    dkv_step_item held = it;
    held.n_kv_blocks = 2;
    dkv_step_plan pf = {.items = &held, .n_items = 1, .xfers = &fx, .n_xfers = 1};
    dkv_step_plan p0 = {.items = &held, .n_items = 1};
    dkv_step_cost base, c;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &p0, &base, NULL, NULL, NULL), DKV_OK);
    dkv_backend be = {0};
    assert_int_equal(dkv_sim_backend_new(&o, &be, NULL), DKV_OK);
    assert_int_equal(dkv_backend_begin(&be, &s, NULL), DKV_OK);
    assert_int_equal(dkv_backend_run_step(&be, &pc, &c, NULL), DKV_OK);
    for (int i = 0; i < 50; i++)
        assert_int_equal(dkv_backend_run_step(&be, &p0, &c, NULL), DKV_OK);
    assert_int_equal(dkv_backend_run_step(&be, &pf, &c, NULL), DKV_OK);
    double t_in = ((double)blk + form_bytes) / g.pcie_h2d_pinned;
    assert_true(fabs(c.time_s - (t_in + 5e-3 + base.time_s)) < 1e-9);
    dkv_backend_end(&be);
    dkv_backend_free(&be);
    dkv_workload_free(wl);
    dkv_profile_free(p);
}

static dkv_profile *profile(double first_compress_s)
{
    dkv_profile_info in = {.measured = true, .first_gemm_s = 1e-3, .first_attn_s = 1e-4, .first_other_s = 1e-5,
                           .first_compress_s = first_compress_s, .host_per_launch_s = 0};
    strcpy(in.name, "test");
    strcpy(in.gpu, "test");
    strcpy(in.date, "today");
    dkv_profile *p = NULL;
    dkv_err e = {0};
    assert_int_equal(dkv_profile_new(&in, &p, &e), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "test", &e), DKV_OK);
    return p;
}

static double run_once(const dkv_model *m, const dkv_gpu *g, const dkv_sim_options *o, const dkv_step_plan *p)
{
    dkv_backend be = {0};
    assert_int_equal(dkv_sim_backend_new(o, &be, NULL), DKV_OK);
    dkv_backend_setup s = {.model = m, .gpu = g};
    assert_int_equal(dkv_backend_begin(&be, &s, NULL), DKV_OK);
    dkv_step_cost c;
    assert_int_equal(dkv_backend_run_step(&be, p, &c, NULL), DKV_OK);
    dkv_backend_end(&be);
    dkv_backend_free(&be);
    return c.time_s;
}

/* Without a shared set every run starts cold; with one, a run after another of the same shapes pays
 * no first use, a model of other shapes does; the first compression costs first_compress_s.  With
 * warm_gemms (the default: the CUDA backend's GEMM warm-up) the GEMM shapes of at most 8,192 rows are
 * not first uses, and with warm_compressor too (the default) nor the first compression; the rest of the
 * test takes warm_gemms off to see them charged. */
static void test_warm_set(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_profile *p = profile(0.05), *p0 = profile(0);
    g.profile = p;
    dkv_sim_options o = dkv_sim_options_default();
    o.copy_model = DKV_SIM_COPY_STREAM;
    dkv_step_item it = reuse_item(800, 32);
    dkv_xfer x = compress_order(0);
    dkv_step_plan plan = {.items = &it, .n_items = 1, .xfers = &x, .n_xfers = 1};
    assert_true(o.warm_gemms && o.warm_compressor);
    double warm_cold = run_once(&m, &g, &o, &plan);
    o.warm_compressor = false;   /* the backend's compressor not warmed at begin: its first call charged */
    assert_true(fabs(run_once(&m, &g, &o, &plan) - warm_cold - 0.05) < 1e-12);
    o.warm_gemms = false;
    double cold = run_once(&m, &g, &o, &plan);
    /* the 5 GEMM shapes of 32 rows, 1 ms each, and the compressor's first call */
    assert_true(fabs(cold - warm_cold - 5e-3 - 0.05) < 1e-12);
    o.warm_compressor = true;   /* warm_compressor means nothing without the backend's warm-up */
    assert_true(fabs(run_once(&m, &g, &o, &plan) - cold) < 1e-15);
    assert_true(fabs(run_once(&m, &g, &o, &plan) - cold) < 1e-15);   /* each run cold */
    o.first_use = false;
    double none = run_once(&m, &g, &o, &plan);
    o.first_use = true;
    /* qkv, o, two FFN GEMMs and the LM head (1 ms each), attention, and the first kernel of the
     * elementwise, KV-store and compress classes */
    assert_true(fabs(cold - none - (5e-3 + 1e-4 + 2e-5 + 0.05)) < 1e-12);
    g.profile = p0;   /* no measured compressor first call: the compress class costs other_s */
    assert_true(fabs(run_once(&m, &g, &o, &plan) - none - (5e-3 + 1e-4 + 3e-5)) < 1e-12);
    g.profile = p;

    dkv_sim_warm *w = NULL;
    assert_int_equal(dkv_sim_warm_new(&w, NULL), DKV_OK);
    o.warm = w;
    assert_true(fabs(run_once(&m, &g, &o, &plan) - cold) < 1e-15);
    uint32_t n = dkv_sim_warm_count(w);
    assert_int_equal(n, 8);   /* qkv, o, ffn, lm_head, attn, elementwise, kv_store, compress */
    assert_true(fabs(run_once(&m, &g, &o, &plan) - none) < 1e-15);   /* all warm */
    assert_int_equal(dkv_sim_warm_count(w), n);
    dkv_model d = m;   /* another model's GEMMs are other shapes */
    d.hidden = 3584, d.ffn = 18944, d.n_heads = 28, d.n_kv_heads = 4;
    o.warm = NULL;
    double d_cold = run_once(&d, &g, &o, &plan);
    o.warm = w;
    assert_true(fabs(run_once(&d, &g, &o, &plan) - d_cold) < 1e-15);
    assert_int_equal(dkv_sim_warm_count(w), 2 * n);
    dkv_sim_warm_free(w);
    dkv_sim_warm_free(NULL);
    dkv_profile_free(p);
    dkv_profile_free(p0);
}

/* sim.kernel_scale (the machine calibration, docs/COST_MODEL.md "Machine calibration") multiplies every
 * kernel class's time and nothing else: a step without copies or first use takes exactly scale x its
 * compute; the first-use charge (the driver's, not the kernels') stays as it was. */
static void test_kernel_scale(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_profile *p = profile(0);
    g.profile = p;
    dkv_sim_options o = dkv_sim_options_default();
    assert_true(o.kernel_scale == 1.0);
    o.warm_gemms = false;   /* the GEMM shapes' first use charged, to see it unscaled */
    dkv_step_item it = reuse_item(800, 32);
    dkv_step_plan plan = {.items = &it, .n_items = 1};
    dkv_step_cost a, b;
    o.first_use = false;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &plan, &a, NULL, NULL, NULL), DKV_OK);
    o.kernel_scale = 1.25;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &plan, &b, NULL, NULL, NULL), DKV_OK);
    assert_true(a.compute_s > 0);
    assert_true(fabs(b.compute_s - 1.25 * a.compute_s) < 1e-12 * a.compute_s);
    assert_true(fabs(b.time_s - 1.25 * a.time_s) < 1e-12 * a.time_s);
    assert_true(b.host_s == a.host_s && b.hbm_read_bytes == a.hbm_read_bytes && b.flops == a.flops);
    /* with first use: the scaled run is longer by the kernels' quarter only */
    o.first_use = true;
    o.kernel_scale = 1;
    double cold1 = run_once(&m, &g, &o, &plan);
    o.kernel_scale = 1.25;
    double cold125 = run_once(&m, &g, &o, &plan);
    assert_true(cold1 > a.time_s + 5e-3 - 1e-12);   /* five GEMM shapes' first use, 1 ms each, at least */
    assert_true(fabs((cold125 - cold1) - 0.25 * a.time_s) < 1e-12);
    o.kernel_scale = 0;   /* 0: unset, as 1 */
    assert_true(fabs(run_once(&m, &g, &o, &plan) - cold1) < 1e-15);
    dkv_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compress_alternates_with_its_copies),
        cmocka_unit_test(test_lowrank_form_fetched_and_rebuilt),
        cmocka_unit_test(test_rebuild_from_profile),
        cmocka_unit_test(test_warm_set),
        cmocka_unit_test(test_kernel_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
