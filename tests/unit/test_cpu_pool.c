/* test_cpu_pool.c - the CPU backend's FP8 KV scales (cpu/cpu_pool.c): a store into part of a
 * block must leave the block's other live rows decoding to their values.  The case that was
 * wrong: a store starting at a block's first slot reset the scale from its new rows only, while
 * later slots of the block still held rows quantized with the old scale (they then decoded
 * scaled by new / old). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"

enum { D = 8, BT = 4, NBLK = 2 };

typedef struct pool {
    cpu_backend b;
    uint8_t mem[NBLK * BT * 2 * D];   /* 1 layer, k|v, 1 KV head, e4m3 */
    float scale[NBLK * 2];
    uint8_t touched[NBLK];
    uint32_t tab[NBLK];
} pool;

static void pool_init(pool *p)
{
    memset(p, 0, sizeof *p);
    p->b.m.n_layers = 1, p->b.m.n_kv_heads = 1, p->b.m.head_dim = D;
    p->b.bt = BT, p->b.eb = 1, p->b.kv_dtype = DKV_DTYPE_FP8;
    p->b.tok_bytes = 2 * D, p->b.block_bytes = BT * 2 * D;
    p->b.pool = p->mem, p->b.scale = p->scale, p->b.n_scale = 2, p->b.touched = p->touched, p->b.n_pool = NBLK;
    p->tab[0] = 1, p->tab[1] = 0;   /* slot block 0 lives in pool block 1 */
}

/* rows r0 .. r0 + n - 1 of value v(row, d) = mag * (1 + d) / D * (row odd ? -1 : 1) */
static void rows_of(float *buf, const float **ptr, uint32_t n, float mag)
{
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t d = 0; d < D; d++)
            buf[i * D + d] = mag * (float)(1 + d) / D * (i % 2 ? -1.0f : 1.0f);
        ptr[i] = buf + i * D;
    }
}

/* max relative error of slots [s0, s0 + n) against rows stored with magnitude mag */
static double err_of(pool *p, uint32_t s0, uint32_t n, float mag)
{
    float all[2 * BT * D], want[BT * D];
    const float *ptr[BT];
    cpu_load(&p->b, p->tab, 0, 0, 0, s0 + n, all);
    rows_of(want, ptr, BT, mag);
    double e = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < D; d++) {
            double r = fabs(all[(s0 + i) * D + d] - want[i * D + d]) / fabs(want[i * D + d]);
            e = r > e ? r : e;
        }
    return e;
}

/* e4m3 keeps 3 mantissa bits: a round trip is within 2^-4 relative for normal values */
#define E4M3_REL (1.0 / 16 + 1e-6)

static void test_partial_store_from_first_slot_keeps_later_rows(void **state)
{
    (void)state;
    pool p;
    pool_init(&p);
    float a[BT * D], c[BT * D];
    const float *pa[BT], *pc[BT];
    rows_of(a, pa, BT, 1.0f);
    cpu_store(&p.b, p.tab, 0, 0, 0, 0, BT, BT, pa);        /* slots 0..3, magnitude 1 */
    assert_true(err_of(&p, 0, BT, 1.0f) <= E4M3_REL);
    rows_of(c, pc, 2, 4.0f);
    cpu_store(&p.b, p.tab, 0, 0, 0, 0, 2, BT, pc);         /* slots 0..1 again, x4; 2..3 stay live */
    assert_true(err_of(&p, 0, 2, 4.0f) <= E4M3_REL);
    /* the later rows, quantized again with the grown scale: within e4m3's step at that scale */
    assert_true(err_of(&p, 2, 2, 1.0f) <= 2 * E4M3_REL);
    assert_true(fabsf(p.scale[2] - 4.0f / 448.0f) < 1e-9f); /* pool block 1, k: the grown scale */
}

static void test_inner_store_requantizes_rows_after(void **state)
{
    (void)state;
    pool p;
    pool_init(&p);
    float a[BT * D], c[BT * D];
    const float *pa[BT], *pc[BT];
    rows_of(a, pa, BT, 1.0f);
    cpu_store(&p.b, p.tab, 0, 0, 0, 0, BT, BT, pa);
    rows_of(c, pc, 1, 8.0f);
    cpu_store(&p.b, p.tab, 0, 0, 0, 1, 1, BT, pc);         /* slot 1 only: rows 0 and 2..3 live */
    assert_true(err_of(&p, 1, 1, 8.0f) <= E4M3_REL);
    float all[BT * D];
    cpu_load(&p.b, p.tab, 0, 0, 0, BT, all);
    for (uint32_t i = 0; i < BT; i++) {
        if (i == 1)
            continue;
        for (uint32_t d = 0; d < D; d++) {
            double want = (double)(1 + d) / D * (i % 2 ? -1.0 : 1.0);
            /* at scale 8/448 the smallest values fall on the subnormal grid: absolute step */
            assert_true(fabs(all[i * D + d] - want) <= 2 * E4M3_REL * fabs(want) + 8.0 / 448 / 512 * 2);
        }
    }
}

static void test_store_covering_live_rows_resets_scale(void **state)
{
    (void)state;
    pool p;
    pool_init(&p);
    float a[BT * D], c[BT * D];
    const float *pa[BT], *pc[BT];
    rows_of(a, pa, BT, 8.0f);
    cpu_store(&p.b, p.tab, 0, 0, 0, 0, BT, BT, pa);
    rows_of(c, pc, 2, 1.0f);
    cpu_store(&p.b, p.tab, 0, 0, 0, 0, 2, 2, pc);          /* only rows 0..1 live now: a fresh scale */
    assert_true(fabsf(p.scale[2] - 1.0f / 448.0f) < 1e-9f);
    assert_true(err_of(&p, 0, 2, 1.0f) <= E4M3_REL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partial_store_from_first_slot_keeps_later_rows),
        cmocka_unit_test(test_inner_store_requantizes_rows_after),
        cmocka_unit_test(test_store_covering_live_rows_resets_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
