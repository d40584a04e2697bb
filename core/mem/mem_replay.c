/* mem_replay.c - stream ids -> allocation ids (open addressing, backward-shift deletion). */
#include "mem/mem_replay.h"

#include "mem/mem_impl.h"

#include <stdlib.h>

#define FAILED UINT64_MAX   /* value of a stream id whose allocation was refused */

typedef struct slot {
    uint64_t key, val;      /* val == 0: empty */
} slot;

struct dkv_mem_replay {
    dkv_mem *m;
    slot *t;
    uint64_t cap, n;        /* cap: power of two */
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
    for (uint64_t i = 0; i < oldcap; i++)
        if (old[i].val)
            *find(r, old[i].key) = old[i];
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
    if ((r->n + 1) * 2 > r->cap) {
        dkv_status st = rehash(r, r->cap * 2, err);
        if (st)
            return st;
    }
    slot *s = find(r, id);
    if (s->val && s->val != FAILED) {
        r->c.n_dup_id++;
        return dkv_err_set(err, DKV_ESTATE, "replay: id %#llx is allocated again while live", (unsigned long long)id);
    }
    dkv_mem_id mid;
    dkv_status st = dkv_mem_acquire(r->m, bytes, owner, &mid, err);
    if (st == DKV_OK) {
        r->c.n_alloc++;
    } else if (st == DKV_ENOMEM) {
        r->c.n_alloc_failed++;
        mid = FAILED;
    } else {
        return st;          /* bad size / tag: counted by the manager; id stays unknown */
    }
    if (!s->val)
        r->n++;
    s->key = id;
    s->val = mid;
    return st;
}

dkv_status dkv_mem_replay_free(dkv_mem_replay *r, uint64_t id, dkv_err *err)
{
    slot *s = find(r, id);
    if (!s->val) {
        r->c.n_free_unknown++;
        return dkv_err_set(err, DKV_ENOENT, "replay: free of id %#llx, which is not allocated", (unsigned long long)id);
    }
    dkv_status st = DKV_OK;
    if (s->val == FAILED)
        r->c.n_free_of_failed++;
    else if ((st = dkv_mem_release(r->m, s->val, err)) == DKV_OK)
        r->c.n_free++;
    erase(r, s);
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
    out->live = r->n;
}
