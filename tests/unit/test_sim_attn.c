/* test_sim_attn.c - sim/sim_profile.c's batched attention of unequal items (sim_attn_group): the
 * profile's uniform batch at the mean keys, stretched by the longest item's critical path only while
 * the GPU has room (one wave), and exactly the profile's value for equal items. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "cost/profile.h"
#include "sim/sim_internal.h"

/* A profile whose attention is c + k q a (one head configuration, mode 0) over a grid. */
static dkv_profile *attn_profile(double c, double k)
{
    static const char *const F[] = {"q_rows", "kv_tokens", "heads", "kv_heads", "head_dim", "mode"};
    static const double qs[] = {32, 64, 128, 256, 512, 1024, 2048, 4096}, as[] = {64, 128, 256, 512, 1024, 2048, 4096,
                                                                                   8192, 16384, 32768, 65536};
    enum { NQ = 8, NA = 11 };
    static double rows[NQ * NA * 8];
    size_t r = 0;
    for (int i = 0; i < NQ; i++)
        for (int j = 0; j < NA; j++, r++) {
            double *x = rows + r * 8;
            x[0] = qs[i], x[1] = as[j], x[2] = 32, x[3] = 32, x[4] = 128, x[5] = 0;
            x[6] = c + k * qs[i] * as[j], x[7] = 1;
        }
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_ATTN, F, 6, 0, rows, r, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    return p;
}

static void setup_mg(dkv_model *m, dkv_gpu *g)
{
    memset(m, 0, sizeof *m);
    memset(g, 0, sizeof *g);
    m->n_heads = 32, m->n_kv_heads = 32, m->head_dim = 128;
    g->n_sms = 132, g->flops_bf16 = 7.9e14, g->hbm_bw = 4.3e12;
}

/* n Reuse items of 32 queries: a0 keys each, except one of amax. */
static sim_attn_grp reuse(double n, double a0, double amax)
{
    sim_attn_grp x = {.rows = 32 * n, .qa = 32 * ((n - 1) * a0 + amax), .amax = amax, .tiles = n};
    return x;
}

static void test_uniform_is_the_profile(void **state)
{
    (void)state;
    dkv_model m;
    dkv_gpu g;
    setup_mg(&m, &g);
    dkv_profile *p = attn_profile(5e-6, 1e-10);
    for (double n = 1; n <= 64; n *= 2) {
        sim_attn_grp x = reuse(n, 1500, 1500);
        double t = sim_attn_group(p, &m, &g, &x, 0), want = dkv_profile_attn(p, 32 * n, 1500, 32, 32, 128, 0);
        assert_true(fabs(t - want) <= 1e-12 * want);
    }
    sim_attn_grp none = {0};
    assert_true(sim_attn_group(p, &m, &g, &none, 0) == 0);
    dkv_profile_free(p);
}

/* 12 items (384 CTAs of 32 heads: one split each, one wave on 132 SMs at 3 per SM): the kernel ends
 * with the longest item's CTA.  With a time linear in the keys (no fixed part) the ratio is exact:
 * t = A(rows, mean) x amax / mean. */
static void test_one_wave_critical_path(void **state)
{
    (void)state;
    dkv_model m;
    dkv_gpu g;
    setup_mg(&m, &g);
    dkv_profile *p = attn_profile(0, 1e-10);
    sim_attn_grp x = reuse(12, 500, 6000);
    double abar = x.qa / x.rows, base = dkv_profile_attn(p, x.rows, abar, 32, 32, 128, 0);
    double t = sim_attn_group(p, &m, &g, &x, 0);
    assert_true(fabs(t - base * 6000 / abar) <= 1e-9 * t);
    assert_true(t > 2 * base);   /* the mean-keys lookup alone would be 2.8 x short here */
    /* with a fixed part per CTA the stretch is smaller than the key ratio, but still > 1 */
    dkv_profile *q = attn_profile(2e-5, 1e-10);
    double b2 = dkv_profile_attn(q, x.rows, abar, 32, 32, 128, 0), t2 = sim_attn_group(q, &m, &g, &x, 0);
    assert_true(t2 > b2 * 1.01 && t2 < b2 * 6000 / abar);
    dkv_profile_free(p);
    dkv_profile_free(q);
}

/* Many items (64 x 32 = 2048 CTAs: 6 waves): the work, not the longest item, sets the time while the
 * longest is within the waves' reach; far beyond it, the critical path does again. */
static void test_full_gpu_is_work_bound(void **state)
{
    (void)state;
    dkv_model m;
    dkv_gpu g;
    setup_mg(&m, &g);
    dkv_profile *p = attn_profile(0, 1e-10);
    sim_attn_grp x = reuse(64, 1000, 3000);
    double abar = x.qa / x.rows, base = dkv_profile_attn(p, x.rows, abar, 32, 32, 128, 0);
    assert_true(fabs(sim_attn_group(p, &m, &g, &x, 0) - base) <= 1e-12 * base);
    sim_attn_grp y = reuse(64, 500, 60000);   /* 60000 / ~1430 = 42 > 6 waves */
    double ab = y.qa / y.rows, by = dkv_profile_attn(p, y.rows, ab, 32, 32, 128, 0);
    double ty = sim_attn_group(p, &m, &g, &y, 0);
    assert_true(fabs(ty - by * (60000 / ab) / 6) <= 1e-9 * ty);
    dkv_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_is_the_profile),
        cmocka_unit_test(test_one_wave_critical_path),
        cmocka_unit_test(test_full_gpu_is_work_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
