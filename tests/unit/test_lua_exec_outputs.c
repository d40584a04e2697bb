/* test_lua_exec_outputs.c - the per-request output collector behind dkv.execute{outputs = true}. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "io/h5.h"
#include "lua/exec_outputs.h"
#include "util/rng.h"
#include "workload/tokenizer.h"
#include "test_tmpdir.h"

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

/* Two requests of the byte tokenizer saved into a run and read back: tables and decoded text. */
static void test_save_text(void **state)
{
    (void)state;
    char dir[TEST_TMPDIR_LEN], path[TEST_TMPDIR_LEN + 16];
    assert_int_equal(test_tmpdir_make(dir, "outputs"), 0);
    snprintf(path, sizeof path, "%s/o.h5", dir);
    dkv_exec_outputs o = {0};
    dkv_err err = {0};
    enum { P = 3, G = 8, L = P + G };
    uint32_t before[L] = {'H', 'i', ' '}, after[L];
    float conf[G];
    for (int i = P; i < L; i++)
        before[i] = DKV_TOK_BYTE_MASK;
    for (int j = 0; j < G; j++)
        conf[j] = 0.5f;
    /* request 2: "ok" + U+00E9 + a lone 0xFF byte, then the end token and one never unmasked */
    const uint32_t gen2[G] = {'o', 'k', 0xC3, 0xA9, 0xFF, DKV_TOK_BYTE_END, 'x', DKV_TOK_BYTE_MASK};
    memcpy(after, before, sizeof after);
    for (int j = 0; j < G - 1; j++)
        after[P + j] = gen2[j];
    assert_int_equal(dkv_exec_outputs_record(&o, 4, 2, P, L, P, G, before, after, conf, &err), DKV_OK);
    /* request 0: a NUL byte in the text */
    before[0] = 'A';
    memcpy(after, before, sizeof after);
    after[P] = 'z', after[P + 1] = 0;
    assert_int_equal(dkv_exec_outputs_record(&o, 5, 0, P, L, P, G, before, after, conf, &err), DKV_OK);

    dkv_tokenizer tok;
    assert_int_equal(dkv_tokenizer_init(&tok, DKV_TOKENIZER_BYTE, 264, 256, &err), DKV_OK);
    dkv_h5 *f;
    dkv_h5_run *run;
    assert_int_equal(dkv_h5_create(path, &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_begin(f, "r", &run, &err), DKV_OK);
    if (dkv_exec_outputs_save(run, &o, &tok, &err) != DKV_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(dkv_h5_run_end(run, &err), DKV_OK);
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);
    dkv_exec_outputs_free(&o);

    assert_int_equal(dkv_h5_open_read(path, &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_open(f, "r", &run, &err), DKV_OK);
    char *s = NULL;
    assert_int_equal(dkv_h5_attr_get_str(run, "outputs_text", "text.2", &s, &err), DKV_OK);
    assert_string_equal(s, "ok\xC3\xA9\xEF\xBF\xBD");   /* stops at the end token; 0xFF -> U+FFFD */
    free(s);
    assert_int_equal(dkv_h5_attr_get_str(run, "outputs_text", "prompt.2", &s, &err), DKV_OK);
    assert_string_equal(s, "Hi ");
    free(s);
    assert_int_equal(dkv_h5_attr_get_str(run, "outputs_text", "text.0", &s, &err), DKV_OK);
    assert_string_equal(s, "z\xEF\xBF\xBD______");   /* NUL -> U+FFFD; masks never unmasked are "_" */
    free(s);
    assert_int_equal(dkv_h5_attr_get_str(run, "outputs_text", "tokenizer", &s, &err), DKV_OK);
    assert_string_equal(s, "byte");
    free(s);
    dkv_h5_table *t;
    assert_int_equal(dkv_h5_table_open(run, "outputs", &t, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_nrecords(t), 2 * G);
    double tokv[2 * G], step[2 * G], req[2 * G];
    assert_int_equal(dkv_h5_table_read_f64(t, "token", 0, 2 * G, tokv, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_read_f64(t, "step", 0, 2 * G, step, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_read_f64(t, "request", 0, 2 * G, req, &err), DKV_OK);
    assert_true(req[0] == 0 && req[G] == 2);   /* request order */
    assert_true(tokv[0] == 'z' && step[0] == 5);
    assert_true(tokv[G + 4] == 0xFF && tokv[2 * G - 1] == 4294967295.0 && step[2 * G - 1] == 4294967295.0);
    dkv_h5_table_close(t);
    assert_int_equal(dkv_h5_table_open(run, "prompts", &t, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_nrecords(t), 2 * P);
    assert_int_equal(dkv_h5_table_read_f64(t, "token", 0, 2 * P, tokv, &err), DKV_OK);
    assert_true(tokv[0] == 'A' && tokv[P] == 'H');
    dkv_h5_table_close(t);
    dkv_h5_run_free(run);
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);
    assert_int_equal(test_tmpdir_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unmask_sequence),
        cmocka_unit_test(test_random_blocks),
        cmocka_unit_test(test_save_text),
        cmocka_unit_test(test_bad_reports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
