/* mem_blockpool_check.c - recount of the block pool from scratch (for dkv_mem_check). */
#include "mem/mem_blockpool_impl.h"

#include <stdlib.h>

/* What the recount has seen so far. */
typedef struct recount {
    size_t    nb;                           /* blocks of all chunks */
    uint8_t  *seen;                         /* per block: 1 held, 2 free */
    uint32_t *cfree;                        /* free blocks per chunk */
    uint64_t  used[DKV_MEM_MAX_INSTANCES];  /* blocks held per instance */
    uint8_t  *slot_seen;                    /* per block-list entry: 1 used, 2 free */
    uint64_t  nfree;
} recount;

/* Every allocation's blocks: inside live chunks, held once, sizes consistent. */
static dkv_status check_held(const dkv_mem *m, const bp *p, recount *x, dkv_err *err)
{
    dkv_status st = DKV_OK;
    for (uint32_t i = 0; i < m->n_recs && !st; i++) {
        const mem_rec *r = &m->recs[i];
        if (!mem_rec_in_use(r))
            continue;
        uint32_t n = r->n_blocks;
        if (n == 0) {
            st = dkv_err_set(err, DKV_ESTATE, "blockpool: allocation %u holds no blocks", i);
            break;
        }
        if (n > MEM_INLINE_BLOCKS) {    /* ids in a block-list slot of its size class */
            uint64_t slot = 1ull << size_class(n), off = r->blocks[0];
            if (off + slot > p->blist_n) {
                st = dkv_err_set(err, DKV_ESTATE, "blockpool: allocation %u has a bad block list (%u blocks at %llu)", i, n,
                                 (unsigned long long)off);
                break;
            }
            for (uint64_t j = off; j < off + slot && !st; j++) {
                if (x->slot_seen[j])
                    st = dkv_err_set(err, DKV_ESTATE, "blockpool: block-list entry %llu is used twice", (unsigned long long)j);
                x->slot_seen[j] = 1;
            }
        }
        const uint32_t *ids = bp_rec_blocks(p, r);
        for (uint32_t j = 0; j < n && !st; j++) {
            uint32_t b = ids[j];
            if (b >= x->nb || !p->chunk_live[b >> p->chunk_shift])
                st = dkv_err_set(err, DKV_ESTATE, "blockpool: allocation %u holds block %u outside live chunks", i, b);
            else if (x->seen[b])
                st = dkv_err_set(err, DKV_ESTATE, "blockpool: block %u is held twice (overlap)", b);
            else if (p->blk_used[b] != 1)
                st = dkv_err_set(err, DKV_ESTATE, "blockpool: live block %u is marked never used (%u)", b, p->blk_used[b]);
            x->seen[b] = 1;
        }
        if (!st && r->allocated != (uint64_t)n * p->block_bytes)
            st = dkv_err_set(err, DKV_ESTATE, "blockpool: allocation %u size disagrees with its blocks", i);
        if (!st && r->allocated < r->requested)
            st = dkv_err_set(err, DKV_ESTATE, "blockpool: allocation %u has allocated < requested", i);
        x->used[r->owner.instance] += n;
    }
    return st;
}

/* The block-list slots: each entry used by one allocation or free in one slot, none leaked. */
static dkv_status check_slots(const bp *p, recount *x, dkv_err *err)
{
    dkv_status st = DKV_OK;
    for (uint32_t c = 0; c < 33 && !st; c++)
        for (uint32_t i = 0; i < p->slot_free[c].n && !st; i++) {
            uint64_t off = p->slot_free[c].ids[i];
            for (uint64_t j = off; j < off + (1ull << c) && !st; j++) {
                if (j >= p->blist_n || x->slot_seen[j])
                    st = dkv_err_set(err, DKV_ESTATE, "blockpool: free block-list slot %llu of class %u overlaps", (unsigned long long)off, c);
                else
                    x->slot_seen[j] = 2;
            }
        }
    for (uint64_t j = 0; j < p->blist_n && !st; j++)
        if (!x->slot_seen[j])
            st = dkv_err_set(err, DKV_ESTATE, "blockpool: block-list entry %llu is neither used nor free (leak)", (unsigned long long)j);
    return st;
}

/* The free stacks: blocks of live chunks of their partition, fresh ones at the bottom. */
static dkv_status check_free(const bp *p, recount *x, dkv_err *err)
{
    dkv_status st = DKV_OK;
    for (uint32_t q = 0; q < p->n_parts && !st; q++) {
        if (p->part[q].n_fresh > p->part[q].n)
            st = dkv_err_set(err, DKV_ESTATE, "blockpool: free stack %u has %u fresh entries of %u", q,
                             p->part[q].n_fresh, p->part[q].n);
        /* the bottom n_fresh entries were never handed out, every other block was */
        for (uint32_t i = 0; i < p->part[q].n && !st; i++) {
            uint32_t b = p->part[q].ids[i];
            if (b >= x->nb || !p->chunk_live[b >> p->chunk_shift] || p->chunk_part[b >> p->chunk_shift] != q)
                st = dkv_err_set(err, DKV_ESTATE, "blockpool: free block %u is not in a live chunk of partition %u", b, q);
            else if (x->seen[b])
                st = dkv_err_set(err, DKV_ESTATE, "blockpool: block %u is both free and held, or free twice", b);
            else if (p->blk_used[b] != (i >= p->part[q].n_fresh))
                st = dkv_err_set(err, DKV_ESTATE, "blockpool: free block %u at stack position %u (%u fresh below the top part) is marked %s",
                                 b, i, p->part[q].n_fresh, p->blk_used[b] ? "used" : "never used");
            else {
                x->seen[b] = 2;
                x->cfree[b >> p->chunk_shift]++;
                x->nfree++;
            }
        }
    }
    return st;
}

/* The fast paths' premises: guard entries, room in the stacks, the fast path's switch. */
static dkv_status check_guards(const bp *p, dkv_err *err)
{
    dkv_status st = DKV_OK;
    for (uint32_t q = 0; q < p->n_parts && !st; q++) {
        const bp_stack *fs = &p->part[q];
        if (!fs->ids)
            continue;
        for (int g = 1; g <= BP_GUARD && !st; g++)
            if (fs->ids[-g] != 0)
                st = dkv_err_set(err, DKV_ESTATE, "blockpool: guard entry %d of free stack %u is %u (not 0)", -g, q, fs->ids[-g]);
        uint64_t blocks = 0;
        for (uint32_t c = 0; c < p->n_chunks; c++)
            blocks += p->chunk_live[c] && p->chunk_part[c] == q ? p->chunk_blocks : 0;
        if (!st && (uint64_t)fs->cap < blocks + MEM_INLINE_BLOCKS)
            st = dkv_err_set(err, DKV_ESTATE, "blockpool: free stack %u has room for %u entries, its partition %llu blocks",
                             q, fs->cap, (unsigned long long)blocks);
    }
    if (!st && p->fast_max != (p->n_parts == 1 && !p->quotas && !p->track_free ? MEM_INLINE_BLOCKS : 0))
        st = dkv_err_set(err, DKV_ESTATE, "blockpool: fast path enabled = %u in a pool that %s", p->fast_max,
                         p->fast_max ? "has partitions, quotas or chunk counts" : "could use it");
    return st;
}

/* Chunks, reserved bytes, segments, per-instance use and guarantees against the recount. */
static dkv_status check_counts(const dkv_mem *m, const bp *p, recount *x, dkv_err *err)
{
    dkv_status st = DKV_OK;
    uint32_t live_chunks = 0;
    for (uint32_t c = 0; c < p->n_chunks && !st; c++) {
        if (!p->chunk_live[c])
            continue;
        live_chunks++;
        if (p->track_free && x->cfree[c] != p->chunk_free[c])
            st = dkv_err_set(err, DKV_ESTATE, "blockpool: chunk %u counts %u free blocks, recount %u", c, p->chunk_free[c], x->cfree[c]);
        for (uint32_t b = c << p->chunk_shift; b < (c + 1) << p->chunk_shift && !st; b++)
            if (!x->seen[b])
                st = dkv_err_set(err, DKV_ESTATE, "blockpool: block %u is neither free nor held (leak)", b);
    }
    if (!st && live_chunks != p->live_chunks)
        st = dkv_err_set(err, DKV_ESTATE, "blockpool: %u live chunks, recount %u", p->live_chunks, live_chunks);
    if (!st && m->reserved != (uint64_t)live_chunks * p->chunk_bytes)
        st = dkv_err_set(err, DKV_ESTATE, "blockpool: reserved %llu != %u chunks", (unsigned long long)m->reserved, live_chunks);
    if (!st && m->segments != live_chunks)
        st = dkv_err_set(err, DKV_ESTATE, "blockpool: segments %llu != %u chunks", (unsigned long long)m->segments, live_chunks);
    uint64_t outstanding = 0;
    for (uint32_t i = 0; i < DKV_MEM_MAX_INSTANCES && !st; i++) {
        if ((p->quotas || p->partitioned) && x->used[i] != p->used[i])
            st = dkv_err_set(err, DKV_ESTATE, "blockpool: instance %u uses %llu blocks, recount %llu", i,
                             (unsigned long long)p->used[i], (unsigned long long)x->used[i]);
        if (p->quotas)
            outstanding += p->quota[i] > x->used[i] ? p->quota[i] - x->used[i] : 0;
    }
    if (!st && p->quotas && outstanding != p->outstanding)
        st = dkv_err_set(err, DKV_ESTATE, "blockpool: outstanding guarantees %llu, recount %llu",
                         (unsigned long long)p->outstanding, (unsigned long long)outstanding);
    if (!st && p->quotas) {
        uint64_t room = x->nfree + (m->opt.grow ? (uint64_t)(p->max_chunks - p->live_chunks) * p->chunk_blocks : 0);
        if (room < p->outstanding)
            st = dkv_err_set(err, DKV_ESTATE, "blockpool: guarantees (%llu blocks) exceed free + growable (%llu)",
                             (unsigned long long)p->outstanding, (unsigned long long)room);
    }
    return st;
}

dkv_status dkv_mem_bp_check(const dkv_mem *m, uint64_t *free_bytes, dkv_err *err)
{
    const bp *p = m->impl;
    recount x = {.nb = (size_t)p->n_chunks * p->chunk_blocks};
    x.seen = calloc(x.nb ? x.nb : 1, 1);
    x.cfree = calloc(p->n_chunks ? p->n_chunks : 1, sizeof *x.cfree);
    x.slot_seen = calloc(p->blist_n ? p->blist_n : 1, 1);
    dkv_status st = DKV_OK;
    if (!x.seen || !x.cfree || !x.slot_seen)
        st = dkv_err_set(err, DKV_ENOMEM, "blockpool check: out of host memory");
    if (!st)
        st = check_held(m, p, &x, err);
    if (!st)
        st = check_slots(p, &x, err);
    if (!st)
        st = check_free(p, &x, err);
    if (!st)
        st = check_guards(p, err);
    if (!st)
        st = check_counts(m, p, &x, err);
    if (x.seen && x.cfree && x.slot_seen)
        *free_bytes = x.nfree * p->block_bytes;
    free(x.seen);
    free(x.cfree);
    free(x.slot_seen);
    return st;
}
