/* test_decode_follow.c - trajectory replay (decode/follow.h): commitments applied at their step,
 * every misfit an error; the logit-row statistics of the tie classification; selection replay
 * (dkv_follow_select) and the selection boundary (dkv_select_boundary). */
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
    dkv_follow f = {.tokens = toks, .steps = steps, .gen = G};
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
    dkv_follow f = {.tokens = toks, .steps = steps, .gen = G};
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

/* canvas of 10 keys, block [6, 10): candidates 0..5 */
static void test_select_replay_and_misfits(void **state)
{
    (void)state;
    uint32_t pos[2 * 3] = {0, 2, 5, 1, 3, 4};
    dkv_follow_sel rec[2] = {{.step = 4, .layer = 1, .n_sets = 2, .keep = 3, .pos = pos},
                             {.step = 4, .layer = 0, .n_sets = 2, .keep = 3, .pos = pos + 3}};
    dkv_follow f = {.has_sel = false, .sel = rec, .n_sel = 2};
    const uint32_t *got = pos;
    dkv_err e = {0};
    assert_int_equal(dkv_follow_select(&f, 0, 4, 1, 2, 3, 10, 6, 4, &got, &e), DKV_OK);
    assert_null(got);                                       /* no selections carried: own selection */
    f.has_sel = true;
    assert_int_equal(dkv_follow_select(&f, 0, 4, 1, 2, 3, 10, 6, 4, &got, &e), DKV_OK);
    assert_ptr_equal(got, pos);                             /* the (step, layer) record */
    assert_int_equal(dkv_follow_select(&f, 3, 5, 1, 2, 3, 10, 6, 4, &got, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "records no selection"));
    assert_int_equal(dkv_follow_select(&f, 3, 4, 1, 1, 3, 10, 6, 4, &got, &e), DKV_EINVAL);   /* shared vs per head */
    assert_non_null(strstr(e.msg, "retention settings differ"));
    assert_int_equal(dkv_follow_select(&f, 3, 4, 1, 2, 4, 10, 6, 4, &got, &e), DKV_EINVAL);   /* keep */
    assert_int_equal(dkv_follow_select(&f, 3, 4, 1, 2, 3, 10, 5, 4, &got, &e), DKV_EINVAL);   /* 5 in the block */
    assert_non_null(strstr(e.msg, "inside the block"));
    pos[1] = 0;                                                                              /* not ascending */
    assert_int_equal(dkv_follow_select(&f, 3, 4, 1, 2, 3, 10, 6, 4, &got, &e), DKV_EINVAL);
    pos[1] = 2, pos[5] = 11;                                                                 /* off the canvas */
    assert_int_equal(dkv_follow_select(&f, 3, 4, 0, 2, 3, 10, 6, 4, &got, &e), DKV_EINVAL);
}

static void test_select_boundary(void **state)
{
    (void)state;
    /* keys 0..7, the block [5, 7) is no candidate (its huge scores must not count) */
    float sc[8] = {0.5f, 2.0f, 1.0f, 3.0f, 0.9f, 9.0f, 9.0f, 0.1f};
    uint32_t own[2] = {1, 3}, kept[2] = {1, 3};
    uint8_t d;
    float m, g;
    dkv_select_boundary(sc, 8, 5, 7, 0, own, kept, 2, &d, &m, &g);
    assert_true(d == 0 && m == 1.0f && g == 2.0f);          /* lowest kept 2.0, highest dropped 1.0 */
    kept[0] = 2;                                            /* a replayed set {2, 3}: key 1 dropped */
    dkv_select_boundary(sc, 8, 5, 7, 0, own, kept, 2, &d, &m, &g);
    assert_true(d == 1 && m == -1.0f && g == 2.0f);         /* own would keep 1: 1.0 - 2.0 */
    uint32_t k10[2] = {11, 13};                             /* rows from q0 = 10 */
    dkv_select_boundary(sc, 8, 5, 7, 10, own, k10, 2, &d, &m, &g);
    assert_true(d == 0 && m == 1.0f);
    uint32_t all[6] = {0, 1, 2, 3, 4, 7}, ownall[6] = {0, 1, 2, 3, 4, 7};
    dkv_select_boundary(sc, 8, 5, 7, 0, ownall, all, 6, &d, &m, &g);
    assert_true(d == 0 && isinf(m) && m > 0 && g == 0.0f);  /* nothing dropped */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_commits_this_steps_positions),
        cmocka_unit_test(test_apply_misfits_are_errors),
        cmocka_unit_test(test_top2),
        cmocka_unit_test(test_select_replay_and_misfits),
        cmocka_unit_test(test_select_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
