/* mem_caching.c - a model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp),
 * one device, one stream.  docs/MEMORY.md lists what is modelled and what is not.
 *
 *   round_size:      max(512, ceil(size / 512) * 512)
 *   pool:            rounded size <= 1 MiB -> small pool, else large pool
 *   segment size:    small: 2 MiB; large: 20 MiB when size < 10 MiB, else ceil(size / 2 MiB) * 2 MiB
 *   get_free_block:  best fit = smallest (size, address) >= size in the pool; refused when
 *                    size < max_split_size <= block, or size >= max_split_size and
 *                    block >= size + 20 MiB
 *   should_split:    small: remainder >= 512; large: size < max_split_size and remainder > 1 MiB
 *   free:            merge with free neighbours of the same segment, back into the pool
 *   on failure:      release_available_cached_blocks (only with max_split_size set) and retry;
 *                    then release_cached_blocks (every free whole segment, both pools),
 *                    num_alloc_retries += 1, retry; then num_ooms += 1 and fail.
 *
 * Each pool's free blocks sit in a treap keyed by (size, address): O(log n) best fit.  Block
 * records live in one array with a free list: no host allocation per operation. */
#include "mem/mem_impl.h"

#include <stdlib.h>
#include <string.h>

#include "util/rng.h"

#define K_MIN_BLOCK   512ull
#define K_SMALL_SIZE  (1ull << 20)
#define K_SMALL_BUF   (2ull << 20)
#define K_LARGE_BUF   (20ull << 20)
#define K_MIN_LARGE   (10ull << 20)
#define K_ROUND_LARGE (2ull << 20)

enum { POOL_SMALL = 0, POOL_LARGE = 1 };

typedef struct cblk {
    uint64_t addr, size;
    uint32_t prev, next;     /* neighbours in the segment (address order) */
    uint32_t l, r;           /* treap children; l doubles as the record free-list link */
    uint32_t prio;
    uint8_t  alloc, pool, used, in_tree, live;
} cblk;

typedef struct cach {
    cblk    *b;
    uint32_t n, cap, free_rec;
    uint32_t root[2];
    uint64_t next_addr;
    uint64_t max_split;
    uint64_t num_alloc_retries, num_ooms;
    dkv_rng  rng;
} cach;

static inline bool key_less(const cblk *a, const cblk *b)
{
    return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

static void tsplit(cblk *B, uint32_t t, const cblk *k, uint32_t *l, uint32_t *r)
{
    while (t != MEM_NONE) {
        if (key_less(&B[t], k)) {
            *l = t;
            l = &B[t].r;
            t = B[t].r;
        } else {
            *r = t;
            r = &B[t].l;
            t = B[t].l;
        }
    }
    *l = *r = MEM_NONE;
}

static uint32_t tmerge(cblk *B, uint32_t a, uint32_t b)
{
    uint32_t root = MEM_NONE, *link = &root;
    while (a != MEM_NONE && b != MEM_NONE) {
        if (B[a].prio > B[b].prio) {
            *link = a;
            link = &B[a].r;
            a = B[a].r;
        } else {
            *link = b;
            link = &B[b].l;
            b = B[b].l;
        }
    }
    *link = a != MEM_NONE ? a : b;
    return root;
}

static void tinsert(cach *c, uint32_t x)
{
    cblk *B = c->b;
    uint32_t *link = &c->root[B[x].pool];
    while (*link != MEM_NONE && B[*link].prio > B[x].prio)
        link = key_less(&B[x], &B[*link]) ? &B[*link].l : &B[*link].r;
    tsplit(B, *link, &B[x], &B[x].l, &B[x].r);
    *link = x;
    B[x].in_tree = 1;
}

static void terase(cach *c, uint32_t x)
{
    cblk *B = c->b;
    uint32_t *link = &c->root[B[x].pool];
    while (*link != x)
        link = key_less(&B[x], &B[*link]) ? &B[*link].l : &B[*link].r;
    *link = tmerge(B, B[x].l, B[x].r);
    B[x].in_tree = 0;
    B[x].l = B[x].r = MEM_NONE;
}

/* Smallest (size, address) with size >= `size`, or MEM_NONE. */
static uint32_t tlower(const cach *c, int pool, uint64_t size)
{
    uint32_t t = c->root[pool], best = MEM_NONE;
    while (t != MEM_NONE) {
        if (c->b[t].size >= size) {
            best = t;
            t = c->b[t].l;
        } else {
            t = c->b[t].r;
        }
    }
    return best;
}

static uint32_t tmax(const cach *c, int pool)
{
    uint32_t t = c->root[pool];
    if (t == MEM_NONE)
        return MEM_NONE;
    while (c->b[t].r != MEM_NONE)
        t = c->b[t].r;
    return t;
}

/* Largest block below x in key order (its predecessor), or MEM_NONE. */
static uint32_t tpred(const cach *c, uint32_t x)
{
    const cblk *B = c->b;
    uint32_t t = c->root[B[x].pool], best = MEM_NONE;
    while (t != MEM_NONE) {
        if (key_less(&B[t], &B[x])) {
            best = t;
            t = B[t].r;
        } else {
            t = B[t].l;
        }
    }
    return best;
}

static uint32_t new_blk(cach *c, dkv_err *err)
{
    if (c->free_rec == MEM_NONE) {
        if (c->n == c->cap) {
            uint32_t cap = c->cap ? c->cap * 2 : 1024;
            cblk *b = realloc(c->b, (size_t)cap * sizeof *b);
            if (!b) {
                dkv_err_set(err, DKV_ENOMEM, "caching: out of host memory for block records");
                return MEM_NONE;
            }
            c->b = b;
            c->cap = cap;
        }
        c->b[c->n].live = 0;
        c->free_rec = c->n++;
        c->b[c->free_rec].l = MEM_NONE;
    }
    uint32_t x = c->free_rec;
    c->free_rec = c->b[x].l;
    c->b[x] = (cblk){.prev = MEM_NONE, .next = MEM_NONE, .l = MEM_NONE, .r = MEM_NONE,
                     .prio = (uint32_t)dkv_rng_u64(&c->rng), .live = 1};
    return x;
}

static void del_blk(cach *c, uint32_t x)
{
    c->b[x].live = 0;
    c->b[x].l = c->free_rec;
    c->free_rec = x;
}

static inline uint64_t round_size(uint64_t s)
{
    return s < K_MIN_BLOCK ? K_MIN_BLOCK : mem_round_up(s, K_MIN_BLOCK);
}

static inline uint64_t allocation_size(uint64_t s)
{
    if (s <= K_SMALL_SIZE)
        return K_SMALL_BUF;
    if (s < K_MIN_LARGE)
        return K_LARGE_BUF;
    return mem_round_up(s, K_ROUND_LARGE);
}

static dkv_status ca_init(dkv_mem *m, dkv_err *err)
{
    cach *c = calloc(1, sizeof *c);
    if (!c)
        return dkv_err_set(err, DKV_ENOMEM, "caching: out of host memory");
    m->impl = c;
    c->free_rec = MEM_NONE;
    c->root[0] = c->root[1] = MEM_NONE;
    c->max_split = m->opt.max_split_size ? m->opt.max_split_size : UINT64_MAX;
    if (c->max_split != UINT64_MAX && c->max_split <= K_LARGE_BUF)
        return dkv_err_set(err, DKV_EINVAL, "caching: max_split_size %llu must be > 20 MiB (PyTorch's rule)",
                           (unsigned long long)c->max_split);
    dkv_rng_seed(&c->rng, 0x5eed);
    return DKV_OK;
}

static void ca_fini(dkv_mem *m)
{
    cach *c = m->impl;
    free(c->b);
    free(c);
    m->impl = NULL;
}

static uint32_t get_free_block(cach *c, int pool, uint64_t size)
{
    uint32_t x = tlower(c, pool, size);
    if (x == MEM_NONE)
        return MEM_NONE;
    uint64_t bs = c->b[x].size;
    if (size < c->max_split && bs >= c->max_split)
        return MEM_NONE;   /* no oversize block for a small request */
    if (size >= c->max_split && bs >= size + K_LARGE_BUF)
        return MEM_NONE;   /* nor one far too large for an oversize request */
    terase(c, x);
    return x;
}

/* cudaMalloc of a segment of `seg` bytes, within the capacity. */
static uint32_t alloc_segment(dkv_mem *m, int pool, uint64_t seg, dkv_err *err)
{
    cach *c = m->impl;
    if (seg > m->opt.capacity_bytes - m->reserved)
        return MEM_NONE;
    uint32_t x = new_blk(c, err);
    if (x == MEM_NONE)
        return MEM_NONE;
    c->b[x].addr = c->next_addr;
    c->b[x].size = seg;
    c->b[x].pool = (uint8_t)pool;
    c->next_addr += seg;
    mem_device_alloc(m, seg);
    return x;
}

static void release_segment(dkv_mem *m, uint32_t x)
{
    cach *c = m->impl;
    terase(c, x);
    mem_device_free(m, c->b[x].size);
    del_blk(c, x);
}

static inline bool whole_segment(const cblk *b) { return b->prev == MEM_NONE && b->next == MEM_NONE; }

/* PyTorch release_available_cached_blocks: frees oversize cached segments. */
static bool release_available(dkv_mem *m, int pool, uint64_t size)
{
    cach *c = m->impl;
    if (c->max_split == UINT64_MAX)
        return false;
    uint64_t key = size < c->max_split ? c->max_split : size;
    uint32_t x = tlower(c, pool, key);
    if (x != MEM_NONE) {
        if (!whole_segment(&c->b[x]))
            return false;
        release_segment(m, x);
        return true;
    }
    uint64_t released = 0;
    x = tmax(c, pool);
    while (x != MEM_NONE && released < key && c->b[x].size >= c->max_split) {
        uint32_t below = tpred(c, x);
        if (whole_segment(&c->b[x])) {
            released += c->b[x].size;
            release_segment(m, x);
        }
        x = below;
    }
    return released >= key;
}

/* PyTorch release_cached_blocks: frees every free whole segment of both pools. */
static bool release_cached(dkv_mem *m)
{
    cach *c = m->impl;
    bool any = false;
    for (int pool = 0; pool < 2; pool++) {
        uint32_t x = tmax(c, pool);
        while (x != MEM_NONE) {
            uint32_t below = tpred(c, x);
            if (whole_segment(&c->b[x])) {
                release_segment(m, x);
                any = true;
            }
            x = below;
        }
    }
    return any;
}

static dkv_status ca_alloc(dkv_mem *m, mem_rec *r, dkv_err *err)
{
    cach *c = m->impl;
    uint64_t size = round_size(r->requested);
    int pool = size <= K_SMALL_SIZE ? POOL_SMALL : POOL_LARGE;
    uint32_t x = get_free_block(c, pool, size);
    if (x == MEM_NONE) {
        uint64_t seg = allocation_size(size);
        dkv_err e2 = {0};
        x = alloc_segment(m, pool, seg, &e2);
        if (x == MEM_NONE && !e2.code && release_available(m, pool, size))
            x = alloc_segment(m, pool, seg, &e2);
        if (x == MEM_NONE && !e2.code) {
            release_cached(m);
            c->num_alloc_retries++;
            x = alloc_segment(m, pool, seg, &e2);
        }
        if (x == MEM_NONE) {
            if (e2.code)
                return dkv_err_set(err, e2.code, "%s", e2.msg);
            c->num_ooms++;
            return dkv_err_set(err, DKV_ENOMEM, "caching: out of memory: %llu bytes (segment %llu) with %llu of %llu reserved, %llu allocated",
                               (unsigned long long)size, (unsigned long long)seg,
                               (unsigned long long)m->reserved, (unsigned long long)m->opt.capacity_bytes,
                               (unsigned long long)m->allocated);
        }
    }
    cblk *B = c->b;
    m->reuse_miss += !B[x].used;
    m->reuse_total++;
    uint64_t remaining = B[x].size - size;
    bool split = pool == POOL_SMALL ? remaining >= K_MIN_BLOCK
                                    : size < c->max_split && remaining > K_SMALL_SIZE;
    if (split) {
        dkv_err e3 = {0};
        uint32_t y = new_blk(c, &e3);   /* may move c->b */
        B = c->b;
        if (y == MEM_NONE) {
            tinsert(c, x);              /* put it back: nothing changed */
            return dkv_err_set(err, e3.code, "%s", e3.msg);
        }
        B[y].addr = B[x].addr + size;
        B[y].size = remaining;
        B[y].pool = B[x].pool;
        B[y].used = B[x].used;
        B[y].prev = x;
        B[y].next = B[x].next;
        if (B[x].next != MEM_NONE)
            B[B[x].next].prev = y;
        B[x].next = y;
        B[x].size = size;
        tinsert(c, y);
    }
    B[x].alloc = 1;
    B[x].used = 1;
    r->allocated = B[x].size;
    r->offset = B[x].addr;
    r->handle = x;
    return DKV_OK;
}

/* Absorbs free neighbour y into x (PyTorch try_merge_blocks). */
static void merge_into(cach *c, uint32_t x, uint32_t y)
{
    cblk *B = c->b;
    if (y == MEM_NONE || B[y].alloc)
        return;
    terase(c, y);
    if (B[x].prev == y) {
        B[x].addr = B[y].addr;
        B[x].prev = B[y].prev;
        if (B[y].prev != MEM_NONE)
            B[B[y].prev].next = x;
    } else {
        B[x].next = B[y].next;
        if (B[y].next != MEM_NONE)
            B[B[y].next].prev = x;
    }
    B[x].size += B[y].size;
    B[x].used |= B[y].used;
    del_blk(c, y);
}

static void ca_dealloc(dkv_mem *m, mem_rec *r)
{
    cach *c = m->impl;
    uint32_t x = r->handle;
    c->b[x].alloc = 0;
    merge_into(c, x, c->b[x].prev);
    merge_into(c, x, c->b[x].next);
    tinsert(c, x);
}

static uint64_t ca_largest_free(const dkv_mem *m)
{
    const cach *c = m->impl;
    uint64_t best = 0;
    for (int pool = 0; pool < 2; pool++) {
        uint32_t x = tmax(c, pool);
        if (x != MEM_NONE && c->b[x].size > best)
            best = c->b[x].size;
    }
    return best;
}

static void ca_stats(const dkv_mem *m, dkv_mem_stats *s)
{
    const cach *c = m->impl;
    for (uint32_t i = 0; i < c->n; i++) {
        const cblk *b = &c->b[i];
        if (b->live && !b->alloc && !whole_segment(b)) {
            s->inactive_split_bytes += b->size;
            s->inactive_split_blocks++;
        }
    }
    s->num_alloc_retries = c->num_alloc_retries;
    s->num_ooms = c->num_ooms;
}

/* In-order walk of one treap: order, heap property, membership; returns nodes seen. */
static dkv_status check_tree(const cach *c, uint32_t t, int pool, const cblk **last, uint64_t *count,
                             uint32_t depth, dkv_err *err)
{
    if (t == MEM_NONE)
        return DKV_OK;
    const cblk *B = c->b;
    if (t >= c->n || !B[t].live || B[t].alloc || !B[t].in_tree || B[t].pool != pool || depth > 200)
        return dkv_err_set(err, DKV_ESTATE, "caching: tree of pool %d holds a bad node %u", pool, t);
    for (int side = 0; side < 2; side++) {
        uint32_t ch = side ? B[t].r : B[t].l;
        if (ch != MEM_NONE && ch < c->n && B[ch].prio > B[t].prio)
            return dkv_err_set(err, DKV_ESTATE, "caching: heap order broken at node %u", t);
    }
    dkv_status st = check_tree(c, B[t].l, pool, last, count, depth + 1, err);
    if (st)
        return st;
    if (*last && !key_less(*last, &B[t]))
        return dkv_err_set(err, DKV_ESTATE, "caching: tree of pool %d is out of (size, address) order", pool);
    *last = &B[t];
    (*count)++;
    return check_tree(c, B[t].r, pool, last, count, depth + 1, err);
}

static dkv_status ca_check(const dkv_mem *m, uint64_t *free_bytes, dkv_err *err)
{
    const cach *c = m->impl;
    const cblk *B = c->b;
    uint64_t reserved = 0, nfree = 0, freeb = 0, intree = 0, segs = 0;
    for (int pool = 0; pool < 2; pool++) {
        const cblk *last = NULL;
        dkv_status st = check_tree(c, c->root[pool], pool, &last, &intree, 0, err);
        if (st)
            return st;
    }
    for (uint32_t i = 0; i < c->n; i++) {
        const cblk *b = &B[i];
        if (!b->live)
            continue;
        if (b->prev == MEM_NONE) {
            segs++;
            uint64_t seg = 0;
            for (uint32_t y = i; y != MEM_NONE; y = B[y].next) {
                seg += B[y].size;
                uint32_t nx = B[y].next;
                if (nx != MEM_NONE && (B[nx].prev != y || B[y].addr + B[y].size != B[nx].addr ||
                                       B[nx].pool != b->pool))
                    return dkv_err_set(err, DKV_ESTATE, "caching: segment at %#llx: blocks %u and %u are not adjacent",
                                       (unsigned long long)b->addr, y, nx);
                if (nx != MEM_NONE && !B[y].alloc && !B[nx].alloc)
                    return dkv_err_set(err, DKV_ESTATE, "caching: free blocks %u and %u were not merged", y, nx);
            }
            reserved += seg;
        }
        if (!b->alloc) {
            nfree++;
            freeb += b->size;
            if (!b->in_tree)
                return dkv_err_set(err, DKV_ESTATE, "caching: free block %u is not in its pool", i);
        } else if (b->in_tree) {
            return dkv_err_set(err, DKV_ESTATE, "caching: allocated block %u is in a pool", i);
        }
        if (b->size == 0 || b->size % K_MIN_BLOCK)
            return dkv_err_set(err, DKV_ESTATE, "caching: block %u has size %llu", i, (unsigned long long)b->size);
    }
    if (intree != nfree)
        return dkv_err_set(err, DKV_ESTATE, "caching: %llu free blocks, %llu in the pools",
                           (unsigned long long)nfree, (unsigned long long)intree);
    uint64_t nalloc = 0;
    for (uint32_t i = 0; i < m->n_recs; i++) {
        const mem_rec *r = &m->recs[i];
        if (!mem_rec_in_use(r))
            continue;
        nalloc++;
        const cblk *b = r->handle < c->n ? &B[r->handle] : NULL;
        if (!b || !b->live || !b->alloc || b->size != r->allocated || b->addr != r->offset ||
            r->allocated < round_size(r->requested))
            return dkv_err_set(err, DKV_ESTATE, "caching: allocation %u does not match its block", i);
    }
    uint64_t blocks_alloc = 0;
    for (uint32_t i = 0; i < c->n; i++)
        blocks_alloc += B[i].live && B[i].alloc;
    if (blocks_alloc != nalloc)
        return dkv_err_set(err, DKV_ESTATE, "caching: %llu allocated blocks for %llu allocations",
                           (unsigned long long)blocks_alloc, (unsigned long long)nalloc);
    if (reserved != m->reserved || segs != m->segments)
        return dkv_err_set(err, DKV_ESTATE, "caching: reserved %llu in %llu segments, recount %llu in %llu",
                           (unsigned long long)m->reserved, (unsigned long long)m->segments,
                           (unsigned long long)reserved, (unsigned long long)segs);
    *free_bytes = freeb;
    return DKV_OK;
}

const mem_vtable dkv_mem_caching_vt = {ca_init, ca_fini, ca_alloc, ca_dealloc,
                                       ca_largest_free, ca_check, ca_stats, NULL};
