/* test_ref_step.c - the reference forward and the cache modes: invariants that must hold exactly
 * (up to fp32 rounding) and the token counts of DESIGN.md's table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"
#include "util/rng.h"

enum { L = 16, S = 8, B = 4, C = 32, V = 50 };

static dkv_model tiny(uint32_t n_heads, uint32_t n_kv_heads)
{
    dkv_model m = {.n_layers = 2, .hidden = C, .ffn = 48, .n_heads = n_heads, .n_kv_heads = n_kv_heads,
                   .head_dim = 8, .vocab = V, .mask_id = V - 1, .max_len = 64, .rope_theta = 10000.0};
    snprintf(m.name, sizeof m.name, "tiny-%u-%u", n_heads, n_kv_heads);
    return m;
}

static dkv_ref_weights *make(const dkv_model *m, uint64_t seed)
{
    dkv_ref_weights *w = NULL;
    dkv_err e = {0};
    assert_int_equal(dkv_ref_weights_new(m, 1e-5f, &w, &e), DKV_OK);
    dkv_ref_weights_randomize(w, seed);
    return w;
}

static void canvas(uint32_t *tok, uint64_t seed)
{
    dkv_rng r;
    dkv_rng_seed(&r, seed);
    for (int i = 0; i < L; i++)
        tok[i] = i >= S ? V - 1 : (uint32_t)dkv_rng_below(&r, V - 1);   /* generation = [MASK] */
    tok[S + 1] = 3;   /* one already-decoded token inside the block */
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m))
            m = isnan(d) ? INFINITY : d;
    }
    return m;
}

/* Runs one step with block logits out; returns its counts in *o. */
static void step(const dkv_ref_weights *w, dkv_ref_kv *kv, dkv_cache_mode mode, uint32_t stp, double rho,
                 bool shared, const uint32_t *tok, float *logits, dkv_ref_step_out *o)
{
    dkv_ref_step_args a = {.mode = mode, .canvas_len = L, .block_start = S, .block_len = B, .step = stp,
                           .retention = rho, .shared_set = shared, .logit_chunk = 3};
    memset(o, 0, sizeof *o);
    o->block_logits = logits;
    dkv_err e = {0};
    dkv_status st = dkv_ref_step(w, kv, &a, tok, o, &e);
    if (st != DKV_OK)
        fail_msg("step %s/%u: %s", dkv_cache_mode_name(mode), stp, e.msg);
}

static void full_block_logits(const dkv_ref_weights *w, const uint32_t *tok, float *logits)
{
    float hidden[L * C];
    assert_int_equal(dkv_ref_forward(w, tok, L, hidden, NULL), DKV_OK);
    dkv_ref_matmul(logits, hidden + S * C, w->lm_head, NULL, B, C, V);
}

static void test_weights_seeded_and_walk(void **state)
{
    (void)state;
    dkv_model m = tiny(4, 2);
    dkv_ref_weights *a = make(&m, 1), *b = make(&m, 1), *c = make(&m, 2);
    assert_int_equal(a->n_floats, b->n_floats);
    assert_memory_equal(a->mem, b->mem, a->n_floats * sizeof(float));
    assert_memory_not_equal(a->mem, c->mem, a->n_floats * sizeof(float));
    /* norms near 1, linear weights with variance ~1/fan_in, no zeros */
    double s2 = 0;
    for (int i = 0; i < 48 * C; i++)
        s2 += (double)a->layers[1].w_gate[i] * a->layers[1].w_gate[i];
    assert_true(fabs(s2 / (48 * C) - 1.0 / C) < 0.3 / C);
    assert_true(fabs(a->ln_f[0] - 1.0f) < 0.5f && a->ln_f[0] != 1.0f);
    assert_true(a->lm_head != a->wte);
    dkv_ref_weights_free(a);
    dkv_ref_weights_free(b);
    dkv_ref_weights_free(c);
    dkv_ref_weights_free(NULL);
    /* bad shapes are refused with the field named */
    dkv_model bad = tiny(4, 3);
    dkv_ref_weights *w = NULL;
    dkv_err e = {0};
    assert_int_equal(dkv_ref_weights_new(&bad, 1e-5f, &w, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "n_kv_heads"));
    assert_null(w);
}

static void test_tied_and_bias_model_runs(void **state)
{
    (void)state;
    dkv_model m = tiny(4, 1);
    m.tied_embeddings = true;
    m.qkv_bias = true;
    dkv_ref_weights *w = make(&m, 9);
    assert_ptr_equal(w->lm_head, w->wte);
    assert_non_null(w->layers[0].bq);
    uint32_t tok[L];
    canvas(tok, 4);
    float hidden[L * C];
    assert_int_equal(dkv_ref_forward(w, tok, L, hidden, NULL), DKV_OK);
    for (int i = 0; i < L * C; i++)
        assert_true(isfinite(hidden[i]));
    /* a token outside the vocabulary is named */
    tok[5] = V;
    dkv_err e = {0};
    assert_int_equal(dkv_ref_forward(w, tok, L, hidden, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "position 5"));
    dkv_ref_weights_free(w);
}

static void test_none_is_full_forward(void **state)
{
    (void)state;
    dkv_model m = tiny(4, 2);
    dkv_ref_weights *w = make(&m, 3);
    uint32_t tok[L];
    canvas(tok, 1);
    float want[B * V], got[B * V];
    full_block_logits(w, tok, want);
    dkv_ref_step_out o;
    step(w, NULL, DKV_CACHE_NONE, 5, 0, false, tok, got, &o);
    assert_memory_equal(want, got, sizeof want);
    assert_int_equal(o.phase, DKV_REF_PHASE_REFRESH);
    assert_int_equal(o.q_tokens, L);
    assert_int_equal(o.kv_tokens, L);
    assert_int_equal(o.kv_write_tokens, 0);
    dkv_ref_weights_free(w);
}

static void test_dual_reuse_equals_full_forward(void **state)
{
    (void)state;
    dkv_model m = tiny(4, 2);
    dkv_ref_weights *w = make(&m, 3);
    dkv_ref_kv *kv = NULL;
    assert_int_equal(dkv_ref_kv_new(&m, L, &kv, NULL), DKV_OK);
    uint32_t tok[L];
    canvas(tok, 2);
    float full[B * V], r0[B * V], r1[B * V];
    full_block_logits(w, tok, full);
    dkv_ref_step_out o;
    step(w, kv, DKV_CACHE_DUAL, 0, 0, false, tok, r0, &o);
    assert_int_equal(o.phase, DKV_REF_PHASE_REFRESH);
    assert_int_equal(o.kv_write_tokens, L);
    assert_int_equal(dkv_ref_kv_count(kv, 1, 1), L);
    assert_memory_equal(full, r0, sizeof full);
    step(w, kv, DKV_CACHE_DUAL, 1, 0, false, tok, r1, &o);
    assert_int_equal(o.phase, DKV_REF_PHASE_REUSE);
    assert_int_equal(o.q_tokens, B);
    assert_int_equal(o.kv_tokens, L);
    assert_int_equal(o.kv_write_tokens, B);
    /* same keys in the same order: the Reuse rows equal the full forward's block rows */
    assert_memory_equal(full, r1, sizeof full);   /* bit for bit */
    /* after a token changes in the block, Reuse sees it (rows differ) and still runs */
    tok[S] = 7;
    step(w, kv, DKV_CACHE_DUAL, 2, 0, false, tok, r1, &o);
    assert_true(max_abs_diff(full, r1, B * V) > 1e-3);
    dkv_ref_kv_free(kv);
    dkv_ref_weights_free(w);
}

static void test_prefix_reuse_equals_full_forward(void **state)
{
    (void)state;
    dkv_model m = tiny(4, 4);
    dkv_ref_weights *w = make(&m, 5);
    dkv_ref_kv *kv = NULL;
    assert_int_equal(dkv_ref_kv_new(&m, L, &kv, NULL), DKV_OK);
    uint32_t tok[L];
    canvas(tok, 3);
    float full[B * V], r[B * V];
    full_block_logits(w, tok, full);
    dkv_ref_step_out o;
    step(w, kv, DKV_CACHE_PREFIX, 0, 0, false, tok, r, &o);
    assert_int_equal(o.kv_write_tokens, S);
    assert_int_equal(dkv_ref_kv_count(kv, 0, 3), S);
    assert_int_equal(dkv_ref_kv_positions(kv, 0, 3)[S - 1], S - 1);
    step(w, kv, DKV_CACHE_PREFIX, 1, 0, false, tok, r, &o);
    assert_int_equal(o.phase, DKV_REF_PHASE_REUSE);
    assert_int_equal(o.q_tokens, L - S);
    assert_int_equal(o.kv_tokens, L);
    assert_int_equal(o.kv_write_tokens, 0);
    assert_memory_equal(full, r, sizeof full);   /* bit for bit */
    dkv_ref_kv_free(kv);
    dkv_ref_weights_free(w);
}

static void test_sparse_full_retention_equals_dense(void **state)
{
    (void)state;
    dkv_model m = tiny(4, 2);
    dkv_ref_weights *w = make(&m, 7);
    dkv_ref_kv *kv = NULL;
    assert_int_equal(dkv_ref_kv_new(&m, L, &kv, NULL), DKV_OK);
    uint32_t tok[L];
    canvas(tok, 4);
    float full[B * V], r[B * V];
    full_block_logits(w, tok, full);
    for (int shared = 0; shared < 2; shared++) {
        dkv_ref_step_out o;
        step(w, kv, DKV_CACHE_SPARSE, 0, 1.0, shared, tok, r, &o);
        assert_int_equal(o.kv_write_tokens, 0);
        assert_int_equal(o.phase, DKV_REF_PHASE_REFRESH);
        step(w, kv, DKV_CACHE_SPARSE, 1, 1.0, shared, tok, r, &o);
        assert_int_equal(o.phase, DKV_REF_PHASE_REFRESH);
        assert_int_equal(o.kv_write_tokens, L - B);
        step(w, kv, DKV_CACHE_SPARSE, 2, 1.0, shared, tok, r, &o);
        assert_int_equal(o.phase, DKV_REF_PHASE_REUSE);
        assert_int_equal(o.q_tokens, B);
        assert_int_equal(o.kv_tokens, L - B + B);
        /* keys in another order (kept rows first, block last): equal up to rounding */
        assert_true(max_abs_diff(full, r, B * V) <= 1e-4);
    }
    dkv_ref_kv_free(kv);
    dkv_ref_weights_free(w);
}

static void test_sparse_selection_per_head_and_shared(void **state)
{
    (void)state;
    dkv_model m = tiny(4, 2);
    dkv_ref_weights *w = make(&m, 8);
    dkv_ref_kv *kv = NULL;
    assert_int_equal(dkv_ref_kv_new(&m, L, &kv, NULL), DKV_OK);
    uint32_t tok[L];
    canvas(tok, 6);
    float full[B * V], r[B * V];
    full_block_logits(w, tok, full);
    const uint32_t k = 6;   /* ceil(0.5 * (16 - 4)) */
    int heads_differ = 0;
    for (int shared = 0; shared < 2; shared++) {
        dkv_ref_step_out o;
        step(w, kv, DKV_CACHE_SPARSE, 0, 0.5, shared, tok, r, &o);
        step(w, kv, DKV_CACHE_SPARSE, 1, 0.5, shared, tok, r, &o);
        assert_int_equal(o.kv_write_tokens, k);
        for (uint32_t l = 0; l < m.n_layers; l++) {
            for (uint32_t g = 0; g < m.n_kv_heads; g++) {
                assert_int_equal(dkv_ref_kv_count(kv, l, g), k);
                const uint32_t *p = dkv_ref_kv_positions(kv, l, g);
                for (uint32_t i = 0; i < k; i++) {
                    assert_true(p[i] < S || p[i] >= S + B);   /* never the block's own tokens */
                    if (i)
                        assert_true(p[i] > p[i - 1]);
                }
            }
            int same = memcmp(dkv_ref_kv_positions(kv, l, 0), dkv_ref_kv_positions(kv, l, 1), k * sizeof(uint32_t)) == 0;
            if (shared)
                assert_true(same);
            else
                heads_differ += !same;
        }
        step(w, kv, DKV_CACHE_SPARSE, 2, 0.5, shared, tok, r, &o);
        assert_int_equal(o.kv_tokens, k + B);
        double d = max_abs_diff(full, r, B * V);
        assert_true(d > 0 && isfinite(d));   /* an approximation, not the dense answer */
    }
    assert_true(heads_differ > 0);   /* with random weights, heads keep different tokens */
    dkv_ref_kv_free(kv);
    dkv_ref_weights_free(w);
}

/* Selection replay (keep_pos): the own sets replayed change nothing and differ nowhere; another
 * set is kept (the cache holds it), reported as differing with a negative margin, and changes
 * the Reuse logits; a position inside the block is an error. */
static void test_sparse_keep_pos_replay(void **state)
{
    (void)state;
    dkv_model m = tiny(4, 2);
    dkv_ref_weights *w = make(&m, 8);
    dkv_ref_kv *kv = NULL;
    assert_int_equal(dkv_ref_kv_new(&m, L, &kv, NULL), DKV_OK);
    uint32_t tok[L], own[2 * 2 * 6], other[2 * 2 * 6];
    canvas(tok, 6);
    const uint32_t k = 6, n_sets = 2;
    float r0[B * V], r1[B * V];
    dkv_ref_step_out o;
    step(w, kv, DKV_CACHE_SPARSE, 1, 0.5, false, tok, r0, &o);
    for (uint32_t l = 0; l < m.n_layers; l++)
        for (uint32_t g = 0; g < n_sets; g++) {
            memcpy(own + (l * n_sets + g) * k, dkv_ref_kv_positions(kv, l, g), k * sizeof(uint32_t));
            for (uint32_t i = 0; i < k; i++)   /* the first k candidates: 0..5 */
                other[(l * n_sets + g) * k + i] = i;
        }
    step(w, kv, DKV_CACHE_SPARSE, 2, 0.5, false, tok, r0, &o);
    for (int v = 0; v < 2; v++) {
        const uint32_t *kp = v ? other : own;
        dkv_ref_step_args a = {.mode = DKV_CACHE_SPARSE, .canvas_len = L, .block_start = S, .block_len = B, .step = 1,
                               .retention = 0.5, .keep_pos = kp};
        uint8_t d[4];
        float mg[4], mag[4];
        dkv_ref_step_out so = {.sel_differs = d, .sel_margin = mg, .sel_mag = mag};
        assert_int_equal(dkv_ref_step(w, kv, &a, tok, &so, NULL), DKV_OK);
        int nd = 0;
        for (int i = 0; i < 4; i++) {
            nd += d[i];
            assert_true(d[i] ? mg[i] <= 0 : mg[i] >= 0);
            assert_true(mag[i] > 0);
        }
        assert_true(v ? nd > 0 : nd == 0);
        for (uint32_t l = 0; l < m.n_layers; l++)
            for (uint32_t g = 0; g < n_sets; g++)
                assert_memory_equal(dkv_ref_kv_positions(kv, l, g), kp + (l * n_sets + g) * k, k * sizeof(uint32_t));
        step(w, kv, DKV_CACHE_SPARSE, 2, 0.5, false, tok, r1, &o);
        if (v)
            assert_true(max_abs_diff(r0, r1, B * V) > 0);
        else
            assert_true(max_abs_diff(r0, r1, B * V) == 0);
    }
    other[3] = S;   /* inside the block */
    dkv_ref_step_args a = {.mode = DKV_CACHE_SPARSE, .canvas_len = L, .block_start = S, .block_len = B, .step = 1,
                           .retention = 0.5, .keep_pos = other};
    dkv_ref_step_out so = {0};
    dkv_err e = {0};
    assert_int_equal(dkv_ref_step(w, kv, &a, tok, &so, &e), DKV_EINVAL);
    dkv_ref_kv_free(kv);
    dkv_ref_weights_free(w);
}

/* GQA with n_kv_heads < n_heads equals MHA whose K/V projections repeat each KV head. */
static void test_gqa_equals_mha_with_repeated_heads(void **state)
{
    (void)state;
    dkv_model mg = tiny(4, 2), mm = tiny(4, 4);
    dkv_ref_weights *g = make(&mg, 12), *h = make(&mm, 99);
    const uint32_t D = 8;
    memcpy(h->wte, g->wte, (size_t)V * C * sizeof(float));
    memcpy(h->ln_f, g->ln_f, C * sizeof(float));
    memcpy(h->lm_head, g->lm_head, (size_t)V * C * sizeof(float));
    for (uint32_t l = 0; l < 2; l++) {
        dkv_ref_layer *a = &g->layers[l], *b = &h->layers[l];
        memcpy(b->attn_norm, a->attn_norm, C * sizeof(float));
        memcpy(b->ffn_norm, a->ffn_norm, C * sizeof(float));
        memcpy(b->wq, a->wq, 4 * D * C * sizeof(float));
        memcpy(b->wo, a->wo, C * 4 * D * sizeof(float));
        memcpy(b->w_gate, a->w_gate, 48 * C * sizeof(float));
        memcpy(b->w_up, a->w_up, 48 * C * sizeof(float));
        memcpy(b->w_down, a->w_down, C * 48 * sizeof(float));
        for (uint32_t hd = 0; hd < 4; hd++) {
            memcpy(b->wk + hd * D * C, a->wk + (hd / 2) * D * C, D * C * sizeof(float));
            memcpy(b->wv + hd * D * C, a->wv + (hd / 2) * D * C, D * C * sizeof(float));
        }
    }
    uint32_t tok[L];
    canvas(tok, 10);
    float hg[L * C], hm[L * C];
    assert_int_equal(dkv_ref_forward(g, tok, L, hg, NULL), DKV_OK);
    assert_int_equal(dkv_ref_forward(h, tok, L, hm, NULL), DKV_OK);
    assert_true(max_abs_diff(hg, hm, L * C) <= 1e-6);
    dkv_ref_weights_free(g);
    dkv_ref_weights_free(h);
}

static void test_reuse_without_refresh_is_estate(void **state)
{
    (void)state;
    dkv_model m = tiny(4, 2);
    dkv_ref_weights *w = make(&m, 3);
    dkv_ref_kv *kv = NULL;
    assert_int_equal(dkv_ref_kv_new(&m, L, &kv, NULL), DKV_OK);
    uint32_t tok[L];
    canvas(tok, 2);
    dkv_ref_step_args a = {.mode = DKV_CACHE_DUAL, .canvas_len = L, .block_start = S, .block_len = B, .step = 1};
    dkv_ref_step_out o = {0};
    dkv_err e = {0};
    assert_int_equal(dkv_ref_step(w, kv, &a, tok, &o, &e), DKV_ESTATE);
    assert_non_null(strstr(e.msg, "dual Reuse"));
    a.block_len = L;   /* block past the canvas */
    assert_int_equal(dkv_ref_step(w, kv, &a, tok, &o, &e), DKV_EINVAL);
    a.block_len = B;
    a.mode = DKV_CACHE_SPARSE;
    a.retention = 1.5;
    assert_int_equal(dkv_ref_step(w, kv, &a, tok, &o, &e), DKV_ERANGE);
    a.mode = DKV_CACHE_PREFIX;
    assert_int_equal(dkv_ref_step(w, NULL, &a, tok, &o, &e), DKV_EINVAL);
    dkv_ref_kv *small = NULL;
    assert_int_equal(dkv_ref_kv_new(&m, L - 1, &small, NULL), DKV_OK);
    assert_int_equal(dkv_ref_step(w, small, &a, tok, &o, &e), DKV_EINVAL);
    dkv_ref_kv_free(small);
    dkv_ref_kv_free(kv);
    dkv_ref_kv_free(NULL);
    dkv_ref_weights_free(w);
}

static void test_step_argmax_matches_logits(void **state)
{
    (void)state;
    dkv_model m = tiny(4, 2);
    dkv_ref_weights *w = make(&m, 3);
    uint32_t tok[L], am[B];
    float conf[B], logits[B * V];
    canvas(tok, 2);
    dkv_ref_step_args a = {.mode = DKV_CACHE_NONE, .canvas_len = L, .block_start = S, .block_len = B,
                           .logit_chunk = 3};
    dkv_ref_step_out o = {.block_logits = logits, .argmax = am, .conf = conf};
    assert_int_equal(dkv_ref_step(w, NULL, &a, tok, &o, NULL), DKV_OK);
    for (int r = 0; r < B; r++) {
        uint32_t best = 0;
        for (uint32_t i = 1; i < V; i++)
            if (logits[r * V + i] > logits[r * V + best])
                best = i;
        assert_int_equal(am[r], best);
        assert_true(conf[r] > 1.0f / V && conf[r] < 1.0f);
    }
    dkv_ref_weights_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weights_seeded_and_walk),
        cmocka_unit_test(test_tied_and_bias_model_runs),
        cmocka_unit_test(test_none_is_full_forward),
        cmocka_unit_test(test_dual_reuse_equals_full_forward),
        cmocka_unit_test(test_prefix_reuse_equals_full_forward),
        cmocka_unit_test(test_sparse_full_retention_equals_dense),
        cmocka_unit_test(test_sparse_selection_per_head_and_shared),
        cmocka_unit_test(test_sparse_keep_pos_replay),
        cmocka_unit_test(test_gqa_equals_mha_with_repeated_heads),
        cmocka_unit_test(test_reuse_without_refresh_is_estate),
        cmocka_unit_test(test_step_argmax_matches_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
