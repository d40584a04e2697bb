/* test_decode.c - the decoding model against DESIGN.md's token table, hand-computed for
 * P = 512, G = 256, B = 32 (L = 768, 8 blocks, s_b = 512 + 32 b), and its byte figures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "decode/decode.h"

enum { P = 512, G = 256, B = 32, L = P + G, NB = G / B };

static const dkv_decode_request REQ = {.id = 1, .prompt_tokens = P, .gen_tokens = G};

static dkv_decode_cfg cfg_for(dkv_cache_mode m)
{
    dkv_decode_cfg c;
    dkv_decode_cfg_default(&c);
    c.cache = m;
    return c;
}

static void begin_ok(dkv_decode_state *st, const dkv_decode_request *r, const dkv_decode_cfg *c,
                     const dkv_model *m)
{
    dkv_err err = {0};
    if (dkv_decode_begin(st, r, c, m, &err) != DKV_OK) fail_msg("begin: %s", err.msg);
}

/* Checks one step's counts. */
static void expect(const dkv_decode_step *s, dkv_phase ph, uint32_t q, uint32_t a, uint32_t w)
{
    if (s->phase != ph || s->q_tokens != q || s->a_tokens != a || s->w_tokens != w)
        fail_msg("block %u step %u: got %s q=%u a=%u w=%u, want %s q=%u a=%u w=%u", s->block, s->step,
                 dkv_phase_name(s->phase), s->q_tokens, s->a_tokens, s->w_tokens, dkv_phase_name(ph), q, a, w);
}

static void test_table_none(void **state)
{
    (void)state;
    dkv_decode_cfg c = cfg_for(DKV_CACHE_NONE);
    dkv_decode_state st;
    dkv_decode_step s;
    begin_ok(&st, &REQ, &c, NULL);
    assert_int_equal(dkv_decode_total_steps(&st), NB * B);
    uint32_t n = 0;
    while (dkv_decode_next(&st, &s)) {
        assert_int_equal(s.block, n / B);
        assert_int_equal(s.step, n % B);
        assert_int_equal(s.index, n);
        expect(&s, DKV_PHASE_REFRESH, L, L, 0);
        assert_int_equal(s.resident_tokens, 0);
        assert_int_equal(s.logit_rows, B);
        assert_int_equal(s.block_done, s.step == B - 1);
        assert_int_equal(s.request_done, n == NB * B - 1);
        assert_int_equal(s.weight_bytes + s.flops, 0); /* no model, no bytes */
        n++;
    }
    assert_int_equal(n, 256);
    assert_true(dkv_decode_done(&st));
    assert_false(dkv_decode_next(&st, &s));
    dkv_decode_totals t;
    assert_int_equal(dkv_decode_request_totals(&REQ, &c, NULL, &t, NULL), DKV_OK);
    assert_int_equal(t.steps, 256);
    assert_int_equal(t.refresh_steps, 256);
    assert_int_equal(t.q_tokens, 256ULL * 768);
    assert_int_equal(t.w_tokens, 0);
}

static void test_table_prefix(void **state)
{
    (void)state;
    dkv_decode_cfg c = cfg_for(DKV_CACHE_PREFIX);
    dkv_decode_state st;
    dkv_decode_step s;
    begin_ok(&st, &REQ, &c, NULL);
    while (dkv_decode_next(&st, &s)) {
        uint32_t sb = P + s.block * B;
        assert_int_equal(s.block_start, sb);
        if (s.step == 0) {
            expect(&s, DKV_PHASE_REFRESH, L, L, sb);
            assert_int_equal(s.cached_tokens, 0);
        } else {
            expect(&s, DKV_PHASE_REUSE, L - sb, L, 0);
            assert_int_equal(s.cached_tokens, sb);
        }
        assert_int_equal(s.resident_tokens, sb);
    }
    dkv_decode_totals t;
    assert_int_equal(dkv_decode_request_totals(&REQ, &c, NULL, &t, NULL), DKV_OK);
    /* q = sum_b (768 + 31 (256 - 32 b)) = 6144 + 31 * 1152; w = sum_b s_b = 4096 + 896 */
    assert_int_equal(t.q_tokens, 41856);
    assert_int_equal(t.w_tokens, 4992);
    assert_int_equal(t.refresh_steps, 8);
    assert_int_equal(t.reuse_steps, 248);
    assert_int_equal(t.resident_peak_tokens, 512 + 7 * 32);
}

static void test_table_dual(void **state)
{
    (void)state;
    dkv_decode_cfg c = cfg_for(DKV_CACHE_DUAL);
    dkv_decode_state st;
    dkv_decode_step s;
    begin_ok(&st, &REQ, &c, NULL);
    while (dkv_decode_next(&st, &s)) {
        uint32_t sb = P + s.block * B;
        if (s.step == 0) {
            expect(&s, DKV_PHASE_REFRESH, L, L, L);
            assert_int_equal(s.w_start, 0);
        } else {
            expect(&s, DKV_PHASE_REUSE, B, L, B);
            assert_int_equal(s.w_start, sb);
            assert_int_equal(s.cached_tokens, L - B);
        }
        assert_int_equal(s.resident_tokens, L);
    }
    dkv_decode_totals t;
    assert_int_equal(dkv_decode_request_totals(&REQ, &c, NULL, &t, NULL), DKV_OK);
    assert_int_equal(t.q_tokens, 8 * (768 + 31 * 32));
    assert_int_equal(t.w_tokens, 14080);
    assert_int_equal(t.a_tokens, 256ULL * 768);
    assert_int_equal(t.logit_rows, 256 * 32);
    /* logits 'all': q rows */
    c.logits = DKV_LOGITS_ALL;
    assert_int_equal(dkv_decode_request_totals(&REQ, &c, NULL, &t, NULL), DKV_OK);
    assert_int_equal(t.logit_rows, 14080);
}

static void test_table_sparse(void **state)
{
    (void)state;
    const double rhos[] = {0.5, 0.3};
    const uint32_t ks[] = {368, 221}; /* ceil(0.5 * 736), ceil(0.3 * 736) = ceil(220.8) */
    for (int i = 0; i < 2; i++) {
        dkv_decode_cfg c = cfg_for(DKV_CACHE_SPARSE);
        c.rho = rhos[i];
        dkv_decode_state st;
        dkv_decode_step s;
        begin_ok(&st, &REQ, &c, NULL);
        uint32_t k = ks[i];
        while (dkv_decode_next(&st, &s)) {
            if (s.step == 0) {
                expect(&s, DKV_PHASE_REFRESH, L, L, 0);
                assert_false(s.selects);
                assert_int_equal(s.retained_k, 0);
                assert_int_equal(s.resident_tokens, 0);
            } else if (s.step == 1) {
                expect(&s, DKV_PHASE_REFRESH, L, L, k);
                assert_true(s.selects);
                assert_int_equal(s.retained_k, k);
            } else {
                expect(&s, DKV_PHASE_REUSE, B, k + B, 0);
                assert_int_equal(s.cached_tokens, k);
                assert_int_equal(s.resident_tokens, k);
            }
            if (s.step > 0) assert_true(s.rho == rhos[i]);
            assert_false(s.shared_set);
        }
        dkv_decode_totals t;
        assert_int_equal(dkv_decode_request_totals(&REQ, &c, NULL, &t, NULL), DKV_OK);
        assert_int_equal(t.refresh_steps, 16);
        assert_int_equal(t.reuse_steps, 240);
        assert_int_equal(t.q_tokens, 8 * (2 * 768 + 30 * 32));
        assert_int_equal(t.w_tokens, 8 * k);
        assert_int_equal(t.a_tokens, 8 * (2 * 768 + 30 * (k + 32)));
    }
    /* an exact product does not round up: rho 0.3 of 1000 tokens is 300 */
    dkv_decode_cfg c = cfg_for(DKV_CACHE_SPARSE);
    c.rho = 0.3;
    c.shared_set = true;
    dkv_decode_request r = {.id = 2, .prompt_tokens = 1000, .gen_tokens = 32};
    dkv_decode_state st;
    dkv_decode_step s;
    begin_ok(&st, &r, &c, NULL);
    dkv_decode_next(&st, &s);
    dkv_decode_next(&st, &s);
    assert_int_equal(s.retained_k, 300);
    assert_true(s.shared_set);
}

static double rho_alternating(void *ctx, uint64_t id, uint32_t block, double rho)
{
    int *calls = ctx;
    (*calls)++;
    assert_int_equal(id, 1);
    return block % 2 ? 0.75 : 0.25;
}

static void test_dynamic_retention(void **state)
{
    (void)state;
    int calls = 0;
    dkv_decode_cfg c = cfg_for(DKV_CACHE_SPARSE);
    c.rho_fn = rho_alternating;
    c.rho_ctx = &calls;
    dkv_decode_state st;
    dkv_decode_step s;
    begin_ok(&st, &REQ, &c, NULL);
    while (dkv_decode_next(&st, &s))
        if (s.step >= 1) assert_int_equal(s.retained_k, s.block % 2 ? 552 : 184);
    assert_int_equal(calls, NB);

    /* the setter changes blocks whose selecting step has not run */
    c.rho_fn = NULL;
    begin_ok(&st, &REQ, &c, NULL);
    for (int i = 0; i < 2; i++) dkv_decode_next(&st, &s); /* block 0 selected at 0.5 */
    assert_int_equal(s.retained_k, 368);
    dkv_decode_set_rho(&st, 0.25);
    dkv_decode_next(&st, &s);
    assert_int_equal(s.retained_k, 368);
    while (dkv_decode_next(&st, &s) && s.block == 0) {}
    dkv_decode_next(&st, &s);
    assert_int_equal(s.block, 1);
    assert_int_equal(s.retained_k, 184);
    dkv_decode_set_rho(&st, 7.0); /* clamped to 1 */
    while (dkv_decode_next(&st, &s) && !(s.block == 2 && s.step == 1)) {}
    assert_int_equal(s.retained_k, L - B);
}

static void test_drawn_steps(void **state)
{
    (void)state;
    dkv_decode_cfg c = cfg_for(DKV_CACHE_DUAL);
    c.steps_min = 4;
    c.steps_max = 32;
    c.seed = 99;
    uint32_t lo = 1000, hi = 0;
    for (uint64_t id = 0; id < 1000; id++) {
        dkv_decode_request r = {.id = id, .prompt_tokens = 64, .gen_tokens = 64};
        dkv_decode_state st, st2;
        begin_ok(&st, &r, &c, NULL);
        begin_ok(&st2, &r, &c, NULL);
        uint32_t S = dkv_decode_steps_per_block(&st);
        assert_int_equal(S, dkv_decode_steps_per_block(&st2));
        assert_true(S >= 4 && S <= 32);
        lo = S < lo ? S : lo;
        hi = S > hi ? S : hi;
        if (id < 20) {
            dkv_decode_totals t;
            assert_int_equal(dkv_decode_request_totals(&r, &c, NULL, &t, NULL), DKV_OK);
            assert_int_equal(t.steps, 2 * S);
            assert_int_equal(t.refresh_steps, 2);
        }
    }
    assert_int_equal(lo, 4);
    assert_int_equal(hi, 32);
    /* the request's own count wins; the fixed count applies otherwise */
    dkv_decode_request r = {.id = 5, .prompt_tokens = 64, .gen_tokens = 64, .steps_per_block = 7};
    dkv_decode_state st;
    begin_ok(&st, &r, &c, NULL);
    assert_int_equal(dkv_decode_steps_per_block(&st), 7);
    c.steps_max = 0;
    c.steps_per_block = 12;
    r.steps_per_block = 0;
    begin_ok(&st, &r, &c, NULL);
    assert_int_equal(dkv_decode_total_steps(&st), 24);
    /* one step per block: sparse keeps only the dense step */
    c = cfg_for(DKV_CACHE_SPARSE);
    c.steps_per_block = 1;
    dkv_decode_totals t;
    assert_int_equal(dkv_decode_request_totals(&REQ, &c, NULL, &t, NULL), DKV_OK);
    assert_int_equal(t.steps, NB);
    assert_int_equal(t.w_tokens, 0);
}

static void test_peek(void **state)
{
    (void)state;
    dkv_decode_cfg c = cfg_for(DKV_CACHE_PREFIX);
    dkv_decode_state st;
    dkv_decode_step s;
    dkv_decode_peek pk;
    begin_ok(&st, &REQ, &c, NULL);
    assert_true(dkv_decode_peek_next(&st, &pk));
    assert_int_equal(pk.phase, DKV_PHASE_REFRESH);
    assert_int_equal(pk.budget_tokens, L);
    assert_int_equal(pk.steps_left, 256);
    uint32_t n = 0;
    for (;;) {
        bool more = dkv_decode_peek_next(&st, &pk);
        if (!dkv_decode_next(&st, &s)) {
            assert_false(more);
            break;
        }
        assert_true(more);
        assert_int_equal(pk.phase, s.phase);
        assert_int_equal(pk.q_tokens, s.q_tokens);
        assert_int_equal(pk.budget_tokens, s.phase == DKV_PHASE_REFRESH ? L : B);
        assert_int_equal(pk.steps_left, 256 - n);
        assert_int_equal(pk.block, s.block);
        n++;
    }
    assert_int_equal(dkv_decode_steps_left(&st), 0);
}

static void expect_begin_error(const dkv_decode_request *r, const dkv_decode_cfg *c, const char *needle)
{
    dkv_decode_state st;
    dkv_err err = {0};
    assert_int_not_equal(dkv_decode_begin(&st, r, c, NULL, &err), DKV_OK);
    if (!strstr(err.msg, needle)) fail_msg("message '%s' lacks '%s'", err.msg, needle);
    dkv_decode_step s;
    assert_false(dkv_decode_next(&st, &s));
}

static void test_bad_configs(void **state)
{
    (void)state;
    dkv_decode_cfg c = cfg_for(DKV_CACHE_DUAL);
    c.block_len = 0;
    expect_begin_error(&REQ, &c, "'block_len' must be > 0");
    c = cfg_for(DKV_CACHE_DUAL);
    dkv_decode_request r = {.id = 9, .prompt_tokens = 10, .gen_tokens = 100};
    expect_begin_error(&r, &c, "request 9: gen_tokens (100) is not a multiple of block_len (32)");
    r.gen_tokens = 0;
    expect_begin_error(&r, &c, "'gen_tokens' must be > 0");
    c.steps_min = 9;
    c.steps_max = 4;
    expect_begin_error(&REQ, &c, "'steps_min' (9) exceeds 'steps_max' (4)");
    c = cfg_for(DKV_CACHE_SPARSE);
    c.rho = 0;
    expect_begin_error(&REQ, &c, "'rho' must be in (0, 1]");
    int m, lm;
    dkv_err err = {0};
    assert_int_equal(dkv_names_parse(&dkv_cache_mode_names, "sparse", &m, &err), DKV_OK);
    assert_int_equal(m, DKV_CACHE_SPARSE);
    assert_int_equal(dkv_names_parse(&dkv_cache_mode_names, "dualcache", &m, &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "dualcache"));
    assert_non_null(strstr(err.msg, "none, prefix, dual or sparse"));
    assert_int_equal(dkv_names_parse(&dkv_logit_mode_names, "all", &lm, &err), DKV_OK);
    assert_int_equal(lm, DKV_LOGITS_ALL);
    assert_string_equal(dkv_cache_mode_name(DKV_CACHE_PREFIX), "prefix");
}

/* LLaDA-8B shapes. */
static dkv_model llada(void)
{
    dkv_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "llada-8b");
    m.n_layers = 32;
    m.hidden = 4096;
    m.ffn = 12288;
    m.n_heads = 32;
    m.n_kv_heads = 32;
    m.head_dim = 128;
    m.vocab = 126464;
    m.mask_id = 126336;
    m.max_len = 8192;
    m.rope_theta = 500000;
    m.weight_dtype = m.kv_dtype = m.act_dtype = DKV_DTYPE_BF16;
    return m;
}

static void test_bytes(void **state)
{
    (void)state;
    dkv_model m = llada();
    const uint64_t kvt = 2ULL * 32 * 128 * 2 * 32; /* K+V, 32 heads x 128, bf16, 32 layers */
    assert_int_equal(dkv_model_kv_bytes_per_token(&m), kvt);
    dkv_decode_cfg c = cfg_for(DKV_CACHE_DUAL);
    dkv_decode_state st;
    dkv_decode_step s;
    begin_ok(&st, &REQ, &c, &m);
    dkv_decode_next(&st, &s); /* refresh */
    assert_int_equal(s.kv_read_bytes, 0);
    assert_int_equal(s.kv_write_bytes, 768 * kvt);
    assert_int_equal(s.attn_kv_bytes, 768 * kvt);
    /* peak at q = 768: FFN part 2*q*(d + ffn)*2 bytes beats the attention part 6*q*d*2 */
    assert_int_equal(s.act_peak_bytes, 2ULL * 768 * (4096 + 12288) * 2);
    dkv_decode_next(&st, &s); /* reuse */
    assert_int_equal(s.kv_read_bytes, (768 - 32) * kvt);
    assert_int_equal(s.kv_write_bytes, 32 * kvt);
    assert_int_equal(s.attn_kv_bytes, 768 * kvt);
    assert_int_equal(s.logit_bytes, 32ULL * 126464 * 2);
    assert_int_equal(s.act_peak_bytes, 2ULL * 32 * (4096 + 12288) * 2);
    uint64_t emb = 126464ULL * 4096;
    assert_int_equal(s.weight_bytes, (dkv_model_params(&m) - emb) * 2 + 32ULL * 4096 * 2);
    assert_true(s.flops == dkv_model_forward_flops(&m, 32, 768, 32));
    /* materialised scores: + heads*q*a*2 bytes, now above the FFN part */
    c.materialize_scores = true;
    begin_ok(&st, &REQ, &c, &m);
    dkv_decode_next(&st, &s);
    dkv_decode_next(&st, &s);
    assert_int_equal(s.act_peak_bytes, 6ULL * 32 * 4096 * 2 + 32ULL * 32 * 768 * 2);
    /* sparse selecting step: one fp32 accumulator per KV head and candidate token */
    c = cfg_for(DKV_CACHE_SPARSE);
    m.ffn = 1024; /* make the attention part the larger one */
    begin_ok(&st, &REQ, &c, &m);
    dkv_decode_next(&st, &s);
    uint64_t dense = s.act_peak_bytes;
    assert_int_equal(dense, 6ULL * 768 * 4096 * 2);
    dkv_decode_next(&st, &s);
    assert_int_equal(s.act_peak_bytes, dense + 4ULL * 32 * 736);
    assert_int_equal(s.kv_write_bytes, 368ULL * dkv_model_kv_bytes_per_token(&m));
    /* tied embeddings: whole table once */
    m = llada();
    m.tied_embeddings = true;
    dkv_decode_step_bytes(&m, false, &s);
    assert_int_equal(s.weight_bytes, dkv_model_params(&m) * 2);

    /* totals are the sums over the steps */
    m = llada();
    c = cfg_for(DKV_CACHE_PREFIX);
    dkv_decode_totals t;
    assert_int_equal(dkv_decode_request_totals(&REQ, &c, &m, &t, NULL), DKV_OK);
    assert_int_equal(t.kv_write_bytes, 4992 * kvt);
    uint64_t rd = 0;
    for (uint32_t b = 0; b < NB; b++) rd += 31ULL * (P + b * B);
    assert_int_equal(t.kv_read_bytes, rd * kvt);
    assert_int_equal(t.logit_peak_bytes, 32ULL * 126464 * 2);
    assert_int_equal(t.act_peak_bytes, 2ULL * 768 * (4096 + 12288) * 2);
    double fl = 0;
    for (uint32_t b = 0; b < NB; b++) {
        uint32_t sb = P + b * B;
        fl += dkv_model_forward_flops(&m, L, L, B) + 31 * dkv_model_forward_flops(&m, L - sb, L, B);
    }
    assert_true(fabs(t.flops - fl) / fl < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_none),
        cmocka_unit_test(test_table_prefix),
        cmocka_unit_test(test_table_dual),
        cmocka_unit_test(test_table_sparse),
        cmocka_unit_test(test_dynamic_retention),
        cmocka_unit_test(test_drawn_steps),
        cmocka_unit_test(test_peek),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
