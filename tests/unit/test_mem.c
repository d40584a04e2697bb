/* test_mem.c - property tests of every memory manager and the bad-input cases.
 *
 * A property run draws a long random sequence of operations from a fixed seed and, after
 * every step, checks dkv_mem_check (no overlap, requested <= allocated <= reserved,
 * free + allocated = reserved, counters == recount) and compares the statistics with a
 * shadow model kept by the test (live ids, refcounts, requested bytes).  The statistics over
 * the history (peaks, fragmentation peaks and event-weighted means, fragmentation at the
 * reserved peak) are recounted from a time series sampled at every event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mem.h"
#include "util/rng.h"

#define MAXLIVE 512

typedef struct shadow {
    dkv_mem_id id[MAXLIVE];
    uint64_t   req[MAXLIVE];
    uint32_t   ref[MAXLIVE];
    uint16_t   inst[MAXLIVE];
    int n;
    dkv_mem_id dead[64];      /* recently released ids (stale) */
    int n_dead;
    uint64_t requested;
} shadow;

static void check_now(dkv_mem *m, const shadow *sh, int step)
{
    dkv_err e = {0};
    if (dkv_mem_check(m, &e) != DKV_OK)
        fail_msg("step %d: %s", step, e.msg);
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    assert_true(s.requested <= s.allocated && s.allocated <= s.reserved);
    assert_true(s.reserved <= dkv_mem_get_options(m)->capacity_bytes);
    if (s.pending_bytes == 0) {   /* pending allocations still count; the shadow drops them */
        if (s.requested != sh->requested)
            fail_msg("step %d: requested %llu, shadow %llu", step, (unsigned long long)s.requested,
                     (unsigned long long)sh->requested);
        assert_int_equal(s.live, (uint64_t)sh->n);
    }
    assert_true(s.internal_frag >= 0 && s.internal_frag < 1);
    assert_true(s.external_frag >= 0 && s.external_frag <= 1);
    assert_true(s.reuse_hits <= s.reuse_total);
}

static void remember_dead(shadow *sh, dkv_mem_id id)
{
    if (sh->n_dead < 64)
        sh->dead[sh->n_dead++] = id;
    else
        sh->dead[id % 64] = id;
}

static uint64_t draw_size(dkv_rng *r, dkv_mem_kind kind)
{
    switch (kind) {
    case DKV_MEM_CACHING: {
        uint64_t u = dkv_rng_below(r, 100);
        if (u < 60)
            return 1 + dkv_rng_below(r, 1u << 20);            /* small pool */
        if (u < 90)
            return (1u << 20) + dkv_rng_below(r, 12u << 20);  /* 1-13 MiB */
        return (10u << 20) + dkv_rng_below(r, 60u << 20);    /* large, some oversize */
    }
    case DKV_MEM_BLOCKPOOL:
        return 1 + dkv_rng_below(r, 5 * 4096);
    default:
        return 1 + dkv_rng_below(r, 1u << 20);
    }
}

/* The history statistics recounted from the series (stride 1: one sample per event), exactly:
 * fractions compared by cross-multiplication, sums in 128 bits, the doubles computed from the
 * same integers as the library does, so equality is exact. */
__extension__ typedef unsigned __int128 u128;

static void check_history(dkv_mem *m, int step)
{
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    size_t n;
    const dkv_mem_sample *x = dkv_mem_series(m, &n);
    if (n != s.n_events)
        fail_msg("step %d: %zu samples for %llu events", step, n, (unsigned long long)s.n_events);
    uint64_t preq = 0, pal = 0, pres = s.setup_bytes;   /* reserved starts at the set-up */
    uint64_t inum = 0, iden = 1, enum_ = 0, eden = 1;
    u128 sreq = 0, sal = 0, sres = 0;
    double ext_at = 0, int_at = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t q = x[i].requested, a = x[i].allocated, r = x[i].reserved;
        if (x[i].event != i + 1)
            fail_msg("step %d: sample %zu is of event %llu", step, i, (unsigned long long)x[i].event);
        assert_true(q <= a && a <= r);
        preq = q > preq ? q : preq;
        pal = a > pal ? a : pal;
        if (r > pres) {
            pres = r;
            ext_at = ((double)r - (double)a) / (double)r;
            int_at = a > 0 ? ((double)a - (double)q) / (double)a : 0;
        }
        if (a > 0 && (u128)(a - q) * iden > (u128)inum * a) {
            inum = a - q;
            iden = a;
        }
        if (r > 0 && (u128)(r - a) * eden > (u128)enum_ * r) {
            enum_ = r - a;
            eden = r;
        }
        sreq += q;
        sal += a;
        sres += r;
    }
    assert_int_equal(s.peak_requested, preq);
    assert_int_equal(s.peak_allocated, pal);
    assert_int_equal(s.peak_reserved, pres);
    if (s.peak_internal_frag != (double)inum / (double)iden || s.peak_external_frag != (double)enum_ / (double)eden)
        fail_msg("step %d: fragmentation peaks %.17g %.17g, recount %.17g %.17g", step, s.peak_internal_frag,
                 s.peak_external_frag, (double)inum / (double)iden, (double)enum_ / (double)eden);
    double mi = sal > 0 ? (double)(sal - sreq) / (double)sal : 0, me = sres > 0 ? (double)(sres - sal) / (double)sres : 0;
    if (s.mean_internal_frag != mi || s.mean_external_frag != me)
        fail_msg("step %d: mean fragmentation %.17g %.17g, recount %.17g %.17g", step, s.mean_internal_frag,
                 s.mean_external_frag, mi, me);
    if (s.external_frag_at_peak != ext_at || s.internal_frag_at_peak != int_at)
        fail_msg("step %d: fragmentation at peak %.17g %.17g, recount %.17g %.17g", step, s.external_frag_at_peak,
                 s.internal_frag_at_peak, ext_at, int_at);
}

/* Bad input must leave the state as it was: compare the counters that matter. */
static void assert_same_state(const dkv_mem_stats *a, const dkv_mem_stats *b)
{
    assert_int_equal(a->requested, b->requested);
    assert_int_equal(a->allocated, b->allocated);
    assert_int_equal(a->reserved, b->reserved);
    assert_int_equal(a->live, b->live);
}

static void property_run(dkv_mem_options o, uint64_t seed, int steps)
{
    o.sample_stride = 1;      /* check_history recounts from every event */
    dkv_mem *m = NULL;
    dkv_err e = {0};
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_OK);
    dkv_rng r;
    dkv_rng_seed(&r, seed);
    shadow *sh = calloc(1, sizeof *sh);
    bool reserved[32] = {0};
    double now = 0;
    uint64_t n_ok = 0, n_fail = 0, n_bad = 0;
    for (int step = 0; step < steps; step++) {
        uint64_t op = dkv_rng_below(&r, 100);
        dkv_mem_stats before, after;
        dkv_mem_stats_get(m, &before);
        if (op < 45 && sh->n < MAXLIVE) {                       /* acquire */
            uint64_t bytes = draw_size(&r, o.kind);
            dkv_mem_owner who = {.tag = (uint8_t)dkv_rng_below(&r, DKV_MEM_TAG_COUNT),
                                 .request = (uint32_t)dkv_rng_below(&r, 32),
                                 .instance = (uint16_t)dkv_rng_below(&r, o.n_instances ? o.n_instances : 1)};
            dkv_mem_id id;
            dkv_status st = dkv_mem_acquire(m, bytes, &who, &id, &e);
            if (st == DKV_OK) {
                sh->id[sh->n] = id;
                sh->req[sh->n] = bytes;
                sh->ref[sh->n] = 1;
                sh->inst[sh->n] = who.instance;
                sh->n++;
                sh->requested += bytes;
                n_ok++;
            } else {
                assert_int_equal(st, DKV_ENOMEM);
                assert_true(strlen(e.msg) > 0);
                dkv_mem_stats_get(m, &after);
                assert_int_equal(after.n_failed, before.n_failed + 1);
                assert_int_equal(after.requested, before.requested);
                assert_int_equal(after.allocated, before.allocated);
                n_fail++;
            }
        } else if (op < 80 && sh->n > 0) {                      /* release */
            int k = (int)dkv_rng_below(&r, (uint64_t)sh->n);
            assert_int_equal(dkv_mem_release(m, sh->id[k], &e), DKV_OK);
            if (--sh->ref[k] == 0) {
                sh->requested -= sh->req[k];
                remember_dead(sh, sh->id[k]);
                sh->n--;
                sh->id[k] = sh->id[sh->n];
                sh->req[k] = sh->req[sh->n];
                sh->ref[k] = sh->ref[sh->n];
                sh->inst[k] = sh->inst[sh->n];
            }
        } else if (op < 87 && sh->n > 0) {                      /* retain */
            int k = (int)dkv_rng_below(&r, (uint64_t)sh->n);
            assert_int_equal(dkv_mem_retain(m, sh->id[k], &e), DKV_OK);
            sh->ref[k]++;
        } else if (op < 92) {                                   /* bad input */
            dkv_status st;
            uint64_t which = dkv_rng_below(&r, 4);
            if (which == 0 && sh->n_dead > 0) {
                dkv_mem_id id = sh->dead[dkv_rng_below(&r, (uint64_t)sh->n_dead)];
                st = dkv_mem_release(m, id, &e);
                assert_int_equal(st, DKV_ESTATE);
            } else if (which == 1) {
                st = dkv_mem_release(m, 0xdead00000000ull | 0xfffffff, &e);
                assert_int_equal(st, DKV_ENOENT);
            } else if (which == 2) {
                dkv_mem_id id;
                st = dkv_mem_acquire(m, 0, NULL, &id, &e);
                assert_int_equal(st, DKV_EINVAL);
                assert_int_equal(id, 0);
            } else {
                st = dkv_mem_retain(m, 0, &e);
                assert_int_equal(st, DKV_ENOENT);
            }
            dkv_mem_stats_get(m, &after);
            assert_same_state(&before, &after);
            n_bad++;
        } else if (op < 96 && o.release_delay_s > 0) {         /* time passes */
            now += dkv_rng_uniform(&r) * o.release_delay_s;
            assert_int_equal(dkv_mem_tick(m, now, &e), DKV_OK);
        } else if (o.kind == DKV_MEM_STATIC) {                  /* admission / completion */
            uint32_t q = (uint32_t)dkv_rng_below(&r, 32);
            if (!reserved[q]) {
                dkv_status st = dkv_mem_reserve(m, q, 1 + dkv_rng_below(&r, 8u << 20), &e);
                assert_true(st == DKV_OK || st == DKV_ENOMEM);
                reserved[q] = st == DKV_OK;
            } else {
                dkv_status st = dkv_mem_unreserve(m, q, &e);
                dkv_mem_stats_get(m, &after);
                if (st == DKV_OK)
                    reserved[q] = false;
                else
                    assert_int_equal(st, DKV_ESTATE);   /* still has live allocations */
            }
        } else if (o.kind == DKV_MEM_BLOCKPOOL && o.share == DKV_MEM_SHARED) {  /* resize */
            if (dkv_rng_below(&r, 2)) {
                uint64_t target = dkv_rng_below(&r, o.capacity_bytes);
                uint64_t released;
                assert_int_equal(dkv_mem_shrink(m, target, &released, &e), DKV_OK);
                dkv_mem_stats_get(m, &after);
                assert_int_equal(after.reserved + released, before.reserved);
            } else {
                uint64_t want = before.reserved + dkv_rng_below(&r, o.capacity_bytes / 4);
                dkv_status st = dkv_mem_grow(m, want, &e);
                assert_true(st == DKV_OK || st == DKV_ENOMEM);
            }
        }
        check_now(m, sh, step);
        if (step % 250 == 0)
            check_history(m, step);
    }
    check_history(m, steps);
    if (getenv("DKV_TEST_VERBOSE")) {
        dkv_mem_stats v;
        dkv_mem_stats_get(m, &v);
        printf("kind %s seed %llu: ok %llu fail %llu (frag %llu) bad %llu; reserved %llu peak %llu; segs %llu devallocs %llu frees %llu; retries %llu ooms %llu; reuse %.3f; inactive_split %llu\n",
               dkv_mem_kind_name(o.kind), (unsigned long long)seed, (unsigned long long)n_ok,
               (unsigned long long)n_fail, (unsigned long long)v.n_failed_frag, (unsigned long long)n_bad,
               (unsigned long long)v.reserved, (unsigned long long)v.peak_reserved,
               (unsigned long long)v.segments, (unsigned long long)v.device_allocs,
               (unsigned long long)v.device_frees, (unsigned long long)v.num_alloc_retries,
               (unsigned long long)v.num_ooms, v.reuse_rate, (unsigned long long)v.inactive_split_blocks);
    }
    /* every kind must have exercised success, failure and bad input */
    assert_true(n_ok > (uint64_t)steps / 10);
    assert_true(n_bad > 0);
    if (o.kind != DKV_MEM_STATIC)
        assert_true(n_fail > 0);
    /* release everything: back to zero allocated */
    while (sh->n > 0) {
        sh->n--;
        while (sh->ref[sh->n]--)
            assert_int_equal(dkv_mem_release(m, sh->id[sh->n], &e), DKV_OK);
    }
    dkv_mem_flush_deferred(m);
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    assert_int_equal(s.allocated, 0);
    assert_int_equal(s.requested, 0);
    assert_int_equal(s.live, 0);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    check_history(m, steps + 1);
    free(sh);
    dkv_mem_free(m);
}

static void test_property_static(void **state)
{
    (void)state;
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_STATIC);
    o.capacity_bytes = 96ull << 20;
    property_run(o, 1, 4000);
    o.release_delay_s = 0.01;
    property_run(o, 2, 4000);
}

static void test_property_caching(void **state)
{
    (void)state;
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_CACHING);
    o.capacity_bytes = 512ull << 20;
    property_run(o, 3, 6000);
    o.max_split_size = 32ull << 20;
    property_run(o, 4, 6000);
    o.release_delay_s = 0.005;
    property_run(o, 5, 4000);
}

static void test_property_blockpool(void **state)
{
    (void)state;
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_BLOCKPOOL);
    o.block_bytes = 4096;
    o.chunk_blocks = 16;
    o.capacity_bytes = 64 * 16 * 4096;
    property_run(o, 6, 6000);
    o.shrink = true;
    o.release_delay_s = 0.01;
    property_run(o, 7, 4000);
    o.shrink = false;
    o.release_delay_s = 0;
    o.n_instances = 4;
    for (int i = 0; i < 4; i++)
        o.quota_bytes[i] = (uint64_t)(8 + 4 * i) * 16 * 4096;
    property_run(o, 8, 6000);
    o.share = DKV_MEM_PARTITIONED;
    property_run(o, 9, 6000);
}

/* ---------------------------------------------------------------- bad input, one by one */

static void test_bad_input(void **state)
{
    (void)state;
    for (int k = 0; k < dkv_mem_kind_names.n; k++) {
        dkv_mem_options o = dkv_mem_options_default((dkv_mem_kind)k);
        o.capacity_bytes = 64ull << 20;
        o.block_bytes = 1 << 20;
        o.chunk_blocks = 4;
        dkv_mem *m = NULL;
        dkv_err e = {0};
        assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_OK);
        dkv_mem_id a, b, z = 77;
        assert_int_equal(dkv_mem_acquire(m, 1000, NULL, &a, &e), DKV_OK);
        assert_true(a != 0);
        /* zero size */
        assert_int_equal(dkv_mem_acquire(m, 0, NULL, &z, &e), DKV_EINVAL);
        assert_int_equal(z, 0);
        assert_non_null(strstr(e.msg, "size"));
        /* bad tag, bad instance */
        dkv_mem_owner bad = {.tag = 9};
        assert_int_equal(dkv_mem_acquire(m, 10, &bad, &z, &e), DKV_EINVAL);
        assert_non_null(strstr(e.msg, "tag"));
        bad = (dkv_mem_owner){.instance = 3};
        assert_int_equal(dkv_mem_acquire(m, 10, &bad, &z, &e), DKV_EINVAL);
        assert_non_null(strstr(e.msg, "instance"));
        /* unknown id */
        assert_int_equal(dkv_mem_release(m, 12345, &e), DKV_ENOENT);
        assert_non_null(strstr(e.msg, "unknown"));
        assert_int_equal(dkv_mem_retain(m, 0, &e), DKV_ENOENT);
        /* double release */
        assert_int_equal(dkv_mem_release(m, a, &e), DKV_OK);
        assert_int_equal(dkv_mem_release(m, a, &e), DKV_ESTATE);
        assert_non_null(strstr(e.msg, "already released"));
        assert_int_equal(dkv_mem_retain(m, a, &e), DKV_ESTATE);
        /* stale id after the slot was reused: still a double release, never aliases */
        assert_int_equal(dkv_mem_acquire(m, 2000, NULL, &b, &e), DKV_OK);
        assert_true(b != a);
        assert_int_equal(dkv_mem_release(m, a, &e), DKV_ESTATE);
        dkv_mem_info info;
        assert_int_equal(dkv_mem_info_get(m, b, &info, &e), DKV_OK);
        assert_int_equal(info.refcount, 1);
        /* refcount underflow on a shared allocation */
        assert_int_equal(dkv_mem_retain(m, b, &e), DKV_OK);
        assert_int_equal(dkv_mem_release(m, b, &e), DKV_OK);
        assert_int_equal(dkv_mem_release(m, b, &e), DKV_OK);
        assert_int_equal(dkv_mem_release(m, b, &e), DKV_ESTATE);
        assert_non_null(strstr(e.msg, "underflow"));
        /* capacity exhaustion */
        assert_int_equal(dkv_mem_acquire(m, 65ull << 20, NULL, &z, &e), DKV_ENOMEM);
        assert_true(strlen(e.msg) > 10);
        /* time going backwards */
        assert_int_equal(dkv_mem_tick(m, 1.0, &e), DKV_OK);
        assert_int_equal(dkv_mem_tick(m, 0.5, &e), DKV_EINVAL);
        dkv_mem_stats s;
        dkv_mem_stats_get(m, &s);
        assert_int_equal(s.bad_size, 1);
        assert_int_equal(s.bad_unknown_id, 2);
        assert_int_equal(s.bad_double_release, 3);
        assert_int_equal(s.bad_underflow, 1);
        assert_int_equal(s.bad_other, 3);
        assert_int_equal(s.n_failed, 1);
        assert_int_equal(s.allocated, 0);
        assert_int_equal(s.live, 0);
        assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
        dkv_mem_free(m);
    }
    dkv_mem_free(NULL);
}

static void test_options_rejected(void **state)
{
    (void)state;
    dkv_mem *m = (dkv_mem *)1;
    dkv_err e = {0};
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_BLOCKPOOL);
    o.capacity_bytes = 0;
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_EINVAL);
    assert_null(m);
    assert_non_null(strstr(e.msg, "capacity"));
    o = dkv_mem_options_default(DKV_MEM_BLOCKPOOL);
    o.chunk_blocks = 3;
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "chunk_blocks"));
    o = dkv_mem_options_default(DKV_MEM_CACHING);
    o.max_split_size = 1 << 20;
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_EINVAL);
    assert_non_null(strstr(e.msg, "max_split_size"));
    o = dkv_mem_options_default(DKV_MEM_STATIC);
    o.release_delay_s = -1;
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_EINVAL);
    int k, t;
    assert_int_equal(dkv_names_parse(&dkv_mem_kind_names, "caching", &k, &e), DKV_OK);
    assert_int_equal(k, DKV_MEM_CACHING);
    assert_int_equal(dkv_names_parse(&dkv_mem_kind_names, "vmm", &k, &e), DKV_EINVAL);
    assert_int_equal(dkv_mem_kind_names.n, 3);
    assert_int_equal(dkv_names_parse(&dkv_mem_tag_names, "logits", &t, &e), DKV_OK);
    assert_int_equal(t, DKV_MEM_TAG_LOGITS);
    assert_string_equal(dkv_mem_tag_name(DKV_MEM_TAG_STAGING), "staging");
}

/* Deferred release: the memory stays allocated until the clock passes release + delay. */
static void test_deferred_release(void **state)
{
    (void)state;
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_BLOCKPOOL);
    o.block_bytes = 1024;
    o.chunk_blocks = 8;
    o.capacity_bytes = 64 * 1024;
    o.release_delay_s = 0.5;
    dkv_mem *m = NULL;
    dkv_err e = {0};
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_OK);
    dkv_mem_id a, b;
    assert_int_equal(dkv_mem_acquire(m, 3000, NULL, &a, &e), DKV_OK);
    assert_int_equal(dkv_mem_tick(m, 1.0, &e), DKV_OK);
    assert_int_equal(dkv_mem_acquire(m, 1000, NULL, &b, &e), DKV_OK);
    assert_int_equal(dkv_mem_release(m, a, &e), DKV_OK);         /* due at 1.5 */
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    assert_int_equal(s.allocated, 4 * 1024);
    assert_int_equal(s.pending_bytes, 3 * 1024);
    dkv_mem_info info;
    assert_int_equal(dkv_mem_info_get(m, a, &info, &e), DKV_OK);
    assert_true(info.pending);
    assert_int_equal(dkv_mem_release(m, a, &e), DKV_ESTATE);    /* released, pending */
    assert_non_null(strstr(e.msg, "pending"));
    assert_int_equal(dkv_mem_tick(m, 1.2, &e), DKV_OK);
    assert_int_equal(dkv_mem_release(m, b, &e), DKV_OK);         /* due at 1.7 */
    assert_int_equal(dkv_mem_tick(m, 1.49, &e), DKV_OK);
    dkv_mem_stats_get(m, &s);
    assert_int_equal(s.allocated, 4 * 1024);
    assert_int_equal(dkv_mem_tick(m, 1.5, &e), DKV_OK);
    dkv_mem_stats_get(m, &s);
    assert_int_equal(s.allocated, 1024);
    assert_int_equal(s.pending_bytes, 1024);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    assert_int_equal(dkv_mem_tick(m, 10, &e), DKV_OK);
    dkv_mem_stats_get(m, &s);
    assert_int_equal(s.allocated, 0);
    assert_int_equal(s.live, 0);
    assert_int_equal(s.pending_bytes, 0);
    assert_int_equal(dkv_mem_check(m, &e), DKV_OK);
    dkv_mem_free(m);
}

/* Time series: one sample per `stride` events, carrying the counters of that moment. */
static void test_series_and_peaks(void **state)
{
    (void)state;
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_CACHING);
    o.sample_stride = 2;
    dkv_mem *m = NULL;
    dkv_err e = {0};
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_OK);
    dkv_mem_id id[4];
    for (int i = 0; i < 4; i++) {
        assert_int_equal(dkv_mem_tick(m, i * 0.25, &e), DKV_OK);
        assert_int_equal(dkv_mem_acquire(m, 1000, NULL, &id[i], &e), DKV_OK);
    }
    for (int i = 0; i < 4; i++)
        assert_int_equal(dkv_mem_release(m, id[i], &e), DKV_OK);
    size_t n;
    const dkv_mem_sample *s = dkv_mem_series(m, &n);
    assert_int_equal(n, 4);
    assert_int_equal(s[0].event, 2);
    assert_int_equal(s[0].requested, 2000);
    assert_int_equal(s[0].allocated, 2048);
    assert_int_equal(s[0].reserved, 2u << 20);
    assert_true(s[0].time_s == 0.25);
    assert_int_equal(s[1].allocated, 4096);
    assert_int_equal(s[3].allocated, 0);
    dkv_mem_stats st;
    dkv_mem_stats_get(m, &st);
    assert_int_equal(st.peak_requested, 4000);
    assert_int_equal(st.peak_allocated, 4096);
    assert_int_equal(st.tag[DKV_MEM_TAG_KV].peak_allocated, 4096);
    assert_int_equal(st.tag[DKV_MEM_TAG_KV].n_acquire, 4);
    assert_int_equal(st.reserved, 2u << 20);   /* cached, not returned */
    assert_true(st.external_frag == 1.0);
    /* reserved peaked at the first acquisition: 1024 of 2 MiB allocated, 1000 of 1024 asked */
    assert_true(fabs(st.external_frag_at_peak - (1.0 - 1024.0 / (2 << 20))) < 1e-12);
    assert_true(fabs(st.internal_frag_at_peak - 24.0 / 1024.0) < 1e-12);
    assert_true(fabs(st.peak_internal_frag - 24.0 / 1024.0) < 1e-12);
    assert_true(fabs(st.mean_internal_frag - 24.0 / 1024.0) < 1e-12);
    /* three of four acquisitions came from the cached remainder of the first segment,
     * never used before: reuse counts memory used before, so 0 */
    assert_int_equal(st.reuse_total, 4);
    assert_int_equal(st.reuse_hits, 0);
    dkv_mem_id again;
    assert_int_equal(dkv_mem_acquire(m, 512, NULL, &again, &e), DKV_OK);
    dkv_mem_stats_get(m, &st);
    assert_int_equal(st.reuse_hits, 1);
    dkv_mem_free(m);
}

/* An external-fragmentation peak one byte past the last one (blocks of 1 byte, so allocated
 * moves by bytes): the incremental peak test must not miss it. */
static void test_frag_peak_boundary(void **state)
{
    (void)state;
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_BLOCKPOOL);
    o.block_bytes = 1;
    o.chunk_blocks = 1024;
    o.capacity_bytes = 4096;
    dkv_mem *m = NULL;
    dkv_err e = {0};
    assert_int_equal(dkv_mem_new(&o, &m, &e), DKV_OK);
    dkv_mem_id x, y, z;
    assert_int_equal(dkv_mem_acquire(m, 500, NULL, &x, &e), DKV_OK);   /* 524 / 1024 free */
    assert_int_equal(dkv_mem_acquire(m, 499, NULL, &y, &e), DKV_OK);
    dkv_mem_stats st;
    dkv_mem_stats_get(m, &st);
    assert_true(st.peak_external_frag == 524.0 / 1024.0);
    assert_int_equal(dkv_mem_release(m, x, &e), DKV_OK);                /* 525 / 1024: one byte more */
    dkv_mem_stats_get(m, &st);
    assert_true(st.peak_external_frag == 525.0 / 1024.0);
    assert_int_equal(dkv_mem_acquire(m, 2000, NULL, &z, &e), DKV_OK);  /* reserved 3072, 2499 held */
    assert_int_equal(dkv_mem_release(m, z, &e), DKV_OK);                /* 2573 / 3072 */
    dkv_mem_stats_get(m, &st);
    assert_true(st.peak_external_frag == 2573.0 / 3072.0);
    assert_true(st.external_frag_at_peak == 573.0 / 3072.0);
    assert_int_equal(dkv_mem_release(m, y, &e), DKV_OK);                /* nothing held: 1 */
    dkv_mem_stats_get(m, &st);
    assert_true(st.peak_external_frag == 1.0);
    dkv_mem_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_property_static),
        cmocka_unit_test(test_property_caching),
        cmocka_unit_test(test_property_blockpool),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_options_rejected),
        cmocka_unit_test(test_deferred_release),
        cmocka_unit_test(test_series_and_peaks),
        cmocka_unit_test(test_frag_peak_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
