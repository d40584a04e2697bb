/* mem_blockpool_impl.h - the block pool's state, shared by mem_blockpool.c,
 * mem_blockpool_check.c and the inlined fast path (mem_hot.h).  Not a public header.
 *
 * Where an allocation's block ids are: n_blocks <= MEM_INLINE_BLOCKS: in the record
 * (r->blocks[0 .. n_blocks-1]; the other entries are unspecified); more: in `blist` at offset
 * r->blocks[0], in a slot of 2^c entries (c = size_class(n_blocks)) taken from a free list per
 * class. */
#ifndef DKV_MEM_BLOCKPOOL_IMPL_H
#define DKV_MEM_BLOCKPOOL_IMPL_H

#include "mem/mem_impl.h"

/* A free stack.  ids[-BP_GUARD .. -1] exist and hold block 0 (the fast path reads up to
 * MEM_INLINE_BLOCKS entries below the top, whatever n is), and cap >= blocks of the
 * partition + MEM_INLINE_BLOCKS (the fast release writes MEM_INLINE_BLOCKS entries above it). */
#define BP_GUARD MEM_INLINE_BLOCKS
typedef struct bp_stack {
    uint32_t *ids;               /* base + BP_GUARD */
    uint32_t n, cap;
    uint32_t n_fresh;            /* ids[0 .. n_fresh) were never handed out: fresh chunks go to
                                    the bottom, releases to the top, so the never-used blocks
                                    are always the bottom of the stack */
} bp_stack;

typedef struct bp {
    uint64_t block_bytes, chunk_bytes;
    uint32_t block_shift;        /* log2(block_bytes) when a power of two, else 0 */
    uint32_t fast_max;           /* MEM_INLINE_BLOCKS when the fast path applies (one free
                                    stack, no quotas, no per-chunk free counts), else 0 */
    uint32_t chunk_blocks, chunk_shift;
    uint32_t n_chunks, cap_chunks, live_chunks, max_chunks;
    uint8_t  *chunk_live;
    uint8_t  *chunk_part;        /* partition (instance) a chunk belongs to */
    uint32_t *chunk_free;        /* free blocks in the chunk; kept up to date per operation
                                    only with automatic shrink (track_free), else recounted
                                    by dkv_mem_shrink */
    bool      track_free;
    uint32_t *blist;             /* block ids of live allocations of > MEM_INLINE_BLOCKS
                                    blocks, slots of 2^c entries */
    uint64_t  blist_n, blist_cap;
    bp_stack  slot_free[33];     /* free slot offsets per size class */
    uint32_t  slot_count[33];    /* slots ever made per class (free-list capacity) */
    uint8_t  *blk_used;             /* per block: 1 once it has been handed out (set when it
                                    leaves the fresh part of a stack) */
    uint32_t  n_parts;
    bp_stack  part[DKV_MEM_MAX_INSTANCES];
    bool      quotas, partitioned;
    uint64_t  used[DKV_MEM_MAX_INSTANCES];    /* blocks */
    uint64_t  quota[DKV_MEM_MAX_INSTANCES];   /* blocks */
    uint64_t  cap[DKV_MEM_MAX_INSTANCES];     /* blocks an instance may hold at most (0: no cap) */
    uint64_t  outstanding;       /* sum of max(0, quota - used) */
} bp;

static inline uint64_t owed(const bp *p, uint32_t i)
{
    return p->quota[i] > p->used[i] ? p->quota[i] - p->used[i] : 0;
}

static inline uint32_t size_class(uint32_t k)
{
    return k <= 1 ? 0 : 32 - (uint32_t)__builtin_clz(k - 1);
}

/* Free blocks: the free stacks' entries. */
static inline uint64_t bp_free_blocks(const bp *p)
{
    uint64_t f = 0;
    for (uint32_t q = 0; q < p->n_parts; q++)
        f += p->part[q].n;
    return f;
}

/* Blocks for `bytes` (> 0). */
static inline uint64_t bp_blocks_for(const bp *p, uint64_t bytes)
{
    return p->block_shift ? ((bytes - 1) >> p->block_shift) + 1 : (bytes - 1) / p->block_bytes + 1;
}

/* The block ids of a live record, in order. */
static inline const uint32_t *bp_rec_blocks(const bp *p, const mem_rec *r)
{
    return r->n_blocks <= MEM_INLINE_BLOCKS ? r->blocks : p->blist + r->blocks[0];
}

/* Fast path of acquire: 1 <= k <= MEM_INLINE_BLOCKS blocks from the one free stack, none of
 * them fresh (so every one is a reuse hit, and no per-block state changes), no growth.  The
 * ids are copied in MEM_INLINE_BLOCKS lanes whatever k is: no branch on k, which is random in
 * a mixed stream (a loop over it mispredicts its exit); lanes >= k read entries below the
 * top, or the guard, and leave unused record entries.  false: not this case (nothing
 * changed); the vtable's alloc takes it. */
static inline __attribute__((always_inline)) bool bp_alloc_fast(dkv_mem *m, mem_rec *r)
{
    bp *p = m->impl;
    uint64_t k = bp_blocks_for(p, r->requested);
    bp_stack *s = &p->part[0];
    uint32_t n = s->n;
    if (__builtin_expect(k > p->fast_max || k + s->n_fresh > n, 0))
        return false;
    /* four 4-byte loads (one 16-byte load would straddle the last release's 16-byte store
     * and miss store-to-load forwarding) */
    const uint32_t *top = s->ids + n;
    r->blocks[0] = top[-1];
    r->blocks[1] = top[-2];
    r->blocks[2] = top[-3];
    r->blocks[3] = top[-4];
    s->n = n - (uint32_t)k;
    m->reuse_total += k;       /* all hits: reuse_miss stays */
    r->allocated = p->block_shift ? k << p->block_shift : k * p->block_bytes;
    r->n_blocks = (uint32_t)k;
    return true;
}

/* Fast path of release, the mirror: the record's MEM_INLINE_BLOCKS entries are copied above
 * the stack top (room reserved), n grows by k. */
static inline __attribute__((always_inline)) bool bp_dealloc_fast(dkv_mem *m, mem_rec *r)
{
    bp *p = m->impl;
    uint32_t k = r->n_blocks;
    if (__builtin_expect(k > p->fast_max, 0))
        return false;
    bp_stack *s = &p->part[0];
    uint32_t *top = s->ids + s->n;
    top[0] = r->blocks[0];
    top[1] = r->blocks[1];
    top[2] = r->blocks[2];
    top[3] = r->blocks[3];
    s->n += k;
    return true;
}

/* Recount and invariants of the pool (the manager part of dkv_mem_check). */
dkv_status dkv_mem_bp_check(const dkv_mem *m, uint64_t *free_bytes, dkv_err *err);

#endif
