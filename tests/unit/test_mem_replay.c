/* test_mem_replay.c - the stream-id map used by `dkv replay`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mem/mem_replay.h"
#include "util/rng.h"

static void test_many_ids_random_order(void **state)
{
    (void)state;
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_CACHING);
    dkv_mem *m;
    dkv_mem_replay *r;
    dkv_err e = {0};
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_new(m, &r, &e), DKV_OK);
    /* sparse 64-bit ids (like PyTorch addresses), 5000 live, freed in random order */
    enum { N = 5000 };
    uint64_t *ids = malloc(N * sizeof *ids);
    dkv_rng g;
    dkv_rng_seed(&g, 5);
    for (int i = 0; i < N; i++) {
        ids[i] = 0x7f0000000000ull + (dkv_rng_u64(&g) & 0xffffffffffull) * 512;
        for (int j = 0; j < i; j++)
            if (ids[j] == ids[i])
                ids[i] += 512 * (uint64_t)(i + 1);
        assert_int_equal(dkv_mem_replay_time(r, i * 1e-3, &e), DKV_OK);
        assert_int_equal(dkv_mem_replay_alloc(r, ids[i], 1000 + (uint64_t)i, NULL, &e), DKV_OK);
    }
    dkv_mem_replay_counts c;
    dkv_mem_replay_counts_get(r, &c);
    assert_int_equal(c.live, N);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    for (int i = N - 1; i > 0; i--) {                    /* shuffle */
        int j = (int)dkv_rng_below(&g, (uint64_t)i + 1);
        uint64_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(dkv_mem_replay_free(r, ids[i], &e), DKV_OK);
    dkv_mem_replay_counts_get(r, &c);
    assert_int_equal(c.live, 0);
    assert_int_equal(c.n_alloc, N);
    assert_int_equal(c.n_free, N);
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    assert_int_equal(s.allocated, 0);
    assert_int_equal(dkv_mem_replay_time(r, 0.5, &e), DKV_EINVAL);   /* time went backwards */
    free(ids);
    dkv_mem_replay_free_handle(r);
    dkv_mem_free(m);
}

static void test_anomalies(void **state)
{
    (void)state;
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_BLOCKPOOL);
    o.block_bytes = 1024;
    o.chunk_blocks = 4;
    o.capacity_bytes = 8 * 1024;
    dkv_mem *m;
    dkv_mem_replay *r;
    dkv_err e = {0};
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_new(m, &r, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_alloc(r, 1, 4000, NULL, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_alloc(r, 1, 10, NULL, &e), DKV_ESTATE);       /* live twice */
    assert_non_null(strstr(e.msg, "again"));
    assert_int_equal(dkv_mem_replay_alloc(r, 2, 9000, NULL, &e), DKV_ENOMEM);     /* does not fit */
    assert_int_equal(dkv_mem_replay_free(r, 2, &e), DKV_OK);                      /* free of failed */
    assert_int_equal(dkv_mem_replay_free(r, 2, &e), DKV_ENOENT);                  /* now unknown */
    assert_int_equal(dkv_mem_replay_free(r, 77, &e), DKV_ENOENT);
    assert_int_equal(dkv_mem_replay_alloc(r, 3, 0, NULL, &e), DKV_EINVAL);        /* zero size */
    assert_int_equal(dkv_mem_replay_admit(r, 1, 100, &e), DKV_OK);                /* no-op here */
    assert_int_equal(dkv_mem_replay_finish(r, 1, &e), DKV_OK);
    dkv_mem_replay_counts c;
    dkv_mem_replay_counts_get(r, &c);
    assert_int_equal(c.n_alloc, 1);
    assert_int_equal(c.n_dup_id, 1);
    assert_int_equal(c.n_alloc_failed, 1);
    assert_int_equal(c.n_free_of_failed, 1);
    assert_int_equal(c.n_free_unknown, 2);
    assert_int_equal(c.live, 1);
    assert_int_equal(c.n_reserve, 0);
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    assert_int_equal(s.allocated, 4096);
    assert_int_equal(s.bad_size, 1);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    dkv_mem_replay_free_handle(r);
    dkv_mem_free(m);
    dkv_mem_replay_free_handle(NULL);
}

static void test_static_admission(void **state)
{
    (void)state;
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_STATIC);
    o.capacity_bytes = 1 << 20;
    dkv_mem *m;
    dkv_mem_replay *r;
    dkv_err e = {0};
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_new(m, &r, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_admit(r, 5, 600000, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_admit(r, 6, 600000, &e), DKV_ENOMEM);         /* no room */
    assert_int_equal(dkv_mem_replay_admit(r, 7, 0, &e), DKV_OK);                   /* nothing to reserve */
    dkv_mem_owner kv5 = {.tag = DKV_MEM_TAG_KV, .request = 5};
    dkv_mem_owner act5 = {.tag = DKV_MEM_TAG_ACTIVATION, .request = 5};
    assert_int_equal(dkv_mem_replay_alloc(r, 10, 1000, &kv5, &e), DKV_OK);        /* in the reservation */
    assert_int_equal(dkv_mem_replay_alloc(r, 11, 1000, &act5, &e), DKV_OK);       /* on its own */
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    assert_int_equal(s.reserved, 600064 + 1024);
    assert_int_equal(s.allocated, 1000 + 1024);
    assert_int_equal(dkv_mem_replay_finish(r, 5, &e), DKV_ESTATE);                /* KV still live */
    assert_int_equal(dkv_mem_replay_free(r, 10, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_free(r, 11, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_finish(r, 5, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_finish(r, 6, &e), DKV_OK);                    /* never reserved */
    dkv_mem_replay_counts c;
    dkv_mem_replay_counts_get(r, &c);
    assert_int_equal(c.n_reserve, 1);
    assert_int_equal(c.n_reserve_failed, 1);
    assert_int_equal(c.n_unreserve, 1);
    assert_int_equal(c.n_unreserve_failed, 1);
    dkv_mem_stats_get(m, &s);
    assert_int_equal(s.reserved, 0);
    assert_int_equal(s.bad_unknown_id, 0);
    dkv_mem_replay_free_handle(r);
    dkv_mem_free(m);
}

/* Dense small ids go to the flat array, others to the hash; an id first placed in the hash
 * moves to the array when the array grows over it.  A random stream of both kinds, checked
 * against a shadow after every event, and against the same stream through the API. */
typedef struct shadow_id {
    uint64_t id;
    dkv_mem_id api;       /* the same allocation made through the API on a second manager */
    int state;            /* 0 free, 1 live, 2 failed */
} shadow_id;

static void test_dense_and_sparse_ids(void **state)
{
    (void)state;
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_BLOCKPOOL);
    o.block_bytes = 1 << 20;
    o.chunk_blocks = 8;
    o.capacity_bytes = 300ull << 20;       /* tight: some allocations fail */
    dkv_mem *m, *m2;
    dkv_mem_replay *r;
    dkv_err e = {0};
    dkv_mem_options big = o;
    big.capacity_bytes = 1ull << 30;
    assert_int_equal(dkv_mem_new(&big, &m, &e), DKV_OK);
    assert_int_equal(dkv_mem_new(&o, &m2, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_new(m, &r, &e), DKV_OK);

    /* explicit migration: 2000 lands in the hash (too large for 0 live), then the array grows
     * over it once enough ids are live */
    assert_int_equal(dkv_mem_replay_alloc(r, 2000, 10, NULL, &e), DKV_OK);
    for (uint64_t i = 0; i < 300; i++)
        assert_int_equal(dkv_mem_replay_alloc(r, i, 10, NULL, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_alloc(r, 2100, 10, NULL, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_alloc(r, 2000, 10, NULL, &e), DKV_ESTATE);   /* still live */
    assert_int_equal(dkv_mem_replay_free(r, 2000, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_free(r, 2000, &e), DKV_ENOENT);
    assert_int_equal(dkv_mem_replay_free(r, 2100, &e), DKV_OK);
    for (uint64_t i = 0; i < 300; i++)
        assert_int_equal(dkv_mem_replay_free(r, i, &e), DKV_OK);
    dkv_mem_replay_counts c;
    dkv_mem_replay_counts_get(r, &c);
    assert_int_equal(c.live, 0);
    assert_int_equal(c.n_dup_id, 1);
    assert_int_equal(c.n_free_unknown, 1);
    dkv_mem_replay_free_handle(r);
    dkv_mem_free(m);
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_OK);
    assert_int_equal(dkv_mem_replay_new(m, &r, &e), DKV_OK);

    enum { NID = 600 };
    shadow_id *sh = calloc(NID, sizeof *sh);
    dkv_rng g;
    dkv_rng_seed(&g, 11);
    for (int i = 0; i < NID; i++)   /* dense, just past the array's first size, sparse */
        sh[i].id = i < 300 ? (uint64_t)i : i < 400 ? 1000 + (uint64_t)i * 7 : (dkv_rng_u64(&g) | 1ull << 40);
    uint64_t n_alloc = 0, n_failed = 0, n_free = 0, n_free_failed = 0, n_unknown = 0, n_dup = 0;
    for (int step = 0; step < 20000; step++) {
        shadow_id *x = &sh[dkv_rng_below(&g, NID)];
        uint64_t u = dkv_rng_below(&g, 100);
        if (u < 55) {
            uint64_t bytes = 1 + dkv_rng_below(&g, 6u << 20);
            dkv_status st = dkv_mem_replay_alloc(r, x->id, bytes, NULL, &e);
            if (x->state == 1) {
                assert_int_equal(st, DKV_ESTATE);
                n_dup++;
                continue;
            }
            dkv_mem_id id2;
            dkv_status st2 = dkv_mem_acquire(m2, bytes, NULL, &id2, &e);
            assert_int_equal(st, st2);
            if (st == DKV_OK) {
                x->state = 1;
                x->api = id2;
                n_alloc++;
            } else {
                assert_int_equal(st, DKV_ENOMEM);
                x->state = 2;
                n_failed++;
            }
        } else {
            dkv_status st = dkv_mem_replay_free(r, x->id, &e);
            if (x->state == 0) {
                assert_int_equal(st, DKV_ENOENT);
                n_unknown++;
            } else {
                assert_int_equal(st, DKV_OK);
                if (x->state == 1) {
                    assert_int_equal(dkv_mem_release(m2, x->api, &e), DKV_OK);
                    n_free++;
                } else {
                    n_free_failed++;
                }
                x->state = 0;
            }
        }
        dkv_mem_replay_counts_get(r, &c);
        assert_int_equal(c.n_alloc, n_alloc);
        assert_int_equal(c.n_alloc_failed, n_failed);
        assert_int_equal(c.n_free, n_free);
        assert_int_equal(c.n_free_of_failed, n_free_failed);
        assert_int_equal(c.n_free_unknown, n_unknown);
        assert_int_equal(c.n_dup_id, n_dup);
        uint64_t live = 0;   /* an id whose allocation failed stays known until freed */
        for (int i = 0; i < NID; i++)
            live += sh[i].state != 0;
        assert_int_equal(c.live, live);
        if (step % 97 == 0)
            assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    }
    assert_true(n_failed > 0 && n_dup > 0 && n_unknown > 0 && n_free_failed > 0);
    /* the replayed manager saw exactly the API's sequence */
    dkv_mem_stats a, b;
    dkv_mem_stats_get(m, &a);
    dkv_mem_stats_get(m2, &b);
    assert_int_equal(a.allocated, b.allocated);
    assert_int_equal(a.peak_reserved, b.peak_reserved);
    assert_int_equal(a.reuse_hits, b.reuse_hits);
    assert_int_equal(a.n_events, b.n_events);
    assert_true(a.mean_external_frag == b.mean_external_frag);
    assert_true(a.peak_internal_frag == b.peak_internal_frag);
    for (int i = 0; i < NID; i++)
        if (sh[i].state)
            assert_int_equal(dkv_mem_replay_free(r, sh[i].id, &e), DKV_OK);
    dkv_mem_replay_counts_get(r, &c);
    assert_int_equal(c.live, 0);
    free(sh);
    dkv_mem_replay_free_handle(r);
    dkv_mem_free(m);
    dkv_mem_free(m2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_ids_random_order),
        cmocka_unit_test(test_anomalies),
        cmocka_unit_test(test_static_admission),
        cmocka_unit_test(test_dense_and_sparse_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
