/* engine.c - configuration, the main loop (arrivals, instances, idle handling, preemption),
 * set-up and tear-down.  See engine.h for the model. */
#include "engine/engine_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/interrupt.h"
#include "util/mono.h"

/* ---------------------------------------------------------------- names */

static const char *const share_names[] = {"timeslice", "spatial"};
static const char *const iroute_names[] = {"round_robin", "least_loaded"};
static const char *const status_names[] = {"done", "oom", "too_long", "unfinished"};
const dkv_names dkv_gpu_share_names = DKV_NAMES("instances.gpu_share", share_names);
const dkv_names dkv_instance_route_names = DKV_NAMES("instances.route", iroute_names);
const dkv_names dkv_req_status_names = DKV_NAMES("request status", status_names);

const char *dkv_gpu_share_name(dkv_gpu_share s) { return dkv_names_at(&dkv_gpu_share_names, (int)s); }
const char *dkv_instance_route_name(dkv_instance_route r) { return dkv_names_at(&dkv_instance_route_names, (int)r); }
const char *dkv_req_status_name(int s) { return dkv_names_at(&dkv_req_status_names, s); }

/* ---------------------------------------------------------------- configuration */

void dkv_engine_config_default(dkv_engine_config *c)
{
    memset(c, 0, sizeof *c);
    dkv_decode_cfg_default(&c->decode);
    c->sched = DKV_SCHED_PHASE;
    c->max_num_seqs = 256;
    c->mem = dkv_mem_options_default(DKV_MEM_BLOCKPOOL);
    c->mem.capacity_bytes = 0;
    c->mem.block_bytes = 0;
    c->mem.device_malloc_s = -1;
    c->mem.device_free_s = -1;
    c->decode.seed = 0;
    dkv_sizing_config_default(&c->sizing);
    for (size_t i = 0; i < dkv_engine_n_policies; i++)   /* the policies' table (engine_policy.c) */
        dkv_engine_policies[i].policy->set_default(dkv_engine_policy_config(c, i));
    c->logit.max_num_logits = 0;   /* from the preset (dkv_engine_config_resolve) */
    c->retention.rho = -1;
    c->retention.seed = 0;
    c->routing_costs = (dkv_routing_costs){-1, -1, -1, -1};
    c->n_instances = 1;
    dkv_placement_config_default(&c->placement);
    c->gpu_share = DKV_SHARE_TIMESLICE;
    c->instance_route = DKV_IROUTE_ROUND_ROBIN;
    c->cost_per_hour = -1;
    c->record_steps = true;
    c->mem_sample_every = 1;
    c->seed = 1;
}

dkv_status dkv_engine_config_resolve(dkv_engine_config *c, dkv_err *err)
{
    if (c->resolved)
        return DKV_OK;
    dkv_status st;
    if (!c->model || !c->gpu)
        return dkv_err_set(err, DKV_EINVAL, "engine: model and gpu are required");
    if ((st = dkv_model_validate(c->model, err)) != DKV_OK || (st = dkv_gpu_validate(c->gpu, err)) != DKV_OK)
        return st;
    const dkv_gpu *g = c->gpu;
    if ((st = dkv_sizing_default(&c->sizing, c->model, g, &c->sized, err)) != DKV_OK)
        return st;
    if (c->max_num_batched_tokens == 0)
        c->max_num_batched_tokens = c->sized.max_num_batched_tokens;
    if (c->logit.max_num_logits == 0)
        c->logit.max_num_logits = c->sized.max_num_logits;
    if (c->retention.rho < 0)
        c->retention.rho = c->sized.retention;
    c->mem.block_bytes = dkv_block_bytes(c->mem.block_bytes, c->sizing.block_tokens,
                                         dkv_model_kv_bytes_per_token(c->model));
    if (c->mem.device_malloc_s < 0)
        c->mem.device_malloc_s = g->malloc_s;
    if (c->mem.device_free_s < 0)
        c->mem.device_free_s = g->free_s;
    dkv_routing_costs *k = &c->routing_costs;
    bool all0 = k->setup_s == 0 && k->block_s == 0 && k->pool_step_s == 0 && k->plain_step_s == 0;
    if (k->setup_s < 0 || all0)
        k->setup_s = g->malloc_s;
    if (k->block_s < 0 || all0)
        k->block_s = 1.5e-6;     /* pooled acquire + release pair (ANCHORS.md) */
    if (k->pool_step_s < 0)
        k->pool_step_s = 0;
    if (k->plain_step_s < 0 || all0)
        k->plain_step_s = g->malloc_s + g->free_s;
    if (c->cost_per_hour < 0)
        c->cost_per_hour = g->cost_per_hour;
    if (c->decode.seed == 0)
        c->decode.seed = c->seed;
    if (c->retention.seed == 0)
        c->retention.seed = c->seed;
    /* decode: retention settings come from the retention policy */
    c->decode.rho = c->retention.rho;
    c->decode.shared_set = c->retention.set == DKV_RETAIN_SHARED;
    c->resolved = true;
    return DKV_OK;
}

dkv_status dkv_engine_config_validate(const dkv_engine_config *c, dkv_err *err)
{
    dkv_status st;
    if (!c->model || !c->gpu || !c->workload || !c->backend)
        return dkv_err_set(err, DKV_EINVAL, "engine: model, gpu, workload and backend are required");
    if (!c->resolved) {   /* what comes from the preset must be known to check the rest */
        dkv_engine_config r = *c;
        if ((st = dkv_engine_config_resolve(&r, err)) != DKV_OK)
            return st;
        return dkv_engine_config_validate(&r, err);
    }
    if ((st = dkv_model_validate(c->model, err)) != DKV_OK || (st = dkv_gpu_validate(c->gpu, err)) != DKV_OK)
        return st;
    if ((st = dkv_decode_cfg_validate(&c->decode, err)) != DKV_OK)
        return st;
    if (c->max_num_seqs == 0)
        return dkv_err_set(err, DKV_EINVAL, "scheduler.max_num_seqs must be > 0");
    if ((int)c->sched < 0 || (int)c->sched >= dkv_sched_names.n)
        return dkv_err_set(err, DKV_EINVAL, "scheduler.kind: bad value %d", (int)c->sched);
    if (c->n_instances == 0 || c->n_instances > ENG_MAX_INST)
        return dkv_err_set(err, DKV_ERANGE, "instances: %u must be in [1, %d]", c->n_instances, ENG_MAX_INST);
    if ((st = dkv_sizing_config_validate(&c->sizing, err)) != DKV_OK)
        return st;
    for (size_t i = 0; i < dkv_engine_n_policies; i++) {   /* the policies' table (engine_policy.c) */
        const dkv_engine_policy *p = &dkv_engine_policies[i];
        if (!p->applies || p->applies(c))
            DKV_TRY(p->policy->validate((const char *)c + p->offset, err));
    }
    uint32_t B = c->decode.block_len;
    size_t n = dkv_workload_count(c->workload);
    for (size_t i = 0; i < n; i++) {
        const dkv_request *r = dkv_workload_get(c->workload, i);
        if (r->gen_tokens == 0)
            return dkv_err_set(err, DKV_EINVAL, "workload request %zu (id %llu): gen_tokens is 0", i,
                               (unsigned long long)r->id);
        if (r->gen_tokens % B != 0)
            return dkv_err_set(err, DKV_EINVAL,
                               "workload request %zu (id %llu): gen_tokens %u is not a multiple of decode.block_len %u "
                               "(round the generation up with workload.gen_multiple_of)",
                               i, (unsigned long long)r->id, r->gen_tokens, B);
    }
    return DKV_OK;
}

/* ---------------------------------------------------------------- arrivals */

static void heap_push(arr_heap *h, double t, uint32_t r)
{
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h->t[p] < t || (h->t[p] == t && h->r[p] < r))
            break;
        h->t[i] = h->t[p];
        h->r[i] = h->r[p];
        i = p;
    }
    h->t[i] = t;
    h->r[i] = r;
}

static void heap_pop(arr_heap *h)
{
    double t = h->t[--h->n];
    uint32_t r = h->r[h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        double mt = t;
        uint32_t mr = r;
        if (l < h->n && (h->t[l] < mt || (h->t[l] == mt && h->r[l] < mr)))
            m = l, mt = h->t[l], mr = h->r[l];
        if (l + 1 < h->n && (h->t[l + 1] < mt || (h->t[l + 1] == mt && h->r[l + 1] < mr)))
            m = l + 1;
        if (m == i)
            break;
        h->t[i] = h->t[m];
        h->r[i] = h->r[m];
        i = m;
    }
    if (h->n) {
        h->t[i] = t;
        h->r[i] = r;
    }
}

static dkv_status wq_push(einst *in, uint32_t ri)
{
    if (in->wq_len == in->wq_cap) {
        size_t nc = in->wq_cap ? 2 * in->wq_cap : 256;
        uint32_t *n = malloc(nc * sizeof *n);
        if (!n)
            return DKV_ENOMEM;
        for (size_t k = 0; k < in->wq_len; k++)
            n[k] = in->wq[(in->wq_head + k) % in->wq_cap];
        free(in->wq);
        in->wq = n;
        in->wq_cap = nc;
        in->wq_head = 0;
    }
    in->wq[(in->wq_head + in->wq_len) % in->wq_cap] = ri;
    in->wq_len++;
    return DKV_OK;
}

static dkv_status arrive(eng *e, uint32_t ri, dkv_err *err)
{
    ereq *r = &e->rq[ri];
    uint32_t i = 0;
    if (e->ni > 1) {
        if (e->c.instance_route == DKV_IROUTE_ROUND_ROBIN) {
            i = e->rr_route++ % e->ni;
        } else {
            for (uint32_t k = 1; k < e->ni; k++)
                if (e->in[k].n_queued < e->in[i].n_queued)
                    i = k;
        }
    }
    r->inst = i;
    r->kvm = e->in[i].kvm;
    dkv_decode_request dr = {.id = r->src->id, .prompt_tokens = r->src->prompt_tokens,
                             .gen_tokens = r->src->gen_tokens, .steps_per_block = r->src->steps_per_block};
    dkv_status st = dkv_decode_begin(&r->dec, &dr, &e->c.decode, e->m, err);
    if (st != DKV_OK)
        return st;
    r->dec_block = r->dec;
    r->state = RS_WAITING;
    ENG_TRACE(e, eng_trace_request(e->c.trace, e->now, ENG_EV_ARRIVE, ri, i, 0,
                                   r->src->prompt_tokens + r->src->gen_tokens, &e->trace_err));
    e->in[i].n_queued++;
    if (wq_push(&e->in[i], ri) != DKV_OK)
        return dkv_err_set(err, DKV_ENOMEM, "engine: out of host memory");
    if (r->src->prompt_tokens + r->src->gen_tokens > e->m->max_len)
        eng_finish_request(e, r, DKV_REQ_TOO_LONG, e->now);
    return DKV_OK;
}

static dkv_status take_arrivals(eng *e, dkv_err *err)
{
    while (e->arr.n && e->arr.t[0] <= e->now) {
        uint32_t ri = e->arr.r[0];
        heap_pop(&e->arr);
        dkv_status st = arrive(e, ri, err);
        if (st != DKV_OK)
            return st;
    }
    return DKV_OK;
}

/* ---------------------------------------------------------------- stuck: preempt or fail */

static bool preempt_one(eng *e)
{
    if (e->blocked_act)
        return false;
    dkv_mem *m = e->rq[e->blocked_req].kvm;
    ereq *victim = NULL;
    for (uint32_t i = 0; i < e->ni; i++)
        for (uint32_t k = 0; k < e->in[i].n_run; k++) {
            ereq *r = &e->rq[e->in[i].run[k]];
            if (r->kvm == m && (r->n_kv > 0 || r->reserved) && (!victim || r->admit_seq > victim->admit_seq))
                victim = r;
        }
    if (!victim)
        return false;
    uint32_t lost = victim->dec.index - victim->dec_block.index;
    victim->preempted_steps += lost;
    e->preempted_steps += lost;
    e->n_preempted++;
    victim->dec = victim->dec_block;
    victim->steps_done = victim->dec.index;
    memset(&victim->off, 0, sizeof victim->off);
    eng_host_update(e, victim, 0);
    eng_kv_release_all(e, victim);
    eng_unreserve(e, victim);
    eng_pending_process(e, true);
    return true;
}

/* ---------------------------------------------------------------- the run */

void eng_clock_sync(eng *e)
{
    if (e->c.hooks && e->c.hooks->clock) {
        double t = e->c.hooks->clock(e->c.hooks->user);
        if (t > e->now)
            e->now = t;
    }
}

/* Threaded instances: the shared pool is full and other instances hold part of it. */
static bool pool_held_by_others(eng *e)
{
    if (!e->c.kv_pool || !e->c.hooks || !e->c.hooks->pool_wait || e->blocked_act)
        return false;
    dkv_mem_stats ms;
    dkv_mem_stats_get(e->c.kv_pool, &ms);
    return ms.allocated > e->tag_now[DKV_MEM_TAG_KV];
}

static void eng_free(eng *e)
{
    if (!e)
        return;
    if (e->rq)
        for (size_t i = 0; i < e->n; i++) {
            free(e->rq[i].kv_ids);
            free(e->rq[i].kv_alloc);
            free(e->rq[i].kv_blk);
        }
    free(e->rq);
    free(e->dm_form);
    for (uint32_t i = 0; i < ENG_MAX_INST; i++) {
        free(e->in[i].wq);
        free(e->in[i].run);
    }
    eng_mem_teardown(e);
    free(e->arr.t);
    free(e->arr.r);
    free(e->cands);
    free(e->items);
    free(e->xfers);
    free(e->kvblk);
    free(e->pend);
    dkv_engine_result_free(e->res);
    free(e);
}
/* retention.measured: request r's entry (the decoding model's and the plans' request id is the
 * workload order, as src->id for the engine's own workloads; scanned otherwise) */
static ereq *req_of(eng *e, uint64_t id)
{
    if (id < e->n && e->rq[id].src->id == id)
        return &e->rq[id];
    for (size_t i = 0; i < e->n; i++)
        if (e->rq[i].src->id == id)
            return &e->rq[i];
    return NULL;
}

void eng_on_entropy(void *user, uint32_t request, uint32_t block, double entropy)
{
    eng *e = user;
    ereq *r = req_of(e, request);
    if (r) {
        r->ent = entropy;
        r->ent_block = block;
    }
}

/* decode.h's rho_fn for retention.measured: the block's rho from the entropy the backend measured
 * at its first step; none measured (a backend that does not measure attention, e.g. the
 * simulator) stops the run with an error naming the request and block. */
static double measured_rho(void *ctx, uint64_t request, uint32_t block, double rho)
{
    eng *e = ctx;
    ereq *r = req_of(e, request);
    if (r && r->ent_block == block)
        return dkv_retention_rho_of_entropy(&e->ret, r->ent);
    if (e->ret.err.code == DKV_OK)
        dkv_err_set(&e->ret.err, DKV_EUNSUPPORTED, "retention.measured: the backend measured no attention entropy for "
                    "request %llu block %u (backends that execute attention measure it, cpu and cuda; the "
                    "simulator does not)", (unsigned long long)request, block);
    return rho;
}


static dkv_status eng_setup(eng *e, const dkv_engine_config *cfg, dkv_err *err)
{
    dkv_status st;
    e->c = *cfg;
    e->m = cfg->model;
    e->g = cfg->gpu;
    e->ni = cfg->n_instances;
    e->kvbpt = dkv_model_kv_bytes_per_token(e->m);
    e->blocked_req = -1;
    e->last_inst = UINT32_MAX;
    for (uint32_t i = 0; i < e->ni; i++)
        e->in[i].id = i;
    /* cfg is resolved (dkv_engine_config_resolve): preset values and sizing are in it */
    e->sizing = cfg->sized;
    e->budget_tokens = cfg->max_num_batched_tokens;
    e->c.decode.rho_fn = NULL;
    e->c.decode.rho_ctx = NULL;
    if (cfg->decode.cache == DKV_CACHE_SPARSE) {
        if ((st = dkv_retention_init(&e->ret, &cfg->retention, err)) != DKV_OK)
            return st;
        if (cfg->retention.mode == DKV_RHO_ENTROPY && cfg->retention.measured) {
            e->c.decode.rho_fn = measured_rho;
            e->c.decode.rho_ctx = e;
        } else if (cfg->retention.mode != DKV_RHO_FIXED) {
            e->c.decode.rho_fn = dkv_retention_rho_fn;
            e->c.decode.rho_ctx = &e->ret;
        }
    }
    e->rcost = cfg->routing_costs;
    if ((st = eng_mem_setup(e, err)) != DKV_OK)
        return st;
    if ((st = eng_result_new(e, err)) != DKV_OK)
        return st;
    /* requests and the arrival heap */
    e->n = dkv_workload_count(cfg->workload);
    e->rq = calloc(e->n ? e->n : 1, sizeof *e->rq);
    e->arr.cap = e->n ? e->n : 1;
    e->arr.t = malloc(e->arr.cap * sizeof *e->arr.t);
    e->arr.r = malloc(e->arr.cap * sizeof *e->arr.r);
    if (!e->rq || !e->arr.t || !e->arr.r)
        return dkv_err_set(err, DKV_ENOMEM, "engine: out of host memory for %zu requests", e->n);
    const dkv_request *reqs = dkv_workload_requests(cfg->workload);
    for (size_t i = 0; i < e->n; i++) {
        ereq *r = &e->rq[i];
        r->src = &reqs[i];
        r->arrival = reqs[i].arrival_s;
        r->start = r->first_block = r->finish = NAN;
        r->ent_block = UINT32_MAX;
        r->state = RS_PENDING;
        if (isfinite(r->arrival))
            heap_push(&e->arr, r->arrival, (uint32_t)i);
    }
    return DKV_OK;
}

double eng_wall_now(void)
{
    return dkv_mono_s();
}

/* Timeslice instances (engine.h's multi-instance rules): instance i, waiting when the holder of the
 * last step releases the GPU (now <= gpu_free), takes it over after the hand-over (waking i's host
 * thread); one that comes later finds it free. */
static void eng_handover(eng *e, uint32_t i)
{
    uint32_t a = e->last_inst;
    if (a == UINT32_MAX || e->gpu_free < e->now)
        return;
    double ho = a == i ? 0 : e->c.handover_s >= 0 ? e->c.handover_s : e->handover_model_s;
    e->now = e->gpu_free + ho;
}

static dkv_status run_loop(eng *e, dkv_err *err)
{
    dkv_status st;
    while (e->n_terminal < e->n) {
        if (e->ret.err.code != DKV_OK) {   /* a retention callback failed in the last step */
            if (err)
                *err = e->ret.err;
            return e->ret.err.code;
        }
        if (dkv_interrupt_requested())
            return dkv_err_set(err, DKV_EINTR, "engine: interrupted at t = %.3f s (step %llu)", e->now,
                               (unsigned long long)e->step_index);
        if ((st = take_arrivals(e, err)) != DKV_OK)
            return st;
        if (e->n_terminal >= e->n)
            break;               /* the last arrivals were rejected on arrival */
        e->blocked_req = -1;
        e->blocked_act = false;
        bool ran = false;
        double host = e->c.step_host_s;
        if (e->ni == 1 || e->c.gpu_share == DKV_SHARE_TIMESLICE) {
            for (uint32_t k = 0; k < e->ni && !ran; k++) {
                uint32_t i = (e->rr + k) % e->ni;
                if (e->ready[i] > e->now)
                    continue;    /* its host side is still busy with its previous step */
                e->plan_t0 = eng_wall_now();
                e->n_cands = 0;
                if (eng_select(e, &e->in[i]) == 0)
                    continue;
                size_t kept;
                if ((st = eng_build_memory(e, 0, &kept, err)) != DKV_OK)
                    return st;
                if (kept == 0)
                    continue;
                eng_handover(e, i);
                if ((st = eng_run_round(e, 0, i, 1, err)) != DKV_OK)
                    return st;
                e->gpu_free = e->now + e->c.step_release_s;
                e->ready[i] = e->gpu_free + (host >= 0 ? host : e->host_model_s);
                e->rr = i + 1;
                e->last_inst = i;
                ran = true;
            }
        } else {
            e->plan_t0 = eng_wall_now();
            e->n_cands = 0;
            uint32_t k = 0, last = 0;
            bool part[ENG_MAX_INST] = {false};
            for (uint32_t i = 0; i < e->ni; i++) {
                size_t from = e->n_cands;
                if (e->ready[i] > e->now || eng_select(e, &e->in[i]) == 0)
                    continue;
                size_t kept;
                if ((st = eng_build_memory(e, from, &kept, err)) != DKV_OK)
                    return st;
                if (kept) {
                    k++;
                    last = i;
                    part[i] = true;
                }
            }
            if (e->n_cands) {
                if ((st = eng_run_round(e, 0, k > 1 ? UINT32_MAX : last, k, err)) != DKV_OK)
                    return st;
                for (uint32_t i = 0; i < e->ni; i++)
                    if (part[i])
                        e->ready[i] = e->now + e->c.step_release_s + (host >= 0 ? host : e->host_model_s);
                ran = true;
            }
        }
        if (e->trace_failed) {
            if (err)
                *err = e->trace_err;
            dkv_err_prefix(err, "engine: trace sink");
            return e->trace_err.code != DKV_OK ? e->trace_err.code : DKV_EIO;
        }
        if (ran)
            continue;
        /* an instance with work whose host side is busy: the GPU idles until it is ready */
        double next_ready = INFINITY;
        for (uint32_t i = 0; i < e->ni; i++)
            if (e->ready[i] > e->now && e->ready[i] < next_ready && (e->in[i].n_run || e->in[i].wq_len))
                next_ready = e->ready[i];
        if (isfinite(next_ready)) {
            e->now = next_ready;
            continue;
        }
        /* nothing could run */
        if (eng_pending_process(e, true))
            continue;            /* deferred frees were holding memory: the "GC" runs now */
        if (e->blocked_req >= 0) {
            if (pool_held_by_others(e) && e->c.hooks->pool_wait(e->c.hooks->user, e->tag_now[DKV_MEM_TAG_KV] > 0)) {
                eng_clock_sync(e);
                continue;        /* another instance's step ran: it may have released KV */
            }
            if (!preempt_one(e))
                eng_finish_request(e, &e->rq[e->blocked_req], DKV_REQ_OOM, e->now);
            continue;
        }
        if (e->arr.n) {
            if (e->arr.t[0] > e->now) {
                if (e->c.hooks && e->c.hooks->clock) {   /* real time passes until the arrival */
                    e->c.hooks->wait_until(e->c.hooks->user, e->arr.t[0]);
                    eng_clock_sync(e);
                    if (e->now < e->arr.t[0])
                        continue;
                }
                e->now = e->arr.t[0];
            }
            continue;
        }
        return dkv_err_set(err, DKV_ESTATE, "engine: %llu requests neither run nor wait (internal error)",
                           (unsigned long long)(e->n - e->n_terminal));
    }
    return DKV_OK;
}

dkv_status eng_run_one(const dkv_engine_config *cfg, bool end_backend, dkv_engine_result **out, dkv_err *err)
{
    *out = NULL;
    dkv_engine_config rc = *cfg;
    const dkv_engine_config *c = &rc;
    dkv_status st = dkv_engine_config_resolve(&rc, err);
    if (st == DKV_OK)
        st = dkv_engine_config_validate(c, err);
    if (st != DKV_OK)
        return st;
    double w0 = eng_wall_now();
    eng *e = calloc(1, sizeof *e);
    if (!e)
        return dkv_err_set(err, DKV_ENOMEM, "engine: out of host memory");
    const dkv_engine_hooks *hk = c->hooks;
    if (hk)
        hk->lock(hk->user);
    if ((st = eng_setup(e, c, err)) != DKV_OK) {
        if (hk)
            hk->unlock(hk->user);
        eng_free(e);
        return st;
    }
    dkv_backend_setup bs;
    eng_backend_setup(e, &bs);
    eng_devmem_begin(e, &bs);
    if ((st = dkv_backend_begin(c->backend, &bs, err)) != DKV_OK) {
        if (hk)
            hk->unlock(hk->user);
        eng_free(e);
        return st;
    }
    if (hk && hk->begun)         /* threaded instances: the start gate (every backend begun) */
        hk->begun(hk->user);
    if (hk && hk->clock)         /* a clock whose zero is still ahead (a common start): wait for it */
        hk->wait_until(hk->user, 0);
    eng_clock_sync(e);
    st = run_loop(e, err);
    if (st == DKV_OK && e->ret.err.code != DKV_OK) {   /* a callback failed in the very last step */
        if (err)
            *err = e->ret.err;
        st = e->ret.err.code;
    }
    if (end_backend)
        dkv_backend_end(c->backend);
    if (st != DKV_OK && st != DKV_EINTR) {
        if (hk)
            hk->unlock(hk->user);
        eng_free(e);
        return st;
    }
    /* end of run: deferred releases go now, so the managers show what is left */
    eng_pending_process(e, true);
    eng_summarize(e, eng_wall_now() - w0);
    if (hk)
        hk->unlock(hk->user);
    *out = e->res;
    e->res = NULL;
    eng_free(e);
    return st;
}

dkv_status dkv_engine_run(const dkv_engine_config *c, dkv_engine_result **out, dkv_err *err)
{
    return eng_run_one(c, true, out, err);
}
