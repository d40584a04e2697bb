/* test_cpu_offload_forms.c - which COMPRESS orders of progressive offload the CUDA backend stores as
 * a low-rank form and which raw, reproduced on the CPU backend (docs/GPU.md "Lossy policies").
 *
 * The engine runs the CPU backend (random weights: the plans of cache dual with fixed steps per
 * block do not depend on the tokens) at the configuration of tests/gpu/test_backend_fp8.c's tiny
 * runs: the tiny dLLM's shapes (6 layers, 2 KV heads, head_dim 64), the first 4 prompts of
 * datasets/workloads/tiny_prompts.jsonl generating 32 tokens each, dual, blocks of 32, 8 steps a
 * block, pool blocks of 32 tokens, progressive offload from a quarter of the steps (t1 0.25, t2 1).
 * A wrapper around the backend's run_step reads every COMPRESS order of the plans and applies the
 * CUDA backend's rule (cuda/arena.c's compress, through the same core/model/devmem.c functions):
 * the order's tokens (dkv_devmem_compress_tokens), rank (dkv_devmem_compress_rank) and bf16 form
 * (dkv_devmem_lowrank_form_bytes) against the raw blocks it replaces; the form is stored when it
 * is not larger.  Checks:
 *   - FP8 at ratio 0.3: orders are made, every one covers at most 2 blocks and its form is larger
 *     than its e4m3 blocks, so none is a form (device call 13's "0 forms stored" is the rule, not
 *     a fault);
 *   - bf16 at ratio 0.3: every order's form is smaller (test_backend_lossy stores forms);
 *   - FP8 at ratio 0.15 (rank 10): every order's form is smaller (test_backend_fp8's low-rank run);
 *   - bf16 at ratios 1 and 0.5 on one-block orders: full blocks' forms are larger (raw), partly needed
 *     blocks' smaller (forms);
 *   - the CPU backend takes every order (n_compress = the orders counted) and projects exactly those
 *     the rule stores as forms (n_lowrank_stored = as_form; since session 37 it applies the same
 *     core/model/devmem.c rule, computed here apart), keeping the others' blocks exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/backend.h"
#include "engine/engine.h"
#include "model/devmem.h"
#include "workload/tokenizer.h"
#include "workload/workload.h"

#define TINY_PROMPTS "datasets/workloads/tiny_prompts.jsonl"

/* datasets/presets/model/tiny-dllm.lua (as tests/gpu/tiny_model.h) */
static dkv_model tiny_dllm(dkv_dtype kv)
{
    dkv_model m = {.n_layers = 6, .hidden = 384, .ffn = 768, .n_heads = 6, .n_kv_heads = 2, .head_dim = 64,
                   .vocab = 264, .mask_id = 256, .max_len = 512, .rope_theta = 10000.0,
                   .weight_dtype = DKV_DTYPE_BF16, .kv_dtype = kv, .act_dtype = DKV_DTYPE_BF16};
    snprintf(m.name, sizeof m.name, "tiny-dllm");
    return m;
}

/* datasets/presets/gpu/h200.lua, the fields the engine sizes with */
static dkv_gpu h200(void)
{
    dkv_gpu g;
    memset(&g, 0, sizeof g);
    snprintf(g.name, sizeof g.name, "h200");
    g.hbm_bytes = 139.8 * 1073741824.0, g.hbm_bw = 4292e9, g.flops_bf16 = 790e12, g.flops_fp32 = 67e12;
    g.pcie_h2d_pinned = 55.5e9, g.pcie_d2h_pinned = 55.3e9, g.pcie_bidir_pinned = 101.4e9;
    g.pcie_h2d_pageable = 8.8e9, g.pcie_d2h_pageable = 15.5e9, g.launch_overhead_s = 4e-6;
    g.malloc_s = 35e-6, g.free_s = 38e-6, g.n_sms = 132, g.l2_bytes = 60 * 1048576.0;
    g.max_num_logits = 16384, g.max_num_batched_tokens = 32768, g.retention = 0.3;
    return g;
}

typedef struct forms {
    dkv_backend inner;
    const dkv_model *m;
    const dkv_workload *wl;
    uint32_t bt, max_L;
    uint64_t block_bytes;
    uint64_t orders, as_form, max_blocks;   /* COMPRESS orders, of them stored as forms, widest */
} forms;

static dkv_status w_begin(void *ctx, const dkv_backend_setup *s, dkv_err *err)
{
    forms *f = ctx;
    f->bt = s->pool.block_tokens, f->block_bytes = s->pool.block_bytes;
    return f->inner.iface->begin(f->inner.ctx, s, err);
}

static uint32_t cdiv(uint64_t a, uint64_t d) { return (uint32_t)((a + d - 1) / d); }

/* The tokens of its canvas an item needs (both backends' plan_item, cache dual): a Refresh that stores its w
 * rows, w; a Reuse that stores its block in place, the attended keys or the block's end if further. */
static uint32_t need_tokens(const dkv_step_item *it, uint32_t P, uint32_t B)
{
    uint32_t w = it->kv_write_tokens, a = it->kv_tokens, sb = P + it->block * B;
    if (it->phase == DKV_STEP_REFRESH)
        return w;
    return w == 0 ? it->kv_cached_tokens : a > sb + w ? a : sb + w;
}

/* cuda/arena.c's compress: the chain (the item's blocks, at most its canvas's), the blocks before
 * the offloaded ones, cmp_blocks of them, their rows up to the tokens the item needs (never the unwritten
 * tail of a last block), the form against those blocks raw. */
static dkv_status w_step(void *ctx, const dkv_step_plan *plan, dkv_step_cost *out, dkv_err *err)
{
    forms *f = ctx;
    for (uint32_t k = 0; k < plan->n_xfers; k++) {
        const dkv_xfer *xf = &plan->xfers[k];
        if (xf->kind != DKV_XFER_COMPRESS)
            continue;
        const dkv_step_item *it = NULL;
        for (uint32_t i = 0; i < plan->n_items; i++)
            if (plan->items[i].request == xf->request)
                it = &plan->items[i];
        assert_non_null(it);
        const dkv_request *q = dkv_workload_get(f->wl, xf->request);
        uint32_t n_tb = cdiv(q->prompt_tokens + q->gen_tokens, f->bt);
        uint32_t n_chain = it->n_kv_blocks < n_tb ? it->n_kv_blocks : n_tb;
        uint32_t off = cdiv(dkv_plan_offload_bytes(plan, xf->request), f->block_bytes);
        uint32_t cmp = cdiv(xf->device_bytes, f->block_bytes);
        uint32_t end = n_chain > off ? n_chain - off : 0, start = end > cmp ? end - cmp : 0;
        uint32_t m_tok = dkv_devmem_compress_tokens(n_chain, off, cmp, f->bt, f->max_L);
        uint32_t need = need_tokens(it, q->prompt_tokens, 32), hi = end * f->bt < need ? end * f->bt : need;
        m_tok = hi <= start * f->bt ? 0 : hi - start * f->bt < m_tok ? hi - start * f->bt : m_tok;
        if (m_tok == 0)
            continue;
        uint32_t r = dkv_devmem_compress_rank(xf->pcie_bytes, xf->device_bytes, f->m->head_dim, m_tok);
        uint64_t form = dkv_devmem_lowrank_form_bytes(dkv_devmem_kv_vectors(f->m), m_tok, r, f->m->head_dim);
        uint64_t raw = (uint64_t)(end - start) * f->block_bytes;
        f->orders++;
        f->as_form += form <= raw;
        f->max_blocks = end - start > f->max_blocks ? end - start : f->max_blocks;
    }
    return f->inner.iface->run_step(f->inner.ctx, plan, out, err);
}

static void w_end(void *ctx)
{
    forms *f = ctx;
    f->inner.iface->end(f->inner.ctx);
}

static const dkv_backend_i wrapper = {.name = "forms", .begin = w_begin, .run_step = w_step, .end = w_end};

static void run(dkv_dtype kv, double ratio, forms *f, dkv_cpu_backend_report *rep)
{
    dkv_err e = {0};
    dkv_model m = tiny_dllm(kv);
    dkv_gpu g = h200();
    dkv_tokenizer tok;
    assert_int_equal(dkv_tokenizer_init(&tok, DKV_TOKENIZER_BYTE, m.vocab, m.mask_id, &e), DKV_OK);
    dkv_prompts_cfg pc = {.tok = &tok, .vocab = m.vocab, .gen = 32, .interval_s = 0};
    dkv_workload_opts wo;
    dkv_workload_opts_default(&wo);
    wo.first_n = 4;
    dkv_workload *wl = NULL;
    assert_int_equal(dkv_workload_prompts(TINY_PROMPTS, &pc, &wo, &wl, &e), DKV_OK);
    memset(f, 0, sizeof *f);
    f->m = &m, f->wl = wl;
    for (size_t i = 0; i < dkv_workload_count(wl); i++) {
        const dkv_request *q = dkv_workload_get(wl, i);
        uint32_t L = q->prompt_tokens + q->gen_tokens;
        f->max_L = L > f->max_L ? L : f->max_L;
    }
    dkv_engine_config c;   /* tests/gpu/tiny_model.h's tiny_config, cache dual, 8 steps a block */
    dkv_engine_config_default(&c);
    c.model = &m, c.gpu = &g, c.workload = wl;
    c.decode.cache = DKV_CACHE_DUAL, c.decode.block_len = 32, c.decode.steps_per_block = 8;
    c.sizing.block_tokens = 32;
    c.mem.capacity_bytes = 256ull << 20;
    c.max_num_batched_tokens = g.max_num_batched_tokens;
    c.logit.max_num_logits = g.max_num_logits;
    c.offload.mode = DKV_OFFLOAD_PROGRESSIVE;
    c.offload.lowrank_ratio = ratio;
    c.offload.t1 = 0.25, c.offload.t2 = 1.0;
    dkv_cpu_backend_options o = dkv_cpu_backend_options_default();
    memset(rep, 0, sizeof *rep);
    o.report = rep;
    assert_int_equal(dkv_cpu_backend_new(&o, &f->inner, &e), DKV_OK);
    dkv_backend be = {.iface = &wrapper, .ctx = f};
    c.backend = &be;
    dkv_engine_result *res = NULL;
    dkv_status st = dkv_engine_run(&c, &res, &e);
    if (st != DKV_OK)
        fail_msg("engine: %s", e.msg);
    assert_int_equal(dkv_engine_result_summary(res)->n_done, 4);
    dkv_engine_result_free(res);
    dkv_backend_free(&f->inner);
    dkv_workload_free(wl);
    printf("tiny dual, kv %s, progressive %.2f (rank %u): %llu COMPRESS orders (at most %llu blocks), %llu as forms "
           "under the CUDA rule; the CPU backend took %llu, projected %llu\n", dkv_dtype_name(kv), ratio,
           dkv_devmem_compress_rank((uint64_t)(ratio * 1e6), 1000000, 64, 64), (unsigned long long)f->orders,
           (unsigned long long)f->max_blocks, (unsigned long long)f->as_form, (unsigned long long)rep->n_compress,
           (unsigned long long)rep->n_lowrank_stored);
}

static void test_fp8_ratio_03_raw(void **state)
{
    (void)state;
    forms f;
    dkv_cpu_backend_report rep;
    run(DKV_DTYPE_FP8, 0.3, &f, &rep);
    assert_true(f.orders > 0);
    assert_true(f.max_blocks <= 2);     /* canvases of <= 64 tokens: the cold range is 1-2 blocks */
    assert_int_equal(f.as_form, 0);     /* 2 r (m + D) = 38 (m + 64) > m 64 for m <= 64 */
    assert_int_equal(rep.n_compress, f.orders);
    assert_int_equal(rep.n_lowrank_stored, 0);   /* raw, exact: no projection */
    assert_int_equal(rep.compress_matrices, 0);
    dkv_cpu_backend_report_clear(&rep);
}

static void test_bf16_ratio_03_forms(void **state)
{
    (void)state;
    forms f;
    dkv_cpu_backend_report rep;
    run(DKV_DTYPE_BF16, 0.3, &f, &rep);
    assert_true(f.orders > 0);
    assert_int_equal(f.as_form, f.orders);
    assert_int_equal(rep.n_compress, f.orders);
    assert_int_equal(rep.n_lowrank_stored, f.as_form);
    dkv_cpu_backend_report_clear(&rep);
}

static void test_fp8_ratio_015_forms(void **state)
{
    (void)state;
    forms f;
    dkv_cpu_backend_report rep;
    run(DKV_DTYPE_FP8, 0.15, &f, &rep);
    assert_true(f.orders > 0);
    assert_int_equal(f.as_form, f.orders);   /* 20 (m + 64) < m 64 from m 30 on */
    assert_int_equal(rep.n_lowrank_stored, f.as_form);
    dkv_cpu_backend_report_clear(&rep);
}

/* bf16 at ratio 1 (rank 64 = head_dim) and 0.5 (rank 32) on one-block orders: the form, 2 r (m + 64) bytes a matrix
 * at rank r = min(ratio x 64, m), is larger than the block's 32 x 64 x 2 raw bytes where the order's rows fill the
 * block (m = 32), and smaller where the item needs only a few of them (m = 8: rank 8, 1,152 bytes), so the rule
 * stores some orders raw and some as forms; the CPU backend projects exactly the forms. */
static void test_bf16_ratio_1_and_05_raw(void **state)
{
    (void)state;
    const double ratios[] = {1.0, 0.5};
    for (int i = 0; i < 2; i++) {
        forms f;
        dkv_cpu_backend_report rep;
        run(DKV_DTYPE_BF16, ratios[i], &f, &rep);
        assert_true(f.orders > 0);
        assert_true(f.max_blocks <= 1);
        assert_true(f.as_form < f.orders);   /* at least one order raw */
        assert_true(f.as_form > 0);          /* and at least one as a form */
        assert_int_equal(rep.n_compress, f.orders);
        assert_int_equal(rep.n_lowrank_stored, f.as_form);
        dkv_cpu_backend_report_clear(&rep);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_ratio_03_raw),
        cmocka_unit_test(test_bf16_ratio_03_forms),
        cmocka_unit_test(test_fp8_ratio_015_forms),
        cmocka_unit_test(test_bf16_ratio_1_and_05_raw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
