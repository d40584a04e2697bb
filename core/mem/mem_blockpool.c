/* mem_blockpool.c - the dynamic block KV pool: fixed blocks, LIFO free stacks, chunked growth
 * and shrink, instances with guaranteed quotas (shared) or fixed partitions.
 *
 * Block b lives in chunk b / chunk_blocks at byte (b % chunk_blocks) * block_bytes; chunk slots
 * laid end to end give the virtual offset b * block_bytes.  An allocation's block ids sit in
 * its record when there are at most MEM_INLINE_BLOCKS of them, else contiguously in `blist`,
 * in a slot of 2^c entries taken from a free list per size class c (so acquire and release
 * copy ids between the free stack and the record or slot, without walking a chain).  The
 * common case (one free stack, no quotas, at most MEM_INLINE_BLOCKS blocks, no growth) is
 * inlined into the generic layer (bp_alloc_fast / bp_dealloc_fast, mem_blockpool_impl.h);
 * bp_alloc / bp_dealloc below do every case.  No host allocation per operation: arrays grow
 * with the pool and the number of live allocations only. */
#include "mem/mem_blockpool_impl.h"

#include <stdlib.h>
#include <string.h>


/* Room for `need` entries (plus the guard below ids[0], holding block 0). */
static dkv_status stack_reserve(bp_stack *s, uint64_t need, dkv_err *err)
{
    if (need <= s->cap)
        return DKV_OK;
    uint64_t cap = s->cap ? s->cap : 256;
    while (cap < need)
        cap *= 2;
    if (cap > UINT32_MAX - BP_GUARD)
        return dkv_err_set(err, DKV_ENOMEM, "blockpool: more than 2^32 entries in a free stack");
    uint32_t *base = realloc(s->ids ? s->ids - BP_GUARD : NULL, (size_t)(cap + BP_GUARD) * sizeof *base);
    if (!base)
        return dkv_err_set(err, DKV_ENOMEM, "blockpool: out of host memory for the free stack");
    memset(base, 0, BP_GUARD * sizeof *base);
    s->ids = base + BP_GUARD;
    s->cap = (uint32_t)cap;
    return DKV_OK;
}

static void stack_free(bp_stack *s)
{
    if (s->ids)
        free(s->ids - BP_GUARD);
    s->ids = NULL;
}

/* Backs one more chunk (lowest hole first) for partition `part`. */
static dkv_status add_chunk(dkv_mem *m, uint32_t part, dkv_err *err)
{
    bp *p = m->impl;
    if (p->live_chunks >= p->max_chunks)
        return dkv_err_set(err, DKV_ENOMEM, "blockpool: capacity %llu bytes holds %u chunks of %llu bytes; all are in use",
                           (unsigned long long)m->opt.capacity_bytes, p->max_chunks,
                           (unsigned long long)p->chunk_bytes);
    uint32_t c = 0;
    while (c < p->n_chunks && p->chunk_live[c])
        c++;
    if (c == p->n_chunks) {
        if (p->n_chunks == p->cap_chunks) {
            uint32_t cap = p->cap_chunks ? p->cap_chunks * 2 : 8;
            size_t nb = (size_t)cap * p->chunk_blocks;
            uint8_t *live = realloc(p->chunk_live, cap);
            if (live)
                p->chunk_live = live;
            uint8_t *cp = realloc(p->chunk_part, cap);
            if (cp)
                p->chunk_part = cp;
            uint32_t *cf = realloc(p->chunk_free, cap * sizeof *cf);
            if (cf)
                p->chunk_free = cf;
            uint8_t *fl = realloc(p->blk_used, nb);
            if (fl)
                p->blk_used = fl;
            if (!live || !cp || !cf || !fl)
                return dkv_err_set(err, DKV_ENOMEM, "blockpool: out of host memory growing to %u chunks", cap);
            p->cap_chunks = cap;
        }
        p->n_chunks++;
    }
    /* every block of the partition, plus the fast release's overshoot */
    dkv_status st = stack_reserve(&p->part[part], ((uint64_t)p->live_chunks + 1) * p->chunk_blocks + MEM_INLINE_BLOCKS,
                                  err);
    if (st)
        return st;
    p->chunk_live[c] = 1;
    p->chunk_part[c] = (uint8_t)part;
    p->chunk_free[c] = p->chunk_blocks;
    uint32_t b0 = c << p->chunk_shift;
    memset(p->blk_used + b0, 0, p->chunk_blocks);
    /* Fresh blocks go to the bottom of the free stack: blocks used before are handed out
     * first, and the fresh ones in ascending id order. */
    bp_stack *s = &p->part[part];
    memmove(s->ids + p->chunk_blocks, s->ids, (size_t)s->n * sizeof *s->ids);
    for (uint32_t i = 0; i < p->chunk_blocks; i++)
        s->ids[i] = b0 + p->chunk_blocks - 1 - i;
    s->n += p->chunk_blocks;
    s->n_fresh += p->chunk_blocks;
    p->live_chunks++;
    mem_device_alloc(m, p->chunk_bytes);
    return DKV_OK;
}

/* Gives chunk c back (it must be wholly free) and drops its blocks from the free stack. */
static void drop_chunk(dkv_mem *m, uint32_t c)
{
    bp *p = m->impl;
    bp_stack *s = &p->part[p->chunk_part[c]];
    uint32_t w = 0, fresh = 0;
    for (uint32_t i = 0; i < s->n; i++)
        if ((s->ids[i] >> p->chunk_shift) != c) {
            fresh += i < s->n_fresh;
            s->ids[w++] = s->ids[i];
        }
    s->n = w;
    s->n_fresh = fresh;
    p->chunk_live[c] = 0;
    p->live_chunks--;
    while (p->n_chunks && !p->chunk_live[p->n_chunks - 1])
        p->n_chunks--;
    mem_device_free(m, p->chunk_bytes);
}

static dkv_status bp_init(dkv_mem *m, dkv_err *err)
{
    const dkv_mem_options *o = &m->opt;
    bp *p = calloc(1, sizeof *p);
    if (!p)
        return dkv_err_set(err, DKV_ENOMEM, "blockpool: out of host memory");
    m->impl = p;
    p->block_bytes = dkv_block_bytes(o->block_bytes, o->block_tokens, o->token_bytes);
    if (p->block_bytes == 0)
        return dkv_err_set(err, DKV_EINVAL, "blockpool: block size is 0 (set block_bytes, or block_tokens and token_bytes)");
    if (o->chunk_blocks == 0 || (o->chunk_blocks & (o->chunk_blocks - 1)) || o->chunk_blocks > (1u << 20))
        return dkv_err_set(err, DKV_EINVAL, "blockpool: chunk_blocks %u must be a power of two in [1, 2^20]",
                           o->chunk_blocks);
    p->chunk_blocks = o->chunk_blocks;
    p->track_free = o->shrink;
    while ((1u << p->chunk_shift) < p->chunk_blocks)
        p->chunk_shift++;
    if ((p->block_bytes & (p->block_bytes - 1)) == 0)
        while ((1ull << p->block_shift) < p->block_bytes)
            p->block_shift++;
    p->chunk_bytes = p->block_bytes * p->chunk_blocks;
    uint64_t maxc = o->capacity_bytes / p->chunk_bytes;
    if (maxc == 0)
        return dkv_err_set(err, DKV_EINVAL, "blockpool: capacity %llu bytes is smaller than one chunk (%u blocks of %llu bytes)",
                           (unsigned long long)o->capacity_bytes, p->chunk_blocks,
                           (unsigned long long)p->block_bytes);
    if (maxc > (UINT32_MAX >> p->chunk_shift) - 1)
        maxc = (UINT32_MAX >> p->chunk_shift) - 1;
    p->max_chunks = (uint32_t)maxc;
    uint32_t ni = o->n_instances ? o->n_instances : 1;
    p->partitioned = o->share == DKV_MEM_PARTITIONED && ni > 1;
    p->quotas = ni > 1 && !p->partitioned;
    p->n_parts = p->partitioned ? ni : 1;
    uint64_t qsum = 0;
    for (uint32_t i = 0; i < ni && ni > 1; i++) {
        uint64_t q = (o->quota_bytes[i] + p->block_bytes - 1) / p->block_bytes;
        if (p->partitioned)
            q = mem_round_up(q, p->chunk_blocks);
        p->quota[i] = q;
        p->outstanding += q;
        qsum += q;
        p->cap[i] = p->partitioned ? 0 : o->cap_bytes[i] / p->block_bytes;   /* whole blocks under the cap */
        if (p->cap[i] && p->cap[i] < q)
            return dkv_err_set(err, DKV_EINVAL, "blockpool: instance %u's cap (%llu blocks) is below its guaranteed "
                               "quota (%llu blocks)", i, (unsigned long long)p->cap[i], (unsigned long long)q);
    }
    if (qsum > (uint64_t)p->max_chunks * p->chunk_blocks)
        return dkv_err_set(err, DKV_EINVAL, "blockpool: instance quotas (%llu blocks) exceed the capacity (%llu blocks in whole chunks)",
                           (unsigned long long)qsum, (unsigned long long)p->max_chunks * p->chunk_blocks);
    if (!p->quotas)
        p->outstanding = 0;
    p->fast_max = p->n_parts == 1 && !p->quotas && !p->track_free ? MEM_INLINE_BLOCKS : 0;
    dkv_status st = DKV_OK;
    if (p->partitioned) {
        for (uint32_t i = 0; i < ni && !st; i++)
            for (uint64_t k = 0; k < p->quota[i] / p->chunk_blocks && !st; k++)
                st = add_chunk(m, i, err);
    } else {
        uint64_t want = (o->initial_bytes + p->chunk_bytes - 1) / p->chunk_bytes;
        if (want > p->max_chunks)
            return dkv_err_set(err, DKV_EINVAL, "blockpool: initial_bytes %llu exceed the capacity %llu",
                               (unsigned long long)o->initial_bytes, (unsigned long long)o->capacity_bytes);
        for (uint64_t k = 0; k < want && !st; k++)
            st = add_chunk(m, 0, err);
    }
    return st;
}

static void bp_fini(dkv_mem *m)
{
    bp *p = m->impl;
    free(p->chunk_live);
    free(p->chunk_part);
    free(p->chunk_free);
    free(p->blist);
    for (int c = 0; c < 33; c++)
        stack_free(&p->slot_free[c]);
    free(p->blk_used);
    for (uint32_t i = 0; i < DKV_MEM_MAX_INSTANCES; i++)
        stack_free(&p->part[i]);
    free(p);
    m->impl = NULL;
}


/* A slot of 2^c entries in blist for an allocation of k blocks; UINT64_MAX when out of memory. */
static uint64_t slot_get(bp *p, uint32_t c, dkv_err *err)
{
    bp_stack *f = &p->slot_free[c];
    if (f->n)
        return f->ids[--f->n];
    uint64_t size = 1ull << c;
    if (p->blist_n + size > UINT32_MAX) {
        dkv_err_set(err, DKV_ENOMEM, "blockpool: more than 2^32 block-list entries");
        return UINT64_MAX;
    }
    if (p->blist_n + size > p->blist_cap) {
        uint64_t cap = p->blist_cap ? p->blist_cap * 2 : 4096;
        while (cap < p->blist_n + size)
            cap *= 2;
        uint32_t *b = realloc(p->blist, cap * sizeof *b);
        if (!b) {
            dkv_err_set(err, DKV_ENOMEM, "blockpool: out of host memory for block lists");
            return UINT64_MAX;
        }
        p->blist = b;
        p->blist_cap = cap;
    }
    /* make sure every slot of the class can be given back without allocating */
    if (stack_reserve(f, p->slot_count[c] + 1, err) != DKV_OK)
        return UINT64_MAX;
    p->slot_count[c]++;
    uint64_t off = p->blist_n;
    p->blist_n += size;
    return off;
}

static inline void slot_put(bp *p, uint32_t c, uint32_t off)
{
    p->slot_free[c].ids[p->slot_free[c].n++] = off;   /* capacity reserved by slot_get */
}

/* Every case of acquire (the fast path's too). */
static dkv_status bp_alloc(dkv_mem *m, mem_rec *r, dkv_err *err)
{
    bp *p = m->impl;
    uint64_t k64 = bp_blocks_for(p, r->requested);
    uint32_t inst = r->owner.instance, part = p->partitioned ? inst : 0;
    bp_stack *s = &p->part[part];
    if (k64 > s->n) {
        uint64_t growable = m->opt.grow && !p->partitioned
                                ? (uint64_t)(p->max_chunks - p->live_chunks) * p->chunk_blocks : 0;
        if (k64 > s->n + growable)
            return dkv_err_set(err, DKV_ENOMEM, "blockpool: %llu bytes need %llu blocks; %u free%s, capacity reached",
                               (unsigned long long)r->requested, (unsigned long long)k64, s->n,
                               p->partitioned ? " in this instance's partition" : "");
    }
    if (p->quotas && p->cap[inst] && p->used[inst] + k64 > p->cap[inst])
        return dkv_err_set(err, DKV_ENOMEM, "blockpool: instance %u holds %llu blocks and wants %llu more, past its cap "
                           "of %llu (placement.burst_frac)", inst, (unsigned long long)p->used[inst],
                           (unsigned long long)k64, (unsigned long long)p->cap[inst]);
    if (p->quotas) {
        uint64_t others = p->outstanding - owed(p, inst);
        uint64_t avail = bp_free_blocks(p) +
                         (m->opt.grow ? (uint64_t)(p->max_chunks - p->live_chunks) * p->chunk_blocks : 0);
        if (k64 + others > avail)
            return dkv_err_set(err, DKV_ENOMEM, "blockpool: instance %u wants %llu blocks; %llu are free or growable but %llu are guaranteed to other instances",
                               inst, (unsigned long long)k64, (unsigned long long)avail,
                               (unsigned long long)others);
    }
    uint32_t k = (uint32_t)k64;
    while (s->n < k) {
        dkv_status st = add_chunk(m, part, err);
        if (st)
            return st;   /* chunks added so far stay: they are valid free memory */
    }
    uint32_t inline_ids[MEM_INLINE_BLOCKS] = {0}, *dst = inline_ids;
    uint64_t off = 0;
    if (k > MEM_INLINE_BLOCKS) {
        off = slot_get(p, size_class(k), err);
        if (off == UINT64_MAX)
            return DKV_ENOMEM;
        dst = p->blist + off;
    }
    /* locals: the uint8_t stores would otherwise make the compiler reload every field */
    uint32_t *restrict ids = s->ids, *restrict cfree = p->chunk_free;
    uint8_t *restrict used = p->blk_used;
    const bool track = p->track_free;
    const uint32_t shift = p->chunk_shift;
    uint32_t n = s->n, hits = 0;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t b = ids[--n];
        hits += used[b];
        used[b] = 1;
        if (track)
            cfree[b >> shift]--;
        dst[i] = b;
    }
    s->n = n;
    if (s->n_fresh > n)
        s->n_fresh = n;     /* the fresh blocks taken were the top of the fresh part */
    if (p->quotas || p->partitioned) {
        uint64_t before = owed(p, inst);
        p->used[inst] += k;
        if (p->quotas)
            p->outstanding -= before - owed(p, inst);
    }
    m->reuse_miss += k - hits;
    m->reuse_total += k;
    r->allocated = (uint64_t)k * p->block_bytes;
    r->n_blocks = k;
    if (k > MEM_INLINE_BLOCKS) {
        r->blocks[0] = (uint32_t)off;
        r->blocks[1] = r->blocks[2] = r->blocks[3] = 0;
    } else {
        memcpy(r->blocks, inline_ids, sizeof inline_ids);
    }
    return DKV_OK;
}

/* Every case of release (the fast path's too). */
static void bp_dealloc(dkv_mem *m, mem_rec *r)
{
    bp *p = m->impl;
    uint32_t inst = r->owner.instance, part = p->partitioned ? inst : 0;
    bp_stack *s = &p->part[part];
    uint32_t freed_chunk = MEM_NONE;
    uint32_t *restrict top = s->ids + s->n;
    const uint32_t *restrict src = bp_rec_blocks(p, r);
    const uint32_t k = r->n_blocks;
    if (p->track_free) {
        uint32_t *restrict cfree = p->chunk_free;
        const uint32_t shift = p->chunk_shift, cb = p->chunk_blocks;
        for (uint32_t i = 0; i < k; i++) {
            uint32_t b = src[i];
            *top++ = b;
            if (++cfree[b >> shift] == cb)
                freed_chunk = b >> shift;
        }
    } else {
        for (uint32_t i = 0; i < k; i++)
            *top++ = src[i];
    }
    s->n = (uint32_t)(top - s->ids);
    if (k > MEM_INLINE_BLOCKS)
        slot_put(p, size_class(k), r->blocks[0]);
    if (p->quotas || p->partitioned) {
        uint64_t before = owed(p, inst);
        p->used[inst] -= k;
        if (p->quotas)
            p->outstanding += owed(p, inst) - before;
    }
    /* automatic shrink: give back the chunks this release emptied, keeping one wholly free
     * chunk as slack (src stays readable: a freed slot is not reused before this returns) */
    if (m->opt.shrink && freed_chunk != MEM_NONE && !p->partitioned)
        for (uint32_t i = 0; i < k; i++) {
            uint32_t c = src[i] >> p->chunk_shift;
            if (p->chunk_live[c] && p->chunk_free[c] == p->chunk_blocks &&
                bp_free_blocks(p) >= 2ull * p->chunk_blocks)
                drop_chunk(m, c);
        }
}

static uint64_t bp_largest_free(const dkv_mem *m)
{
    const bp *p = m->impl;
    return bp_free_blocks(p) * p->block_bytes;
}

static void bp_stats(const dkv_mem *m, dkv_mem_stats *s)
{
    const bp *p = m->impl;
    s->blocks_total = (uint64_t)p->live_chunks * p->chunk_blocks;
    s->blocks_free = bp_free_blocks(p);
    for (uint32_t i = 0; i < DKV_MEM_MAX_INSTANCES; i++)
        s->instance_used[i] = p->used[i] * p->block_bytes;
}

static uint64_t bp_offset(const dkv_mem *m, const mem_rec *r)
{
    const bp *p = m->impl;
    return (uint64_t)bp_rec_blocks(p, r)[0] * p->block_bytes;
}

const mem_vtable dkv_mem_blockpool_vt = {bp_init, bp_fini, bp_alloc, bp_dealloc,
                                         bp_largest_free, dkv_mem_bp_check, bp_stats, bp_offset};

/* ---------------------------------------------------------------- public blockpool calls */

static bp *as_bp(const dkv_mem *m)
{
    return m && m->opt.kind == DKV_MEM_BLOCKPOOL ? m->impl : NULL;
}

uint64_t dkv_mem_block_bytes(const dkv_mem *m)
{
    const bp *p = as_bp(m);
    return p ? p->block_bytes : 0;
}

uint32_t dkv_mem_chunk_blocks(const dkv_mem *m)
{
    const bp *p = as_bp(m);
    return p ? p->chunk_blocks : 0;
}

uint32_t dkv_mem_chunk_count(const dkv_mem *m)
{
    const bp *p = as_bp(m);
    return p ? p->n_chunks : 0;
}

bool dkv_mem_chunk_live(const dkv_mem *m, uint32_t chunk)
{
    const bp *p = as_bp(m);
    return p && chunk < p->n_chunks && p->chunk_live[chunk];
}

void dkv_mem_block_locate(const dkv_mem *m, uint32_t block, uint32_t *chunk, uint64_t *offset_in_chunk)
{
    const bp *p = as_bp(m);
    if (!p) {
        *chunk = 0;
        *offset_in_chunk = 0;
        return;
    }
    *chunk = block >> p->chunk_shift;
    *offset_in_chunk = (uint64_t)(block & (p->chunk_blocks - 1)) * p->block_bytes;
}

dkv_status dkv_mem_blocks(const dkv_mem *m, dkv_mem_id id, uint32_t *ids, uint32_t cap,
                          uint32_t *n, dkv_err *err)
{
    const bp *p = as_bp(m);
    *n = 0;
    if (!p)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "mem blocks: only a blockpool has blocks (this is %s)",
                           dkv_mem_kind_name(m->opt.kind));
    dkv_mem_info info;
    dkv_status st = dkv_mem_info_get(m, id, &info, err);
    if (st)
        return st;
    const mem_rec *r = &m->recs[(id & 0xffffffffu) - 1];
    const uint32_t *b = bp_rec_blocks(p, r);
    for (uint32_t i = 0; i < r->n_blocks && i < cap; i++)
        ids[i] = b[i];
    *n = r->n_blocks;
    return DKV_OK;
}

dkv_status dkv_mem_grow(dkv_mem *m, uint64_t bytes, dkv_err *err)
{
    bp *p = as_bp(m);
    if (!p)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "mem grow: only a blockpool grows");
    if (p->partitioned)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "mem grow: a partitioned pool is fixed at creation");
    uint64_t want = (bytes + p->chunk_bytes - 1) / p->chunk_bytes;
    if (want > p->max_chunks)
        return dkv_err_set(err, DKV_ENOMEM, "mem grow: %llu bytes exceed the capacity %llu",
                           (unsigned long long)bytes, (unsigned long long)m->opt.capacity_bytes);
    while (p->live_chunks < want) {
        dkv_status st = add_chunk(m, 0, err);
        if (st)
            return st;
    }
    mem_event(m);
    return DKV_OK;
}

dkv_status dkv_mem_shrink(dkv_mem *m, uint64_t target_bytes, uint64_t *released, dkv_err *err)
{
    bp *p = as_bp(m);
    if (released)
        *released = 0;
    if (!p)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "mem shrink: only a blockpool shrinks");
    if (p->partitioned)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "mem shrink: a partitioned pool is fixed at creation");
    uint64_t before = m->reserved;
    if (!p->track_free && p->n_chunks) {   /* (no chunk yet: chunk_free is NULL) */
        memset(p->chunk_free, 0, (size_t)p->n_chunks * sizeof *p->chunk_free);
        for (uint32_t i = 0; i < p->part[0].n; i++)
            p->chunk_free[p->part[0].ids[i] >> p->chunk_shift]++;
    }
    for (uint32_t c = p->n_chunks; c-- > 0 && m->reserved > target_bytes;)
        if (p->chunk_live[c] && p->chunk_free[c] == p->chunk_blocks)
            drop_chunk(m, c);
    if (released)
        *released = before - m->reserved;
    if (before != m->reserved)
        mem_event(m);
    return DKV_OK;
}
