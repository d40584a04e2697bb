/* mem_blockpool_impl.h - the block pool's state, shared by mem_blockpool.c and
 * mem_blockpool_check.c.  Not a public header. */
#ifndef DKV_MEM_BLOCKPOOL_IMPL_H
#define DKV_MEM_BLOCKPOOL_IMPL_H

#include "mem/mem_impl.h"

enum { BF_LIVE = 1, BF_USED = 2 };

typedef struct bp_stack {
    uint32_t *ids;
    uint32_t n, cap;
} bp_stack;

typedef struct bp {
    uint64_t block_bytes, chunk_bytes;
    uint32_t block_shift;        /* log2(block_bytes) when a power of two, else 0 */
    uint32_t chunk_blocks, chunk_shift;
    uint32_t n_chunks, cap_chunks, live_chunks, max_chunks;
    uint8_t  *chunk_live;
    uint8_t  *chunk_part;        /* partition (instance) a chunk belongs to */
    uint32_t *chunk_free;        /* free blocks in the chunk; kept up to date per operation
                                    only with automatic shrink (track_free), else recounted
                                    by dkv_mem_shrink */
    bool      track_free;
    uint32_t *blist;             /* block ids of live allocations, slots of 2^c entries */
    uint64_t  blist_n, blist_cap;
    bp_stack  slot_free[33];     /* free slot offsets per size class */
    uint32_t  slot_count[33];    /* slots ever made per class (free-list capacity) */
    uint8_t  *flags;             /* per block: BF_* */
    uint32_t  n_parts;
    bp_stack  part[DKV_MEM_MAX_INSTANCES];
    uint64_t  free_blocks;
    bool      quotas, partitioned;
    uint64_t  used[DKV_MEM_MAX_INSTANCES];    /* blocks */
    uint64_t  quota[DKV_MEM_MAX_INSTANCES];   /* blocks */
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

/* Recount and invariants of the pool (the manager part of dkv_mem_check). */
dkv_status dkv_mem_bp_check(const dkv_mem *m, uint64_t *free_bytes, dkv_err *err);

#endif
