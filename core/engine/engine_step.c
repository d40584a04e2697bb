/* engine_step.c - one iteration: memory for the picked request-steps, the plan the policies
 * shape, the backend call, and the commit of what the step did. */
#include "engine/engine_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mem/mem.h"

/* ---------------------------------------------------------------- memory of a round */

static dkv_status plan_offload(eng *e, ereq *r, cand *cd, dkv_err *err)
{
    const dkv_decode_step *s = &cd->s;
    uint64_t res = (uint64_t)s->resident_tokens * e->kvbpt;
    cd->off_next = r->off;
    memset(&cd->orders, 0, sizeof cd->orders);
    cd->kv_during = cd->kv_after = res;
    if (e->c.offload.mode == DKV_OFFLOAD_NONE)
        return DKV_OK;
    uint64_t total = res > r->off.total ? res : r->off.total;
    if (total == 0)
        return DKV_OK;
    uint32_t B = e->c.decode.block_len;
    dkv_offload_step os = {
        .step = s->index,
        .n_steps = dkv_decode_total_steps(&r->dec),
        .total_bytes = total,
        .working_bytes = (uint64_t)(s->resident_tokens < B ? s->resident_tokens : B) * e->kvbpt,
        .read_bytes = (uint64_t)s->a_tokens * e->kvbpt,
        .write_bytes = (uint64_t)(s->phase == DKV_PHASE_REFRESH ? s->a_tokens : s->w_tokens) * e->kvbpt,
    };
    if (os.write_bytes > total)
        os.write_bytes = total;
    if (os.working_bytes > total)
        os.working_bytes = total;
    dkv_status st = dkv_offload_decide(&e->c.offload, e->m, &os, &cd->off_next, &cd->orders, err);
    if (st != DKV_OK) {
        dkv_err_prefix(err, "request %llu step %u", (unsigned long long)r->src->id, s->index);
        return st;
    }
    cd->kv_after = cd->orders.resident_bytes;
    cd->kv_during = cd->orders.resident_bytes + cd->orders.freed_bytes;
    return DKV_OK;
}

static void trans_release_from(eng *e, uint32_t t0, bool lifecycle)
{
    while (e->n_trans > t0) {
        e->n_trans--;
        uint32_t k = e->n_trans;
        if (lifecycle) {
            eng_release(e, e->dev, e->trans_id[k], e->trans_tag[k], e->trans_alloc[k]);
        } else if (dkv_mem_release(e->dev, e->trans_id[k], NULL) == DKV_OK) {
            e->tag_now[e->trans_tag[k]] -= e->trans_alloc[k];
            e->alloc_now -= e->trans_alloc[k];
            ENG_TRACE(e, eng_trace_mem(e->c.trace, true, e->now, eng_trace_id(e, e->dev, e->trans_id[k]), 0, 0,
                                       e->trans_tag[k], 0, 0, &e->trace_err));
        }
    }
}

static dkv_status trans_take(eng *e, uint64_t bytes, uint8_t tag, uint32_t inst)
{
    if (bytes == 0)
        return DKV_OK;
    uint32_t k = e->n_trans;
    dkv_status st = eng_acquire(e, e->dev, bytes, tag, inst, UINT32_MAX, &e->trans_id[k], &e->trans_alloc[k], NULL);
    if (st == DKV_OK) {
        e->trans_tag[k] = tag;
        e->n_trans++;
    }
    return st;
}

/* Activations (sum of the items' peaks), the logit chunk's transient peak, offload staging. */
static dkv_status trans_acquire(eng *e, size_t from, size_t to)
{
    uint64_t act = 0, rows = 0, stage = 0;
    for (size_t i = from; i < to; i++) {
        act += e->cands[i].s.act_peak_bytes;
        rows += e->cands[i].s.logit_rows;
        stage += e->cands[i].orders.staging_bytes;
    }
    dkv_logit_plan lp = {0};
    if (rows && dkv_logit_plan_compute(&e->c.logit, rows, e->m->vocab, e->m->act_dtype, &lp, NULL) != DKV_OK)
        return DKV_EINVAL;
    uint32_t t0 = e->n_trans, inst = e->cands[from].inst;
    dkv_status st = trans_take(e, act, DKV_MEM_TAG_ACTIVATION, inst);
    if (st == DKV_OK)
        st = trans_take(e, lp.peak_bytes, DKV_MEM_TAG_LOGITS, inst);
    if (st == DKV_OK)
        st = trans_take(e, stage, DKV_MEM_TAG_STAGING, inst);
    if (st != DKV_OK)
        trans_release_from(e, t0, false);
    return st;
}

static void route_request(eng *e, ereq *r)
{
    if (!e->c.routing.enabled || r->started)
        return;
    uint32_t L = r->src->prompt_tokens + r->src->gen_tokens;
    uint64_t bb = dkv_mem_block_bytes(e->in[r->inst].kvm);
    dkv_route_request rr = {.lifetime_tokens = r->src->gen_tokens, .steps = dkv_decode_total_steps(&r->dec),
                            .kv_bytes = (uint64_t)L * e->kvbpt, .block_bytes = bb ? bb : e->block_bytes};
    dkv_route_decision d;
    if (dkv_routing_decide(&e->c.routing, &e->rcost, &rr, &d, NULL) != DKV_OK)
        return;
    r->route = (uint8_t)d.route;
    r->kvm = d.route == DKV_ROUTE_PLAIN ? e->dev : e->in[r->inst].kvm;
}

dkv_status eng_build_memory(eng *e, size_t from, size_t *kept, dkv_err *err)
{
    size_t n = e->n_cands;
    *kept = 0;
    for (size_t i = from; i < n; i++) {
        dkv_status st = plan_offload(e, &e->rq[e->cands[i].r], &e->cands[i], err);
        if (st != DKV_OK)
            return st;
    }
    /* transients first: the youngest items go when they do not fit */
    uint32_t t0 = e->n_trans;
    while (n > from && trans_acquire(e, from, n) != DKV_OK)
        n--;
    if (n == from) {
        if (e->blocked_req < 0) {
            e->blocked_req = (int32_t)e->cands[from].r;
            e->blocked_act = true;
        }
        e->n_cands = from;
        return DKV_OK;
    }
    e->n_cands = n;
    /* then each item's KV, in order */
    bool admit_failed = false, dropped = false;
    for (size_t i = from; i < n; i++) {
        cand *cd = &e->cands[i];
        ereq *r = &e->rq[cd->r];
        if (cd->admit && admit_failed && !e->c.first_fit) {
            cd->dropped = dropped = true;
            continue;
        }
        if (cd->admit)
            route_request(e, r);
        bool fail = false, newly = false;
        if (r->kvm != e->dev && dkv_mem_get_options(r->kvm)->kind == DKV_MEM_STATIC && !r->reserved) {
            uint64_t max_bytes = (uint64_t)e->m->max_len * e->kvbpt;
            if (dkv_mem_reserve(r->kvm, cd->r, max_bytes, NULL) == DKV_OK)
                r->reserved = newly = true;
            else
                fail = true;
        }
        if (!fail && eng_kv_resize(e, r, cd->kv_during, false, NULL) != DKV_OK) {
            fail = true;
            if (newly) {
                dkv_mem_unreserve(r->kvm, cd->r, NULL);
                r->reserved = false;
            }
        }
        if (fail) {
            cd->dropped = dropped = true;
            if (cd->admit)
                admit_failed = true;
            if (e->blocked_req < 0) {
                e->blocked_req = (int32_t)cd->r;
                e->blocked_act = false;
            }
        }
    }
    if (!dropped) {
        *kept = n - from;
        return DKV_OK;
    }
    size_t w = from;
    for (size_t i = from; i < n; i++)
        if (!e->cands[i].dropped)
            e->cands[w++] = e->cands[i];
    e->n_cands = w;
    trans_release_from(e, t0, false);
    if (w == from)
        return DKV_OK;
    while (w > from && trans_acquire(e, from, w) != DKV_OK)
        w--; /* cannot happen (less than before fits); kept for safety */
    e->n_cands = w;
    *kept = w - from;
    return DKV_OK;
}

/* ---------------------------------------------------------------- queues */

static void wq_remove(einst *in, uint32_t ri)
{
    for (size_t k = 0; k < in->wq_len; k++) {
        size_t pos = (in->wq_head + k) % in->wq_cap;
        if (in->wq[pos] != ri)
            continue;
        if (k == 0) {
            in->wq_head = (in->wq_head + 1) % in->wq_cap;
        } else {
            for (size_t j = k; j + 1 < in->wq_len; j++)
                in->wq[(in->wq_head + j) % in->wq_cap] = in->wq[(in->wq_head + j + 1) % in->wq_cap];
        }
        in->wq_len--;
        return;
    }
}

static void run_remove(einst *in, uint32_t ri)
{
    for (uint32_t k = 0; k < in->n_run; k++)
        if (in->run[k] == ri) {
            memmove(&in->run[k], &in->run[k + 1], (in->n_run - k - 1) * sizeof *in->run);
            in->n_run--;
            return;
        }
}

static dkv_status run_add(einst *in, uint32_t ri)
{
    if (in->n_run == in->cap_run) {
        uint32_t nc = in->cap_run ? 2 * in->cap_run : 64;
        uint32_t *n = realloc(in->run, nc * sizeof *n);
        if (!n)
            return DKV_ENOMEM;
        in->run = n;
        in->cap_run = nc;
    }
    in->run[in->n_run++] = ri;
    return DKV_OK;
}

void eng_finish_request(eng *e, ereq *r, uint8_t status, double t)
{
    einst *in = &e->in[r->inst];
    uint32_t ri = (uint32_t)(r - e->rq);
    if (r->state == RS_RUNNING)
        run_remove(in, ri);
    else if (r->state == RS_WAITING)
        wq_remove(in, ri);
    eng_kv_release_all(e, r);
    eng_unreserve(e, r);
    eng_host_update(e, r, 0);
    if (r->state == RS_RUNNING || r->state == RS_WAITING)
        in->n_queued--;
    ENG_TRACE(e, eng_trace_request(e->c.trace, t, status == DKV_REQ_DONE ? ENG_EV_FINISH : ENG_EV_REJECT, ri, r->inst,
                                   r->kv_peak, r->src->gen_tokens, &e->trace_err));
    r->state = status == DKV_REQ_DONE ? RS_DONE : RS_FAILED;
    r->status = status;
    r->finish = t;
    e->n_terminal++;
    uint32_t nx = r->src->next_of_user;
    if (nx != DKV_NO_NEXT && nx < e->n && e->rq[nx].state == RS_PENDING) {
        ereq *q = &e->rq[nx];
        q->arrival = t + q->src->think_s;
        arr_heap *h = &e->arr;
        if (h->n < h->cap) { /* capacity is n requests: never grows */
            size_t i = h->n++;
            while (i > 0) {
                size_t p = (i - 1) / 2;
                if (h->t[p] < q->arrival || (h->t[p] == q->arrival && h->r[p] < nx))
                    break;
                h->t[i] = h->t[p];
                h->r[i] = h->r[p];
                i = p;
            }
            h->t[i] = q->arrival;
            h->r[i] = nx;
        }
    }
    if (e->c.progress && e->n > 0) {
        uint64_t every = e->n / 100 ? e->n / 100 : 1;
        if (e->n_terminal % every == 0 || e->n_terminal == e->n)
            e->c.progress(e->c.progress_user, (double)e->n_terminal, (double)e->n);
    }
}

/* ---------------------------------------------------------------- plan, cost, commit */

static dkv_status ensure_plan_arrays(eng *e, size_t n_items, size_t n_xfers)
{
    if (n_items > e->cap_items) {
        size_t nc = n_items * 2;
        dkv_step_item *ni = realloc(e->items, nc * sizeof *ni);
        if (!ni)
            return DKV_ENOMEM;
        e->items = ni;
        e->cap_items = nc;
    }
    if (n_xfers > e->cap_xfers) {
        size_t nc = n_xfers * 2;
        dkv_xfer *nx = realloc(e->xfers, nc * sizeof *nx);
        if (!nx)
            return DKV_ENOMEM;
        e->xfers = nx;
        e->cap_xfers = nc;
    }
    return DKV_OK;
}

/* The block ids of a request's KV, in order (blockpool: one block per allocation), at *blk. */
static void item_blocks(eng *e, const ereq *r, dkv_step_item *it, uint32_t **blk)
{
    if (!eng_kv_per_block(e, r) || !r->n_kv)
        return;
    it->kv_blocks = *blk;
    for (uint32_t j = 0; j < r->n_kv; j++)   /* looked up when the block was taken (engine_mem.c kv_push) */
        if (r->kv_blk[j] != UINT32_MAX)
            *(*blk)++ = r->kv_blk[j], it->n_kv_blocks++;
}

static size_t build_item(eng *e, cand *cd, dkv_step_item *it, dkv_xfer *xf, uint32_t **blk)
{
    const dkv_engine_config *c = &e->c;
    const dkv_decode_step *s = &cd->s;
    ereq *r = &e->rq[cd->r];
    memset(it, 0, sizeof *it);
    it->request = cd->r;
    it->instance = cd->inst;
    it->block = s->block;
    it->step = s->step;
    it->steps_in_block = s->steps_in_block;
    it->phase = (uint8_t)s->phase;
    it->q_tokens = s->q_tokens;
    it->kv_tokens = s->a_tokens;
    it->kv_cached_tokens = s->cached_tokens;
    it->kv_write_tokens = s->w_tokens;
    it->logit_rows = s->logit_rows;
    item_blocks(e, r, it, blk);
    bool sparse = c->decode.cache == DKV_CACHE_SPARSE && s->phase == DKV_PHASE_REUSE;
    it->attn = sparse ? (s->shared_set ? DKV_ATTN_SPARSE_SHARED : DKV_ATTN_SPARSE_HEAD) : DKV_ATTN_DENSE;
    if (s->selects && s->w_tokens > 0)
        it->kv_select_rows = s->block_len;
    if (s->selects) {
        dkv_retention_plan rp;
        if (dkv_retention_plan_block(c->retention.set, e->m, e->g, s->rho, s->canvas, s->block_len, &rp, NULL) == DKV_OK)
            r->sparse_run_bytes = rp.retained_run_bytes;
    }
    if (sparse) {
        it->kv_run_bytes = r->sparse_run_bytes;
    } else if (s->cached_tokens > 0) {
        dkv_layout_read lr;
        if (dkv_layout_read_cost(&c->layout, e->m, e->g, c->sizing.block_tokens, s->cached_tokens, &lr, NULL) ==
            DKV_OK)
            it->kv_run_bytes = lr.run_bytes;
    }
    /* transfer orders */
    size_t nx = 0;
    const dkv_offload_orders *o = &cd->orders;
    bool blocking = c->offload.mode == DKV_OFFLOAD_PLAIN;
    if (o->h2d_bytes)
        xf[nx++] = (dkv_xfer){.kind = DKV_XFER_FETCH, .pinned = o->pinned, .blocking = blocking,
                              .request = cd->r, .instance = cd->inst, .pcie_bytes = o->h2d_bytes};
    uint64_t d2h = o->d2h_bytes;
    if (o->compress_bytes) {
        uint64_t cb = (uint64_t)llround((double)o->compress_bytes * c->offload.lowrank_ratio);
        if (cb > d2h)
            cb = d2h;
        xf[nx++] = (dkv_xfer){.kind = DKV_XFER_COMPRESS, .pinned = o->pinned, .blocking = blocking,
                              .request = cd->r, .instance = cd->inst, .pcie_bytes = cb,
                              .device_bytes = o->compress_bytes, .flops = o->compress_flops};
        d2h -= cb;
    }
    if (d2h)
        xf[nx++] = (dkv_xfer){.kind = DKV_XFER_OFFLOAD, .pinned = o->pinned, .blocking = blocking,
                              .request = cd->r, .instance = cd->inst, .pcie_bytes = d2h};
    if (c->layout.layout == DKV_LAYOUT_LAYER_MAJOR) {
        uint64_t tok = c->layout.reorder == DKV_REORDER_PER_STEP ? s->w_tokens : (s->block_done ? s->block_len : 0);
        dkv_layout_reorder_cost rc;
        if (tok && dkv_layout_reorder(&c->layout, e->m, e->g, c->sizing.block_tokens, tok, &rc, NULL) == DKV_OK &&
            rc.read_bytes + rc.write_bytes)
            xf[nx++] = (dkv_xfer){.kind = DKV_XFER_REORDER, .request = cd->r, .instance = cd->inst,
                                  .device_bytes = (rc.read_bytes + rc.write_bytes) / 2};
    }
    return nx;
}

static void commit(eng *e, cand *cd, double t0)
{
    const dkv_engine_config *c = &e->c;
    ereq *r = &e->rq[cd->r];
    const dkv_decode_step *s = &cd->s;
    if (cd->admit) {
        einst *in = &e->in[cd->inst];
        wq_remove(in, cd->r);
        run_add(in, cd->r);
        r->state = RS_RUNNING;
        r->admit_seq = ++e->admit_seq;
        if (!r->started) {
            r->started = true;
            r->start = t0;
        }
    }
    r->dec = cd->next;
    r->steps_done++;
    if (s->phase == DKV_PHASE_REFRESH)
        r->refresh++;
    else
        r->reuse++;
    e->pred_total++;
    e->pred_ok += cd->pred_phase == (uint8_t)s->phase;
    if (c->offload.mode != DKV_OFFLOAD_NONE) {
        r->off = cd->off_next;
        eng_host_update(e, r, r->off.host_raw + (uint64_t)llround((double)r->off.host_lowrank * c->offload.lowrank_ratio));
    }
    if (cd->kv_after < cd->kv_during || cd->kv_after < r->kv_req_bytes)
        eng_kv_resize(e, r, cd->kv_after, true, NULL);
    if (s->block_done) {
        r->dec_block = r->dec;
        if (s->block == 0)
            r->first_block = e->now;
    }
    if (s->request_done)
        eng_finish_request(e, r, DKV_REQ_DONE, e->now);
}

/* What a round's items add up to: the step record's counts and the routing pool's host time. */
typedef struct {
    uint64_t q, bud, rows;
    uint32_t n_ref, n_adm;
    double route_s;
} round_sums;

/* The host clock around the backend call (a step record's host_plan_s and host_wait_s). */
typedef struct {
    double call0, ret, call1;
} round_wall;

/* The plan's items and transfer orders for cands[from, from + n), and their sums. */
static dkv_status round_build_plan(eng *e, size_t from, size_t n, size_t *n_xfers, round_sums *sum, dkv_err *err)
{
    const dkv_engine_config *c = &e->c;
    if (ensure_plan_arrays(e, n, 4 * n + 1) != DKV_OK)
        return dkv_err_set(err, DKV_ENOMEM, "engine: out of host memory");
    size_t nx = 0, nb = 0;
    for (size_t i = 0; i < n; i++)
        nb += e->rq[e->cands[from + i].r].n_kv;
    if (nb > e->cap_kvblk) {
        uint32_t *kb = realloc(e->kvblk, nb * 2 * sizeof *kb);
        if (!kb)
            return dkv_err_set(err, DKV_ENOMEM, "engine: out of host memory");
        e->kvblk = kb;
        e->cap_kvblk = nb * 2;
    }
    uint32_t *blk = e->kvblk;
    memset(sum, 0, sizeof *sum);
    for (size_t i = 0; i < n; i++) {
        cand *cd = &e->cands[from + i];
        nx += build_item(e, cd, &e->items[i], &e->xfers[nx], &blk);
        sum->q += cd->s.q_tokens;
        sum->bud += cd->budget;
        sum->rows += cd->s.logit_rows;
        sum->n_ref += cd->s.phase == DKV_PHASE_REFRESH;
        sum->n_adm += cd->admit;
        if (c->routing.enabled) {
            ereq *r = &e->rq[cd->r];
            if (r->route == DKV_ROUTE_PLAIN)
                sum->route_s += e->rcost.plain_step_s;
            else
                sum->route_s += e->rcost.pool_step_s + (cd->admit && !r->started ? e->rcost.setup_s : 0) +
                                (cd->s.step == 0 ? e->rcost.block_s * (double)r->n_kv : 0);
        }
    }
    *n_xfers = nx;
    return DKV_OK;
}

/* The backend runs the plan; with hooks (threaded instances) the shared lock is released around
 * the call and the engine's clock is the host's. */
static dkv_status round_call_backend(eng *e, const dkv_step_plan *plan, dkv_step_cost *cost, round_wall *w,
                                     dkv_err *err)
{
    const dkv_engine_config *c = &e->c;
    const dkv_engine_hooks *hk = c->hooks;
    w->call0 = eng_wall_now();
    if (hk) {
        eng_clock_sync(e);       /* a real clock: the step starts now, after planning and waits */
        hk->unlock(hk->user);
    }
    eng_devmem_step(e, plan);
    dkv_status st = dkv_backend_run_step(c->backend, plan, cost, err);
    w->ret = eng_wall_now();
    if (hk)
        hk->lock(hk->user);  /* waiting for the shared pool's lock counts as a wait */
    w->call1 = eng_wall_now();
    if (st != DKV_OK)
        dkv_err_prefix(err, "backend '%s', step %llu", dkv_backend_name(c->backend), (unsigned long long)e->step_index);
    return st;
}

/* The step's time on the engine's clock (backend cost + allocation and routing time) and the
 * run's totals; returns the allocation time, with the step's start at *t0 and the reserved bytes
 * at *reserved. */
static double round_account(eng *e, const dkv_step_cost *cost, const round_sums *sum, size_t n, double *t0,
                            uint64_t *reserved)
{
    const dkv_engine_hooks *hk = e->c.hooks;
    *reserved = 0;
    double dev_t = eng_device_time(e, reserved);
    if (*reserved > e->res_step_max) /* every acquisition of the step is done, no release yet */
        e->res_step_max = *reserved;
    double alloc_s = dev_t - e->dev_time_prev + sum->route_s;
    e->dev_time_prev = dev_t;
    *t0 = e->now;
    e->now += cost->time_s + alloc_s;
    if (hk && hk->clock) {       /* the host clock: the step's real end */
        e->now = *t0;
        eng_clock_sync(e);
    }
    e->busy_s += cost->time_s + alloc_s;
    e->compute_s += cost->compute_s;
    e->roofline_s += cost->roofline_s;
    e->host_model_s = cost->host_s;
    e->handover_model_s = cost->handover_s;
    e->alloc_s += alloc_s;
    e->hbm_rd += (double)cost->hbm_read_bytes;
    e->hbm_wr += (double)cost->hbm_write_bytes;
    e->pcie_h2d += (double)cost->pcie_h2d_bytes;
    e->pcie_d2h += (double)cost->pcie_d2h_bytes;
    e->flops += cost->flops;
    e->items_total += n;
    if (sum->q > e->budget_tokens && n > 1)
        e->overruns++;
    return alloc_s;
}

/* Trace events at the step's start (admissions, phases): the trace is in time order, so they go
 * before the commit's events. */
static void round_trace_start(eng *e, size_t from, size_t n, double t0)
{
    for (size_t i = 0; e->c.trace && i < n; i++) {
        cand *cd = &e->cands[from + i];
        const ereq *r = &e->rq[cd->r];
        if (cd->admit)
            ENG_TRACE(e, eng_trace_request(e->c.trace, t0, ENG_EV_ADMIT, cd->r, cd->inst, cd->kv_during,
                                           r->src->prompt_tokens + r->src->gen_tokens, &e->trace_err));
        ENG_TRACE(e, eng_trace_phase(e->c.trace, t0, e->now - t0, (uint8_t)cd->s.phase, cd->r, cd->inst, cd->s.block,
                                     cd->s.step, cd->s.q_tokens, &e->trace_err));
    }
}

/* The round's decisions take effect: each item's request state, the step's transient memory
 * released, the next step index, pending events, and the memory managers' clocks. */
static void round_commit(eng *e, size_t from, size_t n, double t0)
{
    for (size_t i = 0; i < n; i++)
        commit(e, &e->cands[from + i], t0);
    trans_release_from(e, 0, true);
    e->n_cands = from;
    e->step_index++;
    eng_pending_process(e, false);
    for (uint32_t i = 0; i < e->n_kvm; i++)
        dkv_mem_tick(e->kvm[i], e->now, NULL);
    if (!e->dev_is_kv)
        dkv_mem_tick(e->dev, e->now, NULL);
}

/* The step record of the round just committed (step index already advanced). */
static dkv_step_record round_record(const eng *e, uint32_t inst_tag, size_t n, const round_sums *sum,
                                    const dkv_step_cost *cost, double t0, double alloc_s, const round_wall *w)
{
    bool hk = e->c.hooks != NULL;
    dkv_step_record rec = {.index = e->step_index - 1, .instance = inst_tag, .start_s = t0,
                           .time_s = cost->time_s + alloc_s, .compute_s = cost->compute_s, .pcie_s = cost->pcie_s,
                           .stall_s = cost->stall_s, .alloc_s = alloc_s, .n_items = (uint32_t)n,
                           .n_refresh = sum->n_ref, .n_reuse = (uint32_t)n - sum->n_ref, .n_admitted = sum->n_adm,
                           .q_tokens = sum->q, .budget_tokens = sum->bud, .logit_rows = sum->rows,
                           .hbm_read_bytes = cost->hbm_read_bytes, .hbm_write_bytes = cost->hbm_write_bytes,
                           .pcie_h2d_bytes = cost->pcie_h2d_bytes, .pcie_d2h_bytes = cost->pcie_d2h_bytes,
                           .flops = cost->flops, .flops_util = cost->flops_util, .bw_util = cost->bw_util,
                           .host_enqueue_s = cost->host_enqueue_s, .sm_mhz = cost->sm_mhz,
                           .sm_probe_mhz = cost->sm_probe_mhz,
                           .host_wait_s = cost->host_wait_s + (hk ? w->call1 - w->ret : 0)};
    for (uint32_t i = 0; i < e->ni; i++) {
        rec.n_waiting += (uint32_t)e->in[i].wq_len;
        rec.n_running += e->in[i].n_run;
    }
    rec.host_plan_s = (w->call0 - e->plan_t0) + (eng_wall_now() - w->call1);
    return rec;
}

/* One step: cands[from, n_cands) become a plan, the backend runs it, the engine commits it and
 * records the step. */
dkv_status eng_run_round(eng *e, size_t from, uint32_t inst_tag, uint32_t n_inst_round, dkv_err *err)
{
    const dkv_engine_config *c = &e->c;
    size_t n = e->n_cands - from, nx = 0;
    round_sums sum;
    DKV_TRY(round_build_plan(e, from, n, &nx, &sum, err));
    dkv_step_plan plan = {.step_index = e->step_index, .instance = inst_tag, .items = e->items,
                          .n_items = (uint32_t)n, .xfers = e->xfers, .n_xfers = (uint32_t)nx,
                          .max_logit_rows = c->logit.max_num_logits,
                          .n_weight_streams = c->shared_weights ? 1 : n_inst_round, .start_s = e->now};
    dkv_step_cost cost;
    round_wall w;
    DKV_TRY(round_call_backend(e, &plan, &cost, &w, err));
    double t0;
    uint64_t reserved;
    double alloc_s = round_account(e, &cost, &sum, n, &t0, &reserved);
    round_trace_start(e, from, n, t0);
    /* The step's transient peak (activations, logits chunks) is held until here: sample it at
     * the step's start so the memory-by-tag series shows it, then the level after release. */
    bool sample = c->mem_sample_every && (e->step_index % c->mem_sample_every) == 0;
    if (sample && eng_push_mem(e, t0, reserved) != DKV_OK)
        return dkv_err_set(err, DKV_ENOMEM, "engine: out of host memory (memory records)");
    round_commit(e, from, n, t0);
    dkv_step_record rec = round_record(e, inst_tag, n, &sum, &cost, t0, alloc_s, &w);
    if (c->on_step)
        c->on_step(c->on_step_user, &rec);
    if (c->record_steps && eng_push_step(e, &rec) != DKV_OK)
        return dkv_err_set(err, DKV_ENOMEM, "engine: out of host memory (step records)");
    if (sample)
        eng_device_time(e, &reserved); /* the level after this step's releases */
    if (sample && eng_push_mem(e, e->now, reserved) != DKV_OK)
        return dkv_err_set(err, DKV_ENOMEM, "engine: out of host memory (memory records)");
    return DKV_OK;
}
