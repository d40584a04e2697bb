/* test_util.c - status messages, the seeded RNG and the ring of timestamped samples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/rng.h"
#include "util/samples.h"
#include "util/status.h"

static void test_err_set_and_prefix(void **state)
{
    (void)state;
    dkv_err e = {0};
    assert_int_equal(dkv_err_set(&e, DKV_EFORMAT, "line %d: bad field '%s'", 7, "rate"), DKV_EFORMAT);
    assert_int_equal(e.code, DKV_EFORMAT);
    assert_string_equal(e.msg, "line 7: bad field 'rate'");
    dkv_err_prefix(&e, "%s", "trace.csv");
    assert_string_equal(e.msg, "trace.csv: line 7: bad field 'rate'");
    assert_int_equal(dkv_err_set(NULL, DKV_EINVAL, "ignored"), DKV_EINVAL);
    dkv_err_clear(&e);
    assert_int_equal(e.code, DKV_OK);
    assert_string_equal(dkv_status_name(DKV_ENODEV), "ENODEV");
}

/* Messages stay text: control bytes and invalid UTF-8 become \xNN; UTF-8, tabs, newlines stay. */
static void test_text_escape(void **state)
{
    (void)state;
    char out[128];
    dkv_text_escape(out, sizeof out, "a\x01" "b\x7f\xff caf\xc3\xa9\t\n\x1b[31m");
    assert_string_equal(out, "a\\x01b\\x7f\\xff caf\xc3\xa9\t\n\\x1b[31m");
    dkv_text_escape(out, sizeof out, "\xc2\x9b" "1m");    /* U+009B CSI, valid UTF-8 but a control */
    assert_string_equal(out, "\\xc2\\x9b1m");
    /* not UTF-8: F5 lead, overlong C0 AF / E0 80 AF, a surrogate ED A0 80, above U+10FFFF */
    dkv_text_escape(out, sizeof out, "\xf5\x80\x80\x80|\xc0\xaf|\xe0\x80\xaf|\xed\xa0\x80|\xf4\x90\x80\x80");
    assert_string_equal(out, "\\xf5\\x80\\x80\\x80|\\xc0\\xaf|\\xe0\\x80\\xaf|\\xed\\xa0\\x80|\\xf4\\x90\\x80\\x80");
    dkv_text_escape(out, sizeof out, "\xf0\x9f\x98\x80 \xe2\x82\xac");   /* U+1F600, U+20AC kept */
    assert_string_equal(out, "\xf0\x9f\x98\x80 \xe2\x82\xac");
    dkv_text_escape(out, sizeof out, "\xc3(\xe2\x82");   /* broken sequences */
    assert_string_equal(out, "\\xc3(\\xe2\\x82");
    dkv_text_escape(out, 6, "\x01\x02");           /* never a half escape */
    assert_string_equal(out, "\\x01");
    dkv_err err = {0};
    dkv_err_set(&err, DKV_EFORMAT, "t.csv:3: unknown column '%s'", "\x1f\x8b\x08");
    assert_string_equal(err.msg, "t.csv:3: unknown column '\\x1f\\x8b\\x08'");
}

static void test_rng_reproducible(void **state)
{
    (void)state;
    dkv_rng a, b, c;
    dkv_rng_seed(&a, 42);
    dkv_rng_seed(&b, 42);
    dkv_rng_seed(&c, 43);
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = dkv_rng_u64(&a), y = dkv_rng_u64(&b), z = dkv_rng_u64(&c);
        assert_true(x == y);
        differ += x != z;
    }
    assert_true(differ > 990);
}

static void test_rng_moments(void **state)
{
    (void)state;
    dkv_rng r;
    dkv_rng_seed(&r, 7);
    const int n = 200000;
    double su = 0, sn = 0, sn2 = 0, se = 0, sg = 0, sg2 = 0;
    for (int i = 0; i < n; i++) {
        double u = dkv_rng_uniform(&r);
        assert_true(u >= 0.0 && u < 1.0);
        su += u;
        double x = dkv_rng_normal(&r);
        sn += x;
        sn2 += x * x;
        se += dkv_rng_exponential(&r, 4.0);
        double g = dkv_rng_gamma(&r, 0.25, 8.0); /* mean 2, var 16 */
        sg += g;
        sg2 += g * g;
        assert_true(dkv_rng_below(&r, 10) < 10);
    }
    assert_true(fabs(su / n - 0.5) < 0.005);
    assert_true(fabs(sn / n) < 0.01);
    assert_true(fabs(sn2 / n - 1.0) < 0.02);
    assert_true(fabs(se / n - 0.25) < 0.005);
    double gm = sg / n, gv = sg2 / n - gm * gm;
    assert_true(fabs(gm - 2.0) < 0.05);
    assert_true(fabs(gv - 16.0) < 1.0);
}

/* A window's mean is the mean of exactly the samples inside it (ends included); none gives NAN; after
 * the ring wraps, the newest half is still read and older samples are not. */
static void test_samples_window(void **state)
{
    (void)state;
    dkv_samples *s = malloc(sizeof *s);
    assert_non_null(s);
    dkv_samples_init(s);
    uint32_t c = 99;
    assert_true(isnan(dkv_samples_mean(s, 0, 1, &c)));
    assert_int_equal(c, 0);
    for (int i = 0; i < 10; i++)   /* t = 0.0 .. 0.9, v = 1000 + 10 i */
        dkv_samples_push(s, 0.1 * i, 1000 + 10 * i);
    assert_true(fabs(dkv_samples_mean(s, 0.25, 0.55, &c) - 1040) < 1e-9);   /* i = 3, 4, 5 */
    assert_int_equal(c, 3);
    assert_true(fabs(dkv_samples_mean(s, -1, 0.0, &c) - 1000) < 1e-9);     /* the first, at an end */
    assert_int_equal(c, 1);
    assert_true(isnan(dkv_samples_mean(s, 0.91, 2, &c)));                  /* after the last */
    assert_true(isnan(dkv_samples_mean(s, 0.31, 0.39, NULL)));             /* between two */
    for (uint32_t i = 10; i < 3 * DKV_SAMPLES_CAP + 5; i++)
        dkv_samples_push(s, 0.1 * i, i % 2 ? 1500 : 1900);
    double last = 0.1 * (3 * DKV_SAMPLES_CAP + 4);
    assert_true(fabs(dkv_samples_mean(s, last - 0.35, last + 1, &c) - 1700) < 1e-9);   /* 4 newest */
    assert_int_equal(c, 4);
    dkv_samples_mean(s, -1, last + 1, &c);   /* everything asked: the newest half is what is read */
    assert_int_equal(c, DKV_SAMPLES_CAP / 2);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_set_and_prefix),
        cmocka_unit_test(test_text_escape),
        cmocka_unit_test(test_rng_reproducible),
        cmocka_unit_test(test_rng_moments),
        cmocka_unit_test(test_samples_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
