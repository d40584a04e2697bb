/* mem_replay.c - stream ids -> allocation ids.
 *
 * Dense small ids (a trace that numbers its allocations and reuses the numbers, as
 * `dkv bench mem` does) index a flat array `dir`; any other id (a PyTorch address, an engine
 * id carrying a generation) goes to a hash table (open addressing, backward-shift deletion).
 * The array covers [0, dcap); it grows to cover an id only while that stays small against the
 * number of live ids (DIR_SLACK), so sparse or ever-growing ids cannot blow it up.  The
 * acquire and release are the generic layer's, inlined (mem_hot.h). */
#include "mem/mem_replay.h"

#include "mem/mem_hot.h"

#include <stdlib.h>
#include <string.h>

#define FAILED UINT64_MAX   /* value of a stream id whose allocation was refused */
#define DIR_MIN   1024u     /* ids below this may always be direct */
#define DIR_SLACK 8u        /* ... and below DIR_SLACK * (live + 1) */
#define DIR_MAX   (1ull << 26)

typedef struct slot {
    uint64_t key, val;      /* val == 0: empty */
} slot;

struct dkv_mem_replay {
    dkv_mem *m;
    uint64_t *dir;          /* val by id for id < dcap; 0: not live */
    uint64_t dcap, n_dir;   /* n_dir: live ids in dir */
    slot *t;
    uint64_t cap, n;        /* cap: power of two; n: live ids in t */
    uint32_t shift;
    dkv_mem_replay_counts c;
};

static inline uint64_t home(const dkv_mem_replay *r, uint64_t key)
{
    return (key * 0x9e3779b97f4a7c15ull) >> r->shift;
}

static slot *find(const dkv_mem_replay *r, uint64_t key)
{
    uint64_t mask = r->cap - 1;
    for (uint64_t i = home(r, key);; i = (i + 1) & mask)
        if (r->t[i].val == 0 || r->t[i].key == key)
            return &r->t[i];
}

/* A new table of `cap` slots holding the old entries, except those now under dcap, which move
 * to dir. */
static dkv_status rehash(dkv_mem_replay *r, uint64_t cap, dkv_err *err)
{
    slot *old = r->t;
    uint64_t oldcap = r->cap;
    r->t = calloc(cap, sizeof *r->t);
    if (!r->t) {
        r->t = old;
        return dkv_err_set(err, DKV_ENOMEM, "replay: out of host memory for %llu ids", (unsigned long long)r->n);
    }
    r->cap = cap;
    r->shift = 64;
    while ((1ull << (64 - r->shift)) < cap)
        r->shift--;
    r->n = 0;
    for (uint64_t i = 0; i < oldcap; i++) {
        if (!old[i].val)
            continue;
        if (old[i].key < r->dcap) {
            r->dir[old[i].key] = old[i].val;
            r->n_dir++;
        } else {
            *find(r, old[i].key) = old[i];
            r->n++;
        }
    }
    free(old);
    return DKV_OK;
}

static void erase(dkv_mem_replay *r, slot *s)
{
    uint64_t mask = r->cap - 1, i = (uint64_t)(s - r->t);
    r->t[i].val = 0;
    for (uint64_t j = (i + 1) & mask; r->t[j].val; j = (j + 1) & mask) {
        uint64_t h = home(r, r->t[j].key);
        if (((j - h) & mask) >= ((j - i) & mask)) {
            r->t[i] = r->t[j];
            r->t[j].val = 0;
            i = j;
        }
    }
    r->n--;
}

/* Grows dir to cover id (its entries from the hash move over).  false: not worth it, or no
 * memory (the hash takes the id). */
static bool dir_grow(dkv_mem_replay *r, uint64_t id)
{
    uint64_t live = r->n + r->n_dir;
    if (id >= DIR_MAX || (id >= DIR_MIN && id >= DIR_SLACK * (live + 1)))
        return false;
    uint64_t cap = r->dcap ? r->dcap : DIR_MIN;
    while (cap <= id)
        cap *= 2;
    uint64_t *d = realloc(r->dir, cap * sizeof *d);
    if (!d)
        return false;
    memset(d + r->dcap, 0, (cap - r->dcap) * sizeof *d);
    r->dir = d;
    r->dcap = cap;
    if (rehash(r, r->cap, NULL) != DKV_OK) {   /* moves the hash's ids below cap; on failure */
        for (uint64_t i = 0; i < r->cap; i++)   /* ... move them in place instead */
            while (r->t[i].val && r->t[i].key < r->dcap) {
                r->dir[r->t[i].key] = r->t[i].val;
                r->n_dir++;
                erase(r, &r->t[i]);
            }
    }
    return true;
}

/* Where id's value lives for an allocation: dir, or a hash slot (key set; val 0 if new).
 * NULL with err set when the hash cannot grow. */
static uint64_t *alloc_entry(dkv_mem_replay *r, uint64_t id, slot **hs, dkv_err *err)
{
    *hs = NULL;
    if (id < r->dcap || dir_grow(r, id))
        return &r->dir[id];
    if ((r->n + 1) * 2 > r->cap && rehash(r, r->cap * 2, err) != DKV_OK)
        return NULL;
    slot *s = find(r, id);
    s->key = id;
    *hs = s;
    return &s->val;
}

dkv_status dkv_mem_replay_new(dkv_mem *m, dkv_mem_replay **out, dkv_err *err)
{
    *out = NULL;
    dkv_mem_replay *r = calloc(1, sizeof *r);
    if (!r)
        return dkv_err_set(err, DKV_ENOMEM, "replay: out of host memory");
    r->m = m;
    dkv_status st = rehash(r, 1024, err);
    if (st) {
        free(r);
        return st;
    }
    *out = r;
    return DKV_OK;
}

void dkv_mem_replay_free_handle(dkv_mem_replay *r)
{
    if (!r)
        return;
    free(r->dir);
    free(r->t);
    free(r);
}

dkv_status dkv_mem_replay_time(dkv_mem_replay *r, double t, dkv_err *err)
{
    dkv_mem *m = r->m;
    if (m->pend_len == 0 && t >= m->now) {   /* nothing can fall due: just move the clock */
        m->now = t;
        return DKV_OK;
    }
    return dkv_mem_tick(m, t, err);
}

dkv_status dkv_mem_replay_alloc(dkv_mem_replay *r, uint64_t id, uint64_t bytes,
                                const dkv_mem_owner *owner, dkv_err *err)
{
    slot *hs = NULL;
    uint64_t *v = __builtin_expect(id < r->dcap, 1) ? &r->dir[id] : alloc_entry(r, id, &hs, err);
    if (!v)
        return err ? err->code : DKV_ENOMEM;
    uint64_t old = *v;
    if (old && old != FAILED) {
        r->c.n_dup_id++;
        return dkv_err_set(err, DKV_ESTATE, "replay: id %#llx is allocated again while live", (unsigned long long)id);
    }
    dkv_mem_id mid;
    dkv_status st = mem_acquire_inline(r->m, bytes, owner, &mid, err);
    if (__builtin_expect(st == DKV_OK, 1)) {
        r->c.n_alloc++;
    } else if (st == DKV_ENOMEM) {
        r->c.n_alloc_failed++;
        mid = FAILED;
    } else {
        return st;          /* bad size / tag: counted by the manager; id stays unknown */
    }
    if (!old) {
        if (hs)
            r->n++;
        else
            r->n_dir++;
    }
    *v = mid;
    return st;
}

dkv_status dkv_mem_replay_free(dkv_mem_replay *r, uint64_t id, dkv_err *err)
{
    slot *hs = NULL;
    uint64_t *v;
    if (__builtin_expect(id < r->dcap, 1)) {
        v = &r->dir[id];
    } else {
        hs = find(r, id);
        v = &hs->val;
    }
    uint64_t mid = *v;
    if (!mid) {
        r->c.n_free_unknown++;
        return dkv_err_set(err, DKV_ENOENT, "replay: free of id %#llx, which is not allocated", (unsigned long long)id);
    }
    dkv_status st = DKV_OK;
    if (mid == FAILED)
        r->c.n_free_of_failed++;
    else if ((st = mem_release_inline(r->m, mid, err)) == DKV_OK)
        r->c.n_free++;
    if (hs) {
        erase(r, hs);
    } else {
        *v = 0;
        r->n_dir--;
    }
    return st;
}

dkv_status dkv_mem_replay_admit(dkv_mem_replay *r, uint32_t request, uint64_t max_bytes, dkv_err *err)
{
    if (dkv_mem_get_options(r->m)->kind != DKV_MEM_STATIC || max_bytes == 0)
        return DKV_OK;
    dkv_status st = dkv_mem_reserve(r->m, request, max_bytes, err);
    if (st)
        r->c.n_reserve_failed++;
    else
        r->c.n_reserve++;
    return st;
}

dkv_status dkv_mem_replay_finish(dkv_mem_replay *r, uint32_t request, dkv_err *err)
{
    /* nothing to do when admitted without a reservation (other kind, max_bytes 0, refused) */
    if (dkv_mem_reservation(r->m, request) == 0)
        return DKV_OK;
    dkv_status st = dkv_mem_unreserve(r->m, request, err);
    if (st)
        r->c.n_unreserve_failed++;
    else
        r->c.n_unreserve++;
    return st;
}

void dkv_mem_replay_counts_get(const dkv_mem_replay *r, dkv_mem_replay_counts *out)
{
    *out = r->c;
    out->live = r->n + r->n_dir;
}
