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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_ids_random_order),
        cmocka_unit_test(test_anomalies),
        cmocka_unit_test(test_static_admission),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
