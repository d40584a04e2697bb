/* test_sim_attn.c - sim/sim_profile.c's batched attention of unequal items (sim_attn_group): the
 * larger of the profile's uniform batch at the mean keys and the longest item's critical path (one item's
 * launch whose CTAs hold the same keys), and exactly the profile's value for equal items. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "cost/profile.h"
#include "sim/sim_internal.h"

/* A profile whose attention is c + k q a (one head configuration, mode 0) over a grid; with k3 > 0
 * also mode 3 (prefix-like items) as c + k3 q a. */
static dkv_profile *attn_profile3(double c, double k, double k3)
{
    static const char *const F[] = {"q_rows", "kv_tokens", "heads", "kv_heads", "head_dim", "mode"};
    static const double qs[] = {32, 64, 128, 256, 512, 1024, 2048, 4096}, as[] = {64, 128, 256, 512, 1024, 2048, 4096,
                                                                                   8192, 16384, 32768, 65536};
    enum { NQ = 8, NA = 11 };
    static double rows[2 * NQ * NA * 8];
    size_t r = 0;
    for (int md = 0; md < (k3 > 0 ? 2 : 1); md++)
        for (int i = 0; i < NQ; i++)
            for (int j = 0; j < NA; j++, r++) {
                double *x = rows + r * 8;
                x[0] = qs[i], x[1] = as[j], x[2] = 32, x[3] = 32, x[4] = 128, x[5] = md ? 3 : 0;
                x[6] = c + (md ? k3 : k) * qs[i] * as[j], x[7] = 1;
            }
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_ATTN, F, 6, 0, rows, r, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    return p;
}

static dkv_profile *attn_profile(double c, double k) { return attn_profile3(c, k, 0); }

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
        double t = sim_attn_group(p, &m, &g, &x, 0, false), want = dkv_profile_attn(p, 32 * n, 1500, 32, 32, 128, 0);
        assert_true(fabs(t - want) <= 1e-12 * want);
    }
    sim_attn_grp none = {0};
    assert_true(sim_attn_group(p, &m, &g, &none, 0, false) == 0);
    dkv_profile_free(p);
}

/* 4 items, one far longer (as call 110's vi:dual,steps=32: 2,465 keys beside 433-962): 128 clusters of 32 heads x 4
 * tiles take S = 3 splits; the longest item's CTAs of a_max / 3 keys take as long as one item whose own 8 splits give
 * its CTAs those keys, a single-item launch of a_max x 8 / 3 keys.  The time is the larger of that and the uniform
 * batch at the mean keys, not the batch stretched by their ratio (session 34; the stretch was a third longer here,
 * and call 112 measured the form below nearer: 8.7 % against 19.6 %). */
static void test_one_wave_critical_path(void **state)
{
    (void)state;
    dkv_model m;
    dkv_gpu g;
    setup_mg(&m, &g);
    const double c = 2e-5, k = 1e-10;
    dkv_profile *p = attn_profile(c, k);
    sim_attn_grp x = reuse(4, 600, 2400);
    double abar = x.qa / x.rows, work = dkv_profile_attn(p, x.rows, abar, 32, 32, 128, 0);
    double path = dkv_profile_attn(p, 32, 2400 * 8.0 / 3, 32, 32, 128, 0);
    double t = sim_attn_group(p, &m, &g, &x, 0, false);
    assert_true(path > work);
    assert_true(fabs(t - path) <= 1e-12 * t);
    double cbar = dkv_profile_attn(p, 32, abar * 8 / 3, 32, 32, 128, 0);
    assert_true(work * path / cbar > 1.1 * t);   /* the old stretch */
    dkv_profile_free(p);
}

/* The longest item beyond the profile's keys (4 items, one of 30,720 keys: one item of 30,720 x 8 / 3 = 81,920 keys
 * stands for its CTAs, past the profile's 65,536): c(a_max) extrapolated affinely from the profile's two longest rows,
 * exact for this profile's c + k q a, not in proportion to the keys (session 34: that dropped the fixed part). */
static void test_critical_path_beyond_the_profile(void **state)
{
    (void)state;
    dkv_model m;
    dkv_gpu g;
    setup_mg(&m, &g);
    const double c = 2e-5, k = 1e-10;
    dkv_profile *p = attn_profile(c, k);
    sim_attn_grp x = reuse(4, 600, 30720);
    assert_true(isnan(dkv_profile_attn(p, 32, 81920, 32, 32, 128, 0)));
    double abar = x.qa / x.rows, work = dkv_profile_attn(p, x.rows, abar, 32, 32, 128, 0);
    double t = sim_attn_group(p, &m, &g, &x, 0, false);
    assert_true(c + k * 32 * 81920 > work);
    assert_true(fabs(t - (c + k * 32 * 81920)) <= 1e-9 * t);
    dkv_profile_free(p);
}

/* Many items (64 x 32 = 2048 CTAs, one split each): the work, not the longest item, sets the time while one item of
 * the longest keys takes less; far beyond it, that item's launch does. */
static void test_full_gpu_is_work_bound(void **state)
{
    (void)state;
    dkv_model m;
    dkv_gpu g;
    setup_mg(&m, &g);
    dkv_profile *p = attn_profile(0, 1e-10);
    sim_attn_grp x = reuse(64, 1000, 3000);
    double abar = x.qa / x.rows, base = dkv_profile_attn(p, x.rows, abar, 32, 32, 128, 0);
    assert_true(fabs(sim_attn_group(p, &m, &g, &x, 0, false) - base) <= 1e-12 * base);
    sim_attn_grp y = reuse(64, 500, 60000);   /* one item of 60,000 x 8 keys, beyond the profile: affine */
    double ab = y.qa / y.rows, by = dkv_profile_attn(p, y.rows, ab, 32, 32, 128, 0);
    double ty = sim_attn_group(p, &m, &g, &y, 0, false), path = 1e-10 * 32 * 60000 * 8;
    assert_true(ty > 2 * by);
    assert_true(fabs(ty / path - 1) < 0.01);
    dkv_profile_free(p);
}

/* Prefix Reuse items (more than 32 queries, reading the pool and their own rows) are the kernel's 64-row
 * group with a cache: costed from the profile's mode 3 when most of the larger group's rows are such
 * items and the profile has it; otherwise (and in the small group) from mode 0 as before. */
static void test_prefix_items_mode3(void **state)
{
    (void)state;
    dkv_model m;
    dkv_gpu g;
    setup_mg(&m, &g);
    dkv_profile *p = attn_profile3(5e-6, 1e-10, 4e-11), *p0 = attn_profile(5e-6, 1e-10);
    /* 4 equal items of 64 queries attending 1,000 keys (cache and own) */
    sim_attn_grp x = {.rows = 256, .qa = 256 * 1000.0, .amax = 1000, .tiles = 4, .cached = 256};
    double m3 = dkv_profile_attn(p, 256, 1000, 32, 32, 128, 3), m0 = dkv_profile_attn(p, 256, 1000, 32, 32, 128, 0);
    assert_true(fabs(m3 - m0) > 0.3 * m0);   /* the two modes differ, so the choice is visible */
    assert_true(fabs(sim_attn_group(p, &m, &g, &x, 0, true) - m3) <= 1e-12 * m3);
    sim_attn_grp xs = x;
    xs.tiles = 8;   /* the same rows as the small group's 32-row tiles */
    assert_true(fabs(sim_attn_group(p, &m, &g, &xs, 0, false) - m0) <= 1e-12 * m0);   /* small group: mode 0 */
    assert_true(fabs(sim_attn_group(p0, &m, &g, &x, 0, true) - m0) <= 1e-12 * m0);   /* no mode 3 in the profile */
    sim_attn_grp y = x;
    y.cached = 64;   /* a Refresh-dominated group (one prefix item of four) */
    assert_true(fabs(sim_attn_group(p, &m, &g, &y, 0, true) - m0) <= 1e-12 * m0);
    assert_true(isnan(sim_attn_group(p, &m, &g, &x, 1, true)));   /* a sparse mode (not in this profile) never takes mode 3 */
    dkv_profile_free(p);
    dkv_profile_free(p0);
}

/* The kernel computes whole query tiles (32 rows in the small group, 64 in the other; rows past an item's
 * queries are zeros but cost the same), and the profile's rows are whole tiles: a group is looked up at its
 * tile rows.  1 Refresh item of 100 rows (2 tiles of 64) costs the profile's 128 rows, 2 items of 16 queries
 * (2 tiles of 32) its 64; looked up at their 100 / 32 query rows they were 19 / 47 % short here. */
static void test_partial_tiles_cost_whole_tiles(void **state)
{
    (void)state;
    dkv_model m;
    dkv_gpu g;
    setup_mg(&m, &g);
    dkv_profile *p = attn_profile(1e-7, 1e-10);
    sim_attn_grp big = {.rows = 100, .qa = 100 * 128.0, .amax = 128, .tiles = 2};
    double want = dkv_profile_attn(p, 128, 128, 32, 32, 128, 0), t = sim_attn_group(p, &m, &g, &big, 0, true);
    assert_true(fabs(t - want) <= 1e-12 * want);
    assert_true(t > 1.2 * dkv_profile_attn(p, 100, 128, 32, 32, 128, 0));
    sim_attn_grp small = {.rows = 32, .qa = 32 * 256.0, .amax = 256, .tiles = 2};
    double w2 = dkv_profile_attn(p, 64, 256, 32, 32, 128, 0), t2 = sim_attn_group(p, &m, &g, &small, 0, false);
    assert_true(fabs(t2 - w2) <= 1e-12 * w2);
    assert_true(t2 > 1.5 * dkv_profile_attn(p, 32, 256, 32, 32, 128, 0));
    dkv_profile_free(p);
}

/* A head configuration the profile lacks (another model's: 28 query heads against the profile's 32, both
 * with 4 KV heads): with the profile's attn_waves, a Reuse launch costs the reference's launch of the same
 * key splits S and waves W (docs/COST_MODEL.md "Attention of another head configuration").  A synthetic
 * kernel whose time is W x (a CTA's fixed part + its keys) is then reproduced exactly at every item count
 * whose (S, W) the 32-head launches also reach; 3 items (S = 4, which 32 x n heads never give) and a
 * profile without attn_waves keep the roofline rescaling, here 80 % off at 4 items. */
static const double CL[8] = {396, 198, 124, 92, 69, 62, 47, 45};   /* device call 34's H200 */

static double kernel_law(double H, double n, double a)
{
    double base = H * n, S = base >= 264 ? 1 : ceil(264 / base);
    S = fmin(fmin(S, 8), ceil(a / 16));
    return ceil(base / CL[(int)S - 1]) * (2e-6 + 1e-8 * ceil(a / S));
}

static dkv_profile *waves_profile(bool with_waves)
{
    static const char *const F[] = {"q_rows", "kv_tokens", "heads", "kv_heads", "head_dim", "mode"};
    static const double as[] = {512, 1024, 2048};
    static double rows[3 * 17 * 8];
    size_t r = 0;
    for (int j = 0; j < 3; j++) {
        for (double n = 1; n <= 16 && 32 * n < as[j]; n++, r++) {   /* Reuse-like rows: q_rows < kv_tokens */
            double *x = rows + r * 8;
            x[0] = 32 * n, x[1] = as[j], x[2] = 32, x[3] = 4, x[4] = 128, x[5] = 0;
            x[6] = kernel_law(32, n, as[j]), x[7] = 1;
        }
        double *x = rows + r++ * 8;   /* one Refresh-like row (an item of as[j] own keys): another kernel */
        x[0] = as[j], x[1] = as[j], x[2] = 32, x[3] = 4, x[4] = 128, x[5] = 0, x[6] = 1e-3, x[7] = 1;
    }
    dkv_profile_info in = {.name = "waves"};
    if (with_waves)
        memcpy(in.attn_clusters[1][0], CL, sizeof CL);
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(&in, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_ATTN, F, 6, 0, rows, r, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    return p;
}

static void test_other_heads_by_waves(void **state)
{
    (void)state;
    dkv_model m;
    dkv_gpu g;
    setup_mg(&m, &g);
    m.n_heads = 28, m.n_kv_heads = 4;
    dkv_profile *p = waves_profile(true), *p0 = waves_profile(false);
    static const double ns[] = {1, 2, 4, 5, 6, 7, 8, 9, 10, 12, 16};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        sim_attn_grp x = reuse(ns[i], 1024, 1024);
        double t = sim_attn_group(p, &m, &g, &x, 0, false), want = kernel_law(28, ns[i], 1024);
        assert_true(fabs(t / want - 1) < 1e-9);
    }
    /* 4 items: one wave of 112 clusters of 3 (28 heads) where 32 heads need two (128 > 124) */
    sim_attn_grp x4 = reuse(4, 1024, 1024);
    double w4 = kernel_law(28, 4, 1024), r4 = sim_attn_group(p0, &m, &g, &x4, 0, false);
    assert_true(r4 > 1.5 * w4);   /* the roofline rescaling of the 32-head launch (two waves) */
    sim_attn_grp x3 = reuse(3, 1024, 1024);   /* S = 4: no 32-head launch has it */
    assert_true(fabs(sim_attn_group(p, &m, &g, &x3, 0, false) - sim_attn_group(p0, &m, &g, &x3, 0, false)) <=
                1e-12 * kernel_law(28, 3, 1024));
    dkv_profile_free(p);
    dkv_profile_free(p0);
}

/* A Reuse launch whose query rows reach its keys (16 items of 32 queries over 512 keys) has no row of its
 * own: the profile's rows with q_rows >= kv_tokens are Refresh-like items.  With attn_waves it is the
 * measured Reuse launch of the same key splits and waves (15 items: one split, two waves), exactly the
 * synthetic kernel's time; without, the Refresh-like row as before (docs/COST_MODEL.md "Reuse launches
 * of many short items"). */
static void test_reuse_rows_reach_keys(void **state)
{
    (void)state;
    dkv_model m;
    dkv_gpu g;
    setup_mg(&m, &g);
    m.n_heads = 32, m.n_kv_heads = 4;
    dkv_profile *p = waves_profile(true), *p0 = waves_profile(false);
    sim_attn_grp x = reuse(16, 512, 512);
    double want = kernel_law(32, 16, 512), t = sim_attn_group(p, &m, &g, &x, 0, false);
    assert_true(fabs(t / want - 1) < 1e-9);
    assert_true(sim_attn_group(p0, &m, &g, &x, 0, false) == 1e-3);   /* the Refresh-like row */
    sim_attn_grp y = reuse(8, 1024, 1024);   /* rows below the keys: the profile's own row, unchanged */
    assert_true(sim_attn_group(p, &m, &g, &y, 0, false) == kernel_law(32, 8, 1024));
    dkv_profile_free(p);
    dkv_profile_free(p0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_is_the_profile),
        cmocka_unit_test(test_one_wave_critical_path),
        cmocka_unit_test(test_critical_path_beyond_the_profile),
        cmocka_unit_test(test_full_gpu_is_work_bound),
        cmocka_unit_test(test_prefix_items_mode3),
        cmocka_unit_test(test_partial_tiles_cost_whole_tiles),
        cmocka_unit_test(test_other_heads_by_waves),
        cmocka_unit_test(test_reuse_rows_reach_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
