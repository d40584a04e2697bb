/* mem.c - the generic layer: options, ids, refcounts, deferred release, statistics, series.
 * The per-event paths are in mem_hot.h (inlined here and into the replayer). */
#include "mem/mem_hot.h"

#include <stdlib.h>
#include <string.h>

/* The memory managers: one entry each, indexed by dkv_mem_kind (name first, so this table is also
 * dkv_mem_kind_names).  A new manager: its file (mem_<name>.c, defining its mem_vtable, see
 * mem_impl.h) and an entry here; a value in mem.h's enum is optional (Lua and the CLI use names). */
extern const mem_vtable dkv_mem_static_vt, dkv_mem_caching_vt, dkv_mem_blockpool_vt;
static const struct mem_kind_entry {
    const char       *name;
    const mem_vtable *vt;
} kinds[] = {
    [DKV_MEM_STATIC] = {"static", &dkv_mem_static_vt},
    [DKV_MEM_CACHING] = {"caching", &dkv_mem_caching_vt},
    [DKV_MEM_BLOCKPOOL] = {"blockpool", &dkv_mem_blockpool_vt},
};
static const char *const tag_names[DKV_MEM_TAG_COUNT] = {"weights", "kv", "activation", "logits",
                                                          "staging"};
const dkv_names dkv_mem_kind_names = DKV_NAMES("mem.kind", kinds);
static const char *const share_names[] = {"shared", "partitioned"};
const dkv_names dkv_mem_tag_names = DKV_NAMES("mem tag", tag_names);
const dkv_names dkv_mem_share_names = DKV_NAMES("mem.share", share_names);

const char *dkv_mem_kind_name(dkv_mem_kind k) { return dkv_names_at(&dkv_mem_kind_names, (int)k); }
const char *dkv_mem_tag_name(dkv_mem_tag t) { return dkv_names_at(&dkv_mem_tag_names, (int)t); }

uint64_t dkv_block_bytes(uint64_t block_bytes, uint32_t block_tokens, uint64_t token_bytes)
{
    return block_bytes ? block_bytes : (uint64_t)block_tokens * token_bytes;
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
    if ((int)o->kind < 0 || (int)o->kind >= dkv_mem_kind_names.n)
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
    m->vt = kinds[opt->kind].vt;
    m->free_slot = MEM_NONE;
    m->sample_at = m->opt.sample_stride ? m->opt.sample_stride : UINT64_MAX;
    m->defer = m->opt.release_delay_s > 0;
    m->pint_den = m->pext_den = 1;
    m->ext_res = UINT64_MAX;   /* no reserved seen yet: the first event compares directly */
    m->sres_from = 1;          /* (the run of UINT64_MAX is empty) */
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

void mem_sample(dkv_mem *m)
{
    m->sample_at += m->opt.sample_stride;
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

/* reserved passed its peak: remember the fragmentation of that moment */
void mem_peak_reserved(dkv_mem *m)
{
    double dreq = (double)m->requested, dal = (double)m->allocated, dres = (double)m->reserved;
    m->peak_reserved = m->reserved;
    m->ext_at_peak = (dres - dal) / dres;
    m->int_at_peak = dal > 0 ? (dal - dreq) / dal : 0;
}

/* allocated fell below the threshold for this reserved (or it is not known yet): a new
 * external peak when (res - al) / res > pext_num / pext_den; then the threshold: an event at
 * this reserved is no new peak iff res - al <= floor(pext_num * res / pext_den). */
void mem_peak_ext(dkv_mem *m)
{
    uint64_t al = m->allocated, res = m->reserved;
    if (res > 0 && (mem_u128)(res - al) * m->pext_den > (mem_u128)m->pext_num * res) {
        m->pext_num = res - al;
        m->pext_den = res;
    }
    m->ext_res = res;
    m->ext_al_min = res - (uint64_t)((mem_u128)m->pext_num * res / m->pext_den);
}

void mem_peak_int(dkv_mem *m)
{
    m->pint_num = m->allocated - m->requested;
    m->pint_den = m->allocated;
}

void mem_event(dkv_mem *m) { mem_on_event(m, true); }

void mem_sums(const dkv_mem *m, mem_u128 *req, mem_u128 *al, mem_u128 *res)
{
    *req = ((mem_u128)m->sum_req_hi << 64) | m->sum_req_lo;
    *al = ((mem_u128)m->sum_alloc_hi << 64) | m->sum_alloc_lo;
    *res = m->sres_base;
    uint64_t n = m->n_events;
    if (n >= m->sres_from)   /* the open run of reserved == ext_res */
        *res += (mem_u128)m->ext_res * (n + 1 - m->sres_from);
}

dkv_status mem_grow_recs(dkv_mem *m, dkv_err *err)
{
    uint32_t cap = m->cap_recs ? m->cap_recs * 2 : 1024;
    if (cap > (1u << 31))
        return dkv_err_set(err, DKV_ENOMEM, "mem: more than 2^31 live allocations");
    /* aligned to a cache line: a record (64 bytes) is one line, not two */
    mem_rec *r = aligned_alloc(64, (size_t)cap * sizeof *r);
    if (!r)
        return dkv_err_set(err, DKV_ENOMEM, "mem: out of host memory for allocation records");
    if (m->cap_recs)
        memcpy(r, m->recs, (size_t)m->cap_recs * sizeof *r);
    free(m->recs);
    memset(r + m->cap_recs, 0, (size_t)(cap - m->cap_recs) * sizeof *r);
    m->recs = r;
    m->cap_recs = cap;
    return DKV_OK;
}

const dkv_mem_owner mem_kv_owner = {.tag = DKV_MEM_TAG_KV};

dkv_status mem_acquire_bad(dkv_mem *m, uint64_t bytes, const dkv_mem_owner *owner, dkv_err *err)
{
    if (bytes == 0 || bytes > (1ull << 62)) {
        m->bad_size++;
        return dkv_err_set(err, DKV_EINVAL, "mem acquire: size %llu bytes is not valid (must be > 0)",
                           (unsigned long long)bytes);
    }
    m->bad_other++;
    return dkv_err_set(err, DKV_EINVAL, "mem acquire: %s %u out of range",
                       owner->tag >= DKV_MEM_TAG_COUNT ? "tag" : "instance",
                       owner->tag >= DKV_MEM_TAG_COUNT ? owner->tag : owner->instance);
}

dkv_status mem_acquire_failed(dkv_mem *m, uint64_t bytes, dkv_status st)
{
    m->n_failed++;
    if (st == DKV_ENOMEM && m->reserved - m->allocated >= bytes)
        m->n_failed_frag++;
    return st;
}

dkv_status dkv_mem_acquire(dkv_mem *m, uint64_t bytes, const dkv_mem_owner *owner,
                           dkv_mem_id *id, dkv_err *err)
{
    return mem_acquire_inline(m, bytes, owner, id, err);
}

/* Not the live record of id: count the case, set err (slow path of mem_lookup). */
dkv_status mem_lookup_slow(dkv_mem *m, dkv_mem_id id, const char *what, dkv_err *err)
{
    uint64_t s = id & 0xffffffffu;
    uint32_t gen = (uint32_t)(id >> 32);
    if (s == 0 || s > m->n_recs || gen > m->recs[s - 1].gen) {
        m->bad_unknown++;
        return dkv_err_set(err, DKV_ENOENT, "mem %s: unknown allocation id %#llx", what, (unsigned long long)id);
    }
    mem_rec *r = &m->recs[s - 1];
    /* Released more often than acquired + retained: for a shared (retained) allocation
     * that is a refcount underflow, otherwise a double release. */
    bool pend = r->state == REC_PENDING && gen == r->gen;
    bool shared = pend ? r->was_shared : (gen + 1 == r->gen && r->prev_shared);
    if (shared)
        m->bad_underflow++;
    else
        m->bad_double++;
    return dkv_err_set(err, DKV_ESTATE, "mem %s: allocation id %#llx %s%s", what,
                       (unsigned long long)id,
                       shared ? "refcount underflow (released more often than retained)"
                              : "was already released",
                       pend ? " (its deferred free is pending)" : "");
}

dkv_status dkv_mem_retain(dkv_mem *m, dkv_mem_id id, dkv_err *err)
{
    dkv_status st;
    mem_rec *r = mem_lookup(m, id, "retain", &st, err);
    if (!r)
        return st;
    if (r->refcount == UINT32_MAX) {
        m->bad_other++;
        return dkv_err_set(err, DKV_ERANGE, "mem retain: refcount of %#llx would overflow",
                           (unsigned long long)id);
    }
    r->refcount++;
    r->was_shared = 1;
    m->n_retain++;
    mem_on_event(m, false);
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

/* refcount reached 0 with a release delay: pending until the clock passes now + delay */
dkv_status mem_release_deferred(dkv_mem *m, mem_rec *r, dkv_err *err)
{
    dkv_status st = push_pending(m, (uint32_t)(r - m->recs), err);
    if (st)
        return st;
    r->state = REC_PENDING;
    m->pending_bytes += r->allocated;
    return DKV_OK;
}

dkv_status dkv_mem_release(dkv_mem *m, dkv_mem_id id, dkv_err *err)
{
    return mem_release_inline(m, id, err);
}

static void pop_pending(dkv_mem *m)
{
    mem_rec *r = &m->recs[m->pend[m->pend_head].slot];
    m->pend_head = (m->pend_head + 1) % m->pend_cap;
    m->pend_len--;
    m->pending_bytes -= r->allocated;
    mem_free_rec(m, r);
    mem_on_event(m, false);
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
    uint64_t off = m->vt->offset ? m->vt->offset(m, r) : r->offset;
    *out = (dkv_mem_info){r->requested, r->allocated, off, r->refcount,
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
    s->peak_internal_frag = (double)m->pint_num / (double)m->pint_den;
    s->peak_external_frag = (double)m->pext_num / (double)m->pext_den;
    /* ratios of exact sums: 1 - (sum - diff)/sum, with the difference taken in integers */
    mem_u128 sreq, sal, sres;
    mem_sums(m, &sreq, &sal, &sres);
    s->mean_internal_frag = sal > 0 ? (double)(sal - sreq) / (double)sal : 0;
    s->mean_external_frag = sres > 0 ? (double)(sres - sal) / (double)sres : 0;
    s->external_frag_at_peak = m->ext_at_peak;
    s->internal_frag_at_peak = m->int_at_peak;
    s->largest_free = m->vt->largest_free(m);
    s->n_acquire = m->n_acquire;
    s->n_release = m->n_release;
    s->n_retain = m->n_retain;
    s->n_events = m->n_events;
    s->n_failed = m->n_failed;
    s->n_failed_frag = m->n_failed_frag;
    s->reuse_hits = m->reuse_total - m->reuse_miss;
    s->reuse_total = m->reuse_total;
    s->reuse_rate = m->reuse_total ? (double)s->reuse_hits / (double)m->reuse_total : 0;
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
