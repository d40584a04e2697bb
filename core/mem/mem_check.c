/* mem_check.c - dkv_mem_check: recount everything from scratch and compare (for tests). */
#include "mem/mem_impl.h"

#include <stdlib.h>

typedef struct span {
    uint64_t lo, hi;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

dkv_status dkv_mem_check(const dkv_mem *m, dkv_err *err)
{
    uint64_t req = 0, alloc = 0, pend = 0, live = 0;
    dkv_mem_tag_stats tag[DKV_MEM_TAG_COUNT] = {{0}};
    span *sp = malloc((m->n_recs ? m->n_recs : 1) * sizeof *sp);
    if (!sp)
        return dkv_err_set(err, DKV_ENOMEM, "mem check: out of host memory");
    size_t n = 0;
    uint32_t free_slots = 0;
    dkv_status st = DKV_OK;
    for (uint32_t i = 0; i < m->n_recs; i++) {
        const mem_rec *r = &m->recs[i];
        if (!mem_rec_in_use(r)) {
            free_slots++;
            continue;
        }
        if ((r->state == REC_LIVE) != (r->refcount > 0)) {
            st = dkv_err_set(err, DKV_ESTATE, "mem check: allocation %u has state %u with refcount %u",
                             i, r->state, r->refcount);
            goto done;
        }
        if (r->allocated < r->requested || r->requested == 0) {
            st = dkv_err_set(err, DKV_ESTATE, "mem check: allocation %u: requested %llu, allocated %llu", i,
                             (unsigned long long)r->requested, (unsigned long long)r->allocated);
            goto done;
        }
        req += r->requested;
        alloc += r->allocated;
        live++;
        if (r->state == REC_PENDING)
            pend += r->allocated;
        tag[r->owner.tag].requested += r->requested;
        tag[r->owner.tag].allocated += r->allocated;
        uint64_t off = m->vt->offset ? m->vt->offset(m, r) : r->offset;
        sp[n++] = (span){off, off + r->allocated};
    }
    /* the slot free list holds exactly the free slots */
    uint32_t walked = 0;
    for (uint32_t s = m->free_slot; s != MEM_NONE && walked <= m->n_recs; s = m->recs[s].next_free)
        walked++;
    if (walked != free_slots) {
        st = dkv_err_set(err, DKV_ESTATE, "mem check: %u free slots, %u on the free list", free_slots, walked);
        goto done;
    }
    if (req != m->requested || alloc != m->allocated || pend != m->pending_bytes || live != m->live) {
        st = dkv_err_set(err, DKV_ESTATE,
                         "mem check: counters requested/allocated/pending/live %llu/%llu/%llu/%llu, recount %llu/%llu/%llu/%llu",
                         (unsigned long long)m->requested, (unsigned long long)m->allocated,
                         (unsigned long long)m->pending_bytes, (unsigned long long)m->live,
                         (unsigned long long)req, (unsigned long long)alloc, (unsigned long long)pend,
                         (unsigned long long)live);
        goto done;
    }
    for (int t = 0; t < DKV_MEM_TAG_COUNT; t++)
        if (tag[t].requested != m->tag[t].requested || tag[t].allocated != m->tag[t].allocated ||
            m->tag[t].allocated > m->tag[t].peak_allocated) {
            st = dkv_err_set(err, DKV_ESTATE, "mem check: tag %s totals differ from the recount",
                             dkv_mem_tag_name((dkv_mem_tag)t));
            goto done;
        }
    if (!(req <= alloc && alloc <= m->reserved && m->reserved <= m->opt.capacity_bytes)) {
        st = dkv_err_set(err, DKV_ESTATE, "mem check: requested %llu <= allocated %llu <= reserved %llu <= capacity %llu fails",
                         (unsigned long long)req, (unsigned long long)alloc,
                         (unsigned long long)m->reserved, (unsigned long long)m->opt.capacity_bytes);
        goto done;
    }
    if (m->peak_requested < req || m->peak_allocated < alloc || m->peak_reserved < m->reserved) {
        st = dkv_err_set(err, DKV_ESTATE, "mem check: a peak is below the current value");
        goto done;
    }
    if (m->opt.kind != DKV_MEM_BLOCKPOOL) {   /* blockpool checks block ownership itself */
        qsort(sp, n, sizeof *sp, span_cmp);
        for (size_t i = 1; i < n; i++)
            if (sp[i].lo < sp[i - 1].hi) {
                st = dkv_err_set(err, DKV_ESTATE, "mem check: live allocations [%#llx, %#llx) and [%#llx, %#llx) overlap",
                                 (unsigned long long)sp[i - 1].lo, (unsigned long long)sp[i - 1].hi,
                                 (unsigned long long)sp[i].lo, (unsigned long long)sp[i].hi);
                goto done;
            }
    }
    uint64_t free_bytes = 0;
    st = m->vt->check(m, &free_bytes, err);
    if (st)
        goto done;
    if (free_bytes + alloc != m->reserved)
        st = dkv_err_set(err, DKV_ESTATE, "mem check: free %llu + allocated %llu != reserved %llu",
                         (unsigned long long)free_bytes, (unsigned long long)alloc,
                         (unsigned long long)m->reserved);
done:
    free(sp);
    return st;
}
