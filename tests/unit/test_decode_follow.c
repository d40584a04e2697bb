/* test_decode_follow.c - trajectory replay (decode/follow.h): commitments applied at their step,
 * every misfit an error; the logit-row statistics of the tie classification. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "decode/follow.h"

enum { P = 4, G = 8, B = 4, MASK = 99, V = 100 };
#define NEVER UINT32_MAX

static void test_apply_commits_this_steps_positions(void **state)
{
    (void)state;
    uint32_t toks[G] = {10, 11, 12, 13, 14, 15, 16, 17}, steps[G] = {3, 2, 2, 3, 5, 6, 5, NEVER};
    dkv_follow f = {toks, steps, G};
    uint32_t blk[B] = {MASK, MASK, MASK, MASK}, n = 0;
    dkv_err e = {0};
    assert_int_equal(dkv_follow_apply(&f, 0, 2, P, G, P, B, blk, MASK, V, 2, &n, &e), DKV_OK);
    assert_int_equal(n, 2);
    assert_true(blk[0] == MASK && blk[1] == 11 && blk[2] == 12 && blk[3] == MASK);
    assert_int_equal(dkv_follow_apply(&f, 0, 3, P, G, P, B, blk, MASK, V, 2, &n, &e), DKV_OK);
    assert_true(blk[0] == 10 && blk[3] == 13);
}

static void test_apply_misfits_are_errors(void **state)
{
    (void)state;
    uint32_t toks[G] = {10, 11, 12, 13, 14, 15, 16, 17}, steps[G] = {3, 2, 2, 3, 2, 6, 5, NEVER};
    dkv_follow f = {toks, steps, G};
    uint32_t blk[B] = {MASK, MASK, MASK, MASK}, n;
    dkv_err e = {0};
    /* step 2 also commits position P + 4, outside the block [P, P + B) */
    assert_int_equal(dkv_follow_apply(&f, 7, 2, P, G, P, B, blk, MASK, V, 3, &n, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "outside the block"));
    steps[4] = 6;
    assert_int_equal(dkv_follow_apply(&f, 7, 2, P, G, P, B, blk, MASK, V, 3, &n, &e), DKV_EINVAL); /* count */
    assert_non_null(strstr(e.msg, "schedules differ"));
    blk[1] = 5;   /* already unmasked */
    assert_int_equal(dkv_follow_apply(&f, 7, 2, P, G, P, B, blk, MASK, V, 2, &n, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "not masked"));
    blk[1] = MASK, toks[2] = V;   /* token out of the vocabulary */
    assert_int_equal(dkv_follow_apply(&f, 7, 2, P, G, P, B, blk, MASK, V, 2, &n, &e), DKV_EINVAL);
    toks[2] = 12;
    assert_int_equal(dkv_follow_apply(&f, 7, 2, P, G + 1, P, B, blk, MASK, V, 2, &n, &e), DKV_EINVAL); /* canvas */
}

static void test_top2(void **state)
{
    (void)state;
    float z[5] = {1.0f, -7.5f, 3.0f, 3.0f, 2.5f}, margin, absmax;
    uint32_t a;
    dkv_logit_top2(z, 5, &a, &margin, &absmax);
    assert_int_equal(a, 2);              /* the lowest index of the maximum */
    assert_true(margin == 0.0f);         /* an exact tie */
    assert_true(absmax == 7.5f);
    z[3] = 2.0f;
    dkv_logit_top2(z, 5, &a, &margin, NULL);
    assert_true(a == 2 && fabsf(margin - 0.5f) < 1e-7f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_commits_this_steps_positions),
        cmocka_unit_test(test_apply_misfits_are_errors),
        cmocka_unit_test(test_top2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
