/* mem_static.c - the "native" baseline: a request reserves its maximum length at admission.
 *
 * dkv_mem_reserve(request, max_bytes) takes one contiguous device allocation (rounded to 512 B)
 * for the request's lifetime.  KV acquisitions owned by that request are views into it: they are
 * placed at the reservation's top (a bump pointer, exact bytes, no rounding) and the top goes
 * back to 0 when the last of them is released.  Every other acquisition (another tag, or a
 * request without a reservation) is a separate device allocation, rounded to 512 B,
 * returned to the device when released.  The device is a counter against capacity with
 * addresses that are never reused (cudaMalloc's physical fragmentation is not modelled). */
#include "mem/mem_impl.h"

#include <stdlib.h>
#include <string.h>

#define ST_ALIGN 512u

typedef struct st_res {
    uint64_t base, size, top, hwm;   /* hwm: highest top ever (memory used before) */
    uint32_t request, live;
    uint32_t next_free;              /* free list of reservation slots */
    uint8_t  in_use;
} st_res;

typedef struct st {
    st_res   *res;
    uint32_t  n_res, cap_res, free_res, live_res;
    uint32_t *table;                 /* open addressing: request -> reservation index + 1 */
    uint32_t  table_cap;             /* power of two */
    uint64_t  next_addr;
} st_state;

static inline uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    return x ^ (x >> 16);
}

static uint32_t *find_slot(const st_state *s, uint32_t request)
{
    uint32_t mask = s->table_cap - 1;
    for (uint32_t i = hash32(request) & mask;; i = (i + 1) & mask) {
        uint32_t v = s->table[i];
        if (v == 0 || s->res[v - 1].request == request)
            return &s->table[i];
    }
}

static uint32_t find_res(const st_state *s, uint32_t request)
{
    if (!s->table_cap)
        return MEM_NONE;
    uint32_t v = *find_slot(s, request);
    return v ? v - 1 : MEM_NONE;
}

static void table_erase(st_state *s, uint32_t request)
{
    uint32_t mask = s->table_cap - 1, i = (uint32_t)(find_slot(s, request) - s->table);
    s->table[i] = 0;
    for (uint32_t j = (i + 1) & mask; s->table[j]; j = (j + 1) & mask) {  /* backward shift */
        uint32_t home = hash32(s->res[s->table[j] - 1].request) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            s->table[i] = s->table[j];
            s->table[j] = 0;
            i = j;
        }
    }
}

static dkv_status table_grow(st_state *s, dkv_err *err)
{
    uint32_t cap = s->table_cap ? s->table_cap * 2 : 64;
    uint32_t *old = s->table, oldcap = s->table_cap;
    s->table = calloc(cap, sizeof *s->table);
    if (!s->table) {
        s->table = old;
        return dkv_err_set(err, DKV_ENOMEM, "static: out of host memory for the reservation table");
    }
    s->table_cap = cap;
    for (uint32_t i = 0; i < oldcap; i++)
        if (old[i])
            *find_slot(s, s->res[old[i] - 1].request) = old[i];
    free(old);
    return DKV_OK;
}

static dkv_status st_init(dkv_mem *m, dkv_err *err)
{
    st_state *s = calloc(1, sizeof *s);
    if (!s)
        return dkv_err_set(err, DKV_ENOMEM, "static: out of host memory");
    s->free_res = MEM_NONE;
    m->impl = s;
    return DKV_OK;
}

static void st_fini(dkv_mem *m)
{
    st_state *s = m->impl;
    free(s->res);
    free(s->table);
    free(s);
    m->impl = NULL;
}

static dkv_status st_alloc(dkv_mem *m, mem_rec *r, dkv_err *err)
{
    st_state *s = m->impl;
    uint32_t ri = r->owner.tag == DKV_MEM_TAG_KV ? find_res(s, r->owner.request) : MEM_NONE;
    if (ri != MEM_NONE) {
        st_res *v = &s->res[ri];
        if (r->requested > v->size - v->top)
            return dkv_err_set(err, DKV_ENOMEM, "static: request %u asks %llu bytes; its reservation has %llu of %llu left",
                               r->owner.request, (unsigned long long)r->requested,
                               (unsigned long long)(v->size - v->top), (unsigned long long)v->size);
        r->offset = v->base + v->top;
        r->allocated = r->requested;
        r->handle = ri;
        m->reuse_miss += v->top >= v->hwm;
        m->reuse_total++;
        v->top += r->requested;
        if (v->top > v->hwm)
            v->hwm = v->top;
        v->live++;
        return DKV_OK;
    }
    uint64_t size = mem_round_up(r->requested, ST_ALIGN);
    if (size > m->opt.capacity_bytes - m->reserved)
        return dkv_err_set(err, DKV_ENOMEM, "static: %llu bytes do not fit (%llu of %llu reserved)",
                           (unsigned long long)size, (unsigned long long)m->reserved,
                           (unsigned long long)m->opt.capacity_bytes);
    r->offset = s->next_addr;
    s->next_addr += size;
    r->allocated = size;
    r->handle = MEM_NONE;
    m->reuse_miss++;
    m->reuse_total++;
    mem_device_alloc(m, size);
    return DKV_OK;
}

static void st_dealloc(dkv_mem *m, mem_rec *r)
{
    st_state *s = m->impl;
    if (r->handle == MEM_NONE) {
        mem_device_free(m, r->allocated);
        return;
    }
    st_res *v = &s->res[r->handle];
    if (--v->live == 0)
        v->top = 0;
}

static uint64_t st_largest_free(const dkv_mem *m)
{
    const st_state *s = m->impl;
    uint64_t best = 0;
    for (uint32_t i = 0; i < s->n_res; i++)
        if (s->res[i].in_use && s->res[i].size - s->res[i].top > best)
            best = s->res[i].size - s->res[i].top;
    return best;
}

static dkv_status st_check(const dkv_mem *m, uint64_t *free_bytes, dkv_err *err)
{
    const st_state *s = m->impl;
    uint64_t reserved = 0, inres = 0, nres = 0;
    uint32_t *live = calloc(s->n_res ? s->n_res : 1, sizeof *live);
    dkv_status st = DKV_OK;
    if (!live) {
        st = dkv_err_set(err, DKV_ENOMEM, "static check: out of host memory");
        goto done;
    }
    for (uint32_t i = 0; i < m->n_recs && !st; i++) {
        const mem_rec *r = &m->recs[i];
        if (!mem_rec_in_use(r))
            continue;
        if (r->allocated < r->requested)
            st = dkv_err_set(err, DKV_ESTATE, "static: allocation %u has allocated < requested", i);
        else if (r->handle == MEM_NONE)
            reserved += r->allocated;
        else if (r->handle >= s->n_res || !s->res[r->handle].in_use)
            st = dkv_err_set(err, DKV_ESTATE, "static: allocation %u points at a dead reservation", i);
        else {
            const st_res *v = &s->res[r->handle];
            live[r->handle]++;
            inres += r->allocated;
            if (r->offset + r->allocated > v->base + v->top || r->offset < v->base)
                st = dkv_err_set(err, DKV_ESTATE, "static: allocation %u lies outside its reservation's used part", i);
        }
    }
    uint64_t free_in = 0;
    for (uint32_t i = 0; i < s->n_res && !st; i++) {
        const st_res *v = &s->res[i];
        if (!v->in_use)
            continue;
        nres++;
        reserved += v->size;
        free_in += v->size;
        if (live[i] != v->live)
            st = dkv_err_set(err, DKV_ESTATE, "static: reservation of request %u counts %u live, recount %u",
                             v->request, v->live, live[i]);
        else if (v->top > v->size || (v->live == 0 && v->top != 0))
            st = dkv_err_set(err, DKV_ESTATE, "static: reservation of request %u has top %llu of %llu",
                             v->request, (unsigned long long)v->top, (unsigned long long)v->size);
        else if (find_res(s, v->request) != i)
            st = dkv_err_set(err, DKV_ESTATE, "static: request %u is not found in the table", v->request);
    }
    if (!st && reserved != m->reserved)
        st = dkv_err_set(err, DKV_ESTATE, "static: reserved %llu, recount %llu",
                         (unsigned long long)m->reserved, (unsigned long long)reserved);
    if (!st && nres != s->live_res)
        st = dkv_err_set(err, DKV_ESTATE, "static: %u reservations counted, %llu found", s->live_res,
                         (unsigned long long)nres);
    *free_bytes = free_in - inres;
done:
    free(live);
    return st;
}

static void st_stats(const dkv_mem *m, dkv_mem_stats *s) { (void)m; (void)s; }

const mem_vtable dkv_mem_static_vt = {st_init, st_fini, st_alloc, st_dealloc,
                                      st_largest_free, st_check, st_stats, NULL};

/* ---------------------------------------------------------------- reservations */

dkv_status dkv_mem_reserve(dkv_mem *m, uint32_t request, uint64_t bytes, dkv_err *err)
{
    if (m->opt.kind != DKV_MEM_STATIC)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "mem reserve: only the static manager reserves per request (this is %s)",
                           dkv_mem_kind_name(m->opt.kind));
    st_state *s = m->impl;
    if (bytes == 0 || bytes > (1ull << 62)) {
        m->bad_size++;
        return dkv_err_set(err, DKV_EINVAL, "mem reserve: request %u: size %llu bytes is not valid",
                           request, (unsigned long long)bytes);
    }
    if (find_res(s, request) != MEM_NONE) {
        m->bad_other++;
        return dkv_err_set(err, DKV_ESTATE, "mem reserve: request %u already holds a reservation", request);
    }
    uint64_t size = mem_round_up(bytes, ST_ALIGN);
    if (size > m->opt.capacity_bytes - m->reserved) {
        m->n_failed++;
        if (m->reserved - m->allocated >= size)
            m->n_failed_frag++;
        return dkv_err_set(err, DKV_ENOMEM, "mem reserve: request %u: %llu bytes do not fit (%llu of %llu reserved)",
                           request, (unsigned long long)size, (unsigned long long)m->reserved,
                           (unsigned long long)m->opt.capacity_bytes);
    }
    if ((s->live_res + 1) * 2 > s->table_cap) {
        dkv_status st = table_grow(s, err);
        if (st)
            return st;
    }
    uint32_t ri = s->free_res;
    if (ri == MEM_NONE) {
        if (s->n_res == s->cap_res) {
            uint32_t cap = s->cap_res ? s->cap_res * 2 : 64;
            st_res *r = realloc(s->res, (size_t)cap * sizeof *r);
            if (!r)
                return dkv_err_set(err, DKV_ENOMEM, "static: out of host memory for reservations");
            s->res = r;
            s->cap_res = cap;
        }
        ri = s->n_res++;
    } else {
        s->free_res = s->res[ri].next_free;
    }
    s->res[ri] = (st_res){.base = s->next_addr, .size = size, .request = request, .in_use = 1,
                          .next_free = MEM_NONE};
    s->next_addr += size;
    s->live_res++;
    *find_slot(s, request) = ri + 1;
    mem_device_alloc(m, size);
    mem_event(m);
    return DKV_OK;
}

uint64_t dkv_mem_reservation(const dkv_mem *m, uint32_t request)
{
    if (m->opt.kind != DKV_MEM_STATIC)
        return 0;
    const st_state *s = m->impl;
    uint32_t ri = find_res(s, request);
    return ri == MEM_NONE ? 0 : s->res[ri].size;
}

dkv_status dkv_mem_unreserve(dkv_mem *m, uint32_t request, dkv_err *err)
{
    if (m->opt.kind != DKV_MEM_STATIC)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "mem unreserve: only the static manager reserves per request");
    st_state *s = m->impl;
    uint32_t ri = find_res(s, request);
    if (ri == MEM_NONE) {
        m->bad_unknown++;
        return dkv_err_set(err, DKV_ENOENT, "mem unreserve: request %u holds no reservation", request);
    }
    st_res *v = &s->res[ri];
    if (v->live) {
        m->bad_other++;
        return dkv_err_set(err, DKV_ESTATE, "mem unreserve: request %u still has %u live allocations in its reservation",
                           request, v->live);
    }
    table_erase(s, request);
    mem_device_free(m, v->size);
    v->in_use = 0;
    v->next_free = s->free_res;
    s->free_res = ri;
    s->live_res--;
    mem_event(m);
    return DKV_OK;
}
