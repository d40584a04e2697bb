/* test_cpu_backend.c - the CPU backend (cpu/) against the golden model (core/ref):
 *   - KV element formats: bf16 and FP8 e4m3 encode/decode (exact grid values, rounding, saturation);
 *   - the low-rank approximation: rank n reproduces A, the error falls with the rank;
 *   - every cache mode (none, prefix, dual, sparse per head / shared) run through the backend's
 *     vtable with plans made from the decoding model, fp32 KV in pool blocks of 4 tokens given in a
 *     scrambled order, compared step by step with dkv_ref_step on the same canvas: the same
 *     argmax, confidence within 1e-4;
 *   - sparse at rho = 1 (every token retained) equals dense attention over the same keys;
 *   - bf16 / fp8 KV stay close to fp32 KV (confidence), and fp8 differs from bf16 (applied). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/backend.h"
#include "decode/decode.h"
#include "ref/ref.h"
#include "util/rng.h"
#include "workload/workload.h"

enum { P = 20, G = 16, L = P + G, BL = 8, V = 40, BT = 4 };

static dkv_model model(dkv_dtype kv)
{
    dkv_model m = {.n_layers = 2, .hidden = 32, .ffn = 48, .n_heads = 4, .n_kv_heads = 2, .head_dim = 8, .vocab = V,
                   .mask_id = V - 1, .max_len = 64, .rope_theta = 10000.0, .kv_dtype = kv,
                   .weight_dtype = DKV_DTYPE_BF16, .act_dtype = DKV_DTYPE_BF16};
    snprintf(m.name, sizeof m.name, "cpu-test");
    return m;
}

static void test_formats(void **state)
{
    (void)state;
    float grid[] = {0.0f, 1.0f, -1.0f, 0.5f, 1.125f, 448.0f, -448.0f, 0.015625f, 0.001953125f, 240.0f};
    for (size_t i = 0; i < sizeof grid / sizeof grid[0]; i++)
        assert_true(dkv_cpu_fp8_decode(dkv_cpu_fp8_encode(grid[i])) == grid[i]);
    assert_true(dkv_cpu_fp8_decode(dkv_cpu_fp8_encode(1000.0f)) == 448.0f);     /* saturates */
    assert_true(dkv_cpu_fp8_decode(dkv_cpu_fp8_encode(1.0625f)) == 1.0f);       /* tie to even */
    assert_true(dkv_cpu_fp8_decode(dkv_cpu_fp8_encode(1.1875f)) == 1.25f);      /* tie to even */
    assert_true(dkv_cpu_fp8_decode(dkv_cpu_fp8_encode(1.07f)) == 1.125f);
    assert_true(isnan(dkv_cpu_fp8_decode(0x7f)));
    for (int b = 0; b < 256; b++) {   /* every finite code round-trips */
        float x = dkv_cpu_fp8_decode((uint8_t)b);
        if (!isnan(x) && x != 0)
            assert_int_equal(dkv_cpu_fp8_encode(x), b);
    }
    assert_true(dkv_cpu_bf16_decode(dkv_cpu_bf16_encode(1.0f + 1.0f / 256)) == 1.0f);   /* tie to even */
    assert_true(dkv_cpu_bf16_decode(dkv_cpu_bf16_encode(3.140625f)) == 3.140625f);
}

static void test_lowrank(void **state)
{
    (void)state;
    enum { M = 40, N = 8 };
    float A[M * N], out[M * N];
    dkv_rng r;
    dkv_rng_seed(&r, 5);
    for (int i = 0; i < M * N; i++)
        A[i] = (float)dkv_rng_normal(&r);
    dkv_err e = {0};
    double err_full, prev = 2.0;
    assert_int_equal(dkv_cpu_lowrank(out, A, M, N, N, 1, 3, &err_full, &e), DKV_OK);
    assert_true(err_full < 1e-6);
    for (int i = 0; i < M * N; i++)
        assert_true(fabsf(out[i] - A[i]) < 1e-5f);
    for (uint32_t k = 1; k <= N; k++) {
        double er;
        assert_int_equal(dkv_cpu_lowrank(out, A, M, N, k, 1, 3, &er, &e), DKV_OK);
        assert_true(er < prev + 1e-12);
        prev = er;
    }
    assert_true(prev < 1e-6);
}

/* ---------------------------------------------------------------- the backend against core/ref */

typedef struct seen {
    uint32_t n;
    uint32_t before[64][L], after[64][L], argmax[64][BL];
    float conf[64][BL];
    uint32_t block[64], step[64];
} seen;

static void on_item(void *user, const dkv_cpu_item_report *r)
{
    seen *s = user;
    assert_true(s->n < 64);
    memcpy(s->before[s->n], r->tokens_before, sizeof s->before[0]);
    memcpy(s->after[s->n], r->tokens_after, sizeof s->after[0]);
    memcpy(s->argmax[s->n], r->argmax, sizeof s->argmax[0]);
    memcpy(s->conf[s->n], r->conf, sizeof s->conf[0]);
    s->block[s->n] = r->block, s->step[s->n] = r->step;
    s->n++;
}

static dkv_ref_weights *weights(const dkv_model *m)
{
    dkv_ref_weights *w = NULL;
    dkv_err e = {0};
    assert_int_equal(dkv_ref_weights_new(m, 1e-5f, &w, &e), DKV_OK);
    dkv_ref_weights_randomize(w, 11);
    for (size_t i = 0; i < (size_t)m->vocab * m->hidden; i++)
        w->lm_head[i] *= 8.0f;   /* peaked logits: no near-ties in the argmax */
    return w;
}

/* Runs one request through the backend with plans from the decoding model; fills *s. */
static void run(const dkv_model *m, const dkv_ref_weights *w, dkv_cache_mode cache, double rho, bool shared, seen *s)
{
    dkv_err e = {0};
    uint32_t prompt[P];
    for (uint32_t i = 0; i < P; i++)
        prompt[i] = (i * 7 + 3) % (V - 1);
    dkv_request rq = {.id = 0, .prompt_tokens = P, .gen_tokens = G, .tokens = prompt};
    dkv_workload *wl = NULL;
    assert_int_equal(dkv_workload_from_requests(&rq, 1, NULL, &wl, &e), DKV_OK);
    dkv_decode_cfg dc;
    dkv_decode_cfg_default(&dc);
    dc.block_len = BL, dc.steps_per_block = 4, dc.cache = cache, dc.rho = rho, dc.shared_set = shared;
    dkv_gpu g;
    memset(&g, 0, sizeof g);
    uint64_t tokb = (uint64_t)m->n_layers * 2 * m->n_kv_heads * m->head_dim * dkv_dtype_bytes(m->kv_dtype);
    dkv_backend_setup su = {.model = m, .gpu = &g, .workload = wl, .decode = &dc, .weights = w,
                            .pool = {.kind = DKV_MEM_BLOCKPOOL, .block_tokens = BT, .block_bytes = BT * tokb,
                                     .n_blocks = 32, .capacity_bytes = 32 * BT * tokb}};
    su.instances.n = 1;
    dkv_cpu_backend_options o = dkv_cpu_backend_options_default();
    o.on_item = on_item, o.on_item_user = s;
    dkv_backend be;
    assert_int_equal(dkv_cpu_backend_new(&o, &be, &e), DKV_OK);
    assert_int_equal(dkv_backend_begin(&be, &su, &e), DKV_OK);
    uint32_t blocks[32];
    for (uint32_t i = 0; i < 32; i++)
        blocks[i] = (i * 13 + 5) % 32;   /* a scrambled chain: block ids are not positions */
    dkv_decode_request dr = {.id = 0, .prompt_tokens = P, .gen_tokens = G};
    dkv_decode_state ds;
    dkv_decode_step st;
    assert_int_equal(dkv_decode_begin(&ds, &dr, &dc, m, &e), DKV_OK);
    memset(s, 0, sizeof *s);
    for (uint64_t k = 0; dkv_decode_next(&ds, &st); k++) {
        dkv_step_item it = {.request = 0, .block = st.block, .step = st.step, .steps_in_block = st.steps_in_block,
                            .phase = st.phase == DKV_PHASE_REUSE ? DKV_STEP_REUSE : DKV_STEP_REFRESH,
                            .q_tokens = st.q_tokens, .kv_tokens = st.a_tokens, .kv_cached_tokens = st.cached_tokens,
                            .kv_write_tokens = st.w_tokens, .logit_rows = st.logit_rows, .kv_blocks = blocks,
                            .n_kv_blocks = (L + BT - 1) / BT};
        dkv_step_plan plan = {.step_index = k, .items = &it, .n_items = 1};
        dkv_step_cost c;
        if (dkv_backend_run_step(&be, &plan, &c, &e) != DKV_OK)
            fail_msg("%s", e.msg);
        assert_true(c.time_s > 0);
    }
    dkv_backend_end(&be);
    dkv_backend_free(&be);
    dkv_workload_free(wl);
}

/* Every step of *s replayed through dkv_ref_step on the same canvas (fp32 cache). */
static void check_against_ref(const dkv_ref_weights *w, dkv_cache_mode mode, double rho, bool shared,
                              const seen *s)
{
    dkv_err e = {0};
    dkv_ref_kv *kv = NULL;
    assert_int_equal(dkv_ref_kv_new(&w->m, L, &kv, &e), DKV_OK);
    assert_int_equal(s->n, G / BL * 4);
    for (uint32_t k = 0; k < s->n; k++) {
        dkv_ref_step_args a = {.mode = mode, .canvas_len = L, .block_start = P + s->block[k] * BL, .block_len = BL,
                               .step = s->step[k], .retention = rho, .shared_set = shared};
        uint32_t am[BL];
        float cf[BL];
        dkv_ref_step_out out = {.argmax = am, .conf = cf};
        assert_int_equal(dkv_ref_step(w, kv, &a, s->before[k], &out, &e), DKV_OK);
        for (uint32_t i = 0; i < BL; i++) {
            assert_int_equal(am[i], s->argmax[k][i]);
            assert_true(fabsf(cf[i] - s->conf[k][i]) < 1e-4f);
        }
    }
    dkv_ref_kv_free(kv);
}

static void test_modes_match_ref(void **state)
{
    (void)state;
    dkv_model m = model(DKV_DTYPE_FP32);
    dkv_ref_weights *w = weights(&m);
    static seen s;
    struct { dkv_cache_mode c; dkv_cache_mode r; double rho; bool shared; } cases[] = {
        {DKV_CACHE_NONE, DKV_CACHE_NONE, 0.5, false},      {DKV_CACHE_PREFIX, DKV_CACHE_PREFIX, 0.5, false},
        {DKV_CACHE_DUAL, DKV_CACHE_DUAL, 0.5, false},      {DKV_CACHE_SPARSE, DKV_CACHE_SPARSE, 0.5, false},
        {DKV_CACHE_SPARSE, DKV_CACHE_SPARSE, 0.25, true},  {DKV_CACHE_SPARSE, DKV_CACHE_SPARSE, 1.0, false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run(&m, w, cases[i].c, cases[i].rho, cases[i].shared, &s);
        check_against_ref(w, cases[i].r, cases[i].rho, cases[i].shared, &s);
        uint32_t changed = 0;   /* the decode wrote the generated positions (argmax may be the mask id) */
        for (uint32_t p = P; p < L; p++)
            changed += s.after[s.n - 1][p] != s.before[0][p];
        assert_true(changed > G / 2);
    }
    dkv_ref_weights_free(w);
}

/* Sparse at rho = 1, per head and shared: the same tokens and confidences (every token kept). */
static void test_sparse_rho1_dense(void **state)
{
    (void)state;
    dkv_model m = model(DKV_DTYPE_BF16);
    dkv_ref_weights *w = weights(&m);
    static seen a, b;
    run(&m, w, DKV_CACHE_SPARSE, 1.0, false, &a);
    run(&m, w, DKV_CACHE_SPARSE, 1.0, true, &b);
    assert_memory_equal(a.after, b.after, sizeof a.after);
    assert_memory_equal(a.conf, b.conf, sizeof a.conf);
    dkv_ref_weights_free(w);
}

/* KV dtypes are applied: bf16 and fp8 close to fp32, fp8 further than bf16, and not identical. */
static void test_kv_dtypes(void **state)
{
    (void)state;
    static seen s32, s16, s8;
    dkv_model m32 = model(DKV_DTYPE_FP32), m16 = model(DKV_DTYPE_BF16), m8 = model(DKV_DTYPE_FP8);
    dkv_ref_weights *w = weights(&m32);
    run(&m32, w, DKV_CACHE_DUAL, 0.5, false, &s32);
    w->m.kv_dtype = DKV_DTYPE_BF16;
    run(&m16, w, DKV_CACHE_DUAL, 0.5, false, &s16);
    w->m.kv_dtype = DKV_DTYPE_FP8;
    run(&m8, w, DKV_CACHE_DUAL, 0.5, false, &s8);
    double d16 = 0, d8 = 0;
    for (uint32_t k = 0; k < s32.n; k++)
        for (uint32_t i = 0; i < BL; i++)
            if (memcmp(s32.before[k], s16.before[k], sizeof s32.before[k]) == 0 &&
                memcmp(s32.before[k], s8.before[k], sizeof s32.before[k]) == 0) {
                d16 += fabsf(s32.conf[k][i] - s16.conf[k][i]);
                d8 += fabsf(s32.conf[k][i] - s8.conf[k][i]);
            }
    assert_true(d8 > 0);
    assert_true(d16 < d8);
    assert_true(d8 / (s32.n * BL) < 0.05);
    dkv_ref_weights_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),          cmocka_unit_test(test_lowrank),
        cmocka_unit_test(test_modes_match_ref),  cmocka_unit_test(test_sparse_rho1_dense),
        cmocka_unit_test(test_kv_dtypes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
