/* test_mem_blockpool.c - the block KV pool and the static baseline, case by case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mem/mem.h"
#include "util/rng.h"

static dkv_mem *make(dkv_mem_options o)
{
    dkv_mem *m = NULL;
    dkv_err e = {0};
    if (dkv_mem_new(&o, &m, &e) != DKV_OK)
        fail_msg("%s", e.msg);
    return m;
}

static dkv_mem_options pool(uint64_t block, uint32_t chunk, uint32_t chunks)
{
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_BLOCKPOOL);
    o.block_bytes = block;
    o.chunk_blocks = chunk;
    o.capacity_bytes = block * chunk * chunks;
    return o;
}

static dkv_status try_get(dkv_mem *m, uint64_t bytes, uint16_t inst, dkv_mem_id *id)
{
    dkv_mem_owner who = {.tag = DKV_MEM_TAG_KV, .instance = inst};
    dkv_err e = {0};
    dkv_status st = dkv_mem_acquire(m, bytes, &who, id, &e);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    return st;
}

static dkv_mem_id get(dkv_mem *m, uint64_t bytes)
{
    dkv_mem_id id;
    assert_int_equal(try_get(m, bytes, 0, &id), DKV_OK);
    return id;
}

static void put(dkv_mem *m, dkv_mem_id id)
{
    dkv_err e = {0};
    assert_int_equal(dkv_mem_release(m, id, &e), DKV_OK);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
}

static uint32_t blocks(dkv_mem *m, dkv_mem_id id, uint32_t *ids)
{
    uint32_t n;
    dkv_err e = {0};
    assert_int_equal(dkv_mem_blocks(m, id, ids, 64, &n, &e), DKV_OK);
    return n;
}

static dkv_mem_stats stats(dkv_mem *m)
{
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    return s;
}

static void test_blocks_offsets_and_lifo(void **state)
{
    (void)state;
    dkv_mem *m = make(pool(1000, 4, 8));          /* block size need not be a power of two */
    assert_int_equal(dkv_mem_block_bytes(m), 1000);
    dkv_mem_id a = get(m, 2500);                   /* 3 blocks */
    uint32_t ids[64];
    assert_int_equal(blocks(m, a, ids), 3);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 1);
    assert_int_equal(ids[2], 2);
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.allocated, 3000);
    assert_int_equal(s.requested, 2500);
    assert_int_equal(s.reserved, 4000);            /* one chunk grown on demand */
    assert_int_equal(s.device_allocs, 1);
    assert_int_equal(s.reuse_hits, 0);
    assert_int_equal(s.reuse_total, 3);
    uint32_t chunk;
    uint64_t off;
    dkv_mem_block_locate(m, 6, &chunk, &off);
    assert_int_equal(chunk, 1);
    assert_int_equal(off, 2000);
    dkv_mem_id b = get(m, 1500);                   /* block 3, then a new chunk's first */
    assert_int_equal(blocks(m, b, ids), 2);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 4);
    put(m, a);                                     /* pushes 0, 1, 2: 2 is on top */
    dkv_mem_id c = get(m, 1);
    assert_int_equal(blocks(m, c, ids), 1);
    assert_int_equal(ids[0], 2);
    dkv_mem_info i;
    dkv_err e = {0};
    assert_int_equal(dkv_mem_info_get(m, c, &i, &e), DKV_OK);
    assert_int_equal(i.offset, 2000);
    assert_int_equal(i.n_blocks, 1);
    s = stats(m);
    assert_int_equal(s.reuse_hits, 1);
    assert_int_equal(s.reuse_total, 6);
    assert_int_equal(s.blocks_total, 8);
    assert_int_equal(s.blocks_free, 5);
    /* a short buffer gets the count, not an overflow */
    uint32_t n;
    assert_int_equal(dkv_mem_blocks(m, b, ids, 1, &n, &e), DKV_OK);
    assert_int_equal(n, 2);
    dkv_mem_free(m);
}

static void test_exhaustion_and_capacity(void **state)
{
    (void)state;
    dkv_mem *m = make(pool(4096, 4, 2));           /* 8 blocks at most */
    dkv_mem_id a = get(m, 7 * 4096), z;
    assert_int_equal(try_get(m, 2 * 4096, 0, &z), DKV_ENOMEM);
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.n_failed, 1);
    assert_int_equal(s.n_failed_frag, 0);
    assert_int_equal(try_get(m, 4096, 0, &z), DKV_OK);
    put(m, a);
    put(m, z);
    assert_int_equal(stats(m).allocated, 0);
    dkv_mem_free(m);
}

static void test_resize_with_live_blocks(void **state)
{
    (void)state;
    dkv_err e = {0};
    dkv_mem *m = make(pool(64, 4, 16));
    assert_int_equal(dkv_mem_grow(m, 3 * 4 * 64, &e), DKV_OK);
    assert_int_equal(stats(m).reserved, 3 * 256);
    dkv_mem_id a = get(m, 8 * 64);                 /* chunks 0, 1 (fresh blocks in id order) */
    dkv_mem_id b = get(m, 2 * 64);                 /* chunk 2 */
    uint32_t before[64], after[64];
    uint32_t nb = blocks(m, b, before);
    assert_int_equal(before[0], 8);
    put(m, a);
    uint64_t released;
    assert_int_equal(dkv_mem_shrink(m, 0, &released, &e), DKV_OK);
    assert_int_equal(released, 2 * 256);           /* chunk 2 still holds b */
    assert_false(dkv_mem_chunk_live(m, 0));
    assert_false(dkv_mem_chunk_live(m, 1));
    assert_true(dkv_mem_chunk_live(m, 2));
    assert_int_equal(blocks(m, b, after), nb);
    assert_memory_equal(before, after, nb * sizeof *after);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    dkv_mem_id c = get(m, 3 * 64);                 /* 2 free in chunk 2, then hole 0 is refilled */
    uint32_t ids[64];
    assert_int_equal(blocks(m, c, ids), 3);
    assert_true(dkv_mem_chunk_live(m, 0));
    assert_int_equal(ids[2], 0);
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.device_frees, 2);
    assert_int_equal(s.reserved, 2 * 256);
    assert_int_equal(dkv_mem_grow(m, 17 * 256, &e), DKV_ENOMEM);
    put(m, b);
    put(m, c);
    dkv_mem_free(m);
}

static void test_auto_shrink(void **state)
{
    (void)state;
    dkv_mem_options o = pool(64, 4, 16);
    o.shrink = true;
    dkv_mem *m = make(o);
    dkv_mem_id a = get(m, 12 * 64);                /* three chunks */
    assert_int_equal(stats(m).reserved, 3 * 256);
    put(m, a);                                     /* keeps one free chunk of slack */
    assert_int_equal(stats(m).reserved, 256);
    assert_int_equal(stats(m).device_frees, 2);
    dkv_mem_free(m);
}

static void test_quota_isolation(void **state)
{
    (void)state;
    dkv_mem_options o = pool(64, 4, 8);            /* 32 blocks */
    o.n_instances = 2;
    o.quota_bytes[0] = 8 * 64;
    o.quota_bytes[1] = 8 * 64;
    dkv_mem *m = make(o);
    dkv_mem_id a, b, z;
    assert_int_equal(try_get(m, 24 * 64, 0, &a), DKV_OK);    /* its 8 + the 16 unguaranteed */
    dkv_err e = {0};
    dkv_mem_owner who = {.instance = 0};
    assert_int_equal(dkv_mem_acquire(m, 64, &who, &z, &e), DKV_ENOMEM);
    assert_non_null(strstr(e.msg, "guaranteed"));
    assert_int_equal(try_get(m, 8 * 64, 1, &b), DKV_OK);     /* instance 1 still gets its share */
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.instance_used[0], 24 * 64);
    assert_int_equal(s.instance_used[1], 8 * 64);
    put(m, a);
    assert_int_equal(try_get(m, 16 * 64, 1, &a), DKV_OK);    /* borrowing works both ways */
    assert_int_equal(try_get(m, 64, 1, &z), DKV_ENOMEM);     /* but 0's 8 are kept for it */
    assert_int_equal(try_get(m, 8 * 64, 0, &z), DKV_OK);
    assert_int_equal(try_get(m, 64, 0, &z), DKV_ENOMEM);
    dkv_mem_free(m);

    o.share = DKV_MEM_PARTITIONED;                            /* set up front, no borrowing */
    m = make(o);
    s = stats(m);
    assert_int_equal(s.reserved, 16 * 64);
    assert_int_equal(s.setup_bytes, 16 * 64);
    assert_int_equal(try_get(m, 8 * 64, 0, &a), DKV_OK);
    assert_int_equal(try_get(m, 64, 0, &z), DKV_ENOMEM);
    assert_int_equal(try_get(m, 8 * 64, 1, &b), DKV_OK);
    uint32_t ids[64];
    assert_int_equal(blocks(m, b, ids), 8);
    for (int i = 0; i < 8; i++)
        assert_true(ids[i] >= 8);                             /* instance 1's chunks */
    assert_int_equal(dkv_mem_grow(m, 1 << 20, &e), DKV_EUNSUPPORTED);
    dkv_mem_free(m);

    o.share = DKV_MEM_SHARED;                                 /* a cap on what one instance holds (burst_frac) */
    o.cap_bytes[0] = 12 * 64, o.cap_bytes[1] = 0;
    m = make(o);
    assert_int_equal(try_get(m, 10 * 64, 0, &a), DKV_OK);
    assert_int_equal(dkv_mem_acquire(m, 3 * 64, &who, &z, &e), DKV_ENOMEM);   /* 13 > 12, 22 blocks still free */
    assert_non_null(strstr(e.msg, "past its cap of 12"));
    assert_int_equal(try_get(m, 2 * 64, 0, &z), DKV_OK);                     /* up to the cap */
    assert_int_equal(try_get(m, 20 * 64, 1, &b), DKV_OK);                    /* instance 1 has none */
    dkv_mem_free(m);
    o.cap_bytes[0] = 4 * 64;                                  /* a cap below the guarantee cannot hold */
    dkv_mem *bad = NULL;
    assert_int_equal(dkv_mem_new(&o, &bad, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "below its guaranteed quota"));
    o.cap_bytes[0] = 0;

    o.quota_bytes[1] = 30 * 64;                               /* quotas above capacity */
    assert_int_equal(dkv_mem_new(&o, &bad, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "quota"));
}

static void test_setup_cost(void **state)
{
    (void)state;
    dkv_mem_options o = pool(1 << 20, 8, 16);
    o.initial_bytes = 20ull << 20;                /* 3 chunks of 8 MiB */
    o.device_malloc_s = 35e-6;
    o.device_bytes_per_s = 1e12;
    dkv_mem *m = make(o);
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.setup_bytes, 24ull << 20);
    assert_true(s.setup_time_s > 3 * 35e-6 && s.setup_time_s < 3 * 35e-6 + 30e-6);
    assert_int_equal(s.device_allocs, 3);
    get(m, 30ull << 20);                          /* grows one more chunk: priced, not set-up */
    s = stats(m);
    assert_int_equal(s.device_allocs, 4);
    assert_true(s.device_time_s > 4 * 35e-6 - 1e-12);
    assert_int_equal(s.setup_bytes, 24ull << 20);
    dkv_mem_free(m);
}

static void test_shared_prefix_refcount(void **state)
{
    (void)state;
    dkv_err e = {0};
    dkv_mem *m = make(pool(64, 4, 4));
    dkv_mem_id prefix = get(m, 3 * 64);
    assert_int_equal(dkv_mem_retain(m, prefix, &e), DKV_OK);  /* a second request shares it */
    put(m, prefix);
    assert_int_equal(stats(m).allocated, 3 * 64);             /* still held by the second */
    put(m, prefix);
    assert_int_equal(stats(m).allocated, 0);
    dkv_mem_free(m);
}

/* ---------------------------------------------------------------- static */

static void test_static_reservations(void **state)
{
    (void)state;
    dkv_err e = {0};
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_STATIC);
    o.capacity_bytes = 4 << 20;
    dkv_mem *m = make(o);
    assert_int_equal(dkv_mem_reserve(m, 7, 1 << 20, &e), DKV_OK);
    assert_int_equal(dkv_mem_reserve(m, 7, 1 << 20, &e), DKV_ESTATE);
    dkv_mem_owner r7 = {.tag = DKV_MEM_TAG_KV, .request = 7};
    dkv_mem_id a, b, c, z;
    assert_int_equal(dkv_mem_acquire(m, 100000, &r7, &a, &e), DKV_OK);
    assert_int_equal(dkv_mem_acquire(m, 1000, &r7, &b, &e), DKV_OK);
    dkv_mem_info ia, ib;
    dkv_mem_info_get(m, a, &ia, &e);
    dkv_mem_info_get(m, b, &ib, &e);
    assert_int_equal(ib.offset, ia.offset + 100000);          /* views, exact bytes */
    assert_int_equal(ib.allocated_bytes, 1000);
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.reserved, 1 << 20);
    assert_int_equal(s.allocated, 101000);
    assert_true(s.external_frag > 0.9);                       /* the unused max-length tail */
    assert_int_equal(s.largest_free, (1 << 20) - 101000);
    assert_int_equal(dkv_mem_acquire(m, 1 << 20, &r7, &z, &e), DKV_ENOMEM);   /* outgrew it */
    assert_non_null(strstr(e.msg, "reservation"));
    assert_int_equal(dkv_mem_unreserve(m, 7, &e), DKV_ESTATE);
    assert_int_equal(dkv_mem_release(m, a, &e), DKV_OK);
    assert_int_equal(dkv_mem_release(m, b, &e), DKV_OK);
    assert_int_equal(dkv_mem_acquire(m, 10, &r7, &c, &e), DKV_OK);   /* top went back: reused */
    dkv_mem_info ic;
    dkv_mem_info_get(m, c, &ic, &e);
    assert_int_equal(ic.offset, ia.offset);
    s = stats(m);
    assert_int_equal(s.reuse_hits, 1);
    assert_int_equal(dkv_mem_release(m, c, &e), DKV_OK);
    assert_int_equal(dkv_mem_unreserve(m, 7, &e), DKV_OK);
    assert_int_equal(dkv_mem_unreserve(m, 7, &e), DKV_ENOENT);
    /* no reservation: a device allocation of its own, 512 B rounded */
    dkv_mem_owner w = {.tag = DKV_MEM_TAG_WEIGHTS, .request = 99};
    assert_int_equal(dkv_mem_acquire(m, 1000, &w, &a, &e), DKV_OK);
    s = stats(m);
    assert_int_equal(s.reserved, 1024);
    assert_int_equal(s.allocated, 1024);
    assert_int_equal(dkv_mem_reserve(m, 8, 4 << 20, &e), DKV_ENOMEM);
    assert_int_equal(dkv_mem_release(m, a, &e), DKV_OK);
    assert_int_equal(stats(m).reserved, 0);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    /* calls that belong to another kind */
    assert_int_equal(dkv_mem_grow(m, 1, &e), DKV_EUNSUPPORTED);
    uint32_t ids[4], n;
    assert_int_equal(dkv_mem_blocks(m, a, ids, 4, &n, &e), DKV_EUNSUPPORTED);
    dkv_mem_free(m);
    m = make(pool(64, 4, 4));
    assert_int_equal(dkv_mem_reserve(m, 1, 64, &e), DKV_EUNSUPPORTED);
    dkv_mem_free(m);
}

/* Reuse counts a block handed out before.  Fresh chunks sit at the bottom of the free stack,
 * so an acquisition that reaches into them mixes used and fresh blocks. */
static void test_reuse_fresh_boundary(void **state)
{
    (void)state;
    dkv_mem *m = make(pool(1 << 20, 4, 4));
    uint32_t ids[64];
    dkv_mem_id a = get(m, 3 << 20);                /* blocks 0 1 2, all fresh */
    assert_int_equal(stats(m).reuse_hits, 0);
    put(m, a);                                     /* stack, bottom to top: 3 (fresh), 0 1 2 */
    dkv_mem_id b = get(m, 2 << 20);                /* 2 1: both used before */
    assert_int_equal(blocks(m, b, ids), 2);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 1);
    assert_int_equal(stats(m).reuse_hits, 2);
    dkv_mem_id c = get(m, 2 << 20);                /* 0 (used), then 3 (fresh) */
    assert_int_equal(blocks(m, c, ids), 2);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 3);
    dkv_mem_stats s = stats(m);
    assert_int_equal(s.reuse_hits, 3);
    assert_int_equal(s.reuse_total, 7);
    dkv_mem_id d = get(m, 1);                      /* a new chunk: fresh */
    assert_int_equal(blocks(m, d, ids), 1);
    assert_int_equal(ids[0], 4);
    put(m, b);
    put(m, c);                                     /* bottom to top: 7 6 5 (fresh), 2 1 0 3 */
    dkv_mem_id e5 = get(m, 5 << 20);               /* 5 blocks: a block list, 4 used + 1 fresh */
    assert_int_equal(blocks(m, e5, ids), 5);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[3], 2);
    assert_int_equal(ids[4], 5);
    s = stats(m);
    assert_int_equal(s.reuse_hits, 7);
    assert_int_equal(s.reuse_total, 13);
    dkv_err e = {0};
    uint64_t released;                             /* chunk 1 (blocks 4..7) still holds 4, 5 */
    assert_int_equal(dkv_mem_shrink(m, 0, &released, &e), DKV_OK);
    assert_int_equal(released, 0);
    put(m, d);
    put(m, e5);
    assert_int_equal(dkv_mem_shrink(m, 4 << 20, &released, &e), DKV_OK);   /* gives chunk 1 back */
    assert_int_equal(released, 4 << 20);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    dkv_mem_id f = get(m, 4 << 20);                /* the 4 blocks of chunk 0, all used */
    assert_int_equal(stats(m).reuse_hits, 11);
    dkv_mem_id g = get(m, 1);                      /* chunk 1 again: fresh memory */
    assert_int_equal(stats(m).reuse_hits, 11);
    put(m, f);
    put(m, g);
    dkv_mem_free(m);
}

/* The inlined fast path (one free stack, at most 4 blocks) against the general path: a pool
 * with two instances and zero quotas takes the general path for every operation and must
 * decide exactly the same.  Random acquisitions of 1..7 blocks, releases, retains, grow and
 * shrink; block lists, offsets and statistics compared after every step. */
static void differential_run(uint64_t block, uint64_t seed)
{
    dkv_mem_options o = pool(block, 8, 40);
    dkv_mem *fast = make(o);
    o.n_instances = 2;                             /* quotas 0: nobody is owed anything */
    dkv_mem *gen = make(o);
    enum { MAXL = 200 };
    dkv_mem_id live[MAXL];
    int n = 0;
    dkv_rng r;
    dkv_rng_seed(&r, seed);
    dkv_err e = {0};
    uint32_t ia[64], ib[64];
    for (int step = 0; step < 4000; step++) {
        uint64_t u = dkv_rng_below(&r, 100);
        if (step % 800 == 799)                     /* drain now and then: shrink finds free chunks */
            for (; n > 0; n--) {
                assert_int_equal(dkv_mem_release(fast, live[n - 1], &e), DKV_OK);
                assert_int_equal(dkv_mem_release(gen, live[n - 1], &e), DKV_OK);
            }
        if (u < 50 && n < MAXL) {
            uint64_t bytes = 1 + dkv_rng_below(&r, 7 * block);
            dkv_mem_id a, b;
            dkv_status sa = dkv_mem_acquire(fast, bytes, NULL, &a, &e);
            dkv_status sb = dkv_mem_acquire(gen, bytes, NULL, &b, &e);
            assert_int_equal(sa, sb);
            if (sa == DKV_OK) {
                assert_int_equal(a, b);
                live[n++] = a;
            }
        } else if (u < 90 && n > 0) {
            int k = (int)dkv_rng_below(&r, (uint64_t)n);
            assert_int_equal(dkv_mem_release(fast, live[k], &e), DKV_OK);
            assert_int_equal(dkv_mem_release(gen, live[k], &e), DKV_OK);
            live[k] = live[--n];                   /* live[] holds one entry per reference */
        } else if (u < 95 && n > 0 && n < MAXL) {
            dkv_mem_id id = live[dkv_rng_below(&r, (uint64_t)n)];
            assert_int_equal(dkv_mem_retain(fast, id, &e), DKV_OK);
            assert_int_equal(dkv_mem_retain(gen, id, &e), DKV_OK);
            live[n++] = id;
        } else if (u < 98) {
            uint64_t target = dkv_rng_below(&r, 40) * 8 * block, ra, rb;
            assert_int_equal(dkv_mem_shrink(fast, target, &ra, &e), DKV_OK);
            assert_int_equal(dkv_mem_shrink(gen, target, &rb, &e), DKV_OK);
            assert_int_equal(ra, rb);
        } else {
            uint64_t target = dkv_rng_below(&r, 40) * 8 * block;
            assert_int_equal(dkv_mem_grow(fast, target, &e), DKV_OK);
            assert_int_equal(dkv_mem_grow(gen, target, &e), DKV_OK);
        }
        if (dkv_mem_check(fast, &e) != DKV_OK || dkv_mem_check(gen, &e) != DKV_OK)
            fail_msg("step %d: %s", step, e.msg);
        dkv_mem_stats a = stats(fast), b = stats(gen);
        assert_int_equal(a.requested, b.requested);
        assert_int_equal(a.allocated, b.allocated);
        assert_int_equal(a.reserved, b.reserved);
        assert_int_equal(a.peak_allocated, b.peak_allocated);
        assert_int_equal(a.peak_reserved, b.peak_reserved);
        assert_int_equal(a.reuse_hits, b.reuse_hits);
        assert_int_equal(a.reuse_total, b.reuse_total);
        assert_int_equal(a.blocks_free, b.blocks_free);
        assert_int_equal(a.blocks_total, b.blocks_total);
        assert_int_equal(a.largest_free, b.largest_free);
        assert_int_equal(a.n_failed, b.n_failed);
        assert_int_equal(a.n_failed_frag, b.n_failed_frag);
        assert_int_equal(a.n_events, b.n_events);
        assert_true(a.peak_external_frag == b.peak_external_frag);
        assert_true(a.mean_internal_frag == b.mean_internal_frag);
        for (int i = 0; i < n; i++) {
            uint32_t na = blocks(fast, live[i], ia), nb = blocks(gen, live[i], ib);
            assert_int_equal(na, nb);
            assert_memory_equal(ia, ib, na * sizeof *ia);
            dkv_mem_info x, y;
            assert_int_equal(dkv_mem_info_get(fast, live[i], &x, &e), DKV_OK);
            assert_int_equal(dkv_mem_info_get(gen, live[i], &y, &e), DKV_OK);
            assert_int_equal(x.offset, y.offset);
            assert_int_equal(x.offset, (uint64_t)ia[0] * block);
        }
    }
    dkv_mem_stats a = stats(fast);   /* the run reached every case */
    assert_true(a.reuse_hits > 0 && a.reuse_hits < a.reuse_total && a.n_failed > 0 && a.device_frees > 0);
    dkv_mem_free(fast);
    dkv_mem_free(gen);
}

static void test_fast_path_matches_general(void **state)
{
    (void)state;
    differential_run(1 << 16, 21);   /* block size a power of two: shifts */
    differential_run(3000, 22);      /* not: divisions */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_offsets_and_lifo),
        cmocka_unit_test(test_exhaustion_and_capacity),
        cmocka_unit_test(test_resize_with_live_blocks),
        cmocka_unit_test(test_auto_shrink),
        cmocka_unit_test(test_quota_isolation),
        cmocka_unit_test(test_setup_cost),
        cmocka_unit_test(test_shared_prefix_refcount),
        cmocka_unit_test(test_static_reservations),
        cmocka_unit_test(test_reuse_fresh_boundary),
        cmocka_unit_test(test_fast_path_matches_general),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
