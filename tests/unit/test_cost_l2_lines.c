/* test_cost_l2_lines.c - core/cost/cost_l2_lines.c: the line-level L2 model's rules, each on a case small enough to
 * count by hand (docs/COST_MODEL.md "A line-level L2"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "cost/cost_l2_lines.h"

#define MB 1e6
static const uint64_t A = 1ull << 40, B = 2ull << 40, C = 3ull << 40, S = 4ull << 40;

static dkv_l2l *make(dkv_l2l_cfg c)
{
    const char *err = "unset";
    dkv_l2l *l = dkv_l2l_new(&c, &err);
    assert_non_null(l);
    assert_null(err);
    return l;
}

static dkv_l2l_cfg coarse(void)   /* the H200's at a 1 KB line: the same sets' spread, 8 times fewer lines */
{
    dkv_l2l_cfg c = dkv_l2l_h200();
    c.line = 1024;
    return c;
}

static void test_config_refused(void **state)
{
    (void)state;
    dkv_l2l_cfg bad[9];
    for (int i = 0; i < 9; i++)
        bad[i] = dkv_l2l_h200();
    bad[0].parts = 3, bad[1].line = 100, bad[2].ways = 0, bad[3].dirty_frac = 0, bad[4].credit = -1;
    bad[5].l2_bytes = 1000, bad[6].clean_ways = 64, bad[7].clean_ways = -1;
    bad[8].ways = 128, bad[8].clean_ways = 65;   /* fewer than the ways, but past the 64 the rule follows */
    for (int i = 0; i < 9; i++) {
        const char *err = NULL;
        assert_null(dkv_l2l_new(&bad[i], &err));
        assert_non_null(err);
        assert_non_null(strstr(err, "L2 line model"));
    }
}

/* A line read once from HBM is found again; a written line is read without HBM and costs no HBM write while it
 * stays, and a read-and-write turns each line once. */
static void test_reads_and_writes(void **state)
{
    (void)state;
    dkv_l2l *l = make(coarse());
    dkv_l2l_read(l, A, 8 * 1024 * 1024, L2L_ONE);
    assert_true(dkv_l2l_hbm_read(l) == 8.0 * 1024 * 1024);
    dkv_l2l_read(l, A, 8 * 1024 * 1024, L2L_ONE);
    dkv_l2l_read(l, A, 8 * 1024 * 1024, L2L_ALL);   /* every half now holds it: still no HBM read */
    assert_true(dkv_l2l_hbm_read(l) == 8.0 * 1024 * 1024);
    dkv_l2l_write(l, B, 4 * 1024 * 1024, L2L_ONE);
    assert_true(dkv_l2l_dirty(l) == 4.0 * 1024 * 1024);
    dkv_l2l_read(l, B, 4 * 1024 * 1024, L2L_ONE);
    assert_true(dkv_l2l_hbm_read(l) == 8.0 * 1024 * 1024 && dkv_l2l_hbm_written(l) == 0);
    dkv_l2l_rmw(l, C, 2 * 1024 * 1024, L2L_ONE);
    assert_true(dkv_l2l_hbm_read(l) == 10.0 * 1024 * 1024);
    assert_true(dkv_l2l_dirty(l) == 6.0 * 1024 * 1024);
    dkv_l2l_free(l);
}

/* Copies (with keep_copy off, the model before session 48): a written line sits once (its home half; a write drops a
 * copy in the other half), a line read from every half twice, one read by one reader on a hashed side 1.5 times on
 * average (a far read keeps the home copy too). */
static void test_copies(void **state)
{
    (void)state;
    dkv_l2l_cfg c = coarse();
    c.keep_copy = false;
    dkv_l2l *l = make(c);
    dkv_l2l_write(l, A, 10 * 1024 * 1024, L2L_ONE);
    assert_true(dkv_l2l_resident(l) == 10.0 * 1024 * 1024);
    dkv_l2l_read(l, B, 4 * 1024 * 1024, L2L_ALL);
    assert_true(dkv_l2l_resident(l) == 18.0 * 1024 * 1024);
    dkv_l2l_write(l, B, 4 * 1024 * 1024, L2L_ALL);   /* a write drops the other half's copy */
    assert_true(dkv_l2l_resident(l) == 14.0 * 1024 * 1024);
    dkv_l2l_read(l, B, 4 * 1024 * 1024, L2L_ALL);    /* and a read from both halves makes it again, from L2 */
    assert_true(dkv_l2l_resident(l) == 18.0 * 1024 * 1024 && dkv_l2l_hbm_read(l) == 4.0 * 1024 * 1024);
    double r0 = dkv_l2l_resident(l);
    dkv_l2l_read(l, C, 8 * 1024 * 1024, L2L_ONE);
    double per = (dkv_l2l_resident(l) - r0) / (8.0 * 1024 * 1024);
    assert_true(per > 1.35 && per < 1.65);
    dkv_l2l_free(l);
}

/* keep_copy, the H200's since session 48 (device call 129): a write leaves the other half's copy in place (updated),
 * so a line read from both halves and then written still sits twice, dirty once (its home copy). */
static void test_keep_copy(void **state)
{
    (void)state;
    dkv_l2l_cfg c = coarse();
    assert_true(c.keep_copy);
    dkv_l2l *l = make(c);
    dkv_l2l_read(l, B, 4 * 1024 * 1024, L2L_ALL);
    dkv_l2l_write(l, B, 4 * 1024 * 1024, L2L_ALL);
    assert_true(dkv_l2l_resident(l) == 8.0 * 1024 * 1024 && dkv_l2l_dirty(l) == 4.0 * 1024 * 1024);
    dkv_l2l_write(l, A, 2 * 1024 * 1024, L2L_ONE);   /* a plain write still sits once */
    assert_true(dkv_l2l_resident(l) == 10.0 * 1024 * 1024);
    dkv_l2l_free(l);
}

/* The dirty bound: one writer of 64 MB leaves the bound dirty (28.8 MB, to a line a half) and has written the rest
 * back, its oldest lines first: they stay, clean, and are read back without HBM. */
static void test_dirty_bound(void **state)
{
    (void)state;
    dkv_l2l *l = make(coarse());
    dkv_l2l_write(l, A, 64000000, L2L_ONE);
    assert_true(fabs(dkv_l2l_dirty(l) - 28.8 * MB) <= 2 * 1024);
    assert_true(fabs(dkv_l2l_hbm_written(l) - (64 * MB - dkv_l2l_dirty(l))) <= 2 * 1024);
    dkv_l2l_free(l);
    l = make(coarse());
    dkv_l2l_write(l, A, 40000000, L2L_ONE);   /* 40 MB written: 11.2 MB cleaned, all of it still there */
    double w = dkv_l2l_hbm_written(l);
    dkv_l2l_read(l, A, 8000000, L2L_ONE);     /* its first (cleaned) 8 MB: in the home half, no HBM */
    assert_true(dkv_l2l_hbm_read(l) <= 0.02 * 8 * MB);
    assert_true(dkv_l2l_hbm_written(l) == w);
    dkv_l2l_free(l);
}

/* After a stream of twice the L2, nothing older is left; the L2 is full and never holds more than its bytes. */
static void test_stream_flushes(void **state)
{
    (void)state;
    dkv_l2l *l = make(coarse());
    dkv_l2l_write(l, A, 8 * 1024 * 1024, L2L_ONE);
    dkv_l2l_read(l, S, (uint64_t)(2 * 60.0 * 1024 * 1024), L2L_ONE);
    assert_true(dkv_l2l_hbm_written(l) == 8.0 * 1024 * 1024 && dkv_l2l_dirty(l) == 0);
    assert_true(dkv_l2l_resident(l) <= 60.0 * 1024 * 1024 && dkv_l2l_resident(l) >= 0.999 * 60.0 * 1024 * 1024);
    double r0 = dkv_l2l_hbm_read(l);
    dkv_l2l_read(l, A, 8 * 1024 * 1024, L2L_ONE);
    assert_true(dkv_l2l_hbm_read(l) - r0 == 8.0 * 1024 * 1024);
    dkv_l2l_free(l);
}

/* The soft edge and the dirty credit together (l2drain's dclean): A written dirty, then C read clean (newer), then a
 * stream of x MB.  Older A goes first, and the credit (a dirty line's use counted 4 MB later) narrows its lead over C
 * by a fair share at every x where both are partly gone (at 36 MB: 1.87 and 1.27 MB gone with it, 2.46 and 0.88
 * without, at a 128-byte line). */
static double gone(dkv_l2l_cfg c, double x, uint64_t first)
{
    dkv_l2l *l = make(c);
    dkv_l2l_read(l, S, (uint64_t)(2 * c.l2_bytes), L2L_ONE);
    dkv_l2l_write(l, A, 4000000, L2L_ONE);
    dkv_l2l_read(l, C, 4000000, L2L_ONE);
    dkv_l2l_read(l, S + (1ull << 36), (uint64_t)(x * MB), L2L_ONE);
    double r0 = dkv_l2l_hbm_read(l);
    dkv_l2l_read(l, first, 4000000, L2L_ONE);
    double g = dkv_l2l_hbm_read(l) - r0;
    dkv_l2l_free(l);
    return g;
}

static void test_dirty_credit(void **state)
{
    (void)state;
    dkv_l2l_cfg c = coarse(), c0 = coarse();
    c0.credit = 0;
    for (double x = 32; x <= 44; x += 4) {
        double a = gone(c, x, A), cc = gone(c, x, C), a0 = gone(c0, x, A), c00 = gone(c0, x, C);
        assert_true(a > cc && a0 > c00);
        assert_true(a - cc < 0.75 * (a0 - c00));
    }
    /* the edge is soft: at 36 MB part of A is gone and part is left */
    double g = gone(c, 36, A);
    assert_true(g > 0.5 * MB && g < 3.5 * MB);
}

/* The clean_ways variant, one set of 4 ways: once the set is full its least recently used line is kept clean (written
 * to HBM and kept), so the dirty line an insertion later pushes out costs nothing then; off, it stays dirty until it
 * leaves. */
static void test_clean_ways(void **state)
{
    (void)state;
    dkv_l2l_cfg c = {.l2_bytes = 4096, .parts = 1, .ways = 4, .line = 1024, .dirty_frac = 1, .credit = 0, .seed = 1};
    for (int k = 0; k <= 1; k++) {
        c.clean_ways = k;
        dkv_l2l *l = make(c);
        dkv_l2l_write(l, A, 2048, L2L_ONE);          /* lines 0 and 1, dirty */
        dkv_l2l_read(l, A + 2048, 1024, L2L_ONE);    /* line 2: 3 of 4 ways, nothing cleaned */
        assert_true(dkv_l2l_hbm_written(l) == 0 && dkv_l2l_dirty(l) == 2048);
        dkv_l2l_read(l, A + 3072, 1024, L2L_ONE);    /* line 3 fills the set: line 0, the oldest, cleaned */
        assert_true(dkv_l2l_hbm_written(l) == (k ? 1024 : 0) && dkv_l2l_dirty(l) == (k ? 1024 : 2048));
        dkv_l2l_read(l, A + 4096, 1024, L2L_ONE);    /* line 4 pushes line 0 out; line 1 is the oldest now */
        assert_true(dkv_l2l_hbm_written(l) == (k ? 2048 : 1024) && dkv_l2l_dirty(l) == (k ? 0 : 1024));
        assert_true(dkv_l2l_resident(l) == 4096);
        dkv_l2l_free(l);
    }
}

/* The same configuration gives the same bytes; another seed (another hash) the same to within the edge's noise. */
static void test_deterministic(void **state)
{
    (void)state;
    dkv_l2l_cfg c = coarse(), c2 = coarse();
    c2.seed = 7;
    double a = gone(c, 40, A), b = gone(c, 40, A), d = gone(c2, 40, A);
    assert_true(a == b);
    assert_true(fabs(a - d) < 0.5 * MB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_refused),  cmocka_unit_test(test_reads_and_writes),
        cmocka_unit_test(test_copies),          cmocka_unit_test(test_keep_copy),
        cmocka_unit_test(test_dirty_bound),
        cmocka_unit_test(test_stream_flushes),  cmocka_unit_test(test_dirty_credit),
        cmocka_unit_test(test_clean_ways),      cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
