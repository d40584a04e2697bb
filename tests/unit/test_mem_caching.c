/* test_mem_caching.c - the PyTorch caching-allocator model, case by case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mem/mem.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

static dkv_mem *make(uint64_t capacity, uint64_t max_split)
{
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_CACHING);
    o.capacity_bytes = capacity;
    o.max_split_size = max_split;
    dkv_mem *m = NULL;
    dkv_err e = {0};
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_OK);
    return m;
}

static dkv_mem_id get(dkv_mem *m, uint64_t bytes)
{
    dkv_mem_id id = 0;
    dkv_err e = {0};
    if (dkv_mem_acquire(m, bytes, NULL, &id, &e) != DKV_OK)
        fail_msg("acquire %llu: %s", (unsigned long long)bytes, e.msg);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    return id;
}

static void put(dkv_mem *m, dkv_mem_id id)
{
    dkv_err e = {0};
    assert_int_equal(dkv_mem_release(m, id, &e), DKV_OK);
    if (dkv_mem_check(m, &e) != DKV_OK)
        fail_msg("%s", e.msg);
}

static dkv_mem_info info(dkv_mem *m, dkv_mem_id id)
{
    dkv_mem_info i;
    dkv_err e = {0};
    assert_int_equal(dkv_mem_info_get(m, id, &i, &e), DKV_OK);
    return i;
}

static dkv_mem_stats stats(dkv_mem *m)
{
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    return s;
}

static void test_rounding_and_segment_sizes(void **state)
{
    (void)state;
    dkv_mem *m = make(1ull << 30, UINT64_MAX);
    assert_int_equal(info(m, get(m, 1)).allocated_bytes, 512);
    assert_int_equal(info(m, get(m, 513)).allocated_bytes, 1024);
    assert_int_equal(stats(m).reserved, 2 * MiB);                   /* one small segment */
    dkv_mem_id big = get(m, MiB + 1);                               /* large pool */
    assert_int_equal(info(m, big).allocated_bytes, MiB + 512);
    assert_int_equal(stats(m).reserved, 22 * MiB);                  /* + a 20 MiB segment */
    dkv_mem_id twelve = get(m, 12 * MiB);                           /* best fit: the 20 MiB tail */
    assert_int_equal(info(m, twelve).allocated_bytes, 12 * MiB);
    assert_int_equal(stats(m).reserved, 22 * MiB);
    /* 11 MiB + 1 -> 11 MiB + 512 in a 12 MiB segment; remainder 1 MiB - 512 <= 1 MiB: no split */
    dkv_mem_id odd = get(m, 11 * MiB + 1);
    assert_int_equal(info(m, odd).allocated_bytes, 12 * MiB);       /* >= 10 MiB: own 2 MiB multiple */
    assert_int_equal(stats(m).reserved, 34 * MiB);
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.requested, 1 + 513 + MiB + 1 + 12 * MiB + 11 * MiB + 1);
    assert_int_equal(s.allocated, 512 + 1024 + MiB + 512 + 24 * MiB);
    assert_int_equal(s.segments, 3);
    assert_true(s.internal_frag > 0.0 && s.internal_frag < 0.05);
    dkv_mem_free(m);
}

static void test_exact_fit_and_best_fit(void **state)
{
    (void)state;
    dkv_mem *m = make(1ull << 30, UINT64_MAX);
    dkv_mem_id a = get(m, MiB);              /* small pool: 2 MiB segment, 1 MiB remainder */
    dkv_mem_id b = get(m, MiB);              /* exact fit of the remainder */
    assert_int_equal(stats(m).segments, 1);
    assert_int_equal(info(m, b).offset, info(m, a).offset + MiB);
    assert_int_equal(stats(m).largest_free, 0);
    /* best fit: free 256K and 128K holes; a 100K request takes the 128K hole */
    dkv_mem_id c[6];
    uint64_t sz[6] = {256 * KiB, 64 * KiB, 128 * KiB, 64 * KiB, 512 * KiB, 64 * KiB};
    for (int i = 0; i < 6; i++)
        c[i] = get(m, sz[i]);
    put(m, c[0]);
    put(m, c[2]);
    dkv_mem_id d = get(m, 100 * KiB);
    assert_int_equal(info(m, d).offset, info(m, c[1]).offset + 64 * KiB);   /* c[2]'s place */
    assert_int_equal(info(m, d).allocated_bytes, 100 * KiB);               /* split: 28K stays */
    dkv_mem_free(m);
}

static void test_split_and_merge(void **state)
{
    (void)state;
    dkv_mem *m = make(1ull << 30, UINT64_MAX);
    dkv_mem_id a = get(m, 512 * KiB), b = get(m, 512 * KiB), c = get(m, 512 * KiB);
    uint64_t base = info(m, a).offset;
    assert_int_equal(info(m, b).offset, base + 512 * KiB);
    assert_int_equal(info(m, c).offset, base + MiB);
    put(m, b);
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.inactive_split_blocks, 2);            /* b's hole and the tail */
    assert_int_equal(s.inactive_split_bytes, MiB);
    assert_int_equal(s.largest_free, 512 * KiB);
    put(m, a);                                               /* merges with b */
    s = stats(m);
    assert_int_equal(s.largest_free, MiB);
    assert_int_equal(s.inactive_split_bytes, MiB + 512 * KiB);
    dkv_mem_id d = get(m, MiB);                              /* fits where a and b were */
    assert_int_equal(info(m, d).offset, base);
    put(m, d);
    put(m, c);                                               /* everything merges back */
    s = stats(m);
    assert_int_equal(s.inactive_split_blocks, 0);
    assert_int_equal(s.largest_free, 2 * MiB);
    assert_int_equal(s.reserved, 2 * MiB);                   /* still cached */
    assert_int_equal(s.allocated, 0);
    dkv_mem_free(m);
}

static void test_large_pool_no_small_split(void **state)
{
    (void)state;
    dkv_mem *m = make(1ull << 30, UINT64_MAX);
    dkv_mem_id a = get(m, 5 * MiB);                          /* 20 MiB segment, 15 MiB left */
    dkv_mem_id b = get(m, 14 * MiB);                         /* 1 MiB remainder is not split off */
    assert_int_equal(info(m, b).allocated_bytes, 15 * MiB);
    assert_int_equal(stats(m).segments, 1);
    (void)a;
    dkv_mem_free(m);
}

static void test_max_split_size(void **state)
{
    (void)state;
    dkv_mem *m = make(1ull << 30, 40 * MiB);
    dkv_mem_id a = get(m, 50 * MiB);                         /* oversize: own segment */
    put(m, a);
    dkv_mem_id b = get(m, 30 * MiB);                         /* may not take the 50 MiB block */
    assert_int_equal(stats(m).segments, 2);
    assert_int_equal(info(m, b).allocated_bytes, 30 * MiB);
    dkv_mem_id c = get(m, 45 * MiB);                         /* oversize: 50 < 45 + 20, taken whole */
    assert_int_equal(info(m, c).allocated_bytes, 50 * MiB);
    assert_int_equal(stats(m).segments, 2);
    dkv_mem_id d = get(m, 80 * MiB);                         /* new segment (50 is taken) */
    put(m, d);
    dkv_mem_id e = get(m, 42 * MiB);                         /* 80 >= 42 + 20: refused, new 42 */
    assert_int_equal(info(m, e).allocated_bytes, 42 * MiB);
    assert_int_equal(stats(m).segments, 4);
    put(m, e);
    put(m, c);
    put(m, b);
    dkv_mem_id f = get(m, 20 * MiB);                         /* 30 MiB block, split below max_split */
    assert_int_equal(info(m, f).allocated_bytes, 20 * MiB);
    dkv_mem_free(m);
}

static void test_retry_after_flush(void **state)
{
    (void)state;
    dkv_err e = {0};
    dkv_mem *m = make(21 * MiB, UINT64_MAX);
    dkv_mem_id a = get(m, 5 * MiB);
    put(m, a);                                               /* 20 MiB cached */
    dkv_mem_id small = get(m, KiB);                          /* needs 2 MiB more: flush, retry */
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.num_alloc_retries, 1);
    assert_int_equal(s.num_ooms, 0);
    assert_int_equal(s.reserved, 2 * MiB);
    assert_int_equal(s.device_frees, 1);
    dkv_mem_id z;
    assert_int_equal(dkv_mem_acquire(m, 20 * MiB, NULL, &z, &e), DKV_ENOMEM);
    assert_non_null(strstr(e.msg, "out of memory"));
    s = stats(m);
    assert_int_equal(s.num_alloc_retries, 2);
    assert_int_equal(s.num_ooms, 1);
    assert_int_equal(s.n_failed, 1);
    assert_int_equal(s.n_failed_frag, 0);                    /* only 2 MiB - 1 KiB were free */
    assert_int_equal(s.reserved, 2 * MiB);
    put(m, small);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    dkv_mem_free(m);
}

static void test_release_available_oversize(void **state)
{
    (void)state;
    dkv_mem *m = make(100 * MiB, 40 * MiB);
    dkv_mem_id a = get(m, 60 * MiB);
    put(m, a);                                               /* 60 MiB oversize cached */
    dkv_mem_id b = get(m, 30 * MiB);                         /* new 30 MiB segment: 90 reserved */
    assert_int_equal(stats(m).reserved, 90 * MiB);
    dkv_mem_id c = get(m, 35 * MiB);                         /* 36 MiB does not fit: frees the 60 */
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.reserved, 66 * MiB);
    assert_int_equal(s.num_alloc_retries, 0);                /* not the flush-all path */
    assert_int_equal(info(m, c).allocated_bytes, 36 * MiB);
    (void)b;
    dkv_mem_free(m);
}

static void test_fragmentation_failure_counted(void **state)
{
    (void)state;
    dkv_err e = {0};
    dkv_mem *m = make(4 * MiB, UINT64_MAX);
    dkv_mem_id x[8];
    for (int i = 0; i < 8; i++)
        x[i] = get(m, 512 * KiB);
    for (int i = 0; i < 8; i += 2)
        put(m, x[i]);                                        /* 2 MiB free in 512K holes */
    dkv_mem_id z;
    assert_int_equal(dkv_mem_acquire(m, MiB, NULL, &z, &e), DKV_ENOMEM);
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.n_failed_frag, 1);
    assert_int_equal(s.largest_free, 512 * KiB);
    assert_true(s.external_frag == 0.5);
    dkv_mem_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding_and_segment_sizes),
        cmocka_unit_test(test_exact_fit_and_best_fit),
        cmocka_unit_test(test_split_and_merge),
        cmocka_unit_test(test_large_pool_no_small_split),
        cmocka_unit_test(test_max_split_size),
        cmocka_unit_test(test_retry_after_flush),
        cmocka_unit_test(test_release_available_oversize),
        cmocka_unit_test(test_fragmentation_failure_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
