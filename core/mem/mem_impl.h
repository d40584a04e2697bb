/* mem_impl.h - internals shared by the generic layer (mem.c) and the managers
 * (mem_static.c, mem_caching.c, mem_blockpool.c).  Not a public header.
 *
 * The generic layer owns allocation ids, refcounts, deferred release, statistics and the time
 * series; a manager only places and removes memory (vtable below) and keeps m->reserved. */
#ifndef DKV_MEM_IMPL_H
#define DKV_MEM_IMPL_H

#include "mem/mem.h"

#define MEM_NONE UINT32_MAX

__extension__ typedef unsigned __int128 mem_u128;

enum { REC_FREE = 0, REC_LIVE, REC_PENDING };

#define MEM_INLINE_BLOCKS 4

/* One allocation slot, one cache line.  id = ((uint64_t)gen << 32) | (slot + 1); gen is
 * bumped when the slot is freed, so a stale id is recognised. */
typedef struct mem_rec {
    uint64_t requested;      /* bytes asked */
    uint64_t allocated;      /* bytes handed out (set by the manager) */
    union {                  /* the manager's, while the slot is in use; next_free while free */
        struct {
            uint64_t offset; /* static, caching: address in the manager's space */
            uint32_t handle; /* caching: block index; static: reservation index or MEM_NONE */
        };
        uint32_t blocks[MEM_INLINE_BLOCKS]; /* blockpool: the block ids when n_blocks <=
                                               MEM_INLINE_BLOCKS, else blocks[0] = offset of
                                               the block list (mem_blockpool.c) */
        uint32_t next_free;  /* slot free list */
    };
    uint32_t gen;
    uint32_t refcount;
    uint32_t n_blocks;       /* blockpool */
    uint8_t  state;          /* REC_* */
    uint8_t  was_shared;     /* retained at least once in this life */
    uint8_t  prev_shared;    /* was_shared of the previous life (tells underflow from double) */
    dkv_mem_owner owner;
} mem_rec;

_Static_assert(sizeof(mem_rec) == 64, "mem_rec is one cache line");

typedef struct mem_pending {
    double   due_s;
    uint32_t slot;
} mem_pending;

/* A manager.  alloc fills r->allocated and its part of the record (offset and handle, or
 * blocks and n_blocks), updates m->reserved and the device counters, and adds to
 * m->reuse_total (and m->reuse_miss for memory not used before); on failure it returns DKV_ENOMEM (or DKV_ESTATE) with a
 * message and changes nothing visible (the record's union included). */
typedef struct mem_vtable {
    dkv_status (*init)(dkv_mem *m, dkv_err *err);
    void       (*fini)(dkv_mem *m);
    dkv_status (*alloc)(dkv_mem *m, mem_rec *r, dkv_err *err);
    void       (*dealloc)(dkv_mem *m, mem_rec *r);
    uint64_t   (*largest_free)(const dkv_mem *m);
    /* manager invariants; *free_bytes = free memory inside reserved, recounted */
    dkv_status (*check)(const dkv_mem *m, uint64_t *free_bytes, dkv_err *err);
    void       (*stats)(const dkv_mem *m, dkv_mem_stats *s);   /* manager-specific fields */
    /* address of a live record; NULL: r->offset */
    uint64_t   (*offset)(const dkv_mem *m, const mem_rec *r);
} mem_vtable;


struct dkv_mem {
    dkv_mem_options opt;
    const mem_vtable *vt;
    void *impl;              /* manager state */

    mem_rec  *recs;
    uint32_t  n_recs, cap_recs, free_slot;   /* free_slot: head of the slot free list */

    mem_pending *pend;       /* ring */
    uint32_t  pend_head, pend_len, pend_cap;

    double    now;
    /* counters (the stats struct minus derived fields) */
    uint64_t requested, allocated, reserved, pending_bytes, live;
    uint64_t peak_requested, peak_allocated, peak_reserved;
    double   ext_at_peak, int_at_peak;
    /* fragmentation peaks as exact fractions num / den (den > 0); ext_al_min: at reserved ==
     * ext_res, an event can be a new external peak only if allocated < ext_al_min (exact
     * threshold, or UINT64_MAX while not computed) */
    uint64_t pint_num, pint_den, pext_num, pext_den, ext_res, ext_al_min;
    /* event-weighted sums, exact: requested and allocated as 128-bit lo/hi pairs (one store
     * per event; the carry is a rare branch); reserved, which rarely changes, by runs: the
     * events sres_from .. n_events all had reserved == ext_res, sres_base sums those before */
    uint64_t sum_req_lo, sum_req_hi, sum_alloc_lo, sum_alloc_hi, sres_from;
    mem_u128 sres_base;
    uint64_t sample_at;      /* n_events of the next time-series sample; UINT64_MAX: off */
    bool     defer;          /* opt.release_delay_s > 0 */
    uint64_t n_acquire, n_release, n_retain, n_events, n_failed, n_failed_frag;
    uint64_t reuse_miss, reuse_total;   /* hits = total - miss: a hit only counts total */
    uint64_t bad_double, bad_unknown, bad_underflow, bad_size, bad_other;
    uint64_t device_allocs, device_frees, device_alloc_bytes, segments;
    double   device_time_s;
    uint64_t setup_bytes;
    double   setup_time_s;
    dkv_mem_tag_stats tag[DKV_MEM_TAG_COUNT];

    dkv_mem_sample *series;
    size_t   n_series, cap_series;
};

static inline uint64_t mem_round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* Device traffic helpers for managers. */
static inline void mem_device_alloc(dkv_mem *m, uint64_t bytes)
{
    m->device_allocs++;
    m->device_alloc_bytes += bytes;
    m->device_time_s += m->opt.device_malloc_s;
    m->reserved += bytes;
    m->segments++;
}
static inline void mem_device_free(dkv_mem *m, uint64_t bytes)
{
    m->device_frees++;
    m->device_time_s += m->opt.device_free_s;
    m->reserved -= bytes;
    m->segments--;
}

/* Records a state change made outside acquire/release (reserve, grow, shrink): peaks, sums,
 * the time series. */
void mem_event(dkv_mem *m);

/* The event-weighted sums of requested, allocated and reserved over every event so far. */
void mem_sums(const dkv_mem *m, mem_u128 *req, mem_u128 *al, mem_u128 *res);

/* Iterates live (and pending) records: for (uint32_t i = 0; i < m->n_recs; i++) if state. */
static inline bool mem_rec_in_use(const mem_rec *r) { return r->state != REC_FREE; }

#endif
