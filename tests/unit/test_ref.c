/* test_ref.c - the reference operations against hand-computed tiny cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "ref/ref.h"
#include "util/rng.h"

#define NEAR(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) <= (tol))

static void test_embedding_rows(void **state)
{
    (void)state;
    const float wte[3 * 2] = {1, 2, 3, 4, 5, 6};
    const uint32_t tok[3] = {2, 0, 2};
    float out[6];
    dkv_ref_embedding(out, tok, wte, 3, 2);
    const float want[6] = {5, 6, 1, 2, 5, 6};
    assert_memory_equal(out, want, sizeof want);
}

static void test_rmsnorm_hand(void **state)
{
    (void)state;
    const float in[2 * 2] = {3, 4, -1, 1}, w[2] = {1, 2};
    float out[4];
    dkv_ref_rmsnorm(out, in, w, 2, 2, 0.0f);
    /* row 0: rms = sqrt(12.5); row 1: rms = 1 */
    NEAR(out[0], 3 / sqrt(12.5), 1e-6);
    NEAR(out[1], 2 * 4 / sqrt(12.5), 1e-6);
    NEAR(out[2], -1, 1e-6);
    NEAR(out[3], 2, 1e-6);
    dkv_ref_rmsnorm(out, in, w, 1, 2, 0.5f);   /* eps enters under the root */
    NEAR(out[0], 3 / sqrt(13.0), 1e-6);
}

static void test_matmul_hand(void **state)
{
    (void)state;
    const float in[2 * 2] = {1, 2, -1, 3};
    const float w[3 * 2] = {1, 0, 0, 1, 1, 1};   /* (OC=3, C=2) */
    const float b[3] = {0.5f, 0, 0};
    float out[6];
    dkv_ref_matmul(out, in, w, b, 2, 2, 3);
    const float want[6] = {1.5f, 2, 3, -0.5f, 3, 2};
    assert_memory_equal(out, want, sizeof want);
    dkv_ref_matmul(out, in, w, NULL, 1, 2, 3);
    NEAR(out[0], 1, 0);
}

static void test_rope_rotate_half(void **state)
{
    (void)state;
    /* D = 4, theta = 10000: pair (x0, x2) turns by pos * 1, pair (x1, x3) by pos * 0.01. */
    float x[2 * 4] = {1, 2, 3, 4, 1, 2, 3, 4};
    const uint32_t pos[2] = {0, 1};
    dkv_ref_rope(x, pos, 2, 1, 4, 10000.0);
    NEAR(x[0], 1, 1e-7);   /* position 0 is the identity */
    NEAR(x[3], 4, 1e-7);
    NEAR(x[4], 1 * cos(1.0) - 3 * sin(1.0), 1e-6);
    NEAR(x[6], 3 * cos(1.0) + 1 * sin(1.0), 1e-6);
    NEAR(x[5], 2 * cos(0.01) - 4 * sin(0.01), 1e-6);
    NEAR(x[7], 4 * cos(0.01) + 2 * sin(0.01), 1e-6);
    /* two heads rotate the same way; pos = NULL means 0..T-1 */
    float y[1 * 8] = {1, 2, 3, 4, 1, 2, 3, 4};
    dkv_ref_rope(y, NULL, 1, 2, 4, 10000.0);
    NEAR(y[0], 1, 1e-7);
    NEAR(y[4], 1, 1e-7);
}

static void test_attention_hand(void **state)
{
    (void)state;
    /* D = 2: scores ln 3 and 0 -> p = 3/4, 1/4. */
    const float q[2] = {(float)(sqrt(2.0) * log(3.0)), 0};
    const float k[2 * 2] = {1, 0, 0, 0};
    const float v[2 * 2] = {4, 8, 0, -4};
    float out[2], score[2];
    dkv_ref_attention(out, q, k, v, 1, 2, 1, 1, 2);
    NEAR(out[0], 3, 1e-6);
    NEAR(out[1], 5, 1e-6);
    dkv_ref_attention_scores(score, q, k, 1, 2, 1, 1, 2);
    NEAR(score[0], 0.75, 1e-6);
    NEAR(score[1], 0.25, 1e-6);
}

static void randn(float *x, size_t n, dkv_rng *r)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)dkv_rng_normal(r);
}

static void test_attention_gqa_is_mha_with_repeated_kv(void **state)
{
    (void)state;
    enum { TQ = 3, TK = 5, H = 4, HKV = 2, D = 8 };
    dkv_rng r;
    dkv_rng_seed(&r, 11);
    float q[TQ * H * D], k[TK * HKV * D], v[TK * HKV * D], k4[TK * H * D], v4[TK * H * D];
    randn(q, TQ * H * D, &r);
    randn(k, TK * HKV * D, &r);
    randn(v, TK * HKV * D, &r);
    for (int t = 0; t < TK; t++)   /* repeat_interleave: head h reads KV head h / 2 */
        for (int h = 0; h < H; h++) {
            memcpy(k4 + (t * H + h) * D, k + (t * HKV + h / 2) * D, D * sizeof(float));
            memcpy(v4 + (t * H + h) * D, v + (t * HKV + h / 2) * D, D * sizeof(float));
        }
    float o1[TQ * H * D], o2[TQ * H * D];
    dkv_ref_attention(o1, q, k, v, TQ, TK, H, HKV, D);
    dkv_ref_attention(o2, q, k4, v4, TQ, TK, H, H, D);
    assert_memory_equal(o1, o2, sizeof o1);
    float s1[HKV * TK], s2[H * TK];
    dkv_ref_attention_scores(s1, q, k, TQ, TK, H, HKV, D);
    dkv_ref_attention_scores(s2, q, k4, TQ, TK, H, H, D);
    for (int g = 0; g < HKV; g++) {
        double sum = 0;
        for (int j = 0; j < TK; j++) {
            NEAR(s1[g * TK + j], s2[(2 * g) * TK + j] + s2[(2 * g + 1) * TK + j], 1e-5);
            sum += s1[g * TK + j];
        }
        NEAR(sum, TQ * (H / HKV), 1e-4);   /* each query head spreads a mass of 1 */
    }
}

static void test_swiglu_hand(void **state)
{
    (void)state;
    const float g[3] = {0, 1, -2}, u[3] = {2, 3, 1};
    float out[3];
    dkv_ref_swiglu(out, g, u, 1, 3);
    NEAR(out[0], 0, 0);
    NEAR(out[1], 3 / (1 + exp(-1.0)), 1e-6);
    NEAR(out[2], -2 / (1 + exp(2.0)), 1e-6);
    float x[2] = {1, 2};
    dkv_ref_residual(x, u, 2);
    NEAR(x[0], 3, 0);
    NEAR(x[1], 5, 0);
}

static void test_lm_head_argmax_hand_and_chunked(void **state)
{
    (void)state;
    const float in[2 * 2] = {1, 0, 0, 1};
    const float w[3 * 2] = {2, 0, 0, 1, 1, 1};
    uint32_t am[2];
    float conf[2];
    assert_int_equal(dkv_ref_lm_head_argmax(am, conf, in, w, 2, 2, 3, 1, NULL), DKV_OK);
    /* row 0 logits (2, 0, 1); row 1 logits (0, 1, 1): a tie goes to the lower index */
    assert_int_equal(am[0], 0);
    assert_int_equal(am[1], 1);
    double e = exp(1.0);
    NEAR(conf[0], e * e / (e * e + 1 + e), 1e-6);
    NEAR(conf[1], e / (1 + 2 * e), 1e-6);
    /* random: chunks of 1, 3 and all rows agree */
    enum { T = 7, C = 6, V = 40 };
    dkv_rng r;
    dkv_rng_seed(&r, 5);
    float x[T * C], wv[V * C];
    randn(x, T * C, &r);
    randn(wv, V * C, &r);
    uint32_t a0[T], a1[T], a3[T];
    float c0[T], c1[T], c3[T];
    assert_int_equal(dkv_ref_lm_head_argmax(a0, c0, x, wv, T, C, V, 0, NULL), DKV_OK);
    assert_int_equal(dkv_ref_lm_head_argmax(a1, c1, x, wv, T, C, V, 1, NULL), DKV_OK);
    assert_int_equal(dkv_ref_lm_head_argmax(a3, c3, x, wv, T, C, V, 3, NULL), DKV_OK);
    assert_memory_equal(a0, a1, sizeof a0);
    assert_memory_equal(a0, a3, sizeof a0);
    assert_memory_equal(c0, c3, sizeof c0);
    for (int t = 0; t < T; t++)
        assert_true(c0[t] > 1.0f / V && c0[t] <= 1.0f);
}

static void test_topk_and_pack(void **state)
{
    (void)state;
    const float s[5] = {0.1f, 0.5f, 0.5f, 0.9f, 0.2f};
    uint32_t idx[3];
    dkv_ref_topk(idx, s, 5, 3);
    assert_int_equal(idx[0], 1);
    assert_int_equal(idx[1], 2);
    assert_int_equal(idx[2], 3);
    dkv_ref_topk(idx, s, 5, 2);   /* tie between 1 and 2: the lower index wins */
    assert_int_equal(idx[0], 1);
    assert_int_equal(idx[1], 3);
    /* src (T=3, 2 heads, D=2): value = 100*t + 10*head + d */
    float src[3 * 2 * 2], out[2 * 2 * 2];
    for (int t = 0; t < 3; t++)
        for (int h = 0; h < 2; h++)
            for (int d = 0; d < 2; d++)
                src[(t * 2 + h) * 2 + d] = (float)(100 * t + 10 * h + d);
    const uint32_t per_head[4] = {0, 2, 1, 2};
    dkv_ref_pack_heads(out, src, per_head, 3, 2, 2, 2, false);
    const float want[8] = {0, 1, 200, 201, 110, 111, 210, 211};
    assert_memory_equal(out, want, sizeof want);
    const uint32_t shared[2] = {1, 2};
    dkv_ref_pack_heads(out, src, shared, 3, 2, 2, 2, true);
    const float want2[8] = {100, 101, 200, 201, 110, 111, 210, 211};
    assert_memory_equal(out, want2, sizeof want2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedding_rows),
        cmocka_unit_test(test_rmsnorm_hand),
        cmocka_unit_test(test_matmul_hand),
        cmocka_unit_test(test_rope_rotate_half),
        cmocka_unit_test(test_attention_hand),
        cmocka_unit_test(test_attention_gqa_is_mha_with_repeated_kv),
        cmocka_unit_test(test_swiglu_hand),
        cmocka_unit_test(test_lm_head_argmax_hand_and_chunked),
        cmocka_unit_test(test_topk_and_pack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
