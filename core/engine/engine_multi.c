/* engine_multi.c - threaded instances (engine.h, dkv_engine_run_instances): one engine and one
 * host thread per instance, the KV pool shared under a mutex (or partitioned), an optional FIFO
 * ticket around the backend steps (timeslice), and the merge of the instances' results into one.
 *
 * Why separate engines: an engine, a memory manager and a backend are single-threaded; a serving
 * process is one of each.  Each thread touches only its own engine and backend; what instances
 * share is the KV pool's bookkeeping, taken under `mu` (an engine holds it while it plans and
 * commits a step and drops it around the backend call, so steps of different instances overlap
 * on the device while their host sides run in parallel, except for the engines' own bookkeeping,
 * which the mutex serialises). */
#include "engine/engine_impl.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/cost.h"
#include "util/interrupt.h"

typedef struct mi_shared {
    pthread_mutex_t mu;          /* the pool, the counters below */
    pthread_cond_t  cv;          /* a step ended or an instance finished */
    uint64_t steps;              /* steps begun, all instances (the global step index) */
    uint64_t commits;            /* times an engine dropped the lock: it may have released KV */
    uint32_t n_active, n_blocked;
    pthread_mutex_t gpu_mu;      /* the timeslice ticket */
    pthread_cond_t  gpu_cv;
    uint64_t ticket_next, ticket_serving;
    bool want_preempt;           /* a blocked instance holding no KV asks a holder to preempt */
    bool go;                     /* the start gate: every backend is begun */
    pthread_mutex_t kmu;         /* serialises the caller's on_kernel */
    bool gpu_lock, real_clock;
    bool self_intr;              /* an instance failed and stopped the others (not the user) */
    double t0;                   /* the common start (host clock) */
    dkv_kernel_fn on_kernel;
    void *on_kernel_user;
    _Atomic uint64_t kv_now, kv_peak;   /* every instance's KV together, event-exact (h_kv_moved) */
} mi_shared;

typedef struct mi_inst {
    mi_shared *sh;
    uint32_t i;
    dkv_engine_hooks hooks;
    dkv_backend proxy, *inner;
    dkv_engine_config c;
    dkv_workload *w;
    size_t *gidx;                /* workload index of each local request */
    uint64_t *step_map;          /* global step index of each local step */
    dkv_step_item *items;        /* the plan's items (the instance's own request indices) tagged with it */
    dkv_xfer *xf;
    size_t cap_items, cap_xf;
    size_t n_steps, cap_steps;
    bool map_oom;
    dkv_engine_result *res;
    dkv_status st;
    dkv_err err;
    bool begun, ready, finished;   /* backend begun; at the start gate; thread done */
} mi_inst;

static void abs_deadline(struct timespec *ts, double after_s)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    double ns = (double)ts->tv_nsec + after_s * 1e9;
    ts->tv_sec += (time_t)(ns / 1e9);
    ts->tv_nsec = (long)fmod(ns, 1e9);
}

/* ---------------------------------------------------------------- hooks */

static void h_lock(void *u) { pthread_mutex_lock(&((mi_inst *)u)->sh->mu); }
static void h_unlock(void *u)
{
    mi_shared *sh = ((mi_inst *)u)->sh;
    sh->commits++;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
}
static double h_clock(void *u) { return eng_wall_now() - ((mi_inst *)u)->sh->t0; }

/* The KV of all instances together at every acquisition and release (host clock: the order of
 * the events is the run's timeline; each instance's memory operations run under sh->mu, so one
 * instance's transient never interleaves with another's): its peak is the run's peak_kv_bytes,
 * event-exact as a simulated run's.  A shared pool's own peak is the same figure; partitioned
 * pools each know only their own, and the merged memory samples miss what a step holds between
 * them (a failed admission's blocks before they are given back: +4.6 % / +9.7 % in the sim's
 * favour at b8 k = 4 / 8 on 2026-12-01, datasets/hw/2026-12-01/call5). */
static void h_kv_moved(void *u, uint64_t bytes, bool up)
{
    mi_shared *sh = ((mi_inst *)u)->sh;
    if (!up) {
        atomic_fetch_sub(&sh->kv_now, bytes);
        return;
    }
    uint64_t now = atomic_fetch_add(&sh->kv_now, bytes) + bytes;
    uint64_t pk = atomic_load(&sh->kv_peak);
    while (now > pk && !atomic_compare_exchange_weak(&sh->kv_peak, &pk, now)) {
    }
}

static void h_wait_until(void *u, double t)
{
    mi_inst *x = u;
    double left = t - h_clock(u);
    if (left <= 0)
        return;
    struct timespec ts;
    abs_deadline(&ts, left);
    x->sh->n_blocked++;          /* an idle instance releases no KV: blocked ones must not wait for it */
    pthread_cond_timedwait(&x->sh->cv, &x->sh->mu, &ts);   /* an early wake re-checks in the engine */
    x->sh->n_blocked--;
}

static void h_begun(void *u)
{
    mi_inst *x = u;
    x->ready = true;
    pthread_cond_broadcast(&x->sh->cv);
    while (!x->sh->go)
        pthread_cond_wait(&x->sh->cv, &x->sh->mu);
}

static bool h_pool_wait(void *u, bool holds_kv)
{
    mi_shared *sh = ((mi_inst *)u)->sh;
    uint64_t seen = sh->commits;
    bool progress = true;
    sh->n_blocked++;
    for (;;) {
        if (holds_kv && sh->want_preempt) {   /* a blocked instance holding nothing asked for room */
            progress = false;
            break;
        }
        if (sh->commits != seen || dkv_interrupt_requested())
            break;
        if (sh->n_blocked >= sh->n_active) {  /* every instance with work is blocked or idle */
            if (holds_kv) {
                progress = false;
                break;
            }
            sh->want_preempt = true;           /* only a holder can make room: ask one */
            pthread_cond_broadcast(&sh->cv);
        }
        struct timespec ts;
        abs_deadline(&ts, 0.005);
        if (pthread_cond_timedwait(&sh->cv, &sh->mu, &ts) == ETIMEDOUT && !sh->real_clock && !sh->want_preempt)
            break;               /* a simulated clock does not move by waiting: re-plan */
    }
    if (!progress) {             /* this instance preempts its own youngest now, under the lock */
        sh->want_preempt = false;
        sh->commits++;
        pthread_cond_broadcast(&sh->cv);
    }
    sh->n_blocked--;
    return progress;
}

/* ---------------------------------------------------------------- the proxy backend */

static void mi_on_kernel(void *user, const dkv_kernel_record *r)
{
    mi_shared *sh = user;
    pthread_mutex_lock(&sh->kmu);
    sh->on_kernel(sh->on_kernel_user, r);
    pthread_mutex_unlock(&sh->kmu);
}

static dkv_status px_run_step(void *ctx, const dkv_step_plan *plan, dkv_step_cost *out, dkv_err *err)
{
    mi_inst *x = ctx;
    mi_shared *sh = x->sh;
    if (plan->n_items > x->cap_items || plan->n_xfers > x->cap_xf) {
        size_t ni = plan->n_items > x->cap_items ? 2 * (size_t)plan->n_items : x->cap_items;
        size_t nx = plan->n_xfers > x->cap_xf ? 2 * (size_t)plan->n_xfers : x->cap_xf;
        dkv_step_item *a = realloc(x->items, ni * sizeof *a);
        if (a)
            x->items = a, x->cap_items = ni;
        dkv_xfer *b = a ? realloc(x->xf, (nx ? nx : 1) * sizeof *b) : NULL;
        if (b)
            x->xf = b, x->cap_xf = nx;
        if (!a || !b)
            return dkv_err_set(err, DKV_ENOMEM, "threaded instances: out of host memory");
    }
    for (uint32_t i = 0; i < plan->n_items; i++) {  /* requests stay the instance's own indices */
        x->items[i] = plan->items[i];
        x->items[i].instance = x->i;
    }
    for (uint32_t i = 0; i < plan->n_xfers; i++) {
        x->xf[i] = plan->xfers[i];
        x->xf[i].instance = x->i;
    }
    uint64_t ticket = 0;
    double tw = eng_wall_now();
    if (sh->gpu_lock) {
        pthread_mutex_lock(&sh->gpu_mu);
        ticket = sh->ticket_next++;
        while (sh->ticket_serving != ticket)
            pthread_cond_wait(&sh->gpu_cv, &sh->gpu_mu);
        pthread_mutex_unlock(&sh->gpu_mu);
    }
    pthread_mutex_lock(&sh->mu);
    dkv_step_plan p = *plan;
    p.items = x->items;
    p.xfers = x->xf;
    p.step_index = sh->steps++;  /* the global step index: the order the device takes the steps in */
    p.instance = x->i;
    pthread_mutex_unlock(&sh->mu);
    if (x->n_steps == x->cap_steps) {
        size_t nc = x->cap_steps ? 2 * x->cap_steps : 1024;
        uint64_t *n = realloc(x->step_map, nc * sizeof *n);
        if (n) {
            x->step_map = n;
            x->cap_steps = nc;
        }
    }
    if (x->n_steps < x->cap_steps)
        x->step_map[x->n_steps++] = p.step_index;
    else
        x->map_oom = true;
    tw = eng_wall_now() - tw;    /* the GPU's turn (timeslice) and the step counter's lock */
    dkv_status st = dkv_backend_run_step(x->inner, &p, out, err);
    out->host_wait_s += tw;
    if (sh->gpu_lock) {
        pthread_mutex_lock(&sh->gpu_mu);
        sh->ticket_serving++;
        pthread_cond_broadcast(&sh->gpu_cv);
        pthread_mutex_unlock(&sh->gpu_mu);
    }
    return st;
}

static dkv_status px_begin(void *ctx, const dkv_backend_setup *setup, dkv_err *err)
{
    mi_inst *x = ctx;
    dkv_backend_setup bs = *setup;
    bs.on_kernel = x->sh->on_kernel ? mi_on_kernel : NULL;
    bs.on_kernel_user = x->sh;
    dkv_status st = dkv_backend_begin(x->inner, &bs, err);
    x->begun = st == DKV_OK;
    return st;
}

static const dkv_backend_i px_iface = {.name = "instance", .begin = px_begin, .run_step = px_run_step};

/* ---------------------------------------------------------------- threads */

static void *inst_main(void *arg)
{
    mi_inst *x = arg;
    x->st = eng_run_one(&x->c, false, &x->res, &x->err);
    if (x->st != DKV_OK)
        dkv_err_prefix(&x->err, "instance %u", x->i);
    pthread_mutex_lock(&x->sh->mu);
    x->sh->n_active--;
    x->sh->commits++;
    x->finished = true;
    pthread_cond_broadcast(&x->sh->cv);
    pthread_mutex_unlock(&x->sh->mu);
    if (x->st != DKV_OK && x->st != DKV_EINTR) { /* the others must not wait for this one: stop them */
        pthread_mutex_lock(&x->sh->mu);
        x->sh->self_intr = true;
        pthread_mutex_unlock(&x->sh->mu);
        dkv_interrupt_request();
    }
    return NULL;
}

static dkv_status check_config(const dkv_engine_config *c, const dkv_instances_options *o, dkv_err *err)
{
    if (c->n_instances < 2)
        return dkv_err_set(err, DKV_EINVAL, "threaded instances: instances.n is %u (one instance runs alone)",
                           c->n_instances);
    if (!o || !o->backends)
        return dkv_err_set(err, DKV_EINVAL, "threaded instances: one backend per instance is required");
    if (c->instance_route != DKV_IROUTE_ROUND_ROBIN)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "instances.route 'least_loaded' needs one queue seen by every "
                           "instance; separate instances take requests round_robin");
    if (dkv_workload_is_closed(c->workload))
        return dkv_err_set(err, DKV_EUNSUPPORTED, "a closed-loop workload releases requests on finishes across "
                           "instances; threaded instances run open-loop workloads");
    if (c->mem.kind != DKV_MEM_BLOCKPOOL)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "threaded instances need mem.kind 'blockpool' (got '%s')",
                           dkv_mem_kind_name(c->mem.kind));
    if (c->lifecycle.rule != DKV_RELEASE_IMMEDIATE)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "threaded instances release KV at once: the deferred lifecycle "
                           "rule runs on one engine's clock");
    if (c->offload.mode != DKV_OFFLOAD_NONE)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "threaded instances do not offload (policies.offload.mode must be "
                           "'none')");
    if (c->trace || c->on_step)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "threaded instances: record.trace is not supported");
    if ((c->step_release_s > 0 || c->handover_s > 0) && o->real_clock)
        return dkv_err_set(err, DKV_EINVAL, "scheduler.step_release_s / handover_s model the hand-over; executed "
                           "instances hand the GPU over for real (set them to 0)");
    if (c->step_host_s > 0 && o->real_clock)
        return dkv_err_set(err, DKV_EINVAL, "scheduler.step_host_s = %g models host time; executed instances "
                           "spend real host time (set it to 0)", c->step_host_s);
    return DKV_OK;
}

/* The instance's share of the workload: round_robin over workload order, as a simulated run. */
static dkv_status split_workload(const dkv_engine_config *c, mi_inst *x, uint32_t k, dkv_err *err)
{
    size_t n = dkv_workload_count(c->workload), m = 0;
    const dkv_request *all = dkv_workload_requests(c->workload);
    dkv_request *sub = malloc(((n + k - 1) / k + 1) * sizeof *sub);
    x->gidx = malloc(((n + k - 1) / k + 1) * sizeof *x->gidx);
    if (!sub || !x->gidx) {
        free(sub);
        return dkv_err_set(err, DKV_ENOMEM, "threaded instances: out of host memory");
    }
    for (size_t g = x->i; g < n; g += k) {
        x->gidx[m] = g;
        sub[m++] = all[g];
    }
    dkv_status st = dkv_workload_from_requests(sub, m, NULL, &x->w, err);
    free(sub);
    if (st != DKV_OK)
        return st;
    /* from_requests sorts by arrival: map each local request back by id */
    for (size_t j = 0; j < m; j++) {
        const dkv_request *q = dkv_workload_get(x->w, j);
        size_t g = x->i;
        while (g < n && all[g].id != q->id)
            g += k;
        if (g >= n)
            return dkv_err_set(err, DKV_ESTATE, "threaded instances: request id %llu lost in the split",
                               (unsigned long long)q->id);
        x->gidx[j] = g;
    }
    return DKV_OK;
}

/* ---------------------------------------------------------------- the merge */

static int cmp_step(const void *a, const void *b)
{
    const dkv_step_record *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

typedef struct mev { double t; uint32_t inst; size_t j; } mev;

static int cmp_mev(const void *a, const void *b)
{
    const mev *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->inst != y->inst)
        return x->inst < y->inst ? -1 : 1;
    return x->j < y->j ? -1 : x->j > y->j;
}

/* Memory of all instances over time: at every sample of any instance, the sum of each one's
 * latest sample.  Shared weights are one copy.  Fills the peaks of the summary's tags. */
static dkv_status merge_memory(const dkv_engine_config *c, mi_inst *x, uint32_t k, dkv_engine_result *r,
                               uint64_t *peak_dev_res)
{
    size_t n = 0;
    for (uint32_t i = 0; i < k; i++)
        n += x[i].res->n_mem;
    mev *ev = malloc((n ? n : 1) * sizeof *ev);
    r->mem = malloc((n ? n : 1) * sizeof *r->mem);
    if (!ev || !r->mem) {
        free(ev);
        return DKV_ENOMEM;
    }
    size_t m = 0;
    for (uint32_t i = 0; i < k; i++)
        for (size_t j = 0; j < x[i].res->n_mem; j++)
            ev[m++] = (mev){x[i].res->mem[j].time_s, i, j};
    qsort(ev, n, sizeof *ev, cmp_mev);
    dkv_mem_record cur[ENG_MAX_INST];
    memset(cur, 0, sizeof cur);
    dkv_run_summary *s = &r->sum;
    for (size_t e = 0; e < n; e++) {
        cur[ev[e].inst] = x[ev[e].inst].res->mem[ev[e].j];
        dkv_mem_record t = {.time_s = ev[e].t};
        uint64_t wmax = 0;
        for (uint32_t i = 0; i < k; i++) {
            t.weights += cur[i].weights;
            t.kv += cur[i].kv;
            t.activation += cur[i].activation;
            t.logits += cur[i].logits;
            t.staging += cur[i].staging;
            t.host += cur[i].host;
            t.allocated += cur[i].allocated;
            t.reserved += cur[i].reserved;     /* each engine's own managers (a borrowed pool is not in it) */
            wmax = cur[i].weights > wmax ? cur[i].weights : wmax;
        }
        if (c->shared_weights) {               /* one copy, held by every instance */
            t.allocated -= t.weights - wmax;
            t.reserved -= t.reserved >= t.weights - wmax ? t.weights - wmax : t.reserved;
            t.weights = wmax;
        }
        r->mem[r->n_mem++] = t;
        uint64_t v[DKV_MEM_TAG_COUNT] = {t.weights, t.kv, t.activation, t.logits, t.staging};
        for (int g = 0; g < DKV_MEM_TAG_COUNT; g++)
            s->peak_tag[g] = v[g] > s->peak_tag[g] ? v[g] : s->peak_tag[g];
        s->peak_allocated = t.allocated > s->peak_allocated ? t.allocated : s->peak_allocated;
        s->peak_host_bytes = t.host > s->peak_host_bytes ? t.host : s->peak_host_bytes;
        *peak_dev_res = t.reserved > *peak_dev_res ? t.reserved : *peak_dev_res;
    }
    free(ev);
    return DKV_OK;
}

/* Requests in workload order, steps by global index; the latency figures over all requests. */
static dkv_status merge_records(mi_inst *x, uint32_t k, dkv_engine_result *r)
{
    dkv_run_summary *s = &r->sum;
    size_t nreq = 0, nst = 0;
    for (uint32_t i = 0; i < k; i++) {
        nreq += x[i].res->n_req;
        nst += x[i].res->n_steps;
    }
    r->req = calloc(nreq ? nreq : 1, sizeof *r->req);
    r->steps = malloc((nst ? nst : 1) * sizeof *r->steps);
    double *lat = malloc((nreq ? nreq : 1) * sizeof *lat), *fb = malloc((nreq ? nreq : 1) * sizeof *fb);
    if (!r->req || !r->steps || !lat || !fb) {
        free(lat);
        free(fb);
        return DKV_ENOMEM;
    }
    r->n_req = nreq;
    for (uint32_t i = 0; i < k; i++) {
        for (size_t j = 0; j < x[i].res->n_req; j++) {
            r->req[x[i].gidx[j]] = x[i].res->req[j];
            r->req[x[i].gidx[j]].instance = i;
        }
        for (size_t j = 0; j < x[i].res->n_steps; j++) {
            dkv_step_record q = x[i].res->steps[j];
            q.index = q.index < x[i].n_steps ? x[i].step_map[q.index] : q.index;
            q.instance = i;
            r->steps[r->n_steps++] = q;
        }
    }
    r->cap_steps = r->n_steps;
    qsort(r->steps, r->n_steps, sizeof *r->steps, cmp_step);
    size_t nl = 0;
    double last = 0, qsum = 0, tsum = 0;
    for (size_t g = 0; g < nreq; g++) {
        const dkv_req_record *q = &r->req[g];
        if (q->status != DKV_REQ_DONE)
            continue;
        last = q->finish_s > last ? q->finish_s : last;
        lat[nl] = q->latency_s;
        fb[nl++] = q->first_block_s - q->arrival_s;
        qsum += q->queue_s;
        tsum += isfinite(q->tpot_s) ? q->tpot_s : 0;
    }
    eng_summary_latency(s, lat, nl, fb, nl, qsum, tsum);
    s->sim_time_s = last > s->sim_time_s ? last : s->sim_time_s;
    free(lat);
    free(fb);
    return DKV_OK;
}

/* Counters summed; the pool's figures from its manager(s), as eng_summarize computes them. */
static void merge_summary(const dkv_engine_config *c, mi_inst *x, uint32_t k, dkv_mem **kvm, uint32_t n_kvm,
                          dkv_run_summary *s)
{
    double compute = 0, items = 0, pred = 0, pred_w = 0;
    for (uint32_t i = 0; i < k; i++) {
        const dkv_run_summary *a = &x[i].res->sum;
        s->n_requests += a->n_requests, s->n_done += a->n_done, s->n_oom += a->n_oom;
        s->n_too_long += a->n_too_long, s->n_unfinished += a->n_unfinished, s->n_steps += a->n_steps;
        s->request_steps += a->request_steps, s->refresh_steps += a->refresh_steps;
        s->reuse_steps += a->reuse_steps, s->n_preempted += a->n_preempted;
        s->preempted_steps += a->preempted_steps, s->gen_tokens += a->gen_tokens;
        s->prompt_tokens += a->prompt_tokens, s->busy_s += a->busy_s;
        s->budget_overruns += a->budget_overruns;
        s->hbm_read_bytes += a->hbm_read_bytes, s->hbm_write_bytes += a->hbm_write_bytes;
        s->pcie_h2d_bytes += a->pcie_h2d_bytes, s->pcie_d2h_bytes += a->pcie_d2h_bytes;
        s->flops += a->flops, s->alloc_time_s += a->alloc_time_s;
        s->end_allocated_device += a->end_allocated_device;
        s->device_capacity_bytes += a->device_capacity_bytes;
        s->sim_time_s = a->sim_time_s > s->sim_time_s ? a->sim_time_s : s->sim_time_s;
        compute += a->gpu_busy_frac * a->sim_time_s;
        items += a->mean_batch * (double)a->n_steps;
        if (isfinite(a->phase_pred_accuracy)) {
            pred += a->phase_pred_accuracy * (double)a->request_steps;
            pred_w += (double)a->request_steps;
        }
        s->dev_internal_frag_peak = fmax(s->dev_internal_frag_peak, a->dev_internal_frag_peak);
        s->dev_external_frag_peak = fmax(s->dev_external_frag_peak, a->dev_external_frag_peak);
    }
    s->gpu_busy_frac = s->sim_time_s > 0 ? compute / s->sim_time_s : 0;
    s->mean_batch = s->n_steps ? items / (double)s->n_steps : 0;
    s->phase_pred_accuracy = pred_w > 0 ? pred / pred_w : NAN;
    double sum_int = 0, sum_ext = 0;
    uint64_t hits = 0, total = 0;
    for (uint32_t i = 0; i < n_kvm; i++) {
        dkv_mem_stats ms;
        dkv_mem_stats_get(kvm[i], &ms);
        s->kv_internal_frag_peak = fmax(s->kv_internal_frag_peak, ms.peak_internal_frag);
        s->kv_external_frag_peak = fmax(s->kv_external_frag_peak, ms.peak_external_frag);
        s->kv_external_frag_at_peak = fmax(s->kv_external_frag_at_peak, ms.external_frag_at_peak);
        sum_int += ms.mean_internal_frag;
        sum_ext += ms.mean_external_frag;
        hits += ms.reuse_hits;
        total += ms.reuse_total;
        s->alloc_failures += ms.n_failed;
        s->alloc_failures_frag += ms.n_failed_frag;
        s->end_allocated_kv += ms.allocated;
        s->kv_capacity_bytes += dkv_mem_get_options(kvm[i])->capacity_bytes;
    }
    s->kv_internal_frag_mean = n_kvm ? sum_int / n_kvm : 0;
    s->kv_external_frag_mean = n_kvm ? sum_ext / n_kvm : 0;
    s->block_reuse_rate = total ? (double)hits / (double)total : 0;
}

static dkv_status mi_merge(const dkv_engine_config *c, mi_inst *x, uint32_t k, dkv_mem **kvm, uint32_t n_kvm,
                    uint64_t kv_peak, double wall_s, dkv_engine_result **out, dkv_err *err)
{
    dkv_engine_result *r = calloc(1, sizeof *r);
    if (!r)
        return dkv_err_set(err, DKV_ENOMEM, "threaded instances: out of host memory");
    dkv_run_summary *s = &r->sum;
    merge_summary(c, x, k, kvm, n_kvm, s);
    uint64_t dev_res = 0;
    if (merge_records(x, k, r) != DKV_OK || merge_memory(c, x, k, r, &dev_res) != DKV_OK) {
        dkv_engine_result_free(r);
        return dkv_err_set(err, DKV_ENOMEM, "threaded instances: out of host memory (merging results)");
    }
    uint64_t pool_res = 0;
    for (uint32_t i = 0; i < n_kvm; i++) {
        dkv_mem_stats ms;
        dkv_mem_stats_get(kvm[i], &ms);
        pool_res += ms.peak_reserved;
    }
    s->peak_reserved = dev_res + pool_res;   /* an upper bound: the peaks may not coincide */
    if (n_kvm == 1) {                        /* one shared pool: its own event-exact peak */
        dkv_mem_stats ms;
        dkv_mem_stats_get(kvm[0], &ms);
        s->peak_tag[DKV_MEM_TAG_KV] = ms.peak_allocated;
    } else if (kv_peak) {                    /* partitioned pools, host clock: their sum, event-exact */
        s->peak_tag[DKV_MEM_TAG_KV] = kv_peak;
    }                                        /* (simulated clocks: the merged samples' peak) */
    if (c->shared_weights && k > 1)          /* the device managers each held the one copy */
        s->end_allocated_device -= (uint64_t)(k - 1) * dkv_model_weight_bytes(c->model);
    s->throughput_rps = s->sim_time_s > 0 ? (double)s->n_done / s->sim_time_s : 0;
    s->tokens_per_s = s->sim_time_s > 0 ? (double)s->gen_tokens / s->sim_time_s : 0;
    s->cost_per_hour = c->cost_per_hour >= 0 ? c->cost_per_hour : c->gpu->cost_per_hour;
    s->cost_per_mtok = dkv_cost_per_mtok(s->cost_per_hour, 1, s->tokens_per_s);
    s->wall_s = wall_s;
    *out = r;
    return DKV_OK;
}

/* Instance i's engine: its share of the workload, hooks, proxy backend and pool. */
static dkv_status mi_setup(const dkv_engine_config *c, const dkv_instances_options *o, mi_shared *sh, mi_inst *xi,
                           uint32_t i, dkv_mem *pool, uint32_t n_kvm, dkv_err *err)
{
    xi->sh = sh;
    xi->i = i;
    xi->inner = o->backends[i];
    dkv_status st = split_workload(c, xi, c->n_instances, err);
    if (st != DKV_OK)
        return st;
    xi->hooks = (dkv_engine_hooks){.user = xi, .lock = h_lock, .unlock = h_unlock,
                                   .clock = o->real_clock ? h_clock : NULL, .wait_until = h_wait_until,
                                   .pool_wait = h_pool_wait, .begun = h_begun,
                                   .kv_moved = o->real_clock ? h_kv_moved : NULL};
    xi->proxy = (dkv_backend){.iface = &px_iface, .ctx = xi};
    xi->c = *c;
    xi->c.n_instances = 1;
    xi->c.workload = xi->w;
    xi->c.backend = &xi->proxy;
    xi->c.kv_pool = pool;
    xi->c.kv_pool_instance = n_kvm > 1 ? 0 : i;
    xi->c.hooks = &xi->hooks;
    xi->c.progress = NULL;
    xi->c.on_kernel = NULL;
    return DKV_OK;
}

/* An instance's outcome: an interrupted one with results sets *intr; a failure is the run's error. */
static dkv_status mi_status(const mi_inst *x, bool *intr, dkv_err *err)
{
    if (x->st == DKV_EINTR && x->res) {
        *intr = true;
        return DKV_OK;
    }
    if (x->st != DKV_OK) {
        if (err)
            *err = x->err;
        return x->st;
    }
    if (x->map_oom)
        return dkv_err_set(err, DKV_ENOMEM, "threaded instances: out of host memory (step map)");
    return DKV_OK;
}

dkv_status dkv_engine_run_instances(const dkv_engine_config *cfg, const dkv_instances_options *o,
                                    dkv_engine_result **out, dkv_err *err)
{
    *out = NULL;
    dkv_engine_config rc = *cfg;   /* resolved once here; each instance's engine gets a copy */
    const dkv_engine_config *c = &rc;
    dkv_status st = dkv_engine_config_resolve(&rc, err);
    if (st == DKV_OK)
        st = dkv_engine_config_validate(c, err);
    if (st != DKV_OK || (st = check_config(c, o, err)) != DKV_OK)
        return st;
    uint32_t k = c->n_instances;
    double w0 = eng_wall_now();
    uint64_t kv_cap = 0, dev_cap = 0;
    dkv_mem *kvm[ENG_MAX_INST] = {0};
    uint32_t n_kvm = 0;
    mi_shared sh;
    memset(&sh, 0, sizeof sh);
    mi_inst *x = calloc(k, sizeof *x);
    if (!x)
        return dkv_err_set(err, DKV_ENOMEM, "threaded instances: out of host memory");
    if ((st = eng_capacities(c, k, &kv_cap, &dev_cap, err)) == DKV_OK)
        st = eng_kv_create(c, k, kv_cap, kvm, &n_kvm, NULL, err);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&sh.mu, NULL);
    pthread_cond_init(&sh.cv, &ca);
    pthread_mutex_init(&sh.gpu_mu, NULL);
    pthread_cond_init(&sh.gpu_cv, NULL);
    pthread_mutex_init(&sh.kmu, NULL);
    pthread_condattr_destroy(&ca);
    sh.gpu_lock = o->gpu_lock;
    sh.real_clock = o->real_clock;
    sh.on_kernel = c->on_kernel;
    sh.on_kernel_user = c->on_kernel_user;
    for (uint32_t i = 0; st == DKV_OK && i < k; i++)
        st = mi_setup(c, o, &sh, &x[i], i, kvm[n_kvm > 1 ? i : 0], n_kvm, err);
    /* thread i starts when i-1's backend is begun (or its thread ended: a failure stops the rest);
       the steps start when all are begun */
    pthread_t th[ENG_MAX_INST];
    uint32_t started = 0;
    sh.n_active = k;
    for (; st == DKV_OK && started < k; started++) {
        if (pthread_create(&th[started], NULL, inst_main, &x[started]) != 0) {
            st = dkv_err_set(err, DKV_ENOMEM, "threaded instances: could not start thread %u", started);
            break;
        }
        pthread_mutex_lock(&sh.mu);
        while (!x[started].ready && !x[started].finished)
            pthread_cond_wait(&sh.cv, &sh.mu);
        bool failed = !x[started].ready;
        pthread_mutex_unlock(&sh.mu);
        if (failed) {
            started++;
            st = DKV_EIO;   /* the thread's own error is reported below */
            break;
        }
    }
    pthread_mutex_lock(&sh.mu);
    sh.n_active = started;   /* threads never started are not waited for */
    for (uint32_t i = 0; i < started; i++)
        sh.n_active -= x[i].finished;
    if (st != DKV_OK) {
        sh.self_intr = true;
        dkv_interrupt_request();
    }
    sh.t0 = eng_wall_now();
    sh.go = true;
    pthread_cond_broadcast(&sh.cv);
    pthread_mutex_unlock(&sh.mu);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    uint32_t begun = 0;
    for (uint32_t i = 0; i < k; i++)
        begun = x[i].begun ? i + 1 : begun;
    if (st == DKV_EIO)
        st = DKV_OK;   /* replaced by the failed instance's error below */
    for (uint32_t i = begun; i-- > 0;)      /* later ones may borrow from earlier ones */
        if (x[i].begun)
            dkv_backend_end(x[i].inner);
    if (sh.self_intr)
        dkv_interrupt_clear();
    for (uint32_t i = 0; sh.self_intr && i < k; i++)   /* report the failure, not the stop it caused */
        if (x[i].st != DKV_OK && x[i].st != DKV_EINTR && st == DKV_OK) {
            st = x[i].st;
            if (err)
                *err = x[i].err;
        }
    bool intr = false;
    for (uint32_t i = 0; st == DKV_OK && i < k; i++)
        st = mi_status(&x[i], &intr, err);
    if (st == DKV_OK)
        st = mi_merge(c, x, k, kvm, n_kvm, atomic_load(&sh.kv_peak), eng_wall_now() - w0, out, err);
    if (st == DKV_OK && intr)
        st = dkv_err_set(err, DKV_EINTR, "threaded instances: interrupted");
    for (uint32_t i = 0; i < k; i++) {
        dkv_engine_result_free(x[i].res);
        dkv_workload_free(x[i].w);
        free(x[i].gidx);
        free(x[i].step_map);
        free(x[i].items);
        free(x[i].xf);
    }
    for (uint32_t i = 0; i < n_kvm; i++)
        dkv_mem_free(kvm[i]);
    pthread_mutex_destroy(&sh.mu);
    pthread_cond_destroy(&sh.cv);
    pthread_mutex_destroy(&sh.gpu_mu);
    pthread_cond_destroy(&sh.gpu_cv);
    pthread_mutex_destroy(&sh.kmu);
    free(x);
    return st;
}
