/* test_lua_exec_outputs.c - the per-request output collector behind dkv.execute{outputs = true}. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "lua/exec_outputs.h"
#include "util/rng.h"

#define MASK 99u

/* One request, P = 4, G = 8, two blocks of 4; each step unmasks some positions of the block. */
static void test_unmask_sequence(void **state)
{
    (void)state;
    dkv_exec_outputs o = {0};
    dkv_err err = {0};
    uint32_t before[12], after[12];
    float conf[4];
    for (int i = 0; i < 12; i++)
        before[i] = i < 4 ? (uint32_t)(10 + i) : MASK;
    /* block 0 (positions 4..7): step 0 unmasks 5 and 7, step 1 unmasks 4 and 6 */
    memcpy(after, before, sizeof after);
    after[5] = 50, after[7] = 70;
    for (int j = 0; j < 4; j++)
        conf[j] = 0.1f * (float)(j + 1);
    assert_int_equal(dkv_exec_outputs_record(&o, 0, 3, 4, 12, 4, 4, before, after, conf, &err), DKV_OK);
    memcpy(before, after, sizeof before);
    after[4] = 40, after[6] = 60;
    for (int j = 0; j < 4; j++)
        conf[j] = 0.5f + 0.1f * (float)j;
    assert_int_equal(dkv_exec_outputs_record(&o, 1, 3, 4, 12, 4, 4, before, after, conf, &err), DKV_OK);
    assert_true(o.n > 3);
    const dkv_exec_output *r = &o.req[3];
    assert_int_equal(r->id, 3);
    assert_int_equal(r->gen, 8);
    assert_int_equal(r->tokens[0], 40);
    assert_int_equal(r->tokens[1], 50);
    assert_int_equal(r->tokens[2], 60);
    assert_int_equal(r->tokens[3], 70);
    assert_true(fabsf(r->conf[1] - 0.2f) < 1e-6f && fabsf(r->conf[3] - 0.4f) < 1e-6f); /* step 0 */
    assert_true(fabsf(r->conf[0] - 0.5f) < 1e-6f && fabsf(r->conf[2] - 0.7f) < 1e-6f); /* step 1 */
    assert_int_equal(r->step[1], 0);
    assert_int_equal(r->step[0], 1);
    for (int g = 4; g < 8; g++) { /* block 1 not decoded yet */
        assert_int_equal(r->tokens[g], UINT32_MAX);
        assert_true(isnan(r->conf[g]));
    }
    assert_null(o.req[0].tokens); /* requests without a report stay empty */
    dkv_exec_outputs_free(&o);
    assert_null(o.req);
    assert_int_equal(o.n, 0);
    dkv_exec_outputs_free(NULL);
}

/* Random canvases: whatever changes inside the block is recorded, nothing outside it. */
static void test_random_blocks(void **state)
{
    (void)state;
    dkv_rng rng;
    dkv_rng_seed(&rng, 11);
    dkv_exec_outputs o = {0};
    dkv_err err = {0};
    enum { P = 16, G = 64, B = 16, L = P + G };
    uint32_t before[L], after[L], want[G];
    float conf[B];
    for (int i = 0; i < L; i++)
        before[i] = i < P ? (uint32_t)dkv_rng_below(&rng, 90) : MASK;
    for (int g = 0; g < G; g++)
        want[g] = UINT32_MAX;
    uint64_t step = 0;
    for (int b = 0; b < G / B; b++) {
        int s0 = P + b * B;
        for (int k = 0; k < 4; k++, step++) { /* four steps of four positions each */
            memcpy(after, before, sizeof after);
            for (int j = 0; j < B; j++)
                conf[j] = (float)dkv_rng_uniform(&rng);
            for (int j = k; j < B; j += 4) {
                after[s0 + j] = (uint32_t)dkv_rng_below(&rng, 90);
                if (after[s0 + j] == MASK)
                    after[s0 + j] = 0;
                want[s0 + j - P] = after[s0 + j];
            }
            after[0] ^= 1; /* a change outside the block must be ignored */
            assert_int_equal(dkv_exec_outputs_record(&o, step, 0, P, L, (uint32_t)s0, B, before, after, conf, &err),
                             DKV_OK);
            after[0] ^= 1;
            memcpy(before, after, sizeof before);
        }
    }
    for (int g = 0; g < G; g++)
        assert_int_equal(o.req[0].tokens[g], want[g]);
    dkv_exec_outputs_free(&o);
}

static void test_bad_reports(void **state)
{
    (void)state;
    dkv_exec_outputs o = {0};
    dkv_err err = {0};
    uint32_t t[16] = {0};
    float c[8] = {0};
    assert_int_equal(dkv_exec_outputs_record(&o, 0, 0, 8, 16, 4, 4, t, t, c, &err), DKV_EINVAL); /* in the prompt */
    assert_non_null(strstr(err.msg, "not inside the generated part"));
    assert_int_equal(dkv_exec_outputs_record(&o, 0, 0, 8, 16, 12, 8, t, t, c, &err), DKV_EINVAL); /* past canvas */
    assert_int_equal(dkv_exec_outputs_record(&o, 0, 0, 8, 16, 8, 4, t, t, c, &err), DKV_OK);
    assert_int_equal(dkv_exec_outputs_record(&o, 1, 0, 8, 12, 8, 4, t, t, c, &err), DKV_ESTATE); /* canvas changed */
    assert_non_null(strstr(err.msg, "canvas changed"));
    dkv_exec_outputs_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unmask_sequence),
        cmocka_unit_test(test_random_blocks),
        cmocka_unit_test(test_bad_reports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
