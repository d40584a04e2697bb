/* test_sim.c - the simulator's roofline cost model on hand-checkable plans. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "sim/sim.h"

/* LLaDA-8B shapes (ANCHORS.md) and the measured H200 figures */
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
    g.n_bw_curve = 3;
    g.bw_curve[0] = (dkv_bw_point){256, 0.2};
    g.bw_curve[1] = (dkv_bw_point){4096, 0.6};
    g.bw_curve[2] = (dkv_bw_point){1 << 20, 0.95};
    return g;
}

static dkv_step_item reuse_item(uint32_t L, uint32_t B)
{
    dkv_step_item it = {.phase = DKV_STEP_REUSE, .q_tokens = B, .kv_tokens = L, .kv_cached_tokens = L - B,
                        .kv_write_tokens = B, .logit_rows = B};
    return it;
}

/* A Reuse step at batch 1 streams the weights once: ~ weight bytes / bandwidth ~ 3.7 ms. */
static void test_reuse_batch1_is_weight_streaming(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_step_item it = reuse_item(768, 32);
    dkv_step_plan p = {.items = &it, .n_items = 1, .max_logit_rows = 1024};
    dkv_step_cost c;
    dkv_err e = {0};
    dkv_sim_options o = dkv_sim_options_default();
    o.launch_overhead_s = 0;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &p, &c, NULL, NULL, &e), DKV_OK);
    /* streamed = layer weights + LM head (the embedding table is only gathered) + the cached KV */
    double floor = ((double)(dkv_model_weight_bytes(&m) - (uint64_t)m.vocab * m.hidden * 2) +
                    768.0 * dkv_model_kv_bytes_per_token(&m)) / g.hbm_bw;
    assert_true(c.time_s >= floor);
    assert_true(c.time_s < floor * 1.03);
    assert_true(c.time_s > 3.3e-3 && c.time_s < 3.9e-3);
    /* with the preset's launch overhead (2 us x ~260 launches) it stays near 4 ms */
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &c, NULL, NULL, &e), DKV_OK);
    assert_true(c.time_s > 3.5e-3 && c.time_s < 4.3e-3);
    assert_true(c.bw_util > 0.8 && c.bw_util <= 1.0 + 1e-9);
    assert_true(c.flops_util < 0.25); /* 2 x 8e9 x 32 FLOP in ~4 ms: ~16 % of peak */
}

typedef struct gemm_acc { double t, fl; } gemm_acc;
static void gemm_sum(void *u, const dkv_kernel_record *r)
{
    gemm_acc *a = u;
    if (r->kind == DKV_KCLASS_QKV || r->kind == DKV_KCLASS_O || r->kind == DKV_KCLASS_FFN) {
        a->t += r->time_s;
        a->fl += r->flops;
    }
}

/* A big Refresh step is GEMM-bound: time ~ FLOPs / peak. */
static void test_refresh_is_flops_bound(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_step_item it[8];
    for (int i = 0; i < 8; i++)
        it[i] = (dkv_step_item){.phase = DKV_STEP_REFRESH, .q_tokens = 2048, .kv_tokens = 2048,
                                .kv_write_tokens = 2048, .logit_rows = 32};
    dkv_step_plan p = {.items = it, .n_items = 8, .max_logit_rows = 1024};
    dkv_step_cost c;
    dkv_sim_options o = dkv_sim_options_default();
    o.launch_overhead_s = 0;
    gemm_acc acc = {0};
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &p, &c, gemm_sum, &acc, NULL), DKV_OK);
    double fl = 8 * dkv_model_forward_flops(&m, 2048, 2048, 32);
    assert_true(fabs(c.flops - fl) / fl < 0.01); /* same FLOP arithmetic as model.h (+ elementwise) */
    /* the GEMM classes run exactly at FLOPs / peak */
    assert_true(fabs(acc.t - acc.fl / g.flops_bf16) < 1e-9);
    assert_true(acc.fl > 0.9 * fl);
    /* norms, RoPE and KV stores are bandwidth-bound extras: the step is within 10 % of FLOPs/peak */
    assert_true(c.compute_s >= fl / g.flops_bf16 * 0.999);
    assert_true(c.compute_s < fl / g.flops_bf16 * 1.10);
    assert_true(c.flops_util > 0.9);
}

/* Logit chunking re-reads the LM head per chunk; rows are counted once. */
static void test_logit_chunks(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_step_item it = {.phase = DKV_STEP_REFRESH, .q_tokens = 4096, .kv_tokens = 4096, .logit_rows = 4096};
    dkv_step_plan p = {.items = &it, .n_items = 1, .max_logit_rows = 0};
    dkv_step_cost one, four;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &one, NULL, NULL, NULL), DKV_OK);
    p.max_logit_rows = 1024;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &four, NULL, NULL, NULL), DKV_OK);
    double head_w = (double)m.vocab * m.hidden * 2;
    assert_true(fabs((double)(four.hbm_read_bytes - one.hbm_read_bytes) - 3 * head_w) < 1e3);
    assert_true(fabs(four.flops - one.flops) < 1.0);
    assert_int_equal(four.n_kernels - one.n_kernels, 6);
}

/* Layout: short contiguous runs slow the cached-KV reads by the bw curve's efficiency. */
static void test_layout_efficiency(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_sim_options o = dkv_sim_options_default();
    o.launch_overhead_s = 0;
    dkv_step_item it[64];
    for (int i = 0; i < 64; i++)
        it[i] = reuse_item(4096, 32);
    dkv_step_plan p = {.items = it, .n_items = 64, .max_logit_rows = 4096};
    dkv_step_cost good, bad;
    dkv_kernel_record attn_good = {0}, attn_bad = {0};
    void grab(void *u, const dkv_kernel_record *r);
    for (int i = 0; i < 64; i++)
        it[i].kv_run_bytes = 1 << 20;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &p, &good, grab, &attn_good, NULL), DKV_OK);
    for (int i = 0; i < 64; i++)
        it[i].kv_run_bytes = 256;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &p, &bad, grab, &attn_bad, NULL), DKV_OK);
    assert_true(bad.time_s > good.time_s);
    assert_int_equal(bad.hbm_read_bytes, good.hbm_read_bytes); /* same bytes, slower */
    /* cached KV read dominates attention: ratio of attention times ~ 0.95 / 0.2 */
    double r = attn_bad.time_s / attn_good.time_s;
    assert_true(r > 4.0 && r < 4.9);
}

void grab(void *u, const dkv_kernel_record *r)
{
    if (r->kind == DKV_KCLASS_ATTN)
        *(dkv_kernel_record *)u = *r;
}

/* PCIe: async copies overlap compute, blocking ones add; pageable is blocking at its rate. */
static void test_pcie_overlap(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_step_item it = reuse_item(768, 32);
    dkv_xfer x = {.kind = DKV_XFER_OFFLOAD, .pinned = true, .blocking = false, .pcie_bytes = 55300000};
    dkv_step_plan p = {.items = &it, .n_items = 1, .xfers = &x, .n_xfers = 1};
    dkv_step_cost base, c;
    dkv_step_plan p0 = p;
    p0.n_xfers = 0;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p0, &base, NULL, NULL, NULL), DKV_OK);
    /* 55.3 MB at 55.3 GB/s = 1 ms, hidden under a ~4 ms step */
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &c, NULL, NULL, NULL), DKV_OK);
    assert_true(fabs(c.time_s - base.time_s) < 1e-12);
    assert_true(fabs(c.pcie_s - 1e-3) < 1e-6);
    assert_int_equal(c.pcie_d2h_bytes, 55300000);
    x.blocking = true;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &c, NULL, NULL, NULL), DKV_OK);
    assert_true(fabs(c.time_s - base.time_s - 1e-3) < 1e-6);
    assert_true(fabs(c.stall_s - 1e-3) < 1e-6);
    x.blocking = false;
    x.pinned = false; /* pageable: 15.5 GB/s, serial */
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &c, NULL, NULL, NULL), DKV_OK);
    assert_true(fabs(c.time_s - base.time_s - 55.3e6 / 15.5e9) < 1e-6);
    /* both directions: total capped by the bidirectional rate */
    dkv_xfer xs[2] = {{.kind = DKV_XFER_OFFLOAD, .pinned = true, .pcie_bytes = 1014000000},
                      {.kind = DKV_XFER_FETCH, .pinned = true, .pcie_bytes = 1014000000}};
    p.xfers = xs;
    p.n_xfers = 2;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &c, NULL, NULL, NULL), DKV_OK);
    assert_true(fabs(c.pcie_s - 2 * 1014e6 / 101.4e9) < 1e-6);
    assert_true(fabs(c.time_s - c.pcie_s) < 1e-9); /* 20 ms of copies > compute */
}

/* The stream copy model follows the CUDA backend: a fetch runs before the step's kernels (they
 * wait), an offload after them; a non-blocking offload's remainder delays the next step's fetch. */
static void test_copy_stream(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_step_item it = reuse_item(768, 32);
    dkv_step_plan p0 = {.items = &it, .n_items = 1};
    dkv_step_cost base, c;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p0, &base, NULL, NULL, NULL), DKV_OK);
    dkv_sim_options o = dkv_sim_options_default();
    o.copy_model = DKV_SIM_COPY_STREAM;
    dkv_xfer fx = {.kind = DKV_XFER_FETCH, .pinned = true, .pcie_bytes = 55500000};   /* 1 ms */
    dkv_step_plan pf = p0;
    pf.xfers = &fx, pf.n_xfers = 1;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &pf, &c, NULL, NULL, NULL), DKV_OK);
    assert_true(fabs(c.time_s - base.time_s - 1e-3) < 1e-9);   /* serial, not hidden */
    assert_true(fabs(c.stall_s - 1e-3) < 1e-9);
    /* a run: step 1 offloads 20 ms (non-blocking) after its ~4 ms of kernels; step 2's 1 ms fetch
     * queues behind the whole offload, and its kernels behind the fetch */
    dkv_backend be = {0};
    assert_int_equal(dkv_sim_backend_new(&o, &be, NULL), DKV_OK);
    dkv_backend_setup s = {.model = &m, .gpu = &g};
    assert_int_equal(dkv_backend_begin(&be, &s, NULL), DKV_OK);
    dkv_xfer ox = {.kind = DKV_XFER_OFFLOAD, .pinned = true, .pcie_bytes = 1106000000};  /* 20 ms */
    dkv_step_plan po = p0;
    po.xfers = &ox, po.n_xfers = 1;
    dkv_step_cost c1, c2;
    assert_int_equal(dkv_backend_run_step(&be, &po, &c1, NULL), DKV_OK);
    assert_true(fabs(c1.time_s - base.time_s) < 1e-9);         /* the offload runs after the kernels */
    assert_int_equal(dkv_backend_run_step(&be, &pf, &c2, NULL), DKV_OK);
    double backlog = 20e-3;   /* the offload started when step 1's kernels ended, as step 1 did */
    assert_true(fabs(c2.time_s - (backlog + 1e-3 + base.time_s)) < 1e-9);
    dkv_backend_end(&be);
    dkv_backend_free(&be);
    /* blocking: the step waits for its offload after its kernels */
    ox.blocking = true;
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &po, &c, NULL, NULL, NULL), DKV_OK);
    assert_true(fabs(c.time_s - base.time_s - 20e-3) < 1e-9);
}

/* The backend object costs like the direct call, and merged plans stream weights per instance. */
static void test_backend_vtable(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_backend be = {0};
    dkv_err e = {0};
    assert_int_equal(dkv_sim_backend_new(NULL, &be, &e), DKV_OK);
    assert_string_equal(dkv_backend_name(&be), "sim");
    dkv_step_item it = reuse_item(768, 32);
    dkv_step_plan p = {.items = &it, .n_items = 1, .max_logit_rows = 1024};
    dkv_step_cost c, d;
    assert_int_equal(dkv_backend_run_step(&be, &p, &c, &e), DKV_ESTATE);
    dkv_backend_setup s = {.model = &m, .gpu = &g};
    assert_int_equal(dkv_backend_begin(&be, &s, &e), DKV_OK);
    assert_int_equal(dkv_backend_run_step(&be, &p, &c, &e), DKV_OK);
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &d, NULL, NULL, NULL), DKV_OK);
    assert_true(c.time_s == d.time_s);
    p.n_weight_streams = 4;
    assert_int_equal(dkv_backend_run_step(&be, &p, &d, &e), DKV_OK);
    /* four weight streams: the streaming part (all but the launches) is about four times longer */
    assert_int_equal(d.n_kernels, c.n_kernels);
    double lt = c.n_kernels * g.launch_overhead_s;
    assert_true(d.time_s - lt > 3.5 * (c.time_s - lt));
    dkv_backend_end(&be);
    dkv_backend_free(&be);
    dkv_backend_free(NULL);
    /* a backend with no entries takes the defaults */
    static const dkv_backend_i empty = {.name = "null"};
    dkv_backend nb = {.iface = &empty};
    assert_int_equal(dkv_backend_begin(&nb, &s, &e), DKV_OK);
    assert_int_equal(dkv_backend_run_step(&nb, &p, &c, &e), DKV_OK);
    assert_true(c.time_s == 0);
    dkv_backend_free(&nb);
}

/* Per-class kernel records of one plan. */
typedef struct recs {
    dkv_kernel_record r[DKV_KCLASS_N];
    int seen[DKV_KCLASS_N];
} recs;

static void on_rec(void *user, const dkv_kernel_record *r)
{
    recs *x = user;
    x->r[r->kind] = *r;
    x->seen[r->kind]++;
}

/* Launches follow cuda/backend_fwd.c: per layer 1 QKV, 1 store (RoPE fused), 1 attention, 1 O,
 * 2 FFN, 3 elementwise (two norms, SiLU*up); per step reset + 1 embedding per item + unmask,
 * 1 final norm per item with logits + 2 per logit chunk. */
static void test_launches_follow_backend(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_step_item it[2] = {reuse_item(768, 32), reuse_item(1024, 32)};
    dkv_step_plan p = {.items = it, .n_items = 2, .max_logit_rows = 1024};
    dkv_step_cost c;
    recs x;
    memset(&x, 0, sizeof x);
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &c, on_rec, &x, NULL), DKV_OK);
    uint32_t L = m.n_layers;
    assert_int_equal(x.r[DKV_KCLASS_QKV].n_launches, L);
    assert_int_equal(x.r[DKV_KCLASS_KV_STORE].n_launches, L);
    assert_int_equal(x.r[DKV_KCLASS_ATTN].n_launches, L);
    assert_int_equal(x.r[DKV_KCLASS_O].n_launches, L);
    assert_int_equal(x.r[DKV_KCLASS_FFN].n_launches, 2 * L);
    assert_int_equal(x.r[DKV_KCLASS_ELEMENTWISE].n_launches, 3 * L + 1 + 2 + 1);
    assert_int_equal(x.r[DKV_KCLASS_LM_HEAD].n_launches, 2 + 2);
    assert_int_equal(x.seen[DKV_KCLASS_KV_GATHER], 0);
    uint32_t sum = 0;
    for (int k = 0; k < DKV_KCLASS_N; k++)
        sum += x.r[k].n_launches;
    assert_int_equal(sum, c.n_kernels);
    /* the store reads every row's q, k, v and writes q back and the 64 tokens' K/V */
    double ab = 2, hq = 4096, hkv = 4096, Q = 64;
    assert_true(fabs((double)x.r[DKV_KCLASS_KV_STORE].read_bytes - L * Q * (hq + 2 * hkv) * ab) < L);
    assert_true(fabs((double)x.r[DKV_KCLASS_KV_STORE].write_bytes - L * (Q * hq * ab + Q * 2 * hkv * ab)) < L);
    /* nothing stored: RoPE runs as its own elementwise kernel */
    it[0].kv_write_tokens = it[1].kv_write_tokens = 0;
    it[0].kv_cached_tokens = 768, it[0].kv_tokens = 800;
    it[1].kv_cached_tokens = 1024, it[1].kv_tokens = 1056;
    memset(&x, 0, sizeof x);
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &c, on_rec, &x, NULL), DKV_OK);
    assert_int_equal(x.seen[DKV_KCLASS_KV_STORE], 0);
    assert_int_equal(x.r[DKV_KCLASS_ELEMENTWISE].n_launches, 4 * L + 1 + 2 + 1);
}

/* A sparse selection (kv_select_rows) is a gather-class kernel group of 5 launches per layer:
 * scores GEMM, row statistics, column sums, top-k, pack; its kept tokens are not a KV store. */
static void test_sparse_select(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_step_item it = {.phase = DKV_STEP_REFRESH, .q_tokens = 1056, .kv_tokens = 1056, .kv_write_tokens = 512,
                        .kv_select_rows = 32, .logit_rows = 32};
    dkv_step_plan p = {.items = &it, .n_items = 1, .max_logit_rows = 1024};
    dkv_step_cost c, plain;
    recs x;
    memset(&x, 0, sizeof x);
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &c, on_rec, &x, NULL), DKV_OK);
    uint32_t L = m.n_layers;
    assert_int_equal(x.r[DKV_KCLASS_KV_GATHER].n_launches, 5 * L);
    assert_int_equal(x.seen[DKV_KCLASS_KV_STORE], 0);
    assert_int_equal(x.r[DKV_KCLASS_ELEMENTWISE].n_launches, 4 * L + 3);
    /* scores: 2 * rows * keys * (heads * head_dim) FLOPs per layer */
    assert_true(fabs(x.r[DKV_KCLASS_KV_GATHER].flops - L * 2.0 * 32 * 1056 * 4096) < 1.0);
    /* the pack writes the kept tokens' K and V */
    assert_true(x.r[DKV_KCLASS_KV_GATHER].write_bytes >= (uint64_t)L * 512 * 2 * 4096 * 2);
    it.kv_select_rows = 0;   /* the same tokens as a plain store cost less than selecting them */
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &plain, NULL, NULL, NULL), DKV_OK);
    assert_true(plain.time_s < c.time_s);
}

/* A calibrated class costs scale * roofline + launches * launch_s; the others are unchanged. */
static void test_kclass_calibration(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_step_item it = reuse_item(768, 32);
    dkv_step_plan p = {.items = &it, .n_items = 1, .max_logit_rows = 1024};
    dkv_step_cost c0, c1;
    recs a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &c0, on_rec, &a, NULL), DKV_OK);
    g.kclass_set = 1u << DKV_KCLASS_ATTN;
    g.kclass[DKV_KCLASS_ATTN] = (dkv_gpu_kclass){.scale = 3.0, .launch_s = 10e-6};
    dkv_err e = {0};
    assert_int_equal(dkv_gpu_validate(&g, &e), DKV_OK);
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &c1, on_rec, &b, NULL), DKV_OK);
    const dkv_kernel_record *x = &a.r[DKV_KCLASS_ATTN], *y = &b.r[DKV_KCLASS_ATTN];
    double roof = x->time_s - x->n_launches * g.launch_overhead_s;
    assert_true(roof > 0);
    assert_true(fabs(y->time_s - (3.0 * roof + y->n_launches * 10e-6)) < 1e-12);
    assert_true(a.r[DKV_KCLASS_FFN].time_s == b.r[DKV_KCLASS_FFN].time_s);
    assert_true(fabs((c1.time_s - c0.time_s) - (y->time_s - x->time_s)) < 1e-12);
    /* an explicit launch-overhead option still wins over the calibrated one */
    dkv_sim_options o = dkv_sim_options_default();
    o.launch_overhead_s = 0;
    memset(&b, 0, sizeof b);
    assert_int_equal(dkv_sim_cost_plan(&m, &g, &o, &p, &c1, on_rec, &b, NULL), DKV_OK);
    assert_true(fabs(b.r[DKV_KCLASS_ATTN].time_s - 3.0 * roof) < 1e-12);
    /* validation names what is wrong */
    g.kclass[DKV_KCLASS_ATTN].scale = 0;
    assert_int_equal(dkv_gpu_validate(&g, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "scale > 0"));
}

static void test_bad_plan(void **state)
{
    (void)state;
    dkv_model m = llada();
    dkv_gpu g = h200();
    dkv_step_item it = reuse_item(768, 32);
    it.kv_cached_tokens = 900;
    dkv_step_plan p = {.items = &it, .n_items = 1};
    dkv_step_cost c;
    dkv_err e = {0};
    assert_int_equal(dkv_sim_cost_plan(&m, &g, NULL, &p, &c, NULL, NULL, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "kv_cached_tokens"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_batch1_is_weight_streaming),
        cmocka_unit_test(test_refresh_is_flops_bound),
        cmocka_unit_test(test_logit_chunks),
        cmocka_unit_test(test_layout_efficiency),
        cmocka_unit_test(test_pcie_overlap),
        cmocka_unit_test(test_backend_vtable),
        cmocka_unit_test(test_launches_follow_backend),
        cmocka_unit_test(test_sparse_select),
        cmocka_unit_test(test_kclass_calibration),
        cmocka_unit_test(test_bad_plan),
        cmocka_unit_test(test_copy_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
