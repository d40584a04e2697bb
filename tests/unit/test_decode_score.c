/* test_decode_score.c - teacher-forced held-out scoring (decode/score.h): the row statistics, the
 * positions a block commits, the bits and accuracy they score, the totals, and the errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode/score.h"

enum { V = 4, MASK = 3 };

/* a row whose softmax is exp(z) / 8 for weights 1, 2, 1, 4: p = 1/8, 2/8, 1/8, 4/8 */
static void row_1214(float *z)
{
    z[0] = 0.0f, z[1] = logf(2.0f), z[2] = 0.0f, z[3] = logf(4.0f);
}

static void test_row_statistics(void **state)
{
    (void)state;
    float z[V], conf, lse0;
    uint32_t am;
    row_1214(z);
    dkv_score_row(z, V, &am, &conf, &lse0);
    assert_int_equal(am, 3);
    assert_true(fabsf(conf - 0.5f) < 1e-6f);
    assert_true(fabsf(lse0 - logf(2.0f)) < 1e-6f);   /* sum exp(z - z[3]) = 8 / 4 */
    float t[5] = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};     /* a tie: the lowest index */
    dkv_score_row(t, 5, &am, NULL, NULL);
    assert_int_equal(am, 1);
    /* fresh random rows of the tiny model's vocabulary: ln softmax against a direct double sum */
    srand(12345);
    for (int k = 0; k < 20; k++) {
        float r[264];
        for (int v = 0; v < 264; v++)
            r[v] = 20.0f * ((float)rand() / (float)RAND_MAX) - 10.0f;
        dkv_score_row(r, 264, &am, &conf, &lse0);
        double s = 0;
        for (int v = 0; v < 264; v++)
            s += exp((double)r[v]);
        for (int v = 0; v < 264; v += 37) {
            double want = (double)r[v] - log(s), got = (double)r[v] - r[am] - lse0;
            assert_true(fabs(want - got) < 1e-5);
        }
        assert_true(fabs(conf - exp((double)r[am]) / s) < 1e-6);
    }
}

static void test_block_commits_most_confident_and_scores(void **state)
{
    (void)state;
    enum { B = 4 };
    float lg[B * V];
    for (int i = 0; i < B; i++)
        row_1214(lg + i * V);
    lg[2 * V + 3] = logf(12.0f);   /* row 2: p = 1, 2, 1, 12 of 16: conf 0.75, the most confident */
    uint32_t tok[B] = {MASK, MASK, MASK, MASK}, tgt[B] = {1, 0, 1, 1}, n;
    dkv_score sc = {0};
    dkv_err e = {0};
    /* two commits: row 2 (conf 0.75), then rows 0, 1, 3 tie at 0.5: the lowest, row 0 */
    assert_int_equal(dkv_score_block(lg, NULL, B, V, tok, tgt, MASK, 2, &sc, &n, &e), DKV_OK);
    assert_int_equal(n, 2);
    assert_true(tok[0] == 1 && tok[1] == MASK && tok[2] == 1 && tok[3] == MASK);
    assert_int_equal(sc.n, 2);
    assert_int_equal(sc.correct, 0);                       /* argmax 3 at both, targets 1 */
    assert_true(fabs(sc.nll_bits - (3.0 + 2.0)) < 1e-5);  /* -log2(2/16) - log2(2/8) */
    /* the next step: row 1 (target 0, p 1/8: 3 bits), then row 3 is the last masked one */
    tgt[3] = 3;   /* the argmax; MASK = 3 here, so a target equal to the mask token is an error */
    assert_int_equal(dkv_score_block(lg, NULL, B, V, tok, tgt, MASK, 5, &sc, &n, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "mask token"));
    assert_non_null(strstr(e.msg, "position 3"));
    assert_int_equal(n, 1);                                /* row 1 was committed before it */
    assert_true(tok[1] == 0 && tok[3] == MASK);
    assert_true(fabs(sc.nll_bits - 8.0) < 1e-5 && sc.n == 3);
}

static void test_block_correct_conf_given_and_errors(void **state)
{
    (void)state;
    enum { B = 3, W = 6, M = 5 };
    float lg[B * W];
    for (int i = 0; i < B * W; i++)
        lg[i] = (float)((i * 7) % 5) * 0.3f;   /* argmax 2, 1 and 0 of the rows: never the mask (5) */
    uint32_t am[B], tgt[B], tok[B] = {M, 2, M}, tok2[B] = {M, 2, M}, n, n2;
    float conf[B];
    for (int i = 0; i < B; i++) {
        dkv_score_row(lg + i * W, W, &am[i], &conf[i], NULL);
        tgt[i] = am[i];   /* every target the argmax: all correct */
    }
    dkv_score a = {0}, b = {0};
    dkv_err e = {0};
    assert_int_equal(dkv_score_block(lg, NULL, B, W, tok, tgt, M, 9, &a, &n, &e), DKV_OK);
    assert_int_equal(dkv_score_block(lg, conf, B, W, tok2, tgt, M, 9, &b, &n2, &e), DKV_OK);
    assert_int_equal(n, 2);                  /* only the masked positions: fewer than asked */
    assert_true(n == n2 && memcmp(tok, tok2, sizeof tok) == 0 && a.n == b.n && a.nll_bits == b.nll_bits);
    assert_true(a.correct == 2 && tok[1] == 2 && tok[0] == am[0] && tok[2] == am[2]);
    assert_true(a.nll_bits > 0);
    uint32_t t3[B] = {M, M, M}, bad[B] = {W, W, W};
    assert_int_equal(dkv_score_block(lg, NULL, B, W, t3, bad, M, 1, &a, NULL, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "not below the vocabulary"));
    assert_true(t3[0] == M && t3[1] == M && t3[2] == M);
}

/* A NaN or inf in the row a position is scored from stops the scoring (DKV_ERANGE, naming the
 * position): a NaN (or inf) bits per byte is never accumulated.  Row 0 is the first masked
 * position (picked whatever its confidence); its target 1 holds NaN, +inf (the row's softmax is
 * NaN) or -inf (p(target) = 0: -log2 p = inf). */
static void test_block_nonfinite_row_is_an_error(void **state)
{
    (void)state;
    enum { B = 2 };
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        float lg[B * V];
        row_1214(lg), row_1214(lg + V);
        lg[1] = bad[k];
        uint32_t tok[B] = {MASK, MASK}, tgt[B] = {1, 0}, n = 9;
        dkv_score sc = {0};
        dkv_err e = {0};
        assert_int_equal(dkv_score_block(lg, NULL, B, V, tok, tgt, MASK, 1, &sc, &n, &e), DKV_ERANGE);
        assert_non_null(strstr(e.msg, "block position 0 is not finite"));
        assert_true(sc.n == 0 && sc.nll_bits == 0.0 && n == 0 && tok[0] == MASK && tok[1] == MASK);
    }
}

static void test_totals(void **state)
{
    (void)state;
    dkv_score s[3] = {{4, 1, 6.0}, {0, 0, 0.0}, {4, 3, 2.0}};
    dkv_score t = dkv_score_total(s, 3);
    assert_true(t.n == 8 && t.correct == 4 && t.nll_bits == 8.0);
    assert_true(dkv_score_bits_per_byte(&t) == 1.0 && dkv_score_accuracy(&t) == 0.5);
    assert_true(isnan(dkv_score_bits_per_byte(&s[1])) && isnan(dkv_score_accuracy(&s[1])));
    dkv_score_add(&t, NULL);
    assert_int_equal(t.n, 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_statistics),
        cmocka_unit_test(test_block_commits_most_confident_and_scores),
        cmocka_unit_test(test_block_correct_conf_given_and_errors),
        cmocka_unit_test(test_block_nonfinite_row_is_an_error),
        cmocka_unit_test(test_totals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
