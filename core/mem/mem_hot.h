/* mem_hot.h - the per-event paths of the generic layer (acquire, release, the bookkeeping
 * after every event), inlined into dkv_mem_acquire / dkv_mem_release (mem.c) and into the
 * replayer (mem_replay.c), so neither pays a call per layer.  The block pool's common case
 * (a single free stack, at most MEM_INLINE_BLOCKS blocks) is called directly, not through
 * the vtable.  Rare cases (new peaks, samples, bad input, deferred release) are out of line
 * in mem.c.  Not a public header. */
#ifndef DKV_MEM_HOT_H
#define DKV_MEM_HOT_H

#include "mem/mem_blockpool_impl.h"

#define MEM_HOT static inline __attribute__((always_inline))

extern const dkv_mem_owner mem_kv_owner;   /* owner of an acquisition given NULL */

/* rare cases, out of line (mem.c) */
void       mem_peak_reserved(dkv_mem *m);
void       mem_peak_ext(dkv_mem *m);
void       mem_peak_int(dkv_mem *m);
void       mem_sample(dkv_mem *m);
dkv_status mem_acquire_bad(dkv_mem *m, uint64_t bytes, const dkv_mem_owner *owner, dkv_err *err);
dkv_status mem_acquire_failed(dkv_mem *m, uint64_t bytes, dkv_status st);
dkv_status mem_grow_recs(dkv_mem *m, dkv_err *err);
dkv_status mem_lookup_slow(dkv_mem *m, dkv_mem_id id, const char *what, dkv_err *err);
dkv_status mem_release_deferred(dkv_mem *m, mem_rec *r, dkv_err *err);

/* After every state change: peaks, exact event-weighted sums, the series.  Integer work only;
 * a fragmentation peak is compared as a fraction (cross-multiplied in 128 bits), the external
 * one, while reserved stays the same, against a threshold on allocated.
 * may_rise = false after a release: requested, allocated and reserved cannot have grown, so
 * their peaks are not compared (the fragmentation peaks always are). */
MEM_HOT void mem_on_event(dkv_mem *m, bool may_rise)
{
    uint64_t n = ++m->n_events;
    uint64_t req = m->requested, al = m->allocated, res = m->reserved;
    if (may_rise) {
        if (req > m->peak_requested)
            m->peak_requested = req;
        if (al > m->peak_allocated)
            m->peak_allocated = al;
        if (__builtin_expect(res > m->peak_reserved, 0))
            mem_peak_reserved(m);
    }
    if (__builtin_expect(res == m->ext_res, 1)) {
        if (__builtin_expect(al < m->ext_al_min, 0))
            mem_peak_ext(m);
    } else {
        /* reserved changed (every event for static): close the run of the old value in the
         * reserved sum; compare the fractions directly; the threshold (a division) is
         * computed at the next event with the same reserved */
        m->sres_base += (mem_u128)m->ext_res * (n - m->sres_from);
        m->sres_from = n;
        if ((mem_u128)(res - al) * m->pext_den > (mem_u128)m->pext_num * res) {
            m->pext_num = res - al;
            m->pext_den = res;
        }
        m->ext_res = res;
        m->ext_al_min = UINT64_MAX;
    }
    if (__builtin_expect((mem_u128)(al - req) * m->pint_den > (mem_u128)m->pint_num * al, 0))
        mem_peak_int(m);
    if (__builtin_expect(__builtin_add_overflow(m->sum_req_lo, req, &m->sum_req_lo), 0))
        m->sum_req_hi++;
    if (__builtin_expect(__builtin_add_overflow(m->sum_alloc_lo, al, &m->sum_alloc_lo), 0))
        m->sum_alloc_hi++;
    if (__builtin_expect(n == m->sample_at, 0))
        mem_sample(m);
}

MEM_HOT dkv_status mem_acquire_inline(dkv_mem *m, uint64_t bytes, const dkv_mem_owner *owner,
                                      dkv_mem_id *id, dkv_err *err)
{
    if (!owner)
        owner = &mem_kv_owner;
    if (__builtin_expect(bytes - 1 >= (1ull << 62) || owner->tag >= DKV_MEM_TAG_COUNT ||
                         owner->instance >= m->opt.n_instances, 0)) {
        *id = 0;
        return mem_acquire_bad(m, bytes, owner, err);
    }
    uint32_t slot = m->free_slot, next = MEM_NONE;
    if (__builtin_expect(slot != MEM_NONE, 1)) {
        next = m->recs[slot].next_free;
    } else {
        if (m->n_recs == m->cap_recs) {
            dkv_status st = mem_grow_recs(m, err);
            if (st) {
                *id = 0;
                return st;
            }
        }
        slot = m->n_recs;
    }
    mem_rec *r = &m->recs[slot];
    r->requested = bytes;
    r->owner = *owner;
    if (!(m->opt.kind == DKV_MEM_BLOCKPOOL && bp_alloc_fast(m, r))) {
        dkv_status st = m->vt->alloc(m, r, err);
        if (st) {
            if (slot == m->free_slot)
                r->next_free = next;   /* the manager leaves the record as it was; be sure */
            *id = 0;
            return mem_acquire_failed(m, bytes, st);
        }
    }
    if (slot == m->free_slot)
        m->free_slot = next;
    else
        m->n_recs++;
    r->state = REC_LIVE;
    r->refcount = 1;
    r->was_shared = 0;
    uint64_t al = r->allocated;
    m->requested += bytes;
    m->allocated += al;
    m->live++;
    m->n_acquire++;
    dkv_mem_tag_stats *t = &m->tag[owner->tag];
    t->requested += bytes;
    t->allocated += al;
    t->n_acquire++;
    if (t->allocated > t->peak_allocated)
        t->peak_allocated = t->allocated;
    *id = ((uint64_t)r->gen << 32) | (uint64_t)(slot + 1);
    mem_on_event(m, true);
    return DKV_OK;
}

/* The live record of id, or NULL with the case counted and *st / err set. */
MEM_HOT mem_rec *mem_lookup(dkv_mem *m, dkv_mem_id id, const char *what, dkv_status *st, dkv_err *err)
{
    uint64_t s = (id & 0xffffffffu) - 1;
    if (__builtin_expect(s < m->n_recs, 1)) {
        mem_rec *r = &m->recs[s];
        if (__builtin_expect(r->gen == (uint32_t)(id >> 32) && r->state == REC_LIVE, 1))
            return r;
    }
    *st = mem_lookup_slow(m, id, what, err);
    return NULL;
}

/* Returns r's memory to the manager and r to the slot free list. */
MEM_HOT void mem_free_rec(dkv_mem *m, mem_rec *r)
{
    if (!(m->opt.kind == DKV_MEM_BLOCKPOOL && bp_dealloc_fast(m, r)))
        m->vt->dealloc(m, r);
    m->requested -= r->requested;
    m->allocated -= r->allocated;
    m->live--;
    dkv_mem_tag_stats *t = &m->tag[r->owner.tag];
    t->requested -= r->requested;
    t->allocated -= r->allocated;
    r->state = REC_FREE;
    r->prev_shared = r->was_shared;
    r->gen++;
    r->next_free = m->free_slot;
    m->free_slot = (uint32_t)(r - m->recs);
}

MEM_HOT dkv_status mem_release_inline(dkv_mem *m, dkv_mem_id id, dkv_err *err)
{
    dkv_status st;
    mem_rec *r = mem_lookup(m, id, "release", &st, err);
    if (!r)
        return st;
    if (--r->refcount == 0) {
        if (__builtin_expect(m->defer, 0)) {
            st = mem_release_deferred(m, r, err);
            if (st) {
                r->refcount = 1;
                return st;
            }
        } else {
            mem_free_rec(m, r);
        }
    }
    m->n_release++;
    mem_on_event(m, false);   /* a manager's release never takes memory from the device */
    return DKV_OK;
}

#endif
