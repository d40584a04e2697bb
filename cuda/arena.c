/* arena.c - the CUDA backend's device arena (the engine's block pool ids -> device offsets,
 * staging blocks, a discard block), the pinned host tier and the transfer orders of a plan:
 * fetch before the step, reorder and low-rank projection inside it, offload after it on the
 * copy stream, with stream-ordered release of the blocks a copy still reads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/backend_internal.h"
#include "util/mono.h"

_Static_assert(DKV_LOWRANK_MAX_RANK == DKV_DEVMEM_LR_RANK, "core/model/devmem.h counts the compressor at its rank");


static uint32_t cdiv(uint64_t a, uint64_t d) { return (uint32_t)((a + d - 1) / d); }

/* ------------------------------------------------------------------ arena and host tier */

/* The owner of a shared arena (share_from), or NULL. */
static const dkv_cuda_backend *arena_owner(const dkv_cuda_backend *b)
{
    return b->o.share_pool && b->o.share_from ? (const dkv_cuda_backend *)b->o.share_from->ctx : NULL;
}

dkv_status bk_arena_init(dkv_cuda_backend *b, dkv_err *err)
{
    const dkv_model *m = &b->m;
    const dkv_cuda_backend *own = arena_owner(b);
    b->n_pool = (uint32_t)b->want_pool;
    b->n_staging = (uint32_t)b->want_staging;
    uint32_t regions = b->o.arena_instances > 1 ? b->o.arena_instances : 1;
    if (own) {   /* a region of the owner's arena: [pool | region 0 | region 1 | ...] */
        if (!own->arena || own->n_pool != b->n_pool || own->block_bytes != b->block_bytes ||
            own->n_staging != b->n_staging || b->o.arena_instance == 0 ||
            b->o.arena_instance >= (own->o.arena_instances > 1 ? own->o.arena_instances : 1))
            return dkv_err_set(err, DKV_EINVAL, "cuda backend: share_pool: the owner's arena (%u pool + %u staging "
                               "blocks of %llu bytes, %u regions) does not match this instance's (%u + %u of %llu, "
                               "region %u)", own->n_pool, own->n_staging, (unsigned long long)own->block_bytes,
                               own->o.arena_instances, b->n_pool, b->n_staging, (unsigned long long)b->block_bytes,
                               b->o.arena_instance);
        b->arena = own->arena;
        b->arena_borrowed = true;
        b->arena_bytes = own->arena_bytes;
        b->staging0 = b->n_pool + b->o.arena_instance * (b->n_staging + 1);
    } else {
        b->staging0 = b->n_pool;
        b->arena_bytes = ((uint64_t)b->n_pool + (uint64_t)regions * (b->n_staging + 1)) * b->block_bytes;
        size_t fr = 0, tot = 0;
        DKV_CU(cudaMemGetInfo(&fr, &tot));
        if (b->arena_bytes + (512ull << 20) > fr)
            return dkv_err_set(err, DKV_ENOMEM, "cuda backend: the KV arena (%u pool + %u staging blocks of %llu bytes "
                               "= %.2f GiB) does not fit the %.2f GiB the device has free after the weights: lower "
                               "mem.capacity_bytes / mem.kv_frac or the staging blocks", b->n_pool, b->n_staging,
                               (unsigned long long)b->block_bytes, b->arena_bytes / 1073741824.0, fr / 1073741824.0);
        cudaError_t e = cudaMalloc(&b->arena, b->arena_bytes);
        if (e != cudaSuccess)
            return dkv_err_set(err, DKV_ENOMEM, "cuda backend: cudaMalloc of the %.2f GiB KV arena: %s",
                               b->arena_bytes / 1073741824.0, cudaGetErrorString(e));
    }
    b->discard = b->staging0 + b->n_staging;
    cudaError_t e;
    b->pool = (dkv_cuda_kv_pool){.base = b->arena, .block_tokens = b->block_tokens, .n_layers = m->n_layers,
                                 .n_kv_heads = m->n_kv_heads, .head_dim = m->head_dim, .layout = b->o.layout,
                                 .elem = b->kv_fp8 ? DKV_KV_ELEM_E4M3 : DKV_KV_ELEM_BF16, .scale = b->fp8_scale};
    b->err_stride = m->n_layers * 2 * m->n_kv_heads;   /* also the FP8 scales per block */
    b->blk_epoch = calloc((size_t)b->n_pool + 1, sizeof *b->blk_epoch);
    if (!b->blk_epoch)
        return dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of host memory");
    /* host tier: one slot of the longest canvas's raw KV per request that offloads (FP8: the
     * blocks' e4m3 bytes, and their scales in host_scale beside the tier) */
    b->slot_blocks = cdiv(b->max_L, b->block_tokens);
    b->slot_bytes = (uint64_t)b->slot_blocks * b->block_bytes;
    if (b->want_host) {
        b->n_slots = (uint32_t)(b->want_host / b->slot_bytes);
        if (b->n_slots == 0)
            return dkv_err_set(err, DKV_EINVAL, "cuda backend: host_bytes %llu is less than one request's KV (%llu "
                               "bytes)", (unsigned long long)b->want_host, (unsigned long long)b->slot_bytes);
        b->host_bytes = (uint64_t)b->n_slots * b->slot_bytes;
        e = cudaHostAlloc(&b->host, b->host_bytes, cudaHostAllocDefault);
        if (e != cudaSuccess)
            return dkv_err_set(err, DKV_ENOMEM, "cuda backend: pinned host tier of %.2f GiB: %s",
                               b->host_bytes / 1073741824.0, cudaGetErrorString(e));
        b->slot_free = malloc(b->n_slots * sizeof *b->slot_free);
        if (!b->slot_free)
            return dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of host memory");
        for (uint32_t i = 0; i < b->n_slots; i++)
            b->slot_free[i] = (int32_t)(b->n_slots - 1 - i);
        b->n_slot_free = b->n_slots;
        if (b->kv_fp8) {
            e = cudaHostAlloc((void **)&b->host_scale, (size_t)b->n_slots * b->slot_blocks * b->err_stride * sizeof(float),
                              cudaHostAllocDefault);
            if (e != cudaSuccess)
                return dkv_err_set(err, DKV_ENOMEM, "cuda backend: pinned FP8 scales of the host tier: %s",
                                   cudaGetErrorString(e));
        }
    }
    for (int i = 0; i < BK_COPIES; i++) {
        DKV_CU(cudaEventCreate(&b->copies[i].start));
        DKV_CU(cudaEventCreate(&b->copies[i].done));
    }
    DKV_CU(cudaMallocHost((void **)&b->h_err, (size_t)BK_COPIES * b->err_stride * sizeof(float)));
    return DKV_OK;
}

void bk_arena_free(dkv_cuda_backend *b)
{
    if (b->cp)
        cudaStreamSynchronize(b->cp);
    for (int i = 0; i < BK_COPIES; i++) {
        if (b->copies[i].start)
            cudaEventDestroy(b->copies[i].start);
        if (b->copies[i].done)
            cudaEventDestroy(b->copies[i].done);
        b->copies[i].start = b->copies[i].done = NULL;
    }
    dkv_cuda_lowrank_free(b->lr);
    b->lr = NULL;
    if (b->cmp_ev)
        cudaEventDestroy(b->cmp_ev);
    b->cmp_ev = NULL;
    cudaFree(b->lr_q);
    b->lr_q = NULL;
    cudaFree(b->lr_in);
    b->lr_in = NULL;
    b->lr_in_bytes = 0;
    if (b->lr_in_ev)
        cudaEventDestroy(b->lr_in_ev);
    b->lr_in_ev = NULL;
    b->lr_in_used = false;
    cudaFree(b->gbuf);
    b->gbuf = NULL;
    cudaFreeHost(b->h_err);
    b->h_err = NULL;
    cudaFreeHost(b->host);
    b->host = NULL;
    cudaFreeHost(b->host_scale);
    b->host_scale = NULL;
    if (!b->arena_borrowed)
        cudaFree(b->arena);
    b->arena = NULL;
    b->arena_borrowed = false;
    free(b->blk_epoch);
    b->blk_epoch = NULL;
    free(b->slot_free);
    b->slot_free = NULL;
}

uint32_t bk_staging_take(dkv_cuda_backend *b, uint32_t n)
{
    if (b->staging_used + n > b->n_staging)
        return UINT32_MAX;
    uint32_t first = b->staging0 + b->staging_used;
    b->staging_used += n;
    return first;
}

static dkv_status slot_of(dkv_cuda_backend *b, bk_req *r, uint32_t request, char **out, dkv_err *err)
{
    if (r->host_slot < 0) {
        if (b->n_slot_free == 0)
            return dkv_err_set(err, DKV_ENOMEM, "cuda backend: request %u offloads KV but the host tier's %u slots "
                               "(host tier of %llu bytes) are all in use", request, b->n_slots,
                               (unsigned long long)b->want_host);
        r->host_slot = b->slot_free[--b->n_slot_free];
        if (b->o.poison) {   /* tests: a fetch of bytes no offload or compress wrote reads NaN (0xFF) */
            memset((char *)b->host + (uint64_t)r->host_slot * b->slot_bytes, 0xff, b->slot_bytes);
            if (b->host_scale)
                memset(b->host_scale + (size_t)r->host_slot * b->slot_blocks * b->err_stride, 0xff,
                       (size_t)b->slot_blocks * b->err_stride * sizeof(float));
        }
    }
    *out = (char *)b->host + (uint64_t)r->host_slot * b->slot_bytes;
    return DKV_OK;
}

/* FP8: the scales of arena block id to or from block j of request r's host slot, on the copy
 * stream beside the block's bytes (counted in *done: bytes as copied). */
static dkv_status copy_scales(dkv_cuda_backend *b, const bk_req *r, uint32_t j, uint32_t id, bool d2h, uint64_t *done,
                              dkv_err *err)
{
    if (!b->kv_fp8)
        return DKV_OK;
    size_t n = (size_t)b->err_stride * sizeof(float);
    float *h = b->host_scale + ((size_t)r->host_slot * b->slot_blocks + j) * b->err_stride;
    float *d = b->fp8_scale + (size_t)id * b->err_stride;
    DKV_CU(cudaMemcpyAsync(d2h ? (void *)h : (void *)d, d2h ? (const void *)d : (const void *)h, n,
                           d2h ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, b->cp));
    *done += n;
    return DKV_OK;
}

/* ------------------------------------------------------------------ copies */

void bk_copies_reap(dkv_cuda_backend *b, bool wait)
{
    while (b->done_epoch < b->epoch) {
        bk_copy *c = &b->copies[(b->done_epoch + 1) % BK_COPIES];
        if (wait)
            cudaEventSynchronize(c->done);
        else if (cudaEventQuery(c->done) != cudaSuccess)
            break;
        float ms = 0;
        if (cudaEventElapsedTime(&ms, c->start, c->done) == cudaSuccess)
            b->rep.copy_time_s += ms * 1e-3;
        if (c->n_err) {
            const float *e = b->h_err + (size_t)((b->done_epoch + 1) % BK_COPIES) * b->err_stride;
            double s = 0;
            for (uint32_t i = 0; i < c->n_err; i++)
                s += e[i];
            b->rep.compress_err_sum += s / c->n_err;
            b->rep.n_compress++;
        }
        c->in_use = false;
        b->done_epoch++;
    }
}

/* Starts copy number epoch+1 on the copy stream; *slot is its ring index. */
static dkv_status copy_open(dkv_cuda_backend *b, bool d2h, uint32_t *slot, dkv_err *err)
{
    while (b->epoch + 1 - b->done_epoch > BK_COPIES - 1)
        bk_copies_reap(b, true);
    uint32_t e = ++b->epoch, s = e % BK_COPIES;
    b->copies[s] = (bk_copy){.start = b->copies[s].start, .done = b->copies[s].done, .d2h = d2h, .in_use = true};
    DKV_CU(cudaEventRecord(b->copies[s].start, b->cp));
    *slot = s;
    return DKV_OK;
}

static dkv_status copy_close(dkv_cuda_backend *b, uint32_t slot, uint64_t bytes, dkv_err *err)
{
    b->copies[slot].bytes = bytes;
    DKV_CU(cudaEventRecord(b->copies[slot].done, b->cp));
    if (b->copies[slot].d2h)
        b->rep.pcie_d2h_bytes += bytes, b->step_pcie_d2h += bytes;
    else
        b->rep.pcie_h2d_bytes += bytes, b->step_pcie_h2d += bytes;
    return DKV_OK;
}

static const bk_item *item_of(const dkv_cuda_backend *b, const dkv_step_plan *plan, uint32_t request)
{
    for (uint32_t i = 0; i < plan->n_items; i++)
        if (b->items[i].req == request)
            return &b->items[i];
    return NULL;
}

static const uint32_t *host_table(const dkv_cuda_backend *b)
{
    return (const uint32_t *)((const char *)b->h_meta + ((const char *)b->d_table - (const char *)b->d_meta));
}

/* ------------------------------------------------------------------ before the step */

/* Decompress on fetch, part 1 (copy stream, inside the fetch's copy): the low-rank form of the
 * request's compressed blocks, bf16 Q then B as compress() wrote it, from its slot into lr_in,
 * once the previous reconstruction has read lr_in. */
static dkv_status fetch_lowrank(dkv_cuda_backend *b, const bk_item *x, const char *slot, uint64_t *done, dkv_err *err)
{
    const bk_req *r = &b->rq[x->req];
    uint64_t bytes = dkv_devmem_lr_bytes(&r->lr, b->err_stride, b->m.head_dim);
    if (bytes > b->lr_in_bytes) {
        DKV_CU(cudaDeviceSynchronize());
        cudaFree(b->lr_in);
        bk_alloc_note(b, -(int64_t)b->lr_in_bytes);
        b->lr_in = NULL, b->lr_in_bytes = 0;
        dkv_devmem_lowrank_in(&b->dm, bytes);
        DKV_CU(cudaMalloc((void **)&b->lr_in, bytes));
        bk_alloc_note(b, (int64_t)bytes);
        b->lr_in_bytes = bytes;
        b->lr_in_used = false;
    }
    if (!b->lr_in_ev)
        DKV_CU(cudaEventCreateWithFlags(&b->lr_in_ev, cudaEventDisableTiming));
    if (b->lr_in_used)
        DKV_CU(cudaStreamWaitEvent(b->cp, b->lr_in_ev, 0));
    DKV_CU(cudaMemcpyAsync(b->lr_in, slot + (uint64_t)r->lr.start * b->block_bytes, bytes, cudaMemcpyHostToDevice, b->cp));
    *done += bytes;
    b->rep.lowrank_h2d_bytes += bytes;
    return DKV_OK;
}

/* Part 2 (compute stream, after the copy): Q B written into the staging blocks of those
 * positions, so attention reads the reconstruction. */
static dkv_status rebuild_lowrank(dkv_cuda_backend *b, const bk_item *x, dkv_err *err)
{
    const bk_req *r = &b->rq[x->req];
    const dkv_bf16 *Q = b->lr_in, *B = b->lr_in + (size_t)b->err_stride * r->lr.m_tok * r->lr.rank;
    DKV_TRY(dkv_cuda_lowrank_decompress(&b->pool, b->d_table + x->tb + r->lr.start, Q, B, r->lr.m_tok, r->lr.rank, b->st,
                                        err));
    b->launches[DKV_KCLASS_COMPRESS]++;
    b->rep.n_lowrank_rebuilt++;
    DKV_CU(cudaEventRecord(b->lr_in_ev, b->st));
    b->lr_in_used = true;
    return DKV_OK;
}

dkv_status bk_xfers_before(dkv_cuda_backend *b, const dkv_step_plan *plan, dkv_err *err)
{
    bk_copies_reap(b, false);
    const uint32_t *tab = host_table(b);
    uint32_t wait_e = 0;
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const bk_item *x = &b->items[i];
        for (uint32_t j = 0; j < x->n_chain; j++) {
            uint32_t e = b->blk_epoch[tab[x->tb + j]];
            if (e > b->done_epoch && e > wait_e)
                wait_e = e;
        }
    }
    if (wait_e)   /* copies complete in order: the newest covers every older one */
        DKV_CU(cudaStreamWaitEvent(b->st, b->copies[wait_e % BK_COPIES].done, 0));
    for (uint32_t k = 0; k < plan->n_xfers; k++) {
        const dkv_xfer *xf = &plan->xfers[k];
        if (xf->kind != DKV_XFER_FETCH)
            continue;
        b->rep.xfer_h2d_counted += xf->pcie_bytes;
        const bk_item *x = item_of(b, plan, xf->request);
        if (!x)
            return dkv_err_set(err, DKV_EINVAL, "cuda backend: fetch order %u for request %u, which has no item in "
                               "the step", k, xf->request);
        char *slot;
        DKV_TRY(slot_of(b, &b->rq[x->req], x->req, &slot, err));
        if (b->kv_fp8 && !b->fp8_scale) {   /* zeroed on the compute stream before the copy stream writes */
            DKV_TRY(bk_fp8_scales(b, err));
            DKV_CU(cudaStreamSynchronize(b->st));
        }
        uint32_t cs;
        DKV_TRY(copy_open(b, false, &cs, err));
        uint64_t rem = xf->pcie_bytes, done = 0;
        const bk_req *rq = &b->rq[x->req];
        /* a low-rank form rebuilt below stands for the plan's bytes of those positions */
        bool rebuild = dkv_devmem_lr_rebuilds(&rq->lr, x->n_chain, x->n_tb);
        if (rebuild)
            rem -= rem < rq->lr_plan_bytes ? rem : rq->lr_plan_bytes;
        /* the staging blocks (positions not held on the device), raw from the slot; blocks whose
         * slot holds a low-rank form are rebuilt from it below, never copied raw */
        for (uint32_t j = x->n_chain; j < x->n_tb && rem; j++) {
            if (rq->lr.valid && j >= rq->lr.start && j < rq->lr.end)
                continue;
            uint64_t n = rem < b->block_bytes ? rem : b->block_bytes;
            DKV_CU(cudaMemcpyAsync((char *)b->arena + (uint64_t)tab[x->tb + j] * b->block_bytes,
                               slot + (uint64_t)j * b->block_bytes, n, cudaMemcpyHostToDevice, b->cp));
            DKV_TRY(copy_scales(b, rq, j, tab[x->tb + j], false, &done, err));
            rem -= n, done += n;
        }
        /* bytes the plan orders beyond those (its rounding of a fraction of the host KV) still cross
         * the bus, into the discard block: a block the item holds keeps its KV, as on the CPU
         * backend.  (Until device call 19 they went into the held blocks, from the slot's first
         * blocks, which no offload had written: the low-rank runs' working block was overwritten
         * at every fetch: docs/GPU.md "Lossy policies".) */
        while (rem) {
            uint64_t n = rem < b->block_bytes ? rem : b->block_bytes;
            DKV_CU(cudaMemcpyAsync((char *)b->arena + (uint64_t)b->discard * b->block_bytes, slot, n,
                               cudaMemcpyHostToDevice, b->cp));
            rem -= n, done += n;
            b->rep.fetch_discard_bytes += n;
        }
        if (rebuild)
            DKV_TRY(fetch_lowrank(b, x, slot, &done, err));
        DKV_TRY(copy_close(b, cs, done, err));
        b->step_n_fetch++;
        DKV_CU(cudaStreamWaitEvent(b->st, b->copies[cs].done, 0));
        if (rebuild)
            DKV_TRY(rebuild_lowrank(b, x, err));
    }
    return DKV_OK;
}

/* ------------------------------------------------------------------ inside the step */

static dkv_status gbuf_reserve(dkv_cuda_backend *b, size_t bytes, dkv_err *err)
{
    if (bytes <= b->gbuf_bytes)
        return DKV_OK;
    DKV_CU(cudaStreamSynchronize(b->st));
    cudaFree(b->gbuf);
    bk_alloc_note(b, -(int64_t)b->gbuf_bytes);
    b->gbuf = NULL;
    b->gbuf_bytes = 0;
    dkv_devmem_gather(&b->dm, bytes);
    DKV_CU(cudaMalloc((void **)&b->gbuf, bytes));
    bk_alloc_note(b, (int64_t)bytes);
    b->gbuf_bytes = bytes;
    return DKV_OK;
}

/* The low-rank compressor: its workspace (cuda/lowrank.cu, with its cuBLAS handle), the projection's
 * output and staging (lr_q, lr_b, lr_err, lr_out) and the event its copy waits for, once per backend.
 * begin sets it up when the pool says the offload policy can order COMPRESS (pool.lowrank_rank);
 * core/model/devmem.c counts it from then, as the engine's model of this backend does. */
static dkv_status compressor_new(dkv_cuda_backend *b, dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t D = m->head_dim, batch = b->err_stride;
    if (b->lr)
        return DKV_OK;
    DKV_TRY(dkv_cuda_lowrank_new(b->st, b->max_L, D, DKV_DEVMEM_LR_RANK, DKV_DEVMEM_LR_BATCH, &b->lr, err));
    size_t bytes = dkv_devmem_lowrank_proj_bytes(&b->m, b->max_L), lrb = dkv_cuda_lowrank_bytes(b->lr);
    if (lrb != dkv_devmem_lowrank_bytes(b->max_L, D, DKV_DEVMEM_LR_RANK, DKV_DEVMEM_LR_BATCH))
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: the low-rank compressor takes %zu bytes, core/model/"
                           "devmem.c counts %llu: update dkv_devmem_lowrank_bytes", lrb, (unsigned long long)
                           dkv_devmem_lowrank_bytes(b->max_L, D, DKV_DEVMEM_LR_RANK, DKV_DEVMEM_LR_BATCH));
    DKV_CU(cudaMalloc((void **)&b->lr_q, bytes));
    bk_alloc_note(b, (int64_t)(bytes + lrb));
    dkv_devmem_compressor(&b->dm);
    b->lr_b = b->lr_q + (size_t)batch * b->max_L * DKV_LOWRANK_MAX_RANK;
    b->lr_err = b->lr_b + (size_t)batch * DKV_LOWRANK_MAX_RANK * D;
    b->lr_out = (dkv_bf16 *)(b->lr_err + batch + 64);
    DKV_CU(cudaEventCreateWithFlags(&b->cmp_ev, cudaEventDisableTiming));
    return DKV_OK;
}

/* The compressor's first calls outside the timed steps: projections of DKV_DEVMEM_LR_BATCH zero
 * matrices of m x head_dim at the given rank, m = max_L, max_L / 2, ... down to the rank (a step's
 * compression takes pieces of that batch at its range's rows; cuBLAS picks its SGEMM kernels by
 * shape), each with the two stagings, into the compressor's own buffers; the input is a scratch
 * buffer freed before the first step.  CUDA loads cuBLAS's SGEMM kernels and the compressor's own at
 * their first launch: 0.09-0.14 s that a run's first COMPRESS paid inside its step until session 36
 * (the profile's first_use.compress_s; docs/COST_MODEL.md "Cold shapes").  The seed is not one of
 * the orders' (lr_orders is untouched), so every order draws the Omega it drew before. */
static dkv_status compressor_warm(dkv_cuda_backend *b, uint32_t rank, dkv_err *err)
{
    uint32_t D = b->m.head_dim, L = b->max_L, n = DKV_DEVMEM_LR_BATCH < b->err_stride ? DKV_DEVMEM_LR_BATCH : b->err_stride;
    rank = rank > L ? L : rank > D ? D : rank;   /* (pool.lowrank_rank is in [1, DKV_DEVMEM_LR_RANK]) */
    if (!b->lr || L == 0 || n == 0)
        return DKV_OK;
    size_t in_bytes = (size_t)n * L * D * 2;
    dkv_bf16 *in = NULL;
    DKV_CU(cudaMalloc((void **)&in, in_bytes));
    dkv_status st = DKV_OK;
    if (cudaMemsetAsync(in, 0, in_bytes, b->st) != cudaSuccess)
        st = dkv_err_set(err, DKV_EIO, "cuda backend: cudaMemsetAsync failed (compressor warm-up)");
    for (uint32_t m = L; st == DKV_OK && m >= rank; m = m > 1 ? m / 2 : 0) {
        st = dkv_cuda_lowrank_compress(b->lr, in, m, D, n, rank, 1, b->o.seed ^ 0x9e3779b97f4a7c15ull, b->lr_q, b->lr_b,
                                       b->lr_err, err);
        if (st == DKV_OK)
            st = dkv_cuda_f32_to_bf16(b->lr_out, b->lr_q, (size_t)n * m * rank, b->st, err);
        if (st == DKV_OK)
            st = dkv_cuda_f32_to_bf16(b->lr_out + (size_t)n * m * rank, b->lr_b, (size_t)n * rank * D, b->st, err);
    }
    if (cudaStreamSynchronize(b->st) != cudaSuccess && st == DKV_OK)
        st = dkv_err_set(err, DKV_EIO, "cuda backend: the compressor warm-up failed");
    cudaFree(in);
    return st;
}

/* At begin, when the offload policy can order COMPRESS (pool.lowrank_rank): the compressor set up and,
 * with warm (warm_gemms and warm_compressor), run, its host seconds in the report's compressor_warm_s. */
dkv_status bk_compressor_begin(dkv_cuda_backend *b, uint32_t rank, bool warm, dkv_err *err)
{
    DKV_TRY(compressor_new(b, err));
    if (!warm)
        return DKV_OK;
    double t0 = dkv_mono_s();
    DKV_TRY(compressor_warm(b, rank, err));
    b->rep.compressor_warm_s = dkv_mono_s() - t0;
    return DKV_OK;
}

/* One COMPRESS order: the blocks before the ones offloaded raw are gathered and projected to
 * low rank on the compute stream, and the projection (bf16 Q then B, and the errors) goes to the
 * request's host slot on the copy stream.  The next projection waits until that copy has read
 * lr_out; the source blocks are free once the gather has run (compute-stream order). */
static dkv_status compress(dkv_cuda_backend *b, const dkv_step_plan *plan, const dkv_xfer *xf, const bk_item *x,
                           dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t D = m->head_dim, batch = b->err_stride, bt = b->block_tokens;
    /* the range, its rows and rank: core/model/devmem.h's one rule (the simulator's twin uses it too) */
    dkv_devmem_range g = dkv_devmem_compress_range(x->n_chain, dkv_plan_offload_bytes(plan, x->req), xf->device_bytes,
                                                   xf->pcie_bytes, b->block_bytes, bt, b->max_L, x->need_tokens, D);
    uint32_t start = g.start, end = g.end, m_tok = g.m_tok, r = g.rank;
    b->rep.xfer_d2h_counted += xf->pcie_bytes;
    if (m_tok == 0)
        return DKV_OK;
    if (!b->lr)   /* set up at begin when the pool says the policy compresses; here otherwise */
        DKV_TRY(compressor_new(b, err));
    if (b->compress_epoch > b->done_epoch)   /* lr_out is still being copied out */
        DKV_CU(cudaStreamWaitEvent(b->st, b->copies[b->compress_epoch % BK_COPIES].done, 0));
    DKV_TRY(gbuf_reserve(b, (size_t)batch * m_tok * D * 2, err));
    DKV_TRY(dkv_bk_gather(b->gbuf, &b->pool, b->d_table + x->tb + start, m_tok, false, b->st, err));
    /* one Omega for the order's matrices, seeded options seed + the orders compressed before: the
     * CPU backend's draw (cpu/cpu_step.c), so both backends compute the same projection */
    DKV_TRY(dkv_cuda_lowrank_compress(b->lr, b->gbuf, m_tok, D, batch, r, 1, b->o.seed + b->lr_orders++, b->lr_q,
                                      b->lr_b, b->lr_err, err));
    DKV_TRY(dkv_cuda_f32_to_bf16(b->lr_out, b->lr_q, (size_t)batch * m_tok * r, b->st, err));
    DKV_TRY(dkv_cuda_f32_to_bf16(b->lr_out + (size_t)batch * m_tok * r, b->lr_b, (size_t)batch * r * D, b->st, err));
    b->launches[DKV_KCLASS_COMPRESS] += 4 + 12;
    /* the projection to the host, on the copy stream once the kernels are done */
    char *slot;
    DKV_TRY(slot_of(b, &b->rq[x->req], x->req, &slot, err));
    DKV_CU(cudaEventRecord(b->cmp_ev, b->st));
    DKV_CU(cudaStreamWaitEvent(b->cp, b->cmp_ev, 0));
    uint32_t cs;
    DKV_TRY(copy_open(b, true, &cs, err));
    uint64_t n, raw = (uint64_t)(end - start) * b->block_bytes;
    bk_req *rq = &b->rq[x->req];
    if (dkv_devmem_lr_compressed(&rq->lr, &g, batch, D, b->block_bytes)) {   /* the form goes where the raw blocks
                                                                                 would; fetch rebuilds them from it */
        n = dkv_devmem_lr_bytes(&rq->lr, batch, D);
        DKV_CU(cudaMemcpyAsync(slot + (uint64_t)start * b->block_bytes, b->lr_out, n, cudaMemcpyDeviceToHost, b->cp));
        rq->lr_plan_bytes = xf->pcie_bytes;
        b->rep.n_lowrank_stored++;
    } else {          /* larger than the raw KV (ratio ~1; short ranges, FP8 KV: model/devmem.h): the raw
                         blocks, exact */
        const uint32_t *tab = host_table(b);
        for (uint32_t j = start; j < end; j++) {
            uint32_t id = tab[x->tb + j];
            DKV_CU(cudaMemcpyAsync(slot + (uint64_t)j * b->block_bytes, (char *)b->arena + (uint64_t)id * b->block_bytes,
                               b->block_bytes, cudaMemcpyDeviceToHost, b->cp));
            DKV_TRY(copy_scales(b, rq, j, id, true, &raw, err));
            b->blk_epoch[id] = b->epoch;
        }
        n = raw;
    }
    DKV_CU(cudaMemcpyAsync(b->h_err + (size_t)cs * b->err_stride, b->lr_err, batch * sizeof(float), cudaMemcpyDeviceToHost,
                       b->cp));
    b->copies[cs].n_err = batch;
    b->compress_epoch = b->epoch;
    DKV_TRY(copy_close(b, cs, n, err));
    if (xf->blocking || !xf->pinned)
        b->step_block_epoch = b->epoch;
    return DKV_OK;
}

dkv_status bk_xfers_device(dkv_cuda_backend *b, const dkv_step_plan *plan, dkv_err *err)
{
    uint32_t bt = b->block_tokens;
    for (uint32_t k = 0; k < plan->n_xfers; k++) {
        const dkv_xfer *xf = &plan->xfers[k];
        if (xf->kind != DKV_XFER_REORDER && xf->kind != DKV_XFER_COMPRESS)
            continue;
        const bk_item *x = item_of(b, plan, xf->request);
        if (!x)
            return dkv_err_set(err, DKV_EINVAL, "cuda backend: %s order %u for request %u, which has no item in the "
                               "step", xf->kind == DKV_XFER_REORDER ? "reorder" : "compress", k, xf->request);
        if (xf->kind == DKV_XFER_REORDER) {
            /* the written tokens read from their blocks and written layer-major, as stored (FP8:
             * the e4m3 bytes): a reorder's bytes */
            uint32_t b0 = x->write == BK_W_STORE ? x->w_lo / bt : 0;
            uint64_t tok = xf->device_bytes / b->kvbpt;
            uint64_t avail = x->n_chain > b0 ? (uint64_t)(x->n_chain - b0) * bt : 0;
            tok = tok < avail ? tok : avail;
            if (!tok)
                continue;
            bk_mark(b, DKV_KCLASS_REORDER);
            DKV_TRY(gbuf_reserve(b, (size_t)tok * b->kvbpt, err));
            DKV_TRY(dkv_bk_gather(b->gbuf, &b->pool, b->d_table + x->tb + b0, (uint32_t)tok, true, b->st, err));
            b->launches[DKV_KCLASS_REORDER]++;
        } else {
            bk_mark(b, DKV_KCLASS_COMPRESS);
            DKV_TRY(compress(b, plan, xf, x, err));
        }
    }
    return DKV_OK;
}

/* ------------------------------------------------------------------ after the step */

dkv_status bk_xfers_after(dkv_cuda_backend *b, const dkv_step_plan *plan, cudaEvent_t compute_done, dkv_err *err)
{
    bool any = false;
    for (uint32_t k = 0; k < plan->n_xfers; k++)
        any |= plan->xfers[k].kind == DKV_XFER_OFFLOAD;
    if (!any)
        return DKV_OK;
    DKV_CU(cudaStreamWaitEvent(b->cp, compute_done, 0));
    const uint32_t *tab = host_table(b);
    for (uint32_t k = 0; k < plan->n_xfers; k++) {
        const dkv_xfer *xf = &plan->xfers[k];
        if (xf->kind != DKV_XFER_OFFLOAD)
            continue;
        b->rep.xfer_d2h_counted += xf->pcie_bytes;
        const bk_item *x = item_of(b, plan, xf->request);
        if (!x)
            return dkv_err_set(err, DKV_EINVAL, "cuda backend: offload order %u for request %u, which has no item in "
                               "the step", k, xf->request);
        char *slot;
        DKV_TRY(slot_of(b, &b->rq[x->req], x->req, &slot, err));
        uint32_t cs;
        DKV_TRY(copy_open(b, true, &cs, err));
        /* raw: the request's last blocks, which the engine frees after the step; until the copy
         * has read them, a later step that takes them waits (bk_xfers_before) */
        uint32_t nb = cdiv(xf->pcie_bytes, b->block_bytes), start = x->n_chain > nb ? x->n_chain - nb : 0;
        bk_req *rq = &b->rq[x->req];
        dkv_devmem_lr_offload(&rq->lr, x->n_chain, xf->pcie_bytes, b->block_bytes);   /* raw KV replaces (part of) it */
        uint64_t rem = xf->pcie_bytes, done = 0;
        for (uint32_t j = start; j < x->n_chain && rem; j++) {
            uint64_t n = rem < b->block_bytes ? rem : b->block_bytes;
            uint32_t id = tab[x->tb + j];
            DKV_CU(cudaMemcpyAsync(slot + (uint64_t)j * b->block_bytes, (char *)b->arena + (uint64_t)id * b->block_bytes, n,
                               cudaMemcpyDeviceToHost, b->cp));
            DKV_TRY(copy_scales(b, rq, j, id, true, &done, err));
            b->blk_epoch[id] = b->epoch;
            rem -= n, done += n;
        }
        DKV_TRY(copy_close(b, cs, done, err));
        if (xf->blocking || !xf->pinned)
            b->step_block_epoch = b->epoch;
    }
    return DKV_OK;
}
