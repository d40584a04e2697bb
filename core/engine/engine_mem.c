/* engine_mem.c - the engine's use of the memory managers: set-up from the sizing rules,
 * tagged acquire/release with the lifecycle rule, per-request KV resizing, accounting by tag. */
#include "engine/engine_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void tag_add(eng *e, uint8_t tag, uint64_t bytes)
{
    if (tag == DKV_MEM_TAG_KV && e->c.hooks && e->c.hooks->kv_moved)
        e->c.hooks->kv_moved(e->c.hooks->user, bytes, true);
    e->tag_now[tag] += bytes;
    if (e->tag_now[tag] > e->tag_peak[tag])
        e->tag_peak[tag] = e->tag_now[tag];
    e->alloc_now += bytes;
    if (e->alloc_now > e->alloc_peak)
        e->alloc_peak = e->alloc_now;
}

static void tag_sub(eng *e, uint8_t tag, uint64_t bytes)
{
    if (tag == DKV_MEM_TAG_KV && e->c.hooks && e->c.hooks->kv_moved)
        e->c.hooks->kv_moved(e->c.hooks->user, bytes, false);
    e->tag_now[tag] -= bytes;
    e->alloc_now -= bytes;
}

dkv_status eng_acquire(eng *e, dkv_mem *m, uint64_t bytes, uint8_t tag, uint32_t inst, uint32_t request,
                       dkv_mem_id *id, uint64_t *allocated, dkv_err *err)
{
    if (m == e->c.kv_pool)
        inst = e->c.kv_pool_instance;   /* threaded instances: this engine's place in the pool */
    dkv_mem_owner who = {.tag = tag, .instance = (uint16_t)(dkv_mem_get_options(m)->n_instances > 1 ? inst : 0),
                         .request = request};
    dkv_status st = dkv_mem_acquire(m, bytes, &who, id, err);
    if (st != DKV_OK)
        return st;
    dkv_mem_info info;
    uint64_t addr = 0;
    if (dkv_mem_info_get(m, *id, &info, NULL) == DKV_OK) {
        *allocated = info.allocated_bytes;
        addr = info.offset;
    } else {
        *allocated = bytes;
    }
    tag_add(e, tag, *allocated);
    ENG_TRACE(e, eng_trace_mem(e->c.trace, false, e->now, eng_trace_id(e, m, *id), bytes, addr, tag, request, inst,
                               &e->trace_err));
    return DKV_OK;
}

uint64_t eng_trace_id(const eng *e, const dkv_mem *m, dkv_mem_id id)
{
    uint64_t k = e->n_kvm;
    for (uint32_t i = 0; i < e->n_kvm; i++)
        if (e->kvm[i] == m)
            k = i;
    return (id & 0x00FFFFFFFFFFFFFFull) | (k << 56);
}

static void release_now(eng *e, dkv_mem *m, dkv_mem_id id, uint8_t tag, uint64_t allocated)
{
    if (dkv_mem_release(m, id, NULL) == DKV_OK) {
        tag_sub(e, tag, allocated);
        ENG_TRACE(e, eng_trace_mem(e->c.trace, true, e->now, eng_trace_id(e, m, id), 0, 0, tag, 0, 0, &e->trace_err));
    }
}

static void pend_push(eng *e, const pend_rel *p)
{
    if (e->pend_len == e->pend_cap) {
        size_t nc = e->pend_cap ? 2 * e->pend_cap : 256;
        pend_rel *np = malloc(nc * sizeof *np);
        if (!np) { /* cannot defer: release at once rather than leak */
            if (p->kind == PEND_RELEASE)
                release_now(e, p->m, p->id, p->tag, p->bytes);
            else
                dkv_mem_unreserve(p->m, p->request, NULL);
            return;
        }
        for (size_t i = 0; i < e->pend_len; i++)
            np[i] = e->pend[(e->pend_head + i) % e->pend_cap];
        free(e->pend);
        e->pend = np;
        e->pend_cap = nc;
        e->pend_head = 0;
    }
    e->pend[(e->pend_head + e->pend_len) % e->pend_cap] = *p;
    e->pend_len++;
}

void eng_release(eng *e, dkv_mem *m, dkv_mem_id id, uint8_t tag, uint64_t allocated)
{
    if (!id)
        return;
    if (e->c.lifecycle.rule == DKV_RELEASE_IMMEDIATE) {
        release_now(e, m, id, tag, allocated);
        return;
    }
    pend_rel p = {.m = m, .id = id, .kind = PEND_RELEASE, .tag = tag, .bytes = allocated,
                  .step = e->step_index, .t = e->now};
    pend_push(e, &p);
}

void eng_unreserve(eng *e, ereq *r)
{
    if (!r->reserved)
        return;
    r->reserved = false;
    if (e->c.lifecycle.rule == DKV_RELEASE_IMMEDIATE) {
        dkv_mem_unreserve(r->kvm, (uint32_t)(r - e->rq), NULL);
        return;
    }
    pend_rel p = {.m = r->kvm, .request = (uint32_t)(r - e->rq), .kind = PEND_UNRESERVE,
                  .step = e->step_index, .t = e->now};
    pend_push(e, &p);
}

bool eng_pending_process(eng *e, bool flush)
{
    bool any = false;
    while (e->pend_len) {
        pend_rel *p = &e->pend[e->pend_head];
        if (!flush && !dkv_lifecycle_due(&e->c.lifecycle, p->step, p->t, e->step_index, e->now))
            break;
        if (p->kind == PEND_RELEASE)
            release_now(e, p->m, p->id, p->tag, p->bytes);
        else
            dkv_mem_unreserve(p->m, p->request, NULL);
        e->pend_head = (e->pend_head + 1) % e->pend_cap;
        e->pend_len--;
        any = true;
    }
    return any;
}

/* ---------------------------------------------------------------- per-request KV */

bool eng_kv_per_block(const eng *e, const ereq *r)
{
    return r->kvm != e->dev && dkv_mem_get_options(r->kvm)->kind == DKV_MEM_BLOCKPOOL;
}

static dkv_status kv_push(eng *e, ereq *r, dkv_mem_id id, uint64_t alloc)
{
    if (r->n_kv == r->cap_kv) {
        uint32_t nc = r->cap_kv ? 2 * r->cap_kv : 8;
        dkv_mem_id *ni = realloc(r->kv_ids, nc * sizeof *ni);
        if (!ni)
            return DKV_ENOMEM;
        r->kv_ids = ni;
        uint64_t *na = realloc(r->kv_alloc, nc * sizeof *na);
        if (!na)
            return DKV_ENOMEM;
        r->kv_alloc = na;
        uint32_t *nb = realloc(r->kv_blk, nc * sizeof *nb);
        if (!nb)
            return DKV_ENOMEM;
        r->kv_blk = nb;
        r->cap_kv = nc;
    }
    uint32_t blk = UINT32_MAX, nblk = 0;
    if (eng_kv_per_block(e, r) && (dkv_mem_blocks(r->kvm, id, &blk, 1, &nblk, NULL) != DKV_OK || nblk != 1))
        blk = UINT32_MAX;
    r->kv_ids[r->n_kv] = id;
    r->kv_alloc[r->n_kv] = alloc;
    r->kv_blk[r->n_kv] = blk;
    r->n_kv++;
    r->kv_alloc_bytes += alloc;
    if (r->kv_alloc_bytes > r->kv_peak)
        r->kv_peak = r->kv_alloc_bytes;
    return DKV_OK;
}

dkv_status eng_kv_resize(eng *e, ereq *r, uint64_t need, bool may_shrink, dkv_err *err)
{
    uint32_t ri = (uint32_t)(r - e->rq);
    if (eng_kv_per_block(e, r)) {
        uint64_t bb = dkv_mem_block_bytes(r->kvm);
        uint32_t target = (uint32_t)((need + bb - 1) / bb);
        uint32_t had = r->n_kv;
        while (r->n_kv < target) {
            uint64_t want = need - (uint64_t)r->n_kv * bb;
            if (want > bb)
                want = bb;
            dkv_mem_id id;
            uint64_t alloc;
            dkv_status st = eng_acquire(e, r->kvm, want, DKV_MEM_TAG_KV, r->inst, ri, &id, &alloc, err);
            if (st == DKV_OK && kv_push(e, r, id, alloc) != DKV_OK) {
                release_now(e, r->kvm, id, DKV_MEM_TAG_KV, alloc);
                st = dkv_err_set(err, DKV_ENOMEM, "engine: out of host memory");
            }
            if (st != DKV_OK) { /* roll back what this call took: never used, freed at once */
                while (r->n_kv > had) {
                    r->n_kv--;
                    r->kv_alloc_bytes -= r->kv_alloc[r->n_kv];
                    release_now(e, r->kvm, r->kv_ids[r->n_kv], DKV_MEM_TAG_KV, r->kv_alloc[r->n_kv]);
                }
                return st;
            }
            r->kv_req_bytes += want;
        }
        while (may_shrink && r->n_kv > target) {
            r->n_kv--;
            r->kv_alloc_bytes -= r->kv_alloc[r->n_kv];
            uint64_t part = r->kv_req_bytes - (uint64_t)r->n_kv * bb;
            r->kv_req_bytes -= part > bb ? bb : part;
            eng_release(e, r->kvm, r->kv_ids[r->n_kv], DKV_MEM_TAG_KV, r->kv_alloc[r->n_kv]);
        }
        return DKV_OK;
    }
    /* one tensor: reallocated (new first, then the old one freed) when it must grow or shrink */
    bool grow = need > r->kv_alloc_bytes;
    bool shrink = may_shrink && need < r->kv_req_bytes;
    if (!grow && !shrink)
        return DKV_OK;
    dkv_mem_id id = 0;
    uint64_t alloc = 0;
    if (need > 0) {
        dkv_status st = eng_acquire(e, r->kvm, need, DKV_MEM_TAG_KV, r->inst, ri, &id, &alloc, err);
        if (st != DKV_OK)
            return st;
    }
    eng_kv_release_all(e, r);
    if (need > 0) {
        if (kv_push(e, r, id, alloc) != DKV_OK) {
            release_now(e, r->kvm, id, DKV_MEM_TAG_KV, alloc);
            return dkv_err_set(err, DKV_ENOMEM, "engine: out of host memory");
        }
        r->kv_req_bytes = need;
    }
    return DKV_OK;
}

void eng_kv_release_all(eng *e, ereq *r)
{
    while (r->n_kv) {
        r->n_kv--;
        eng_release(e, r->kvm, r->kv_ids[r->n_kv], DKV_MEM_TAG_KV, r->kv_alloc[r->n_kv]);
    }
    r->kv_alloc_bytes = 0;
    r->kv_req_bytes = 0;
}

void eng_host_update(eng *e, ereq *r, uint64_t phys)
{
    e->host_now = e->host_now - r->host_phys + phys;
    r->host_phys = phys;
    if (e->host_now > e->host_peak)
        e->host_peak = e->host_now;
}

/* One pass over the managers' statistics: modelled device time and reserved bytes. */
double eng_device_time(eng *e, uint64_t *reserved)
{
    double t = 0;
    uint64_t res = 0;
    dkv_mem_stats s;
    for (uint32_t i = 0; i < e->n_kvm && !e->c.kv_pool; i++) { /* a borrowed pool: its owner counts it */
        dkv_mem_stats_get(e->kvm[i], &s);
        t += s.device_time_s;
        res += s.reserved;
    }
    if (!e->dev_is_kv) {
        dkv_mem_stats_get(e->dev, &s);
        t += s.device_time_s;
        res += s.reserved;
    }
    if (reserved)
        *reserved = res;
    return t;
}

/* ---------------------------------------------------------------- set-up */

dkv_status eng_capacities(const dkv_engine_config *c, uint32_t ni, uint64_t *kv_cap, uint64_t *dev_cap, dkv_err *err)
{
    const dkv_gpu *g = c->gpu;
    uint32_t n_w = c->shared_weights ? 1 : ni;
    double W = (double)dkv_model_weight_bytes(c->model);
    double margin = c->sizing.margin * g->hbm_bytes;
    double usable = g->hbm_bytes - n_w * W - margin;
    if (usable <= 0)
        return dkv_err_set(err, DKV_ENOMEM,
                           "model '%s': %u cop%s of the weights (%.2f GiB each) do not fit gpu '%s' "
                           "(%.2f GiB, %.0f%% margin)", c->model->name, n_w, n_w == 1 ? "y" : "ies",
                           W / 1073741824.0, g->name, g->hbm_bytes / 1073741824.0, c->sizing.margin * 100);
    if (c->mem.kind == DKV_MEM_CACHING) {
        *kv_cap = c->mem.capacity_bytes ? c->mem.capacity_bytes : (uint64_t)(g->hbm_bytes - margin);
        *dev_cap = *kv_cap;
    } else {
        *kv_cap = c->mem.capacity_bytes ? c->mem.capacity_bytes : (uint64_t)(c->sizing.kv_frac * usable);
        double room = g->hbm_bytes - margin;   /* the device manager's share is what the KV capacity leaves of it */
        if (!c->device_capacity_bytes && (double)*kv_cap >= room)
            return dkv_err_set(err, DKV_EINVAL, "mem.capacity_bytes (%.2f GiB) leaves no device memory: gpu.hbm_bytes "
                               "less mem.margin is %.2f GiB; give mem.device_capacity_bytes too, or a smaller "
                               "capacity_bytes", (double)*kv_cap / 1073741824.0, room / 1073741824.0);
        *dev_cap = c->device_capacity_bytes ? c->device_capacity_bytes : (uint64_t)room - *kv_cap;
    }
    if (*kv_cap == 0)   /* what it came from, by the names the configuration gives them */
        return dkv_err_set(err, DKV_EINVAL, "mem: the KV capacity is 0 bytes: %s", c->mem.kind == DKV_MEM_CACHING
                           ? "gpu.hbm_bytes less mem.margin" : "mem.kv_frac of (gpu.hbm_bytes less the weights and "
                           "mem.margin); raise mem.kv_frac or give mem.capacity_bytes");
    if (*dev_cap == 0)
        return dkv_err_set(err, DKV_EINVAL, "mem: the device capacity is 0 bytes (gpu.hbm_bytes less mem.margin less "
                           "the KV capacity): give mem.device_capacity_bytes or a smaller mem.capacity_bytes");
    return DKV_OK;
}

dkv_status eng_kv_create(const dkv_engine_config *c, uint32_t ni, uint64_t kv_capacity, dkv_mem **kvm,
                         uint32_t *n_kvm, uint64_t *part_bytes, dkv_err *err)
{
    const dkv_gpu *g = c->gpu;
    dkv_status st;
    dkv_mem_kind kind = c->mem.kind;
    uint64_t block_bytes = c->mem.block_bytes;   /* resolved: dkv_block_bytes */
    *n_kvm = 0;
    dkv_mem_options o = c->mem;
    o.release_delay_s = 0; /* the engine applies the lifecycle rule itself */
    if (o.device_malloc_s <= 0)
        o.device_malloc_s = g->malloc_s;
    if (o.device_free_s <= 0)
        o.device_free_s = g->free_s;
    o.block_bytes = block_bytes;
    o.n_instances = 1;
    /* a pool smaller than one growth chunk grows by smaller chunks */
    uint64_t per_part = kv_capacity / (ni > 1 && c->placement.mode == DKV_PLACE_PARTITIONED ? ni : 1);
    while (kind == DKV_MEM_BLOCKPOOL && o.chunk_blocks > 1 && (uint64_t)o.chunk_blocks * block_bytes > per_part)
        o.chunk_blocks /= 2; /* stays a power of two */
    if (ni > 1 && c->placement.mode == DKV_PLACE_PARTITIONED) {
        if (kind == DKV_MEM_CACHING)
            return dkv_err_set(err, DKV_EINVAL,
                               "placement.mode 'partitioned' needs mem.kind 'static' or 'blockpool' "
                               "(a caching allocator holds the weights too)");
        dkv_placement_config pc = c->placement;
        pc.n_instances = ni;
        dkv_quota q[ENG_MAX_INST];
        if ((st = dkv_placement_quotas(&pc, kv_capacity, block_bytes, q, err)) != DKV_OK)
            return st;
        for (uint32_t i = 0; i < ni; i++) {
            o.capacity_bytes = q[i].max_bytes;
            if (part_bytes)
                part_bytes[i] = q[i].max_bytes;
            if (kind == DKV_MEM_BLOCKPOOL && o.initial_bytes > o.capacity_bytes)
                o.initial_bytes = o.capacity_bytes;
            if ((st = dkv_mem_new(&o, &kvm[i], err)) != DKV_OK)
                return st;
            (*n_kvm)++;
        }
        return DKV_OK;
    }
    o.capacity_bytes = kv_capacity;
    if (ni > 1) {
        o.n_instances = ni;
        o.share = DKV_MEM_SHARED;
        if (kind == DKV_MEM_BLOCKPOOL) {
            dkv_placement_config pc = c->placement;
            pc.n_instances = ni;
            pc.mode = DKV_PLACE_SHARED;
            dkv_quota q[ENG_MAX_INST];
            if ((st = dkv_placement_quotas(&pc, kv_capacity, block_bytes, q, err)) != DKV_OK)
                return st;
            for (uint32_t i = 0; i < ni; i++) {
                o.quota_bytes[i] = q[i].guaranteed_bytes;
                /* burst_frac below 1 caps what one instance may hold (at 1 the others' guarantees are the only
                 * bound, which the pool enforces already: no cap, the runs before session 51 unchanged) */
                o.cap_bytes[i] = c->placement.burst_frac < 1 ? q[i].max_bytes : 0;
            }
        }
    }
    if ((st = dkv_mem_new(&o, &kvm[0], err)) != DKV_OK)
        return st;
    *n_kvm = 1;
    return DKV_OK;
}

dkv_status eng_mem_setup(eng *e, dkv_err *err)
{
    const dkv_engine_config *c = &e->c;
    const dkv_gpu *g = e->g;
    dkv_status st;
    uint32_t n_w = c->shared_weights ? 1 : e->ni;
    double W = (double)dkv_model_weight_bytes(e->m);
    if ((st = eng_capacities(c, e->ni, &e->kv_capacity, &e->dev_capacity, err)) != DKV_OK)
        return st;
    e->dev_is_kv = c->mem.kind == DKV_MEM_CACHING;
    e->block_bytes = c->mem.block_bytes;   /* resolved: dkv_block_bytes */
    if (c->kv_pool) {            /* threaded instances: the pool (or partition) is borrowed */
        if (e->dev_is_kv || e->ni != 1)
            return dkv_err_set(err, DKV_EINVAL, "engine: a borrowed KV pool needs mem.kind blockpool and one instance");
        e->kvm[0] = c->kv_pool;
        e->n_kvm = 1;
        e->kv_capacity = dkv_mem_get_options(c->kv_pool)->capacity_bytes;
    } else if ((st = eng_kv_create(c, e->ni, e->kv_capacity, e->kvm, &e->n_kvm, e->part_bytes, err)) != DKV_OK) {
        return st;
    }
    if (e->dev_is_kv) {
        e->dev = e->kvm[0];
    } else {
        dkv_mem_options d = dkv_mem_options_default(DKV_MEM_CACHING);
        d.capacity_bytes = e->dev_capacity;
        d.device_malloc_s = g->malloc_s;
        d.device_free_s = g->free_s;
        if ((st = dkv_mem_new(&d, &e->dev, err)) != DKV_OK)
            return st;
    }
    for (uint32_t i = 0; i < e->ni; i++)
        e->in[i].kvm = e->kvm[e->n_kvm > 1 ? i : 0];
    /* weights: one copy per instance unless shared */
    for (uint32_t i = 0; i < n_w; i++) {
        uint64_t alloc;
        st = eng_acquire(e, e->dev, (uint64_t)W, DKV_MEM_TAG_WEIGHTS, i, UINT32_MAX, &e->weight_ids[i], &alloc, err);
        if (st != DKV_OK) {
            dkv_err_prefix(err, "loading the weights of instance %u", i);
            return st;
        }
        e->n_weight_ids++;
    }
    e->dev_time_prev = eng_device_time(e, NULL);
    return DKV_OK;
}

void eng_backend_setup(const eng *e, dkv_backend_setup *bs)
{
    const dkv_engine_config *c = &e->c;
    memset(bs, 0, sizeof *bs);
    bs->model = e->m;
    bs->gpu = e->g;
    bs->workload = c->workload;
    bs->decode = &c->decode;
    bs->weights = c->weights;
    bs->on_kernel = c->on_kernel;
    bs->on_kernel_user = c->on_kernel_user;
    if (c->decode.cache == DKV_CACHE_SPARSE && c->retention.mode == DKV_RHO_ENTROPY && c->retention.measured) {
        bs->on_entropy = eng_on_entropy;
        bs->on_entropy_user = (void *)e;   /* the engine's own state: the sink writes its requests */
    }
    /* the pool: what the KV manager was built with */
    dkv_backend_pool *p = &bs->pool;
    p->kind = c->mem.kind;
    p->block_bytes = e->block_bytes;
    p->block_tokens = e->kvbpt ? (uint32_t)(e->block_bytes / e->kvbpt) : 0;
    p->capacity_bytes = e->kv_capacity;
    p->n_blocks = e->block_bytes ? e->kv_capacity / e->block_bytes : 0;
    if (c->offload.mode != DKV_OFFLOAD_NONE && p->block_bytes && p->block_tokens) {
        /* staging: a quarter of the pool; host tier: one slot of the longest canvas that fits the
         * model per request that can run at once, at most 64 GiB */
        p->staging_blocks = (e->kv_capacity / 4) / p->block_bytes;
        uint32_t max_L = 0;
        size_t n_req = dkv_workload_count(c->workload);
        for (size_t i = 0; i < n_req; i++) {
            const dkv_request *q = dkv_workload_get(c->workload, i);
            uint32_t L = q->prompt_tokens + q->gen_tokens;
            max_L = L > max_L && L <= e->m->max_len ? L : max_L;
        }
        uint64_t slot = (uint64_t)((max_L + p->block_tokens - 1) / p->block_tokens) * p->block_bytes;
        uint64_t conc = n_req < c->max_num_seqs ? n_req : c->max_num_seqs, cap = 64ull << 30;
        p->host_bytes = conc * slot < cap ? conc * slot : cap;
        const dkv_offload_config *o = &c->offload;
        if (o->mode == DKV_OFFLOAD_PROGRESSIVE && o->t1 < o->t2)   /* phase 2 has steps (t2 <= 1) */
            p->lowrank_rank = dkv_devmem_ratio_rank(o->lowrank_ratio, e->m->head_dim);
    }
    /* the instances */
    dkv_backend_instances *in = &bs->instances;
    in->n = e->ni;
    in->shared_weights = c->shared_weights;
    in->partitioned = e->n_kvm > 1;
    in->spatial = c->gpu_share == DKV_SHARE_SPATIAL;
    for (uint32_t i = 0; i < e->ni; i++)
        in->pool_blocks[i] = in->partitioned && e->block_bytes ? e->part_bytes[i] / e->block_bytes : p->n_blocks;
}

void eng_mem_teardown(eng *e)
{
    for (uint32_t i = 0; i < e->n_kvm; i++)
        if (e->kvm[i] != e->dev && e->kvm[i] != e->c.kv_pool)
            dkv_mem_free(e->kvm[i]);
    dkv_mem_free(e->dev);
    e->dev = NULL;
    e->n_kvm = 0;
}
