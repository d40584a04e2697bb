/* mem.c - the generic layer: options, ids, refcounts, deferred release, statistics, series. */
#include "mem/mem_impl.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_names[DKV_MEM_KIND_COUNT] = {"static", "caching", "blockpool"};
static const char *const tag_names[DKV_MEM_TAG_COUNT] = {"weights", "kv", "activation", "logits",
                                                          "staging"};

const char *dkv_mem_kind_name(dkv_mem_kind k)
{
    return (unsigned)k < DKV_MEM_KIND_COUNT ? kind_names[k] : "?";
}

dkv_status dkv_mem_kind_parse(const char *s, dkv_mem_kind *out, dkv_err *err)
{
    for (int i = 0; i < DKV_MEM_KIND_COUNT; i++)
        if (s && strcmp(s, kind_names[i]) == 0) {
            *out = (dkv_mem_kind)i;
            return DKV_OK;
        }
    return dkv_err_set(err, DKV_EINVAL, "unknown memory manager '%s' (static, caching, blockpool)",
                       s ? s : "(null)");
}

const char *dkv_mem_tag_name(dkv_mem_tag t)
{
    return (unsigned)t < DKV_MEM_TAG_COUNT ? tag_names[t] : "?";
}

dkv_status dkv_mem_tag_parse(const char *s, dkv_mem_tag *out, dkv_err *err)
{
    for (int i = 0; i < DKV_MEM_TAG_COUNT; i++)
        if (s && strcmp(s, tag_names[i]) == 0) {
            *out = (dkv_mem_tag)i;
            return DKV_OK;
        }
    return dkv_err_set(err, DKV_EINVAL,
                       "unknown tag '%s' (weights, kv, activation, logits, staging)", s ? s : "(null)");
}

dkv_mem_options dkv_mem_options_default(dkv_mem_kind kind)
{
    dkv_mem_options o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.capacity_bytes = 80ull << 30;
    o.max_split_size = UINT64_MAX;
    o.block_tokens = 256;
    o.token_bytes = 16384;
    o.chunk_blocks = 64;
    o.grow = true;
    o.n_instances = 1;
    o.share = DKV_MEM_SHARED;
    return o;
}

static dkv_status check_options(const dkv_mem_options *o, dkv_err *err)
{
    if ((unsigned)o->kind >= DKV_MEM_KIND_COUNT)
        return dkv_err_set(err, DKV_EINVAL, "mem: kind %d is not a memory manager", (int)o->kind);
    if (o->capacity_bytes == 0)
        return dkv_err_set(err, DKV_EINVAL, "mem: capacity must be > 0 bytes");
    if (!(o->release_delay_s >= 0.0))
        return dkv_err_set(err, DKV_EINVAL, "mem: release_delay_s must be >= 0 (got %g)",
                           o->release_delay_s);
    if (o->device_malloc_s < 0 || o->device_free_s < 0 || o->device_bytes_per_s < 0)
        return dkv_err_set(err, DKV_EINVAL, "mem: device cost options must be >= 0");
    if (o->n_instances > DKV_MEM_MAX_INSTANCES)
        return dkv_err_set(err, DKV_EINVAL, "mem: n_instances %u exceeds %d", o->n_instances,
                           DKV_MEM_MAX_INSTANCES);
    return DKV_OK;
}

dkv_status dkv_mem_new(const dkv_mem_options *opt, dkv_mem **out, dkv_err *err)
{
    *out = NULL;
    dkv_status st = check_options(opt, err);
    if (st)
        return st;
    dkv_mem *m = calloc(1, sizeof *m);
    if (!m)
        return dkv_err_set(err, DKV_ENOMEM, "mem: out of host memory");
    m->opt = *opt;
    if (m->opt.n_instances == 0)
        m->opt.n_instances = 1;
    m->vt = opt->kind == DKV_MEM_STATIC    ? &dkv_mem_static_vt
            : opt->kind == DKV_MEM_CACHING ? &dkv_mem_caching_vt
                                           : &dkv_mem_blockpool_vt;
    m->free_slot = MEM_NONE;
    m->stride_left = m->opt.sample_stride;
    st = m->vt->init(m, err);
    if (st) {
        dkv_mem_free(m);
        return st;
    }
    m->setup_bytes = m->reserved;
    m->setup_time_s = m->device_time_s +
                      (m->opt.device_bytes_per_s > 0 ? (double)m->reserved / m->opt.device_bytes_per_s : 0);
    m->peak_reserved = m->reserved;
    *out = m;
    return DKV_OK;
}

void dkv_mem_free(dkv_mem *m)
{
    if (!m)
        return;
    if (m->vt && m->impl)
        m->vt->fini(m);
    free(m->recs);
    free(m->pend);
    free(m->series);
    free(m);
}

const dkv_mem_options *dkv_mem_get_options(const dkv_mem *m) { return &m->opt; }
double dkv_mem_now(const dkv_mem *m) { return m->now; }

/* ---------------------------------------------------------------- events and statistics */

static void sample(dkv_mem *m)
{
    if (m->n_series == m->cap_series) {
        size_t cap = m->cap_series ? m->cap_series * 2 : 1024;
        dkv_mem_sample *s = realloc(m->series, cap * sizeof *s);
        if (!s)
            return; /* the series is best effort; statistics stay exact */
        m->series = s;
        m->cap_series = cap;
    }
    m->series[m->n_series++] = (dkv_mem_sample){m->now, m->n_events, m->requested, m->allocated,
                                                m->reserved};
}

/* After every state change: peaks, running sums, the series.  Divisions only when a
 * fragmentation peak is actually exceeded (rare), to keep the common path short. */
static inline __attribute__((always_inline)) void on_event(dkv_mem *m)
{
    m->n_events++;
    uint64_t req = m->requested, al = m->allocated, res = m->reserved;
    if (req > m->peak_requested)
        m->peak_requested = req;
    if (al > m->peak_allocated)
        m->peak_allocated = al;
    double dreq = (double)req, dal = (double)al, dres = (double)res;
    if (res > m->peak_reserved) {
        m->peak_reserved = res;
        m->ext_at_peak = (dres - dal) / dres;
        m->int_at_peak = dal > 0 ? (dal - dreq) / dal : 0;
    }
    if (dres - dal > m->peak_ext * dres)
        m->peak_ext = (dres - dal) / dres;
    if (dal - dreq > m->peak_int * dal)
        m->peak_int = (dal - dreq) / dal;
    m->sum_req += dreq;
    m->sum_alloc += dal;
    m->sum_res += dres;
    if (m->stride_left && --m->stride_left == 0) {
        m->stride_left = m->opt.sample_stride;
        sample(m);
    }
}

void mem_event(dkv_mem *m) { on_event(m); }

static dkv_status grow_recs(dkv_mem *m, dkv_err *err)
{
    uint32_t cap = m->cap_recs ? m->cap_recs * 2 : 1024;
    if (cap > (1u << 31))
        return dkv_err_set(err, DKV_ENOMEM, "mem: more than 2^31 live allocations");
    mem_rec *r = realloc(m->recs, (size_t)cap * sizeof *r);
    if (!r)
        return dkv_err_set(err, DKV_ENOMEM, "mem: out of host memory for allocation records");
    memset(r + m->cap_recs, 0, (size_t)(cap - m->cap_recs) * sizeof *r);
    m->recs = r;
    m->cap_recs = cap;
    return DKV_OK;
}

dkv_status dkv_mem_acquire(dkv_mem *m, uint64_t bytes, const dkv_mem_owner *owner,
                           dkv_mem_id *id, dkv_err *err)
{
    static const dkv_mem_owner kv_owner = {.tag = DKV_MEM_TAG_KV};
    if (!owner)
        owner = &kv_owner;
    *id = 0;
    if (bytes == 0 || bytes > (1ull << 62)) {
        m->bad_size++;
        return dkv_err_set(err, DKV_EINVAL, "mem acquire: size %llu bytes is not valid (must be > 0)",
                           (unsigned long long)bytes);
    }
    if (owner->tag >= DKV_MEM_TAG_COUNT || owner->instance >= m->opt.n_instances) {
        m->bad_other++;
        return dkv_err_set(err, DKV_EINVAL, "mem acquire: %s %u out of range",
                           owner->tag >= DKV_MEM_TAG_COUNT ? "tag" : "instance",
                           owner->tag >= DKV_MEM_TAG_COUNT ? owner->tag : owner->instance);
    }
    uint32_t slot = m->free_slot;
    if (slot == MEM_NONE) {
        if (m->n_recs == m->cap_recs) {
            dkv_status st = grow_recs(m, err);
            if (st)
                return st;
        }
        slot = m->n_recs;
    }
    mem_rec *r = &m->recs[slot];
    r->requested = bytes;
    r->owner = *owner;
    dkv_status st = m->vt->alloc(m, r, err);
    if (st) {
        m->n_failed++;
        if (st == DKV_ENOMEM && m->reserved - m->allocated >= bytes)
            m->n_failed_frag++;
        return st;
    }
    if (slot == m->free_slot)
        m->free_slot = r->next_free;
    else
        m->n_recs++;
    r->state = REC_LIVE;
    r->refcount = 1;
    r->was_shared = 0;
    m->requested += bytes;
    m->allocated += r->allocated;
    m->live++;
    m->n_acquire++;
    dkv_mem_tag_stats *t = &m->tag[owner->tag];
    t->requested += bytes;
    t->allocated += r->allocated;
    t->n_acquire++;
    if (t->allocated > t->peak_allocated)
        t->peak_allocated = t->allocated;
    *id = ((uint64_t)r->gen << 32) | (uint64_t)(slot + 1);
    on_event(m);
    return DKV_OK;
}

/* The live record of id, or NULL with the case counted and err set (slow path). */
static __attribute__((noinline)) mem_rec *lookup_slow(dkv_mem *m, dkv_mem_id id, const char *what, dkv_err *err)
{
    uint64_t s = id & 0xffffffffu;
    uint32_t gen = (uint32_t)(id >> 32);
    if (s == 0 || s > m->n_recs || gen > m->recs[s - 1].gen) {
        m->bad_unknown++;
        dkv_err_set(err, DKV_ENOENT, "mem %s: unknown allocation id %#llx", what, (unsigned long long)id);
        return NULL;
    }
    mem_rec *r = &m->recs[s - 1];
    if (gen < r->gen || r->state != REC_LIVE) {
        /* Released more often than acquired + retained: for a shared (retained) allocation
         * that is a refcount underflow, otherwise a double release. */
        bool pend = r->state == REC_PENDING && gen == r->gen;
        bool shared = pend ? r->was_shared : (gen + 1 == r->gen && r->prev_shared);
        if (shared)
            m->bad_underflow++;
        else
            m->bad_double++;
        dkv_err_set(err, DKV_ESTATE, "mem %s: allocation id %#llx %s%s", what,
                    (unsigned long long)id,
                    shared ? "refcount underflow (released more often than retained)"
                           : "was already released",
                    pend ? " (its deferred free is pending)" : "");
        return NULL;
    }
    return r;
}

/* Fast path: a live record whose generation matches. */
static inline __attribute__((always_inline)) mem_rec *lookup(dkv_mem *m, dkv_mem_id id, const char *what,
                                                             dkv_err *err)
{
    uint64_t s = (id & 0xffffffffu) - 1;
    if (s < m->n_recs) {
        mem_rec *r = &m->recs[s];
        if (r->gen == (uint32_t)(id >> 32) && r->state == REC_LIVE)
            return r;
    }
    return lookup_slow(m, id, what, err);
}

static inline __attribute__((always_inline)) void free_rec(dkv_mem *m, mem_rec *r)
{
    m->vt->dealloc(m, r);
    m->requested -= r->requested;
    m->allocated -= r->allocated;
    m->live--;
    m->tag[r->owner.tag].requested -= r->requested;
    m->tag[r->owner.tag].allocated -= r->allocated;
    r->state = REC_FREE;
    r->prev_shared = r->was_shared;
    r->gen++;
    uint32_t slot = (uint32_t)(r - m->recs);
    r->next_free = m->free_slot;
    m->free_slot = slot;
}

dkv_status dkv_mem_retain(dkv_mem *m, dkv_mem_id id, dkv_err *err)
{
    mem_rec *r = lookup(m, id, "retain", err);
    if (!r)
        return err ? err->code : DKV_ESTATE;
    if (r->refcount == UINT32_MAX) {
        m->bad_other++;
        return dkv_err_set(err, DKV_ERANGE, "mem retain: refcount of %#llx would overflow",
                           (unsigned long long)id);
    }
    r->refcount++;
    r->was_shared = 1;
    m->n_retain++;
    on_event(m);
    return DKV_OK;
}

static dkv_status push_pending(dkv_mem *m, uint32_t slot, dkv_err *err)
{
    if (m->pend_len == m->pend_cap) {
        uint32_t cap = m->pend_cap ? m->pend_cap * 2 : 256;
        mem_pending *p = malloc((size_t)cap * sizeof *p);
        if (!p)
            return dkv_err_set(err, DKV_ENOMEM, "mem: out of host memory for deferred releases");
        for (uint32_t i = 0; i < m->pend_len; i++)
            p[i] = m->pend[(m->pend_head + i) % m->pend_cap];
        free(m->pend);
        m->pend = p;
        m->pend_cap = cap;
        m->pend_head = 0;
    }
    m->pend[(m->pend_head + m->pend_len) % m->pend_cap] =
        (mem_pending){m->now + m->opt.release_delay_s, slot};
    m->pend_len++;
    return DKV_OK;
}

dkv_status dkv_mem_release(dkv_mem *m, dkv_mem_id id, dkv_err *err)
{
    mem_rec *r = lookup(m, id, "release", err);
    if (!r)
        return err ? err->code : DKV_ESTATE;
    m->n_release++;
    if (--r->refcount == 0) {
        if (m->opt.release_delay_s > 0) {
            dkv_status st = push_pending(m, (uint32_t)(r - m->recs), err);
            if (st) {
                r->refcount = 1;
                m->n_release--;
                return st;
            }
            r->state = REC_PENDING;
            m->pending_bytes += r->allocated;
        } else {
            free_rec(m, r);
        }
    }
    on_event(m);
    return DKV_OK;
}

static void pop_pending(dkv_mem *m)
{
    mem_rec *r = &m->recs[m->pend[m->pend_head].slot];
    m->pend_head = (m->pend_head + 1) % m->pend_cap;
    m->pend_len--;
    m->pending_bytes -= r->allocated;
    free_rec(m, r);
    on_event(m);
}

dkv_status dkv_mem_tick(dkv_mem *m, double now_s, dkv_err *err)
{
    if (!(now_s >= m->now)) {
        m->bad_other++;
        return dkv_err_set(err, DKV_EINVAL, "mem tick: time %.9g s is before the clock (%.9g s)",
                           now_s, m->now);
    }
    m->now = now_s;
    while (m->pend_len && m->pend[m->pend_head].due_s <= now_s)
        pop_pending(m);
    return DKV_OK;
}

void dkv_mem_flush_deferred(dkv_mem *m)
{
    while (m->pend_len)
        pop_pending(m);
}

dkv_status dkv_mem_info_get(const dkv_mem *m, dkv_mem_id id, dkv_mem_info *out, dkv_err *err)
{
    uint64_t s = id & 0xffffffffu;
    uint32_t gen = (uint32_t)(id >> 32);
    if (s == 0 || s > m->n_recs || m->recs[s - 1].gen != gen || m->recs[s - 1].state == REC_FREE)
        return dkv_err_set(err, DKV_ENOENT, "mem info: no allocation with id %#llx",
                           (unsigned long long)id);
    const mem_rec *r = &m->recs[s - 1];
    *out = (dkv_mem_info){r->requested, r->allocated, r->offset, r->refcount,
                          r->state == REC_PENDING, r->n_blocks, r->owner};
    return DKV_OK;
}

void dkv_mem_stats_get(const dkv_mem *m, dkv_mem_stats *s)
{
    memset(s, 0, sizeof *s);
    s->requested = m->requested;
    s->allocated = m->allocated;
    s->reserved = m->reserved;
    s->peak_requested = m->peak_requested;
    s->peak_allocated = m->peak_allocated;
    s->peak_reserved = m->peak_reserved;
    s->pending_bytes = m->pending_bytes;
    s->live = m->live;
    s->internal_frag = m->allocated ? (double)(m->allocated - m->requested) / (double)m->allocated : 0;
    s->external_frag = m->reserved ? (double)(m->reserved - m->allocated) / (double)m->reserved : 0;
    s->peak_internal_frag = m->peak_int;
    s->peak_external_frag = m->peak_ext;
    s->mean_internal_frag = m->sum_alloc > 0 ? 1.0 - m->sum_req / m->sum_alloc : 0;
    s->mean_external_frag = m->sum_res > 0 ? 1.0 - m->sum_alloc / m->sum_res : 0;
    s->external_frag_at_peak = m->ext_at_peak;
    s->internal_frag_at_peak = m->int_at_peak;
    s->largest_free = m->vt->largest_free(m);
    s->n_acquire = m->n_acquire;
    s->n_release = m->n_release;
    s->n_retain = m->n_retain;
    s->n_events = m->n_events;
    s->n_failed = m->n_failed;
    s->n_failed_frag = m->n_failed_frag;
    s->reuse_hits = m->reuse_hits;
    s->reuse_total = m->reuse_total;
    s->reuse_rate = m->reuse_total ? (double)m->reuse_hits / (double)m->reuse_total : 0;
    s->bad_double_release = m->bad_double;
    s->bad_unknown_id = m->bad_unknown;
    s->bad_underflow = m->bad_underflow;
    s->bad_size = m->bad_size;
    s->bad_other = m->bad_other;
    s->device_allocs = m->device_allocs;
    s->device_frees = m->device_frees;
    s->device_alloc_bytes = m->device_alloc_bytes;
    s->device_time_s = m->device_time_s;
    s->setup_bytes = m->setup_bytes;
    s->setup_time_s = m->setup_time_s;
    s->segments = m->segments;
    memcpy(s->tag, m->tag, sizeof s->tag);
    if (m->vt->stats)
        m->vt->stats(m, s);
}

const dkv_mem_sample *dkv_mem_series(const dkv_mem *m, size_t *n)
{
    *n = m->n_series;
    return m->series;
}
