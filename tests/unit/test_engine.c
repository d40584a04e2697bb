/* test_engine.c - the engine on a tiny model and tiny workloads whose answers are known by hand.
 * The backend here is a toy (time = 1 ms + 1 us per query token): the engine must not care. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

/* ---------------------------------------------------------------- fixtures */

static dkv_model tiny_model(void)
{
    dkv_model m = {.name = "tiny", .n_layers = 2, .hidden = 64, .ffn = 128, .n_heads = 4, .n_kv_heads = 4,
                   .head_dim = 16, .vocab = 100, .mask_id = 99, .max_len = 1024, .rope_theta = 10000,
                   .weight_dtype = DKV_DTYPE_BF16, .kv_dtype = DKV_DTYPE_BF16, .act_dtype = DKV_DTYPE_BF16};
    return m; /* KV: 2 layers x 2 x 64 x 2 B = 512 B per token */
}

static dkv_gpu tiny_gpu(void)
{
    dkv_gpu g = {.name = "toy", .hbm_bytes = 256.0 * 1048576, .hbm_bw = 1e12, .flops_bf16 = 1e14, .flops_fp32 = 1e13,
                 .pcie_h2d_pinned = 1e10, .pcie_d2h_pinned = 1e10, .pcie_bidir_pinned = 1.8e10,
                 .pcie_h2d_pageable = 5e9, .pcie_d2h_pageable = 5e9, .launch_overhead_s = 0, .malloc_s = 0,
                 .free_s = 0, .cost_per_hour = 2.0, .max_num_logits = 1024, .max_num_batched_tokens = 8192,
                 .retention = 0.5};
    return g;
}

typedef struct toy { uint64_t steps, items; uint32_t max_items; } toy;

static dkv_status toy_step(void *ctx, const dkv_step_plan *p, dkv_step_cost *out, dkv_err *err)
{
    (void)err;
    toy *t = ctx;
    uint64_t q = 0;
    for (uint32_t i = 0; i < p->n_items; i++)
        q += p->items[i].q_tokens;
    t->steps++;
    t->items += p->n_items;
    if (p->n_items > t->max_items)
        t->max_items = p->n_items;
    out->time_s = out->compute_s = 1e-3 + 1e-6 * (double)q;
    for (uint32_t i = 0; i < p->n_xfers; i++)
        if (p->xfers[i].kind == DKV_XFER_OFFLOAD || p->xfers[i].kind == DKV_XFER_COMPRESS)
            out->pcie_d2h_bytes += p->xfers[i].pcie_bytes;
    return DKV_OK;
}

static const dkv_backend_i toy_iface = {.name = "toy", .run_step = toy_step};

typedef struct fx {
    dkv_model m;
    dkv_gpu g;
    toy t;
    dkv_backend be;
    dkv_workload *w;
    dkv_engine_config c;
    dkv_engine_result *r;
    dkv_err err;
} fx;

static void fx_init(fx *f)
{
    memset(f, 0, sizeof *f);
    f->m = tiny_model();
    f->g = tiny_gpu();
    f->be.iface = &toy_iface;
    f->be.ctx = &f->t;
    dkv_engine_config_default(&f->c);
    f->c.model = &f->m;
    f->c.gpu = &f->g;
    f->c.backend = &f->be;
    f->c.decode.block_len = 16;
    f->c.mem.chunk_blocks = 1;
    f->c.sizing.block_tokens = 16;                   /* 8 KiB blocks */
    f->c.mem.capacity_bytes = 4u << 20;              /* KV pool */
    f->c.device_capacity_bytes = 64u << 20;
}

static void fx_workload(fx *f, const dkv_request *reqs, size_t n)
{
    dkv_workload_free(f->w);
    f->w = NULL;
    assert_int_equal(dkv_workload_from_requests(reqs, n, NULL, &f->w, &f->err), DKV_OK);
    f->c.workload = f->w;
}

static void fx_run(fx *f)
{
    dkv_engine_result_free(f->r);
    f->r = NULL;
    memset(&f->t, 0, sizeof f->t);
    dkv_status st = dkv_engine_run(&f->c, &f->r, &f->err);
    if (st != DKV_OK)
        fail_msg("engine: %s", f->err.msg);
}

static void fx_fini(fx *f)
{
    dkv_engine_result_free(f->r);
    dkv_workload_free(f->w);
}

static dkv_request req(double t, uint32_t P, uint32_t G)
{
    dkv_request r = {.arrival_s = t, .prompt_tokens = P, .gen_tokens = G, .user = DKV_NO_USER,
                     .next_of_user = DKV_NO_NEXT};
    return r;
}

/* ---------------------------------------------------------------- tests */

/* Every step stays in the token budget; Refresh/Reuse counts match the decode table. */
static void test_budget_and_phase_counts(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    dkv_request rs[12];
    for (int i = 0; i < 12; i++)
        rs[i] = req(0.0005 * i, 64, 32); /* L = 96, B = 16: Refresh 96 tokens, Reuse 16 */
    fx_workload(&f, rs, 12);
    f.c.max_num_batched_tokens = 200;
    f.c.sched = DKV_SCHED_PHASE;
    fx_run(&f);
    const dkv_run_summary *s = dkv_engine_result_summary(f.r);
    assert_int_equal(s->n_done, 12);
    size_t ns;
    const dkv_step_record *st = dkv_engine_result_steps(f.r, &ns);
    assert_true(ns > 0);
    uint32_t max_items = 0;
    double plan_sum = 0;
    for (size_t i = 0; i < ns; i++) {
        /* host time: the engine's planning is measured (>= 0, finite); the simulator enqueues and
           waits for nothing */
        assert_true(st[i].host_plan_s >= 0 && st[i].host_plan_s < 10);
        plan_sum += st[i].host_plan_s;
        assert_true(st[i].host_enqueue_s == 0 && st[i].host_wait_s == 0 && st[i].sm_mhz == 0);
        assert_true(st[i].budget_tokens <= 200 || st[i].n_items == 1);
        assert_true(st[i].q_tokens <= 200);
        if (st[i].n_items > max_items)
            max_items = st[i].n_items;
    }
    assert_true(max_items >= 3); /* one Refresh (96) + several Reuse (16) share a step */
    assert_true(plan_sum > 0);   /* planning ns steps takes some host time */
    /* per request: 2 blocks x 16 steps, one Refresh per block (dual cache) */
    dkv_decode_totals tot;
    dkv_decode_request dr = {.id = 0, .prompt_tokens = 64, .gen_tokens = 32};
    assert_int_equal(dkv_decode_request_totals(&dr, &f.c.decode, &f.m, &tot, &f.err), DKV_OK);
    assert_int_equal(tot.refresh_steps, 2);
    assert_int_equal(tot.reuse_steps, 30);
    size_t nr;
    const dkv_req_record *rr = dkv_engine_result_requests(f.r, &nr);
    assert_int_equal(nr, 12);
    for (size_t i = 0; i < nr; i++) {
        assert_int_equal(rr[i].status, DKV_REQ_DONE);
        assert_int_equal(rr[i].refresh_steps, tot.refresh_steps);
        assert_int_equal(rr[i].reuse_steps, tot.reuse_steps);
        assert_true(rr[i].finish_s > rr[i].first_block_s && rr[i].first_block_s > rr[i].start_s);
        assert_true(rr[i].start_s >= rr[i].arrival_s);
    }
    assert_int_equal(s->refresh_steps, 24);
    assert_int_equal(s->reuse_steps, 360);
    assert_true(s->phase_pred_accuracy == 1.0);
    assert_int_equal(s->budget_overruns, 0);
    /* memory freed at the end: KV manager empty, device manager back to the weights */
    assert_int_equal(s->end_allocated_kv, 0);
    assert_int_equal(s->end_allocated_device, s->peak_tag[DKV_MEM_TAG_WEIGHTS]);
    assert_true(s->peak_tag[DKV_MEM_TAG_WEIGHTS] >= dkv_model_weight_bytes(&f.m));
    assert_true(s->peak_tag[DKV_MEM_TAG_KV] >= 96 * 512);
    assert_true(s->peak_tag[DKV_MEM_TAG_ACTIVATION] > 0 && s->peak_tag[DKV_MEM_TAG_LOGITS] > 0);
    size_t nm;
    const dkv_mem_record *mr = dkv_engine_result_memory(f.r, &nm);
    assert_int_equal(nm, 2 * ns); /* per step: the in-step peak, then the level after it */
    assert_int_equal(mr[nm - 1].kv, 0);
    uint64_t act_max = 0, log_max = 0;
    for (size_t i = 0; i < nm; i += 2) {
        assert_true(mr[i].time_s <= mr[i + 1].time_s);
        assert_true(mr[i].activation > 0);              /* transients held during the step */
        assert_int_equal(mr[i + 1].activation, 0);      /* and released after it */
        act_max = mr[i].activation > act_max ? mr[i].activation : act_max;
        log_max = mr[i].logits > log_max ? mr[i].logits : log_max;
    }
    assert_int_equal(act_max, s->peak_tag[DKV_MEM_TAG_ACTIVATION]);
    /* KV pool + device allocator: the combined peak is the highest in-step sample, and it is no more
     * than the sum of the two managers' own peaks */
    uint64_t res_max = 0;
    for (size_t i = 0; i < nm; i++)
        res_max = mr[i].reserved > res_max ? mr[i].reserved : res_max;
    assert_int_equal(res_max, s->peak_reserved);
    assert_true(s->peak_reserved >= s->peak_tag[DKV_MEM_TAG_WEIGHTS] + s->peak_tag[DKV_MEM_TAG_KV]);
    assert_int_equal(log_max, s->peak_tag[DKV_MEM_TAG_LOGITS]);
    fx_fini(&f);
}

/* Static batching waits for the whole batch; continuous admits as soon as a slot frees. */
static void test_static_vs_continuous(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    dkv_request rs[3] = {req(0, 32, 16), req(0, 32, 64), req(0, 32, 16)};
    fx_workload(&f, rs, 3);
    f.c.max_num_seqs = 2;
    f.c.sched = DKV_SCHED_STATIC;
    fx_run(&f);
    size_t n;
    const dkv_req_record *r = dkv_engine_result_requests(f.r, &n);
    assert_true(r[2].start_s >= r[1].finish_s); /* waits for the longest of the batch */
    double static_start = r[2].start_s;
    f.c.sched = DKV_SCHED_FCFS;
    fx_run(&f);
    r = dkv_engine_result_requests(f.r, &n);
    assert_true(r[2].start_s >= r[0].finish_s);  /* slot of request 0 ... */
    assert_true(r[2].start_s < r[1].finish_s);   /* ... taken before request 1 ends */
    assert_true(r[2].start_s < static_start);
    /* FCFS order: request 2 never starts before 0 and 1 */
    assert_true(r[0].start_s <= r[1].start_s && r[1].start_s <= r[2].start_s);
    fx_fini(&f);
}

/* Under the same token budget the phase scheduler runs more requests per step. */
static void test_phase_admits_more(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    dkv_request rs[16];
    for (int i = 0; i < 16; i++)
        rs[i] = req(0, 80, 48); /* L = 128 */
    fx_workload(&f, rs, 16);
    f.c.max_num_batched_tokens = 512;
    f.c.sched = DKV_SCHED_FCFS;
    fx_run(&f);
    dkv_run_summary fcfs = *dkv_engine_result_summary(f.r);
    uint32_t fcfs_max = f.t.max_items;
    f.c.sched = DKV_SCHED_PHASE;
    fx_run(&f);
    dkv_run_summary ph = *dkv_engine_result_summary(f.r);
    assert_int_equal(fcfs_max, 4);                /* 512 / 128 */
    assert_true(f.t.max_items > fcfs_max);
    assert_true(ph.mean_batch > fcfs.mean_batch);
    assert_true(ph.throughput_rps > fcfs.throughput_rps);
    assert_true(ph.n_steps < fcfs.n_steps);
    assert_int_equal(ph.n_done, 16);
    assert_int_equal(fcfs.n_done, 16);
    fx_fini(&f);
}

/* A request larger than the whole KV pool is reported, not fatal; the others finish. */
static void test_oom_reported(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    f.c.mem.capacity_bytes = 64 * 1024;           /* 128 tokens of KV */
    dkv_request rs[3] = {req(0, 32, 32), req(0, 400, 16), req(0.001, 32, 32)};
    fx_workload(&f, rs, 3);
    fx_run(&f);
    const dkv_run_summary *s = dkv_engine_result_summary(f.r);
    assert_int_equal(s->n_done, 2);
    assert_int_equal(s->n_oom, 1);
    size_t n;
    const dkv_req_record *r = dkv_engine_result_requests(f.r, &n);
    assert_int_equal(r[1].status, DKV_REQ_OOM);
    assert_true(isnan(r[1].finish_s));
    assert_int_equal(s->end_allocated_kv, 0);
    /* too long for the model */
    dkv_request big[1] = {req(0, 1100, 16)};
    fx_workload(&f, big, 1);
    fx_run(&f);
    assert_int_equal(dkv_engine_result_summary(f.r)->n_too_long, 1);
    fx_fini(&f);
}

/* Prefix cache grows KV per block: two requests admitted together deadlock on growth at the
 * start of block 5 (2 x 11 blocks > 20); the younger is preempted.  Growth happens at a block's
 * first step, which is also the restart point, so no step is lost; both finish. */
static void test_preemption(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    f.c.decode.cache = DKV_CACHE_PREFIX;
    f.c.mem.capacity_bytes = 20 * 8192;           /* 20 blocks of 16 tokens */
    dkv_request rs[2] = {req(0, 96, 96), req(0, 96, 96)}; /* prefix 96 -> 176 tokens: 6 -> 11 blocks */
    fx_workload(&f, rs, 2);
    fx_run(&f);
    const dkv_run_summary *s = dkv_engine_result_summary(f.r);
    assert_int_equal(s->n_done, 2);
    assert_true(s->n_preempted >= 1);
    assert_int_equal(s->preempted_steps, 0);
    size_t n;
    const dkv_req_record *r = dkv_engine_result_requests(f.r, &n);
    assert_int_equal(r[0].steps, 96);
    assert_int_equal(r[1].steps, 96);
    assert_true(r[1].finish_s > r[0].finish_s);   /* the victim waited for the older request */
    assert_true(r[1].finish_s - r[0].finish_s > 15 * 1e-3); /* ... and ran its last block after */
    assert_int_equal(s->end_allocated_kv, 0);
    fx_fini(&f);
}

/* Drawn steps per request make the configured-steps predictor miss; exact_phase does not. */
static void test_phase_prediction(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    dkv_request rs[6];
    for (int i = 0; i < 6; i++)
        rs[i] = req(0, 32, 32);
    fx_workload(&f, rs, 6);
    f.c.decode.steps_min = 4;
    f.c.decode.steps_max = 16;
    fx_run(&f);
    double acc = dkv_engine_result_summary(f.r)->phase_pred_accuracy;
    assert_true(acc < 1.0 && acc > 0.3);
    f.c.exact_phase = true;
    fx_run(&f);
    assert_true(dkv_engine_result_summary(f.r)->phase_pred_accuracy == 1.0);
    fx_fini(&f);
}

/* Two instances: a request that needs 60 % of the pool fits a shared pool, not a half. */
static void test_multi_instance_quotas(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    f.c.mem.capacity_bytes = 20 * 8192;
    f.c.n_instances = 2;
    dkv_request rs[4] = {req(0, 176, 16), req(0, 16, 16), req(0.5, 16, 16), req(0.5, 16, 16)};
    fx_workload(&f, rs, 4); /* request 0: 192 tokens = 12 blocks > 10 */
    f.c.placement.mode = DKV_PLACE_SHARED;
    fx_run(&f);
    const dkv_run_summary *s = dkv_engine_result_summary(f.r);
    assert_int_equal(s->n_done, 4);
    size_t n;
    const dkv_req_record *r = dkv_engine_result_requests(f.r, &n);
    assert_int_equal(r[0].instance, 0);
    assert_int_equal(r[1].instance, 1);
    f.c.placement.mode = DKV_PLACE_PARTITIONED;
    fx_run(&f);
    s = dkv_engine_result_summary(f.r);
    assert_int_equal(s->n_oom, 1);
    assert_int_equal(s->n_done, 3);
    r = dkv_engine_result_requests(f.r, &n);
    assert_int_equal(r[0].status, DKV_REQ_OOM);
    /* spatial sharing runs both instances in one step */
    f.c.placement.mode = DKV_PLACE_SHARED;
    f.c.gpu_share = DKV_SHARE_SPATIAL;
    fx_run(&f);
    s = dkv_engine_result_summary(f.r);
    assert_int_equal(s->n_done, 4);
    size_t ns;
    const dkv_step_record *st = dkv_engine_result_steps(f.r, &ns);
    int merged = 0;
    for (size_t i = 0; i < ns; i++)
        merged += st[i].instance == UINT32_MAX;
    assert_true(merged > 0);
    fx_fini(&f);
}

/* Deferred release holds dead KV longer: the KV peak can only grow; everything ends freed. */
static void test_lifecycle_and_offload(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    dkv_request rs[8];
    for (int i = 0; i < 8; i++)
        rs[i] = req(0.01 * i, 64, 32);
    fx_workload(&f, rs, 8);
    fx_run(&f);
    dkv_run_summary imm = *dkv_engine_result_summary(f.r);
    f.c.lifecycle.rule = DKV_RELEASE_DEFERRED;
    f.c.lifecycle.delay_steps = 40;
    fx_run(&f);
    dkv_run_summary def = *dkv_engine_result_summary(f.r);
    assert_true(def.peak_tag[DKV_MEM_TAG_KV] > imm.peak_tag[DKV_MEM_TAG_KV]);
    assert_int_equal(def.end_allocated_kv, 0);
    assert_int_equal(def.n_done, 8);
    /* progressive offload moves KV to the host and copies it over PCIe */
    f.c.lifecycle.rule = DKV_RELEASE_IMMEDIATE;
    f.c.offload.mode = DKV_OFFLOAD_PROGRESSIVE;
    fx_run(&f);
    dkv_run_summary off = *dkv_engine_result_summary(f.r);
    assert_int_equal(off.n_done, 8);
    assert_true(off.peak_host_bytes > 0);
    assert_true(off.pcie_d2h_bytes > 0);
    assert_int_equal(off.end_allocated_kv, 0);
    fx_fini(&f);
}

/* Bad configurations fail before the run with messages naming the field. */
static void test_bad_config(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    dkv_request rs[2] = {req(0, 32, 32), req(0, 32, 40)};
    fx_workload(&f, rs, 2);
    assert_int_equal(dkv_engine_run(&f.c, &f.r, &f.err), DKV_EINVAL);
    assert_non_null(strstr(f.err.msg, "gen_tokens 40 is not a multiple of decode.block_len 16"));
    assert_null(f.r);
    fx_workload(&f, rs, 1);
    f.c.decode.block_len = 0;
    assert_int_equal(dkv_engine_run(&f.c, &f.r, &f.err), DKV_EINVAL);
    assert_non_null(strstr(f.err.msg, "block_len"));
    f.c.decode.block_len = 16;
    f.g.hbm_bytes = 100000; /* smaller than the weights */
    assert_int_equal(dkv_engine_run(&f.c, &f.r, &f.err), DKV_ENOMEM);
    assert_non_null(strstr(f.err.msg, "does not fit"));
    f.g = tiny_gpu();
    f.c.max_num_seqs = 0;
    assert_int_equal(dkv_engine_run(&f.c, &f.r, &f.err), DKV_EINVAL);
    assert_non_null(strstr(f.err.msg, "max_num_seqs"));
    fx_fini(&f);
}

/* Closed loop: each user's next request arrives think_s after the previous one finished. */
static void test_closed_loop(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    dkv_synth_cfg sc;
    dkv_synth_cfg_default(&sc);
    sc.arrival = DKV_ARRIVAL_CLOSED;
    sc.n_requests = 6;
    sc.n_users = 2;
    sc.think_s = 0.5;
    sc.prompt = dkv_len_fixed(32);
    sc.gen = dkv_len_fixed(16);
    dkv_workload_free(f.w);
    assert_int_equal(dkv_workload_synth(&sc, NULL, &f.w, &f.err), DKV_OK);
    f.c.workload = f.w;
    fx_run(&f);
    size_t n;
    const dkv_req_record *r = dkv_engine_result_requests(f.r, &n);
    assert_int_equal(dkv_engine_result_summary(f.r)->n_done, 6);
    const dkv_request *src = dkv_workload_requests(f.w);
    for (size_t i = 0; i < n; i++) {
        uint32_t nx = src[i].next_of_user;
        if (nx != DKV_NO_NEXT)
            assert_true(fabs(r[nx].arrival_s - (r[i].finish_s + src[nx].think_s)) < 1e-9);
    }
    fx_fini(&f);
}

/* Host time per step: one instance leaves the GPU idle during it; a second instance fills the
 * gap (time slicing), so two instances finish the same work sooner. */
static void test_host_gaps(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    dkv_request rs[8];
    for (int i = 0; i < 8; i++)
        rs[i] = req(0, 32, 16);
    fx_workload(&f, rs, 8);
    f.c.max_num_seqs = 1;
    f.c.step_host_s = 4e-3;  /* 4 ms of host time after each ~1 ms step */
    fx_run(&f);
    dkv_run_summary one = *dkv_engine_result_summary(f.r);
    /* 8 requests x 16 steps, one at a time: every step costs its GPU time plus the host gap */
    assert_true(one.sim_time_s > 8 * 16 * 4e-3);
    assert_true(one.gpu_busy_frac < 0.3);
    f.c.n_instances = 2;
    fx_run(&f);
    dkv_run_summary two = *dkv_engine_result_summary(f.r);
    assert_int_equal(two.n_done, 8);
    assert_true(two.sim_time_s < 0.6 * one.sim_time_s);
    assert_true(two.gpu_busy_frac > 1.7 * one.gpu_busy_frac);
    fx_fini(&f);
}

/* The timeslice hand-over (engine.h's multi-instance rules): with every request there at t = 0,
 * consecutive steps of two instances are step_release_s + handover_s apart on the GPU (the holder's
 * serial host work, then waking the next instance), whatever step_host_s (planning, which the
 * other instance's step covers); one instance's steps are step_release_s + step_host_s apart. */
static double max_gap_error(const dkv_engine_result *r, double want_other, double want_same, size_t *n_other)
{
    size_t n = 0;
    const dkv_step_record *s = dkv_engine_result_steps(r, &n);
    double worst = 0;
    *n_other = 0;
    for (size_t j = 0; j + 1 < n; j++) {
        double gap = s[j + 1].start_s - (s[j].start_s + s[j].time_s);
        bool other = s[j + 1].instance != s[j].instance;
        *n_other += other;
        double e = fabs(gap - (other ? want_other : want_same));
        worst = e > worst ? e : worst;
    }
    return worst;
}

static void test_handover(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    dkv_request rs[8];
    for (int i = 0; i < 8; i++)
        rs[i] = req(0, 32, 16);
    fx_workload(&f, rs, 8);
    f.c.max_num_seqs = 1;
    f.c.step_host_s = 2e-4;
    f.c.step_release_s = 1e-4;
    f.c.handover_s = 5e-5;
    size_t n_other = 0;
    fx_run(&f);   /* one instance: release + planning after every step */
    assert_true(max_gap_error(f.r, -1, 3e-4, &n_other) < 1e-12);
    assert_int_equal(n_other, 0);
    double one = dkv_engine_result_summary(f.r)->sim_time_s;
    f.c.n_instances = 2;
    fx_run(&f);
    assert_int_equal(dkv_engine_result_summary(f.r)->n_done, 8);
    assert_true(max_gap_error(f.r, 1.5e-4, -1, &n_other) < 1e-12);
    assert_true(n_other > 100);          /* the instances alternate */
    double two = dkv_engine_result_summary(f.r)->sim_time_s;
    assert_true(two < one);              /* planning is hidden, the hand-over is not */
    f.c.step_release_s = f.c.handover_s = 0;   /* the rules before: the other instance fills the gap */
    fx_run(&f);
    assert_true(max_gap_error(f.r, 0, -1, &n_other) < 1e-12);
    fx_fini(&f);
}

/* Plans carry the pool block ids of each item's KV (what the CUDA backend addresses): enough blocks
 * for the keys attended, ids inside the pool, no id shared by two requests of one step. */
typedef struct blk_check { uint64_t items_with_blocks, steps; uint32_t pool_blocks, block_tokens; int bad; } blk_check;

static dkv_status blk_step(void *ctx, const dkv_step_plan *p, dkv_step_cost *out, dkv_err *err)
{
    (void)err;
    blk_check *b = ctx;
    static uint8_t seen[4096];
    memset(seen, 0, sizeof seen);
    b->steps++;
    for (uint32_t i = 0; i < p->n_items; i++) {
        const dkv_step_item *it = &p->items[i];
        if (!it->n_kv_blocks)
            continue;
        b->items_with_blocks++;
        if (!it->kv_blocks || (uint64_t)it->n_kv_blocks * b->block_tokens < it->kv_cached_tokens)
            b->bad++;
        for (uint32_t j = 0; j < it->n_kv_blocks; j++) {
            uint32_t id = it->kv_blocks[j];
            if (id >= b->pool_blocks || id >= sizeof seen || seen[id])
                b->bad++;
            else
                seen[id] = 1;
        }
    }
    out->time_s = out->compute_s = 1e-3;
    return DKV_OK;
}

static void test_plan_block_ids(void **state)
{
    (void)state;
    static const dkv_backend_i blk_iface = {.name = "blk", .run_step = blk_step};
    fx f;
    fx_init(&f);
    blk_check b = {.pool_blocks = (uint32_t)(f.c.mem.capacity_bytes / (16 * 512)), .block_tokens = 16};
    f.be.iface = &blk_iface;
    f.be.ctx = &b;
    f.c.decode.cache = DKV_CACHE_DUAL;
    dkv_request rs[3] = {req(0, 32, 32), req(0, 48, 32), req(0.01, 32, 64)};
    fx_workload(&f, rs, 3);
    fx_run(&f);
    const dkv_run_summary *s = dkv_engine_result_summary(f.r);
    assert_int_equal(s->n_done, 3);
    assert_true(b.steps > 0);
    assert_true(b.items_with_blocks > 0);        /* Reuse steps read cached KV through block ids */
    assert_int_equal(b.bad, 0);
    /* through a preemption (test_preemption's pool of 20 blocks): the victim's blocks are freed and taken by the
     * other request, then retaken; the engine keeps each block's id from when it was taken (engine_mem.c kv_push),
     * so a stale id would show as a block shared by the two requests in one step */
    b = (blk_check){.pool_blocks = 20, .block_tokens = 16};
    f.c.decode.cache = DKV_CACHE_PREFIX;
    f.c.mem.capacity_bytes = 20 * 8192;
    dkv_request rp[2] = {req(0, 96, 96), req(0, 96, 96)};
    fx_workload(&f, rp, 2);
    fx_run(&f);
    s = dkv_engine_result_summary(f.r);
    assert_int_equal(s->n_done, 2);
    assert_true(s->n_preempted >= 1);
    assert_true(b.items_with_blocks > 0);
    assert_int_equal(b.bad, 0);
    fx_fini(&f);
}

static void test_percentile(void **state)
{
    (void)state;
    double v[5] = {5, 1, 4, 2, 3};
    assert_true(dkv_percentile(v, 5, 50) == 3);
    assert_true(dkv_percentile(v, 5, 100) == 5);
    assert_true(fabs(dkv_percentile(v, 5, 95) - 4.8) < 1e-12);
    assert_true(isnan(dkv_percentile(v, 0, 50)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_and_phase_counts),
        cmocka_unit_test(test_static_vs_continuous),
        cmocka_unit_test(test_phase_admits_more),
        cmocka_unit_test(test_oom_reported),
        cmocka_unit_test(test_preemption),
        cmocka_unit_test(test_phase_prediction),
        cmocka_unit_test(test_multi_instance_quotas),
        cmocka_unit_test(test_lifecycle_and_offload),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_closed_loop),
        cmocka_unit_test(test_host_gaps),
        cmocka_unit_test(test_handover),
        cmocka_unit_test(test_percentile),
        cmocka_unit_test(test_plan_block_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
