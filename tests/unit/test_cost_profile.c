/* test_cost_profile.c - core/cost/profile: tables sampled from known functions are reproduced at
 * the grid points and interpolated between them; bad tables are refused with the field named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost/profile.h"

static const char *const MNK[] = {"m", "n", "k"};

/* a GEMM's time as a sum of terms each linear in every dimension: launch, the operands' bytes (m k, n k,
 * m n) and the FLOPs (m n k), which multilinear interpolation in (m, n, k) reproduces exactly everywhere
 * inside the grid (the GEMM tables' rule since 2026-12-01; the log-space rule before it misses it
 * between grid points, by 3.1 % at (48, 3000, 5000)) */
static double gemm_terms(double m, double n, double k)
{
    return 4e-6 + 2 * (m * k + n * k + m * n) / 4.292e12 + 2 * m * n * k / 790e12;
}

/* a roofline-like kernel: max(compute, memory) + launch (not a power law: interpolation is
 * approximate between points, exact at them) */
static double roofline(double m, double n, double k)
{
    double tf = 2 * m * n * k / 790e12, tb = 2 * (m * k + n * k + m * n) / 4.292e12;
    return (tf > tb ? tf : tb) + 4e-6;
}

static const double MS[] = {32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
static const double NS[] = {2048, 4096, 8192, 16384};
static const double KS[] = {2048, 4096, 8192};

static dkv_profile *grid_profile(double (*fn)(double, double, double))
{
    dkv_profile *p = NULL;
    dkv_profile_info in = {.name = "t", .measured = false};
    assert_int_equal(dkv_profile_new(&in, &p, NULL), DKV_OK);
    size_t n = 9 * 4 * 3, r = 0;
    double *rows = malloc(n * 5 * sizeof *rows);
    for (int a = 0; a < 9; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 3; c++, r++) {
                double *x = rows + r * 5;
                x[0] = MS[a], x[1] = NS[b], x[2] = KS[c], x[3] = fn(MS[a], NS[b], KS[c]), x[4] = 1;
            }
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_GEMM, MNK, 3, 0, rows, n, "t.lua", NULL), DKV_OK);
    /* the qkv class: one exact (n, k) over m */
    double q[9 * 5];
    for (int a = 0; a < 9; a++) {
        double *x = q + a * 5;
        x[0] = MS[a], x[1] = 12288, x[2] = 4096, x[3] = fn(MS[a], 12288, 4096), x[4] = 1;
    }
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_QKV, MNK, 3, 0, q, 9, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    free(rows);
    return p;
}

static void test_grid_points_exact(void **state)
{
    (void)state;
    dkv_profile *p = grid_profile(roofline);
    for (int a = 0; a < 9; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 3; c++)
                assert_true(dkv_profile_gemm(p, DKV_PT_O, MS[a], NS[b], KS[c]) == roofline(MS[a], NS[b], KS[c]));
    for (int a = 0; a < 9; a++)
        assert_true(dkv_profile_gemm(p, DKV_PT_QKV, MS[a], 12288, 4096) == roofline(MS[a], 12288, 4096));
    dkv_profile_free(p);
}

static void test_gemm_terms_everywhere(void **state)
{
    (void)state;
    dkv_profile *p = grid_profile(gemm_terms);
    /* shapes no table holds: trilinear in the gemm grid; and m between the qkv rows */
    double pts[][3] = {{48, 3000, 5000}, {700, 2048, 2500}, {5000, 15000, 8000}, {33, 4095, 2049}, {40, 3584, 3584}};
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        double t = dkv_profile_gemm(p, DKV_PT_FFN, pts[i][0], pts[i][1], pts[i][2]);
        double want = gemm_terms(pts[i][0], pts[i][1], pts[i][2]);
        assert_true(fabs(t - want) / want < 1e-12);
    }
    double t = dkv_profile_gemm(p, DKV_PT_QKV, 777, 12288, 4096);
    assert_true(fabs(t - gemm_terms(777, 12288, 4096)) / gemm_terms(777, 12288, 4096) < 1e-12);
    /* beyond the largest batch (m): in proportion to it, from the largest measured point */
    t = dkv_profile_gemm(p, DKV_PT_QKV, 3 * 8192, 12288, 4096);
    assert_true(fabs(t - 3 * gemm_terms(8192, 12288, 4096)) / t < 1e-12);
    /* outside the measured range otherwise: NAN (the simulator's roofline takes over) */
    assert_true(isnan(dkv_profile_gemm(p, DKV_PT_O, 16, 4096, 4096)));
    assert_true(isnan(dkv_profile_gemm(p, DKV_PT_O, 512, 40000, 4096)));
    assert_true(isnan(dkv_profile_gemm(p, DKV_PT_LM_HEAD, 512, 4096, 4096)));   /* no grid fallback for the LM head */
    dkv_profile_free(p);
}

/* gemm_steps: the class table's interpolated time times the measured ratio at M's warm-up bucket, linear between the
 * measured row counts around it; 1 for other shapes, outside the measured rows, beyond 8,192 rows and for the LM head
 * (docs/COST_MODEL.md "GEMM rows between the grid's"). */
static void test_gemm_steps(void **state)
{
    (void)state;
    dkv_profile *p = NULL;
    dkv_profile_info in = {.name = "t", .measured = false, .steps_n = 1, .steps_nk = {{12288, 4096}}};
    /* measured every 16 rows from 1,024 to 1,536: 1 at the table's rows, 1.06 at 1,088, 1.02 at 1,104 */
    for (int r = 1024; r <= 1536; r += 16) {
        int j = r / 8 - 1;
        in.steps_has[0][j] = 1;
        in.steps_ratio[0][j] = r == 1088 ? 1.06f : r == 1104 ? 1.02f : 1.0f;
    }
    assert_true(fabs(dkv_profile_gemm_step(&in, 1088, 12288, 4096) - 1.06) < 1e-6);
    assert_true(fabs(dkv_profile_gemm_step(&in, 1081, 12288, 4096) - 1.06) < 1e-6);   /* bucket 1,088 */
    assert_true(fabs(dkv_profile_gemm_step(&in, 1096, 12288, 4096) - 1.04) < 1e-6);   /* half way to 1,104 */
    assert_true(fabs(dkv_profile_gemm_step(&in, 1080, 12288, 4096) - 1.03) < 1e-6);   /* half way from 1,072 */
    assert_true(dkv_profile_gemm_step(&in, 1088, 4096, 4096) == 1);    /* another shape */
    assert_true(dkv_profile_gemm_step(&in, 512, 12288, 4096) == 1);    /* below the measured rows */
    assert_true(dkv_profile_gemm_step(&in, 2048, 12288, 4096) == 1);   /* above them */
    assert_true(dkv_profile_gemm_step(&in, 9000, 12288, 4096) == 1);   /* beyond the warm-up */
    assert_true(dkv_profile_gemm_step(NULL, 1088, 12288, 4096) == 1);
    /* the lookup: the table's straight line times the ratio (the class table and the generic grid alike) */
    assert_int_equal(dkv_profile_new(&in, &p, NULL), DKV_OK);
    double q[2 * 5] = {1024, 12288, 4096, 1e-3, 1, 1536, 12288, 4096, 2e-3, 1};
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_QKV, MNK, 3, 0, q, 2, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    double line = 1e-3 + 1e-3 * 64 / 512;
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_QKV, 1088, 12288, 4096) / (1.06 * line) - 1) < 1e-6);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_QKV, 1024, 12288, 4096) - 1e-3) < 1e-15);
    dkv_profile_free(p);
}

/* Between grid points of a roofline: within the bound of log-space interpolation of max(a m, b)
 * on a 2x grid (2^0.25 - 1 = 19 %), never below the smaller neighbour, monotone in m. */
static void test_roofline_between(void **state)
{
    (void)state;
    dkv_profile *p = grid_profile(roofline);
    double prev = 0;
    for (double m = 32; m <= 8192; m *= 1.09) {
        double t = dkv_profile_gemm(p, DKV_PT_O, m, 6000, 3000), want = roofline(m, 6000, 3000);
        assert_true(fabs(t - want) / want < 0.19);
        assert_true(t >= prev);
        prev = t;
    }
    dkv_profile_free(p);
}

/* Attention: bilinear in (q_rows, kv_tokens) inside an exact (heads, kv_heads, head_dim, mode). */
static void test_attention_and_copy(void **state)
{
    (void)state;
    static const char *const F[] = {"q_rows", "kv_tokens", "heads", "kv_heads", "head_dim", "mode"};
    double rows[4 * 4 * 8];
    double qs[] = {32, 1024}, as[] = {128, 4096};
    size_t r = 0;
    for (int md = 0; md < 2; md++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++, r++) {
                double *x = rows + r * 8;
                x[0] = qs[i], x[1] = as[j], x[2] = 32, x[3] = 32, x[4] = 128, x[5] = md;
                x[6] = 1e-7 * qs[i] * as[j] * (md + 1), x[7] = 1;
            }
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_ATTN, F, 6, 0, rows, r, "t.lua", NULL), DKV_OK);
    static const char *const C[] = {"dir", "bytes"};
    double cp[] = {0, 4096, 2e-5, 0, 1 << 30, 2e-2, 1, 4096, 3e-5, 1, 1 << 30, 3e-2};
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_COPY_ALONE, C, 2, 0, cp, 4, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    double t = dkv_profile_attn(p, 256, 1000, 32, 32, 128, 1);
    assert_true(fabs(t - 2e-7 * 256 * 1000) / (2e-7 * 256 * 1000) < 1e-12);
    assert_true(isnan(dkv_profile_attn(p, 256, 1000, 28, 4, 128, 0)));   /* another model's heads */
    double rh = 0, rk = 0;   /* ... come from the nearest measured configuration (the caller rescales) */
    t = dkv_profile_attn_nearest(p, 256, 1000, 28, 4, 128, 0, &rh, &rk);
    assert_true(rh == 32 && rk == 32 && fabs(t - 1e-7 * 256 * 1000) / t < 1e-12);
    assert_true(isnan(dkv_profile_attn_nearest(p, 256, 1000, 28, 4, 64, 0, &rh, &rk)));   /* no head_dim 64 */
    rh = rk = 0;   /* a sparse mode too: its rows follow mode 0's of the same heads in the table */
    t = dkv_profile_attn_nearest(p, 256, 1000, 28, 4, 128, 1, &rh, &rk);
    assert_true(rh == 32 && rk == 32 && fabs(t - 2e-7 * 256 * 1000) / t < 1e-12);
    assert_true(isnan(dkv_profile_attn(p, 256, 1000, 32, 32, 128, 2)));  /* a mode not measured */
    assert_true(dkv_profile_copy(p, 1, 4096, false) == 3e-5);
    assert_true(isnan(dkv_profile_copy(p, 0, 4096, true)));               /* no contended table */
    double mid = dkv_profile_copy(p, 0, 2097152, false);                   /* 2 MiB: geometric midpoint */
    assert_true(fabs(mid - sqrt(2e-5 * 2e-2)) / mid < 1e-9);
    dkv_profile_free(p);
}

/* The nearest head configuration among several key groups (the table's groups are indexed when the profile
 * loads): the one nearest in log heads + log KV heads with the same head_dim and mode, its own value. */
static void test_attention_nearest_of_groups(void **state)
{
    (void)state;
    static const char *const F[] = {"q_rows", "kv_tokens", "heads", "kv_heads", "head_dim", "mode"};
    /* (heads, kv_heads, head_dim, mode): for 28 / 4 heads at head_dim 128, mode 0, the nearest is 16 / 4
     * (log 28/16 = 0.56) before 32 / 8 (0.13 + 0.69) and 32 / 32; 24 / 4 at head_dim 64 is another head_dim */
    static const double heads[][4] = {{32, 32, 128, 0}, {32, 8, 128, 0}, {16, 4, 128, 0}, {16, 4, 128, 1},
                                      {24, 4, 64, 0}};
    double rows[5 * 2 * 8];
    size_t r = 0;
    for (int g = 4; g >= 0; g--)   /* given out of order: the index sorts them */
        for (int j = 0; j < 2; j++, r++) {
            double *x = rows + r * 8;
            x[0] = 64, x[1] = j ? 4096 : 128, x[2] = heads[g][0], x[3] = heads[g][1], x[4] = heads[g][2];
            x[5] = heads[g][3], x[6] = 1e-6 * (g + 1) * (j + 1), x[7] = 1;
        }
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_ATTN, F, 6, 0, rows, r, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    double rh = 0, rk = 0, t = dkv_profile_attn_nearest(p, 64, 4096, 28, 4, 128, 0, &rh, &rk);
    assert_true(rh == 16 && rk == 4 && t == 1e-6 * 3 * 2);
    t = dkv_profile_attn_nearest(p, 64, 128, 40, 8, 128, 0, &rh, &rk);   /* 32 / 8: 0.22 against 0.92 and 1.38 */
    assert_true(rh == 32 && rk == 8 && t == 1e-6 * 2);
    t = dkv_profile_attn_nearest(p, 64, 128, 28, 4, 128, 1, &rh, &rk);   /* mode 1: only 16 / 4 has it */
    assert_true(rh == 16 && rk == 4 && t == 1e-6 * 4);
    t = dkv_profile_attn_nearest(p, 64, 128, 28, 4, 64, 0, &rh, &rk);    /* head_dim 64: 24 / 4 */
    assert_true(rh == 24 && rk == 4 && t == 1e-6 * 5);
    assert_true(isnan(dkv_profile_attn_nearest(p, 64, 128, 28, 4, 64, 1, &rh, &rk)));   /* none with both */
    dkv_profile_free(p);
}

/* Refresh-like attention (q_rows >= kv_tokens) between two measured key counts: the items at the
 * same count q / a in each bracket, then log-linear in a.  The profile's grid has Refresh rows on
 * and above the diagonal (t = c1 (q / a) a^2: items of a keys, quadratic) and Reuse-like rows below
 * it (items of 32 queries, a different kernel configuration: t = c2 q a); one item of 1,500 keys lies
 * between a = 1,024 and 2,048, and the lookup at the same q_rows (the rule before) took 2,048's Reuse
 * rows (+90 % here; a measured 3,104-token item came out +57 %). */
static double refresh_law(double q, double a) { return 1e-10 * (q / a) * a * a; }

static void test_attention_refresh_between_keys(void **state)
{
    (void)state;
    static const char *const F[] = {"q_rows", "kv_tokens", "heads", "kv_heads", "head_dim", "mode"};
    static const double as[] = {512, 1024, 2048, 4096}, rs[] = {1, 1.5, 2, 3, 4}, qs[] = {32, 64, 256, 1024};
    double rows[4 * (5 + 4) * 8];
    size_t r = 0;
    for (int j = 0; j < 4; j++) {
        for (int i = 0; i < 5; i++, r++) {   /* Refresh-like: q = r a */
            double *x = rows + r * 8;
            x[0] = rs[i] * as[j], x[1] = as[j], x[2] = 32, x[3] = 32, x[4] = 128, x[5] = 0;
            x[6] = refresh_law(x[0], as[j]), x[7] = 1;
        }
        for (int i = 0; i < 4; i++)
            if (qs[i] < as[j]) {   /* Reuse-like: items of 32 queries, 4x the time per q a */
                double *x = rows + r++ * 8;
                x[0] = qs[i], x[1] = as[j], x[2] = 32, x[3] = 32, x[4] = 128, x[5] = 0;
                x[6] = 4e-10 * qs[i] * as[j], x[7] = 1;
            }
    }
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_ATTN, F, 6, 0, rows, r, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    /* a power law in a at a fixed item count: log-linear in a reproduces it exactly */
    static const double cases[][2] = {{1500, 1500}, {3104, 3104}, {2250, 1500}, {3000, 1500}, {700, 600}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double q = cases[c][0], a = cases[c][1], want = refresh_law(q, a), t = dkv_profile_attn(p, q, a, 32, 32, 128, 0);
        assert_true(fabs(t / want - 1) < 1e-9);
    }
    assert_true(dkv_profile_attn(p, 3072, 2048, 32, 32, 128, 0) == refresh_law(3072, 2048));   /* a measured row */
    assert_true(isnan(dkv_profile_attn(p, 5000, 5000, 32, 32, 128, 0)));   /* beyond the key counts */
    assert_true(isnan(dkv_profile_attn(p, 400, 400, 32, 32, 128, 0)));
    /* Reuse-like lookups keep the generic rule (exact at a grid point) */
    assert_true(dkv_profile_attn(p, 256, 2048, 32, 32, 128, 0) == 4e-10 * 256 * 2048);
    dkv_profile_free(p);
}

/* Another model's widths: elementwise and kv_store at the rows that move the same bytes in the
 * nearest measured width. */
static void test_width_transfer(void **state)
{
    (void)state;
    static const char *const E[] = {"kind", "rows", "cols"};
    double rows[4 * 5] = {0, 32, 4096, 1e-6, 1, 0, 4096, 4096, 1e-4, 1, 2, 32, 12288, 3e-6, 1, 2, 4096, 12288, 3e-4, 1};
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_ELEMENTWISE, E, 3, 0, rows, 4, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    /* rmsnorm of 3584 columns (Dream) over 1024 rows = 4096 columns over 896 rows */
    double t = dkv_profile_elementwise(p, 0, 1024, 3584), want = 1e-6 * pow(896.0 / 32, log(100) / log(128));
    assert_true(fabs(t - want) / want < 1e-12);
    assert_true(isnan(dkv_profile_elementwise(p, 1, 1024, 3584)));   /* a kind not measured */
    assert_true(isnan(dkv_profile_kv_store(p, 64, 28, 4, 128)));     /* no kv_store table */
    dkv_profile_free(p);
}

/* The sparse selection (kv_gather), as the kernels run it: the top-k sorts P = max(1024,
 * 2^ceil(log2 keys)) slots (cuda/topk.cu, a bitonic network of 1024 threads: (P / 1024) log2 P
 * (log2 P + 1) / 2 rounds per thread), the rest grows with the keys. */
static double sel_fn(double keys, double fixed)
{
    double P = 1024;
    while (P < keys)
        P *= 2;
    return fixed + 1.87e-8 * keys + 9.6e-6 * (P / 1024) * log2(P) * (log2(P) + 1) / 2 / 55;
}

static const double SEL_KEYS[] = {256, 512, 1024, 2048, 3328, 4096};

/* kv_gather rows of the given (heads, kv_heads) groups at 32 block rows, head_dim 128 */
static dkv_profile *sel_profile(const double (*hk)[3], int n_cfg)
{
    static const char *const F[] = {"rows", "keys", "keep", "heads", "kv_heads", "head_dim"};
    double rows[4 * 6 * 8];
    size_t r = 0;
    for (int c = 0; c < n_cfg; c++)
        for (int i = 0; i < 6; i++, r++) {
            double *x = rows + r * 8;
            x[0] = 32, x[1] = SEL_KEYS[i], x[2] = (SEL_KEYS[i] - 32) / 2, x[3] = hk[c][0], x[4] = hk[c][1];
            x[5] = 128, x[6] = sel_fn(SEL_KEYS[i], hk[c][2]), x[7] = 5;
        }
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_KV_GATHER, F, 6, 0, rows, r, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    return p;
}

/* Keys between the rows: the sort's step at each power of two stays at the power of two (within 2 %:
 * the rest is interpolated in (log keys, log t)).  Under a plain (log keys, log t) interpolation of
 * the whole 1,056 keys (a sort of 2,048 slots) came out 18 % short, near 1,024 keys' time, and 2,100
 * keys (4,096 slots) 25 % short. */
static void test_select_sort_width(void **state)
{
    (void)state;
    static const double cfg[][3] = {{32, 32, 30e-6}};
    dkv_profile *p = sel_profile(cfg, 1);
    for (int i = 0; i < 6; i++)   /* the measured rows: their own times */
        assert_true(dkv_profile_select(p, 32, SEL_KEYS[i], 32, 32, 128) == sel_fn(SEL_KEYS[i], 30e-6));
    double ks[] = {300, 700, 1000, 1025, 1056, 1500, 2047, 2049, 2100, 3000, 3500, 4000};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        double t = dkv_profile_select(p, 32, ks[i], 32, 32, 128), want = sel_fn(ks[i], 30e-6);
        assert_true(fabs(t - want) / want < 0.02);
    }
    assert_true(isnan(dkv_profile_select(p, 32, 5000, 32, 32, 128)));   /* beyond the rows: the roofline's */
    assert_true(isnan(dkv_profile_select(p, 32, 200, 32, 32, 128)));
    assert_true(isnan(dkv_profile_select(p, 64, 1000, 32, 32, 128)));   /* other block rows */
    dkv_profile_free(p);
}

/* Another model's heads (Dream-7B: 28 query heads over 4 KV heads): the measured configuration with
 * the same KV heads (the number of selection sets, which fixes the kernels' launches and grids),
 * unscaled.  Before: the nearest query heads whatever their KV heads, times the ratio of query
 * heads (MHA's rows for 28 / 4 here; 28 / 32 of the 32 / 4 rows with the LLaDA-8B profile). */
static void test_select_other_heads(void **state)
{
    (void)state;
    static const double cfg[][3] = {{28, 28, 30e-6}, {32, 4, 88e-6}, {32, 8, 75e-6}};
    dkv_profile *p = sel_profile(cfg, 3);
    double ks[] = {256, 841, 1264, 1973, 4096};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        double want = sel_fn(ks[i], 88e-6), t = dkv_profile_select(p, 32, ks[i], 28, 4, 128);
        assert_true(fabs(t - want) / want < 0.02);
        t = dkv_profile_select(p, 32, ks[i], 40, 4, 128);   /* more heads per set: the same rows */
        assert_true(fabs(t - want) / want < 0.02);
        want = sel_fn(ks[i], 75e-6), t = dkv_profile_select(p, 32, ks[i], 48, 6, 128);   /* nearest KV heads: 8 */
        assert_true(fabs(t - want) / want < 0.02);
    }
    assert_true(isnan(dkv_profile_select(p, 32, 1000, 28, 4, 64)));   /* no head_dim 64 */
    dkv_profile_free(p);
}

/* Unaligned key counts (docs/COST_MODEL.md "Unaligned key counts"): a selection whose key count is
 * not a multiple of 32 is slower by a factor that depends on its alignment class (the largest power
 * of two up to 32 dividing it: the fp32 score rows' alignment) and, slowly, on the keys.  The kernel
 * here: odd counts 18 % slower at 768 keys, 12 % at 3,072 (linear in log keys), class 2 15 %, class 4
 * 6 %, classes 8 and 16 not at all.  The profile holds the base rows, anchors at 768, 1,536, 3,072
 * and each anchor + 1, + 2, + 4.  The rule comes within 0.4 % inside the anchors, 1.1 % outside; the
 * old rule (every row on one curve in log keys) put 833 keys between the rows at 772 and 1,024 (11 %
 * short), 577 keys 16 % short, and 832 and 1,600 keys (aligned) 4.5 and 5.3 % long. */
static double sel_pen(double keys)
{
    double c = 1;
    while (c < 32 && fmod(keys, 2 * c) == 0)
        c *= 2;
    double odd = 0.18 - 0.03 * log2(keys / 768);
    return c == 1 ? 1 + odd : c == 2 ? 1.15 : c == 4 ? 1.06 : 1;
}

static void test_select_unaligned(void **state)
{
    (void)state;
    static const char *const F[] = {"rows", "keys", "keep", "heads", "kv_heads", "head_dim"};
    static const double anchors[] = {768, 1536, 3072}, offs[] = {0, 1, 2, 4};
    double rows[(6 + 3 * 4) * 8], ks[6 + 3 * 4];
    size_t r = 0;
    for (int i = 0; i < 6; i++)
        ks[r++] = SEL_KEYS[i];
    for (int a = 0; a < 3; a++)
        for (int o = 0; o < 4; o++)
            ks[r++] = anchors[a] + offs[o];
    for (size_t i = 0; i < r; i++) {
        double *x = rows + i * 8;
        x[0] = 32, x[1] = ks[i], x[2] = floor((ks[i] - 32) / 2), x[3] = 32, x[4] = 32, x[5] = 128;
        x[6] = sel_fn(ks[i], 30e-6) * sel_pen(ks[i]), x[7] = 5;
    }
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_KV_GATHER, F, 6, 0, rows, r, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    for (size_t i = 0; i < r; i++)   /* the measured rows, aligned or not: their own times */
        assert_true(dkv_profile_select(p, 32, ks[i], 32, 32, 128) == rows[i * 8 + 6]);
    /* odd, class 2, class 4 (each from its own rows), 8 and 16 (no rows: the base rule), aligned;
     * inside the anchors, below the first (its ratio) and above the last */
    static const double q[] = {833, 834, 836, 840, 848, 832, 1600, 1025, 2049, 2054, 2100, 1281,
                               577, 580, 3329, 3332, 4001, 300, 1056};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        double want = sel_fn(q[i], 30e-6) * sel_pen(q[i]), t = dkv_profile_select(p, 32, q[i], 32, 32, 128);
        double tol = q[i] < 768 || q[i] > 3072 ? 0.03 : 0.015;   /* outside the anchors: the nearest ratio */
        if (fabs(t - want) / want >= tol)
            fail_msg("keys %.0f: %.4g s, want %.4g s (%+.1f %%)", q[i], t, want, 100 * (t - want) / want);
    }
    /* Dream-7B's head configuration takes the 32 / 32 group's rows, the unaligned ones with them */
    double t28 = dkv_profile_select(p, 32, 833, 28, 28, 128), t32 = dkv_profile_select(p, 32, 833, 32, 32, 128);
    assert_true(t28 == t32);
    dkv_profile_free(p);
}

/* A profile without the unaligned rows (every profile before session 13) is looked up as before:
 * a key count off the multiples of 32 takes the base rule, and a row off them without its partner (the
 * row at keys rounded down to a multiple of 32) is a base row like any other. */
static void test_select_unaligned_absent(void **state)
{
    (void)state;
    static const char *const F[] = {"rows", "keys", "keep", "heads", "kv_heads", "head_dim"};
    static const double ks[] = {256, 512, 1000, 2048, 4096};
    double rows[5 * 8];
    for (int i = 0; i < 5; i++) {
        double *x = rows + i * 8;
        x[0] = 32, x[1] = ks[i], x[2] = 100, x[3] = 32, x[4] = 32, x[5] = 128, x[6] = sel_fn(ks[i], 30e-6), x[7] = 5;
    }
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_KV_GATHER, F, 6, 0, rows, 5, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    assert_true(dkv_profile_select(p, 32, 1000, 32, 32, 128) == sel_fn(1000, 30e-6));
    double q[] = {833, 836, 1001, 1500};
    for (size_t i = 0; i < 4; i++) {
        double want = sel_fn(q[i], 30e-6), t = dkv_profile_select(p, 32, q[i], 32, 32, 128);
        assert_true(fabs(t - want) / want < 0.02);
    }
    dkv_profile_free(p);
}

static void test_bad_tables(void **state)
{
    (void)state;
    dkv_profile *p = NULL;
    dkv_err e = {0};
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    static const char *const bad[] = {"m", "n", "kk"};
    double row[] = {32, 4096, 4096, 1e-5, 1};
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_O, bad, 3, 0, row, 1, "x.lua", &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "kernels.o.fields: unknown field 'kk'"));
    double neg[] = {32, 4096, 4096, 0, 1};
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_QKV, MNK, 3, 0, neg, 1, "x.lua", &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "x.lua: kernels.qkv.rows[1]: seconds must be > 0"));
    double dup[] = {32, 4096, 4096, 1e-5, 1, 32, 4096, 4096, 2e-5, 1};
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_FFN, MNK, 3, 0, dup, 2, "x.lua", &e), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "x.lua", &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "kernels.ffn.rows[1] and rows[2]: the same shape measured twice"));
    dkv_profile_free(p);
    static const char *const lack[] = {"m", "n"};
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_O, lack, 2, 0, row, 0, "x.lua", &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "lacks 'k'"));
    dkv_profile_free(p);
    dkv_profile_free(NULL);
}

/* The warm column (PROFILE_FORMAT.md "Cold operands"): qkv, ffn, lm_head, kv_store, kv_gather and
 * elementwise are costed from warm_s when the profile has it, o / attn / compress / gemm from the
 * flushed median; without warm_s every table keeps the median; a bad warm_s is refused. */
static void test_warm_column(void **state)
{
    (void)state;
    /* m, n, k, median, launches, p10, warm_s */
    double q[2 * 7] = {32, 12288, 4096, 30e-6, 1, 29e-6, 33e-6, 64, 12288, 4096, 31e-6, 1, 30e-6, 35e-6};
    double o[2 * 7] = {32, 4096, 4096, 16e-6, 1, 15e-6, 12e-6, 64, 4096, 4096, 17e-6, 1, 16e-6, 13e-6};
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_QKV, MNK, 3, 2, q, 2, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_O, MNK, 3, 2, o, 2, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_warm(p, DKV_PT_QKV, 1, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_warm(p, DKV_PT_O, 1, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_QKV, 32, 12288, 4096) - 33e-6) < 1e-15);   /* warm_s */
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_QKV, 64, 12288, 4096) - 35e-6) < 1e-15);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_O, 32, 4096, 4096) - 16e-6) < 1e-15);      /* the median */
    dkv_profile_free(p);
    /* no warm_s: the median everywhere */
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_QKV, MNK, 3, 2, q, 2, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_QKV, 32, 12288, 4096) - 30e-6) < 1e-15);
    dkv_profile_free(p);
    assert_true(dkv_profile_uses_warm(DKV_PT_ELEMENTWISE) && dkv_profile_uses_warm(DKV_PT_KV_STORE));
    assert_true(!dkv_profile_uses_warm(DKV_PT_ATTN) && !dkv_profile_uses_warm(DKV_PT_GEMM));
    /* a warm_s that is not > 0, or a column that is not there */
    dkv_err e = {0};
    q[6] = 0;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_QKV, MNK, 3, 2, q, 2, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_warm(p, DKV_PT_QKV, 1, "t.lua", &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "kernels.qkv.rows[1]: warm_s must be > 0"));
    assert_int_equal(dkv_profile_table_warm(p, DKV_PT_QKV, 2, "t.lua", &e), DKV_EINVAL);
    dkv_profile_free(p);
}

/* The stream column (PROFILE_FORMAT.md, docs/COST_MODEL.md "Which column"): with stream_s a warm table is
 * costed from it (a GEMM table plus its drain, below), a flushed table from its flushed median (since
 * session 14; before, the median less the row's overhead warm_s - stream_s); stream_s without warm_s, or
 * not > 0, is refused. */
static void test_stream_column(void **state)
{
    (void)state;
    /* m, n, k, median, launches, p10, warm_s, stream_s */
    double q[2 * 8] = {32, 12288, 4096, 30e-6, 1, 29e-6, 33e-6, 31e-6, 64, 12288, 4096, 31e-6, 1, 30e-6, 35e-6, 32e-6};
    double o[2 * 8] = {32, 4096, 4096, 16e-6, 1, 15e-6, 12e-6, 10e-6, 64, 4096, 4096, 17e-6, 1, 16e-6, 13e-6, 4e-6};
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_QKV, MNK, 3, 3, q, 2, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_O, MNK, 3, 3, o, 2, "t.lua", NULL), DKV_OK);
    dkv_err e = {0};
    assert_int_equal(dkv_profile_table_stream(p, DKV_PT_QKV, 2, "t.lua", &e), DKV_EINVAL);   /* before warm_s */
    assert_non_null(strstr(e.msg, "stream_s needs a warm_s column"));
    for (int t = 0; t < 2; t++) {
        dkv_prof_tab id = t ? DKV_PT_O : DKV_PT_QKV;
        assert_int_equal(dkv_profile_table_warm(p, id, 1, "t.lua", NULL), DKV_OK);
        assert_int_equal(dkv_profile_table_stream(p, id, 2, "t.lua", NULL), DKV_OK);
    }
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    /* stream_s + the drain: the median of warm_s - stream_s over the table's rows, (2 + 3) / 2 us */
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_QKV, 32, 12288, 4096) - 33.5e-6) < 1e-15);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_QKV, 64, 12288, 4096) - 34.5e-6) < 1e-15);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_O, 32, 4096, 4096) - 16e-6) < 1e-15);     /* the median */
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_O, 64, 4096, 4096) - 17e-6) < 1e-15);
    dkv_profile_free(p);
    q[7] = -1;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_QKV, MNK, 3, 3, q, 2, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_warm(p, DKV_PT_QKV, 1, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_stream(p, DKV_PT_QKV, 2, "t.lua", &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "kernels.qkv.rows[1]: stream_s must be > 0"));
    dkv_profile_free(p);
}

/* The GEMMs' drain (docs/COST_MODEL.md "The GEMMs' drain"): a q|k|v, FFN or LM-head table with warm_s and
 * stream_s is costed from stream_s plus the median over its rows of warm_s - stream_s (never below 0); an
 * elementwise table (warm, with stream_s) from stream_s alone; a table without stream_s from warm_s. */
static void test_gemm_drain(void **state)
{
    (void)state;
    /* m, n, k, median, launches, p10, warm_s, stream_s: drains 1, 4, 2 us -> median 2 us */
    double f[3 * 8] = {32,  14336, 4096, 50e-6, 1, 49e-6, 52e-6, 51e-6, 64, 14336, 4096, 51e-6, 1, 50e-6, 57e-6, 53e-6,
                       128, 14336, 4096, 52e-6, 1, 51e-6, 56e-6, 54e-6};
    /* drains -1, -3 us -> 0: never below stream_s */
    double l[2 * 8] = {32, 126464, 4096, 90e-6, 1, 89e-6, 91e-6, 92e-6, 64, 126464, 4096, 95e-6, 1, 94e-6, 94e-6, 97e-6};
    /* kind, rows, cols, median, launches, p10, warm_s, stream_s: elementwise has no drain */
    double e[2 * 8] = {0, 32, 4096, 5e-6, 1, 4e-6, 8e-6, 3e-6, 0, 64, 4096, 6e-6, 1, 5e-6, 9e-6, 4e-6};
    static const char *const ew[] = {"kind", "rows", "cols"};
    dkv_profile *p = NULL;
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_FFN, MNK, 3, 3, f, 3, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_LM_HEAD, MNK, 3, 3, l, 2, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_ELEMENTWISE, ew, 3, 3, e, 2, "t.lua", NULL), DKV_OK);
    dkv_prof_tab ids[] = {DKV_PT_FFN, DKV_PT_LM_HEAD, DKV_PT_ELEMENTWISE};
    for (int t = 0; t < 3; t++) {
        assert_int_equal(dkv_profile_table_warm(p, ids[t], 1, "t.lua", NULL), DKV_OK);
        assert_int_equal(dkv_profile_table_stream(p, ids[t], 2, "t.lua", NULL), DKV_OK);
    }
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_FFN, 32, 14336, 4096) - 53e-6) < 1e-15);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_FFN, 64, 14336, 4096) - 55e-6) < 1e-15);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_FFN, 128, 14336, 4096) - 56e-6) < 1e-15);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_LM_HEAD, 32, 126464, 4096) - 92e-6) < 1e-15);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_LM_HEAD, 64, 126464, 4096) - 97e-6) < 1e-15);
    assert_true(fabs(dkv_profile_elementwise(p, 0, 32, 4096) - 3e-6) < 1e-15);
    assert_true(fabs(dkv_profile_elementwise(p, 0, 64, 4096) - 4e-6) < 1e-15);
    dkv_profile_free(p);
    /* warm_s alone (a profile before the stream column): warm_s, no drain */
    assert_int_equal(dkv_profile_new(NULL, &p, NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_add(p, DKV_PT_FFN, MNK, 3, 3, f, 3, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_table_warm(p, DKV_PT_FFN, 1, "t.lua", NULL), DKV_OK);
    assert_int_equal(dkv_profile_finish(p, "t.lua", NULL), DKV_OK);
    assert_true(fabs(dkv_profile_gemm(p, DKV_PT_FFN, 64, 14336, 4096) - 57e-6) < 1e-15);
    dkv_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_points_exact),
        cmocka_unit_test(test_gemm_terms_everywhere),
        cmocka_unit_test(test_gemm_steps),
        cmocka_unit_test(test_roofline_between),
        cmocka_unit_test(test_attention_and_copy),
        cmocka_unit_test(test_attention_nearest_of_groups),
        cmocka_unit_test(test_attention_refresh_between_keys),
        cmocka_unit_test(test_width_transfer),
        cmocka_unit_test(test_select_sort_width),
        cmocka_unit_test(test_select_other_heads),
        cmocka_unit_test(test_select_unaligned),
        cmocka_unit_test(test_select_unaligned_absent),
        cmocka_unit_test(test_bad_tables),
        cmocka_unit_test(test_warm_column),
        cmocka_unit_test(test_stream_column),
        cmocka_unit_test(test_gemm_drain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
