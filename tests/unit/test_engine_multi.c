/* test_engine_multi.c - threaded instances (dkv_engine_run_instances) on a tiny model with a toy
 * backend per instance: every request finishes on the instance round_robin gives it, the pool's
 * accounting closes (no KV left, peak within the pool), no pool block is used by two steps in
 * flight at once, the timeslice ticket runs one step at a time, a real clock waits for arrivals,
 * and what cannot be reproduced by separate instances is refused with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"

#define NBLK 4096

/* What all toys see: blocks in use by a step in flight, steps in flight. */
typedef struct board {
    pthread_mutex_t mu;
    int32_t owner[NBLK];         /* instance + 1 of the step in flight using the block, 0 none */
    uint32_t in_flight, max_in_flight;
    bool clash, bad_request;
    bool partitioned;            /* each instance has its own pool (and arena): block ids repeat */
    uint64_t steps;
} board;

typedef struct toy {
    board *b;
    int32_t inst;
    uint32_t k;
    size_t n_req;                /* the instance's own workload (setup.workload) */
    double sleep_s;
    uint64_t steps;
    bool begun, ended;
} toy;

static dkv_status toy_begin(void *ctx, const dkv_backend_setup *s, dkv_err *err)
{
    (void)err;
    toy *t = ctx;
    t->begun = true;
    t->n_req = s->workload ? dkv_workload_count(s->workload) : 0;
    return DKV_OK;
}

static void toy_end(void *ctx) { ((toy *)ctx)->ended = true; }

static void mark(toy *t, const dkv_step_plan *p, bool on)
{
    for (uint32_t i = 0; i < p->n_items; i++)
        for (uint32_t j = 0; j < p->items[i].n_kv_blocks; j++) {
            uint32_t b = p->items[i].kv_blocks[j];
            if (b >= NBLK)
                continue;
            if (on && !t->b->partitioned && t->b->owner[b] != 0 && t->b->owner[b] != t->inst + 1)
                t->b->clash = true;
            t->b->owner[b] = on ? t->inst + 1 : 0;
        }
}

static dkv_status toy_step(void *ctx, const dkv_step_plan *p, dkv_step_cost *out, dkv_err *err)
{
    (void)err;
    toy *t = ctx;
    pthread_mutex_lock(&t->b->mu);
    mark(t, p, true);
    t->b->in_flight++;
    if (t->b->in_flight > t->b->max_in_flight)
        t->b->max_in_flight = t->b->in_flight;
    t->b->steps++;
    pthread_mutex_unlock(&t->b->mu);
    uint64_t q = 0;
    for (uint32_t i = 0; i < p->n_items; i++) {
        q += p->items[i].q_tokens;
        /* the instance's own request indices (its share of the workload), its own instance number */
        if (p->items[i].request >= t->n_req || p->items[i].instance != (uint32_t)t->inst)
            t->b->bad_request = true;
    }
    if (t->sleep_s > 0) {
        struct timespec ts = {0, (long)(t->sleep_s * 1e9)};
        nanosleep(&ts, NULL);
    }
    t->steps++;
    out->time_s = out->compute_s = 1e-3 + 1e-6 * (double)q;
    pthread_mutex_lock(&t->b->mu);
    mark(t, p, false);
    t->b->in_flight--;
    pthread_mutex_unlock(&t->b->mu);
    return DKV_OK;
}

static const dkv_backend_i toy_iface = {.name = "toy", .begin = toy_begin, .run_step = toy_step, .end = toy_end};

typedef struct fx {
    dkv_model m;
    dkv_gpu g;
    board b;
    toy t[8];
    dkv_backend be[8], *bp[8];
    dkv_workload *w;
    dkv_engine_config c;
    dkv_instances_options o;
    dkv_engine_result *r;
    dkv_err err;
} fx;

static void fx_init(fx *f, uint32_t k, double sleep_s)
{
    memset(f, 0, sizeof *f);
    f->m = (dkv_model){.name = "tiny", .n_layers = 2, .hidden = 64, .ffn = 128, .n_heads = 4, .n_kv_heads = 4,
                       .head_dim = 16, .vocab = 100, .mask_id = 99, .max_len = 1024, .rope_theta = 10000,
                       .weight_dtype = DKV_DTYPE_BF16, .kv_dtype = DKV_DTYPE_BF16, .act_dtype = DKV_DTYPE_BF16};
    f->g = (dkv_gpu){.name = "toy", .hbm_bytes = 256.0 * 1048576, .hbm_bw = 1e12, .flops_bf16 = 1e14,
                     .flops_fp32 = 1e13, .pcie_h2d_pinned = 1e10, .pcie_d2h_pinned = 1e10,
                     .pcie_bidir_pinned = 1.8e10, .pcie_h2d_pageable = 5e9, .pcie_d2h_pageable = 5e9,
                     .cost_per_hour = 2.0, .max_num_logits = 1024, .max_num_batched_tokens = 8192, .retention = 0.5};
    pthread_mutex_init(&f->b.mu, NULL);
    for (uint32_t i = 0; i < k; i++) {
        f->t[i] = (toy){.b = &f->b, .inst = (int32_t)i, .k = k, .sleep_s = sleep_s};
        f->be[i] = (dkv_backend){.iface = &toy_iface, .ctx = &f->t[i]};
        f->bp[i] = &f->be[i];
    }
    dkv_engine_config_default(&f->c);
    f->c.model = &f->m;
    f->c.gpu = &f->g;
    f->c.backend = &f->be[0];
    f->c.decode.block_len = 16;
    f->c.mem.chunk_blocks = 1;
    f->c.sizing.block_tokens = 16;                   /* 8 KiB blocks (512 B per token) */
    f->c.mem.capacity_bytes = 64 * 8192;             /* 64 blocks */
    f->c.device_capacity_bytes = 64u << 20;
    f->c.n_instances = k;
    f->c.max_num_seqs = 4;
    f->o.backends = f->bp;
}

static void fx_workload(fx *f, uint32_t n, double interval, uint32_t P)
{
    dkv_request *rs = calloc(n, sizeof *rs);
    assert_non_null(rs);
    for (uint32_t i = 0; i < n; i++)
        rs[i] = (dkv_request){.id = 1000 + i, .arrival_s = interval * i, .prompt_tokens = P + 16 * (i % 3),
                              .gen_tokens = 32, .user = DKV_NO_USER, .next_of_user = DKV_NO_NEXT};
    dkv_workload_free(f->w);
    assert_int_equal(dkv_workload_from_requests(rs, n, NULL, &f->w, &f->err), DKV_OK);
    free(rs);
    f->c.workload = f->w;
}

static void fx_fini(fx *f)
{
    dkv_engine_result_free(f->r);
    dkv_workload_free(f->w);
    pthread_mutex_destroy(&f->b.mu);
}

/* Everything finishes where round_robin puts it; the pool is empty after; steps are numbered
 * 0..n-1 in the order the backends took them. */
static void check_run(fx *f, uint32_t k, uint32_t n)
{
    const dkv_run_summary *s = dkv_engine_result_summary(f->r);
    assert_int_equal(s->n_requests, n);
    assert_int_equal(s->n_done, n);
    assert_int_equal(s->end_allocated_kv, 0);
    assert_true(s->peak_tag[DKV_MEM_TAG_KV] > 0);
    assert_true(s->peak_tag[DKV_MEM_TAG_KV] <= s->kv_capacity_bytes);
    assert_true(s->throughput_rps > 0 && s->sim_time_s > 0);
    assert_true(s->latency_p99_s >= s->latency_p50_s && s->latency_p50_s > 0);
    size_t nr, ns;
    const dkv_req_record *r = dkv_engine_result_requests(f->r, &nr);
    assert_int_equal(nr, n);
    for (size_t g = 0; g < nr; g++) {
        assert_int_equal(r[g].id, dkv_workload_get(f->w, g)->id);   /* workload (arrival) order */
        assert_int_equal(r[g].instance, g % k);
        assert_int_equal(r[g].status, DKV_REQ_DONE);
        assert_true(r[g].finish_s > r[g].arrival_s);
    }
    const dkv_step_record *st = dkv_engine_result_steps(f->r, &ns);
    uint64_t toy_steps = 0;
    for (uint32_t i = 0; i < k; i++) {
        toy_steps += f->t[i].steps;
        assert_true(f->t[i].begun && f->t[i].ended);
        assert_true(f->t[i].steps > 0);
    }
    assert_int_equal(ns, toy_steps);
    assert_int_equal(s->n_steps, toy_steps);
    for (size_t i = 0; i < ns; i++) {
        assert_int_equal(st[i].index, i);
        assert_true(st[i].instance < k);
    }
    assert_false(f->b.clash);
    assert_false(f->b.bad_request);
}

static void test_instances_shared_partitioned(void **state)
{
    (void)state;
    static const uint32_t ks[] = {2, 4};
    for (int a = 0; a < 2; a++)
        for (int place = 0; place < 2; place++)
            for (int lock = 0; lock < 2; lock++) {
                uint32_t k = ks[a];
                fx f;
                fx_init(&f, k, 0);
                fx_workload(&f, 24, 0, 48);
                f.c.placement.mode = place ? DKV_PLACE_PARTITIONED : DKV_PLACE_SHARED;
                f.b.partitioned = place;
                f.o.gpu_lock = lock;
                if (dkv_engine_run_instances(&f.c, &f.o, &f.r, &f.err) != DKV_OK)
                    fail_msg("k=%u place=%d lock=%d: %s", k, place, lock, f.err.msg);
                check_run(&f, k, 24);
                if (lock)
                    assert_int_equal(f.b.max_in_flight, 1);
                fx_fini(&f);
            }
}

/* A shared pool lets one instance borrow beyond its fair share; a partition does not. */
static void test_instances_borrowing(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, 2, 0);
    f.c.mem.capacity_bytes = 20 * 8192;              /* 20 blocks: 10 per partition */
    dkv_request rs[4] = {
        {.id = 1000, .prompt_tokens = 176, .gen_tokens = 16, .user = DKV_NO_USER, .next_of_user = DKV_NO_NEXT},
        {.id = 1001, .prompt_tokens = 16, .gen_tokens = 16, .user = DKV_NO_USER, .next_of_user = DKV_NO_NEXT},
        {.id = 1002, .arrival_s = 0.5, .prompt_tokens = 16, .gen_tokens = 16, .user = DKV_NO_USER,
         .next_of_user = DKV_NO_NEXT},
        {.id = 1003, .arrival_s = 0.5, .prompt_tokens = 16, .gen_tokens = 16, .user = DKV_NO_USER,
         .next_of_user = DKV_NO_NEXT}};   /* request 0: 192 tokens = 12 blocks > 10 */
    assert_int_equal(dkv_workload_from_requests(rs, 4, NULL, &f.w, &f.err), DKV_OK);
    f.c.workload = f.w;
    f.c.decode.block_len = 16;
    f.c.placement.mode = DKV_PLACE_SHARED;
    assert_int_equal(dkv_engine_run_instances(&f.c, &f.o, &f.r, &f.err), DKV_OK);
    assert_int_equal(dkv_engine_result_summary(f.r)->n_done, 4);
    dkv_engine_result_free(f.r);
    f.r = NULL;
    f.c.placement.mode = DKV_PLACE_PARTITIONED;
    f.b.partitioned = true;
    assert_int_equal(dkv_engine_run_instances(&f.c, &f.o, &f.r, &f.err), DKV_OK);
    const dkv_run_summary *s = dkv_engine_result_summary(f.r);
    assert_int_equal(s->n_oom, 1);
    assert_int_equal(s->n_done, 3);
    size_t n;
    assert_int_equal(dkv_engine_result_requests(f.r, &n)[0].status, DKV_REQ_OOM);
    fx_fini(&f);
}

/* A pool too small for all instances' requests at once: instances wait for each other (or
 * preempt their own) and every request still finishes; the shared pool never overflows. */
static void test_instances_contention(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, 4, 0.0002);
    f.c.mem.capacity_bytes = 24 * 8192;              /* 24 blocks; a request needs 4-6 */
    f.o.real_clock = true;
    f.o.gpu_lock = true;
    fx_workload(&f, 32, 0, 48);
    if (dkv_engine_run_instances(&f.c, &f.o, &f.r, &f.err) != DKV_OK)
        fail_msg("%s", f.err.msg);
    check_run(&f, 4, 32);
    fx_fini(&f);
}

/* A real clock: requests arriving over time are served after they arrive, and the run lasts at
 * least until the last arrival. */
static void test_instances_real_clock(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, 2, 0.0005);
    f.o.real_clock = true;
    f.o.gpu_lock = true;
    fx_workload(&f, 8, 0.01, 32);
    if (dkv_engine_run_instances(&f.c, &f.o, &f.r, &f.err) != DKV_OK)
        fail_msg("%s", f.err.msg);
    check_run(&f, 2, 8);
    size_t n;
    const dkv_req_record *r = dkv_engine_result_requests(f.r, &n);
    for (size_t g = 0; g < n; g++)
        assert_true(r[g].start_s >= r[g].arrival_s);
    assert_true(dkv_engine_result_summary(f.r)->sim_time_s >= 0.07);
    fx_fini(&f);
}

/* Three instances on a pool that holds two requests (12 blocks, 6 each, at most 8 per instance by
 * the quotas), with late arrivals so instances go idle while others are blocked: an instance that
 * holds no KV waits for the holders rather than failing its request (each request fits the pool
 * alone: the single engine serves them all), and every request finishes. */
static void test_instances_contention_with_arrivals(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, 3, 0.0002);
    f.c.mem.capacity_bytes = 12 * 8192;
    f.o.real_clock = true;
    f.o.gpu_lock = true;
    dkv_request rs[9];
    for (uint32_t i = 0; i < 9; i++)
        rs[i] = (dkv_request){.id = 1000 + i, .arrival_s = i % 3 == 2 ? 0.2 : 0, .prompt_tokens = 64,
                              .gen_tokens = 32, .user = DKV_NO_USER, .next_of_user = DKV_NO_NEXT};
    assert_int_equal(dkv_workload_from_requests(rs, 9, NULL, &f.w, &f.err), DKV_OK);
    f.c.workload = f.w;
    dkv_engine_config c1 = f.c;   /* one engine, three instances: every request fits */
    c1.backend = &f.be[0];
    dkv_engine_result *r1 = NULL;
    assert_int_equal(dkv_engine_run(&c1, &r1, &f.err), DKV_OK);
    assert_int_equal(dkv_engine_result_summary(r1)->n_done, 9);
    dkv_engine_result_free(r1);
    f.t[0].steps = 0;   /* toy 0 served all three instances there: forget it */
    f.t[0].begun = f.t[0].ended = false;
    f.b.bad_request = f.b.clash = false;
    if (dkv_engine_run_instances(&f.c, &f.o, &f.r, &f.err) != DKV_OK)
        fail_msg("%s", f.err.msg);
    check_run(&f, 3, 9);
    assert_true(dkv_engine_result_summary(f.r)->sim_time_s >= 0.2);
    fx_fini(&f);
}

static void expect_refusal(fx *f, const char *needle)
{
    dkv_engine_result *r = NULL;
    dkv_err err = {0};
    assert_int_not_equal(dkv_engine_run_instances(&f->c, &f->o, &r, &err), DKV_OK);
    assert_null(r);
    if (!strstr(err.msg, needle))
        fail_msg("expected '%s' in: %s", needle, err.msg);
}

static void test_instances_refusals(void **state)
{
    (void)state;
    fx f;
    fx_init(&f, 2, 0);
    fx_workload(&f, 4, 0, 32);
    f.c.instance_route = DKV_IROUTE_LEAST_LOADED;
    expect_refusal(&f, "least_loaded");
    f.c.instance_route = DKV_IROUTE_ROUND_ROBIN;
    f.c.n_instances = 1;
    expect_refusal(&f, "instances.n is 1");
    f.c.n_instances = 2;
    f.c.mem.kind = DKV_MEM_CACHING;
    expect_refusal(&f, "blockpool");
    f.c.mem.kind = DKV_MEM_BLOCKPOOL;
    f.c.step_host_s = 0.01;
    f.o.real_clock = true;
    expect_refusal(&f, "step_host_s");
    f.c.step_host_s = 0;
    f.o.backends = NULL;
    expect_refusal(&f, "one backend per instance");
    assert_false(f.t[0].begun);
    fx_fini(&f);
}

/* Partitioned pools on a real clock: the run's peak KV is the event-exact peak of all instances'
 * KV together, as a single engine stepping the same instances computes it (the same rule; the
 * figure itself can differ, the threads' interleaving depending on timing).  Each instance's pool
 * (10 blocks) holds one request; admitting its second fails part-way, and those blocks, held for a
 * moment, are in the peak (the merged memory samples, taken at step boundaries, never see them). */
static void test_instances_partitioned_peak(void **state)
{
    (void)state;
    fx f, g;
    fx_init(&f, 4, 0.0002);
    fx_init(&g, 4, 0);
    fx *both[2] = {&f, &g};
    for (int i = 0; i < 2; i++) {
        both[i]->c.placement.mode = DKV_PLACE_PARTITIONED;
        both[i]->b.partitioned = true;
        both[i]->c.mem.capacity_bytes = 40 * 8192;   /* 10 blocks per instance; a request needs 5-7 */
        fx_workload(both[i], 8, 0, 48);
    }
    f.o.real_clock = true;
    f.o.gpu_lock = true;
    if (dkv_engine_run_instances(&f.c, &f.o, &f.r, &f.err) != DKV_OK)
        fail_msg("%s", f.err.msg);
    check_run(&f, 4, 8);
    if (dkv_engine_run(&g.c, &g.r, &g.err) != DKV_OK)   /* one engine, 4 instances, time-sliced */
        fail_msg("%s", g.err.msg);
    uint64_t pf = dkv_engine_result_summary(f.r)->peak_tag[DKV_MEM_TAG_KV];
    uint64_t pg = dkv_engine_result_summary(g.r)->peak_tag[DKV_MEM_TAG_KV];
    size_t nm;
    const dkv_mem_record *m = dkv_engine_result_memory(f.r, &nm);
    uint64_t smax = 0;
    for (size_t i = 0; i < nm; i++)
        smax = m[i].kv > smax ? m[i].kv : smax;
    /* The threads' interleaving depends on timing (under ASan too), so the threaded peak need not
     * equal the serial engine's; what holds every time: both see a failed admission's momentary
     * blocks (a partition filled: 10 blocks), the threaded peak is above every step-boundary sample,
     * and nothing exceeds the pool. */
    assert_true(pg >= 10 * 8192 && pf >= 10 * 8192);
    assert_true(pf > smax);
    assert_true(pf <= 40 * 8192 && pg <= 40 * 8192);
    fx_fini(&f);
    fx_fini(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_instances_shared_partitioned),
        cmocka_unit_test(test_instances_borrowing),
        cmocka_unit_test(test_instances_contention),
        cmocka_unit_test(test_instances_real_clock),
        cmocka_unit_test(test_instances_contention_with_arrivals),
        cmocka_unit_test(test_instances_refusals),
        cmocka_unit_test(test_instances_partitioned_peak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
