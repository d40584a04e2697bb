/* backend.c - the CUDA backend's vtable: set-up (device, weights, canvases, arena, scratch),
 * one step (metadata, transfers, the batched forward, measurement, records) and tear-down.
 * backend.h documents the behaviour; backend_fwd.c and arena.c hold the parts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/backend_internal.h"
#include "cost/cost.h"
#include "util/mono.h"
#include "util/rng.h"

void bk_alloc_note(dkv_cuda_backend *b, int64_t delta)
{
    b->alloc_now = (uint64_t)((int64_t)b->alloc_now + delta);
    if (b->alloc_now > b->alloc_peak)
        b->alloc_peak = b->alloc_now;
}

double bk_now(void)
{
    return dkv_mono_s();
}

dkv_cuda_backend_options dkv_cuda_backend_options_default(void)
{
    dkv_cuda_backend_options o;
    memset(&o, 0, sizeof o);
    o.staging_bytes = DKV_CUDA_FROM_SETUP;
    o.host_bytes = DKV_CUDA_FROM_SETUP;
    o.layout = DKV_KV_TOKEN_MAJOR;
    o.seed = 1;
    o.rms_eps = 1e-5f;
    o.max_logit_rows = 1024;
    o.attn_streams = 4;
    o.class_timing = true;
    o.kernel_records = true;
    o.warm_gemms = true;
    o.warm_compressor = true;
    return o;
}

void dkv_cuda_backend_report_clear(dkv_cuda_backend_report *r)
{
    if (!r)
        return;
    free(r->series);
    free(r->score);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ set-up */

/* Keeps the algorithm cuBLASLt's heuristic picks for the model's GEMMs (the fused q|k|v with its bias,
 * o += , gate|up, down += , the LM head's fp32 logits) at every warm-up row count and loads their kernels
 * (dkv_cuda_gemm_warm), with layer 0's weights and a scratch buffer of at most 1 GiB or a quarter of the
 * free memory, freed before the first step; then 0.2 s idle.  docs/COST_MODEL.md "Cold shapes". */
static dkv_status warm_gemms(dkv_cuda_backend *b, dkv_err *err)
{
    const dkv_model *m = &b->m;
    const dkv_cuda_layer *Ly = &b->w->layers[0];
    uint32_t C = m->hidden, F = m->ffn, QD = m->n_heads * m->head_dim, QKV = QD + 2 * m->n_kv_heads * m->head_dim;
    uint32_t T = 8192, R = b->logit_chunk;
    dkv_gemm_warm_shape s[] = {
        {Ly->wqkv, Ly->bqkv, C, QKV, T, 0.0f, 0}, {Ly->wo, NULL, QD, C, T, 1.0f, 0},
        {Ly->wgu, NULL, C, 2 * F, T, 0.0f, 0},    {Ly->wdown, NULL, F, C, T, 1.0f, 0},
        {b->w->lm_head, NULL, C, m->vocab, R, 0.0f, 1},
    };
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        return dkv_err_set(err, DKV_EIO, "cuda backend: cudaMemGetInfo failed (GEMM warm-up)");
    size_t cap = (size_t)1 << 30;
    cap = fr / 4 < cap ? fr / 4 : cap;
    uint32_t n_run = 0;
    DKV_TRY(dkv_cuda_gemm_warm(b->ctx, s, sizeof s / sizeof s[0], cap, &n_run, err));
    /* Idle before the first step: the GPU's clocks stay lowered for ~50 ms after heavy GEMMs (device call 26,
     * 32-step blocks: Reuse steps 4-5 % slower until ~50 ms after their Refresh), and the warm-up's large-row
     * GEMMs are ~0.2 s of them; without this pause call 27's first steps ran 7-12 % slower than with no
     * warm-up on the same GPU.  4x the measured hold. */
    struct timespec idle = {0, 200 * 1000 * 1000};
    nanosleep(&idle, NULL);
    return DKV_OK;
}

/* The sparse cache's selection scores (dkv_bk_scores: cuBLAS's strided batched GEMM, which picks and
 * lazily loads a kernel per shape) at every key count up to the run's longest canvas, block_len query
 * rows, on the activations' q|k|v rows (any values): device call 49 measured the per-head selection's
 * first use of a key count at 2-4 ms (az:sparse_head's kv_gather 6.38 ms at its first selecting step
 * against 2.36 ms with every shape used before; docs/COST_MODEL.md "Cold shapes").  Only when the cache
 * selects (DKV_CACHE_SPARSE). */
static dkv_status warm_scores(dkv_cuda_backend *b, dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, QD = H * D, QKV = QD + 2 * Hkv * D;
    uint32_t B = b->dec.block_len;
    for (uint32_t Tk = 1; Tk <= b->max_L; Tk++)
        DKV_TRY(dkv_bk_scores(b->blas, b->score, b->qkv, QKV, B, b->qkv + QD, QKV, Tk, H, Hkv, D, b->score_ws,
                              b->score_ws_bytes, b->st, err));
    DKV_CU(cudaStreamSynchronize(b->st));
    return DKV_OK;
}

/* The setup's loaded weights (uploaded as bf16), or seeded random ones. */
static dkv_status load_weights(dkv_cuda_backend *b, const dkv_ref_weights *rw, dkv_err *err)
{
    if (rw) {
        dkv_status st = dkv_cuda_weights_upload(b->w, rw, err);
        if (st != DKV_OK)
            dkv_err_prefix(err, "cuda backend: weights");
        return st;
    }
    DKV_TRY(dkv_cuda_weights_randomize(b->w, b->o.seed, b->st, err));
    DKV_CU(cudaStreamSynchronize(b->st));
    return DKV_OK;
}

static dkv_status setup_requests(dkv_cuda_backend *b, dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t B = b->dec.block_len;
    b->n_rq = dkv_workload_count(b->wl);
    if (b->o.follow && b->o.n_follow != b->n_rq)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: %zu follow trajectories for a workload of %zu requests",
                           b->o.n_follow, b->n_rq);
    if (b->o.targets && b->o.n_targets != b->n_rq)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: %zu targets for a workload of %zu requests", b->o.n_targets,
                           b->n_rq);
    b->rq = calloc(b->n_rq ? b->n_rq : 1, sizeof *b->rq);
    if (!b->rq)
        return dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of host memory");
    if (b->o.targets) {   /* held-out scores per request (backend_score.c) */
        b->rep.score = calloc(b->n_rq ? b->n_rq : 1, sizeof *b->rep.score);
        if (!b->rep.score)
            return dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of host memory");
        b->rep.n_score = (uint32_t)b->n_rq;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < b->n_rq; i++) {
        const dkv_request *q = dkv_workload_get(b->wl, i);
        bk_req *r = &b->rq[i];
        r->P = q->prompt_tokens, r->G = q->gen_tokens, r->L = r->P + r->G, r->host_slot = -1;
        r->cur_block = UINT32_MAX;
        r->n_blocks = B ? r->G / B : 0;
        r->canvas_off = total;
        total += r->L;
        if (r->L > b->max_L && r->L <= m->max_len)
            b->max_L = r->L;
    }
    if (b->max_L == 0)
        b->max_L = B ? B : 1;
    if (total > (1ull << 30))
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: the workload's canvases hold %llu tokens (> 2^30)",
                           (unsigned long long)total);
    uint32_t *h = malloc((total ? total : 1) * sizeof *h);
    if (!h)
        return dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of host memory for %llu canvas tokens",
                           (unsigned long long)total);
    dkv_rng rng;
    /* prompts: the request's token ids (a prompts file), else seeded random ids (never the mask);
     * generation: masked */
    for (size_t i = 0; i < b->n_rq; i++) {
        const bk_req *r = &b->rq[i];
        const uint32_t *given = dkv_workload_get(b->wl, i)->tokens;
        dkv_rng_seed(&rng, b->o.seed * 1000003u + i);
        for (uint32_t t = 0; t < r->L; t++) {
            uint32_t v = (uint32_t)dkv_rng_below(&rng, m->vocab - 1);
            h[r->canvas_off + t] = t >= r->P ? b->mask_id : given ? given[t] : (v >= b->mask_id ? v + 1 : v);
        }
    }
    dkv_devmem_cfg dc = {.max_L = b->max_L, .block_len = B, .canvas_tokens = total,
                         .logit_rows = b->o.max_logit_rows ? b->o.max_logit_rows : DKV_DEVMEM_LOGIT_ROWS,
                         .attn_streams = b->o.attn_streams, .arena_blocks = b->want_pool + b->want_staging + 1};
    dkv_devmem_init(&b->dm, m, &dc);   /* the count: cuBLASLt workspace, workspaces, activations, canvases */
    bk_alloc_note(b, (int64_t)DKV_DEVMEM_CUBLASLT_WS_BYTES);   /* dkv_cuda_ctx_new's, already allocated */
    cudaError_t e = cudaMalloc((void **)&b->d_canvas, dkv_devmem_canvas_bytes(total));
    if (e == cudaSuccess)
        bk_alloc_note(b, (int64_t)dkv_devmem_canvas_bytes(total));
    if (e == cudaSuccess)
        e = cudaMemcpy(b->d_canvas, h, total * sizeof *h, cudaMemcpyHostToDevice);
    free(h);
    if (e != cudaSuccess)
        return dkv_err_set(err, DKV_EIO, "cuda backend: canvases: %s", cudaGetErrorString(e));
    return DKV_OK;
}

static void teardown(dkv_cuda_backend *b)
{
    if (b->st)
        cudaStreamSynchronize(b->st);
    bk_copies_reap(b, true);
    bk_arena_free(b);
    bk_scratch_free(b);
    for (int i = 0; i < DKV_BK_EVENTS; i++)
        if (b->ev[i]) {
            cudaEventDestroy(b->ev[i]);
            b->ev[i] = NULL;
        }
    cudaFreeHost(b->h_meta);
    cudaFree(b->d_meta);
    b->h_meta = b->d_meta = NULL;
    b->cap_meta = 0;
    cudaFree(b->d_canvas);
    b->d_canvas = NULL;
    cudaFree(b->flush);
    b->flush = NULL;
    if (!b->w_borrowed)
        dkv_cuda_weights_free(b->w);
    b->w = NULL;
    b->w_borrowed = false;
    dkv_cuda_ctx_free(b->ctx);
    b->ctx = NULL;
    dkv_cuda_clock_close(b->clock);
    b->clock = NULL;
    dkv_sm_probe_close(b->probe);
    b->probe = NULL;
    b->st = b->cp = NULL;
    free(b->rq);
    b->rq = NULL;
    free(b->items);
    free(b->attn_items);
    b->items = NULL;
    b->attn_items = NULL;
    b->cap_items = 0;
    b->begun = false;
}

/* The engine's decisions, from the setup (engine/backend.h): checked, then kept. */
static dkv_status take_setup(dkv_cuda_backend *b, const dkv_backend_setup *s, dkv_err *err)
{
    if (!s || !s->model || !s->gpu || !s->workload || !s->decode)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: setup needs a model, a gpu, a workload and a decode "
                           "configuration");
    const dkv_backend_pool *p = &s->pool;
    if (p->block_tokens == 0 || p->block_bytes == 0 || p->n_blocks == 0 || p->n_blocks > UINT32_MAX / 2)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: setup.pool.block_tokens (%u) and n_blocks (%llu) must be > 0",
                           p->block_tokens, (unsigned long long)p->n_blocks);
    if (s->decode->block_len == 0)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: setup.decode.block_len must be > 0");
    if (dkv_dtype_bytes(s->model->kv_dtype) == 0)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: model '%s': unknown KV dtype %d", s->model->name,
                           (int)s->model->kv_dtype);
    b->m = *s->model;
    b->g = *s->gpu;
    b->wl = s->workload;
    b->dec = *s->decode;
    b->dec.rho_fn = NULL;   /* never called here: the plan carries each step's counts */
    b->on_entropy = s->on_entropy, b->on_entropy_user = s->on_entropy_user;
    b->dec.rho_ctx = NULL;
    b->block_tokens = p->block_tokens;
    /* The device block is the pool's (dkv_block_bytes, decided once by the engine: bf16 2 bytes an
     * element, FP8 e4m3 1 byte, its scales beside the arena).  begin checks that the pool block is
     * a whole number of tokens. */
    b->block_bytes = p->block_bytes;
    b->want_pool = p->n_blocks;
    b->want_staging = b->o.staging_bytes != DKV_CUDA_FROM_SETUP ? b->o.staging_bytes / p->block_bytes
                                                                 : p->staging_blocks;
    b->want_host = b->o.host_bytes != DKV_CUDA_FROM_SETUP ? b->o.host_bytes : p->host_bytes;
    return DKV_OK;
}

static dkv_status bk_begin(void *ctx, const dkv_backend_setup *s, dkv_err *err)
{
    dkv_cuda_backend *b = ctx;
    if (b->begun)
        return dkv_err_set(err, DKV_ESTATE, "cuda backend: begin twice");
    DKV_TRY(take_setup(b, s, err));
    b->on_kernel = b->o.kernel_records ? s->on_kernel : NULL;
    b->on_kernel_user = s->on_kernel_user;
    const dkv_model *m = &b->m;
    if ((m->head_dim != 64 && m->head_dim != 128) || m->hidden % 8 || m->n_heads % m->n_kv_heads)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "cuda backend: model '%s': head_dim must be 64 or 128 and hidden a "
                           "multiple of 8 (head_dim %u, hidden %u)", m->name, m->head_dim, m->hidden);
    b->kvbpt = dkv_model_kv_bytes_per_token(m);
    b->kv_fp8 = m->kv_dtype == DKV_DTYPE_FP8;   /* e4m3 codes + scales (kv_fp8.cu, docs/GPU.md "Lossy policies") */
    if (m->kv_dtype != DKV_DTYPE_BF16 && !b->kv_fp8)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "cuda backend: model '%s' stores KV as %s; the device pool holds "
                           "bf16 or FP8 e4m3", m->name, dkv_dtype_name(m->kv_dtype));
    if (b->kv_fp8 && b->want_staging && b->o.share_pool && b->o.share_from && b->o.arena_instance > 0)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "cuda backend: FP8 KV with staging blocks in a shared arena's "
                           "region %u: the FP8 scales are indexed by block id up to this instance's own staging "
                           "blocks (region 0)", b->o.arena_instance);
    if (m->mask_id >= m->vocab || m->vocab < 2)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: model '%s': mask_id %u >= vocab %u", m->name, m->mask_id,
                           m->vocab);
    if (b->dec.block_len > DKV_BK_MAX_BLOCK)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "cuda backend: block_len %u > %u", b->dec.block_len,
                           DKV_BK_MAX_BLOCK);
    if ((uint64_t)b->block_tokens * dkv_model_kv_bytes_per_token(m) != s->pool.block_bytes)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: a pool block of %llu bytes is not a whole number of tokens "
                           "(%llu bytes each)", (unsigned long long)s->pool.block_bytes,
                           (unsigned long long)dkv_model_kv_bytes_per_token(m));
    b->mask_id = m->mask_id;
    b->t_begin = bk_now();
    free(b->rep.score);   /* an earlier run's, when no report took it */
    memset(&b->rep, 0, sizeof b->rep);
    b->alloc_now = b->alloc_peak = 0;
    snprintf(b->rep.device, sizeof b->rep.device, "%s", b->desc);
    dkv_status st;
#define STEP(call)                     \
    do {                               \
        if ((st = (call)) != DKV_OK) { \
            teardown(b);               \
            return st;                 \
        }                              \
    } while (0)
    STEP(dkv_cuda_ctx_new(b->o.device, &b->ctx, err));
    b->st = dkv_cuda_ctx_stream(b->ctx);
    b->cp = dkv_cuda_ctx_copy_stream(b->ctx);
    b->begun = true;
    if (b->o.sm_clock && (b->clock = dkv_cuda_clock_open(b->o.device)) != NULL)
        STEP(dkv_cuda_clock_sample(b->clock, 1e-3, err));
    if (b->o.clock_probe)
        STEP(dkv_sm_probe_open(b->o.device, &b->probe, err));
    STEP(setup_requests(b, err));
    if (b->o.share_weights) {   /* another instance's weights, read-only */
        const dkv_cuda_backend *own = b->o.share_from ? b->o.share_from->ctx : NULL;
        if (!own || !own->w) {
            teardown(b);
            return dkv_err_set(err, DKV_EINVAL, "cuda backend: share_weights needs share_from, a begun CUDA backend");
        }
        b->w = own->w;
        b->w_borrowed = true;
    } else {
        STEP(dkv_cuda_weights_new(m, b->o.rms_eps > 0 ? b->o.rms_eps : 1e-5f, &b->w, err));
        STEP(load_weights(b, s->weights, err));
    }
    for (int i = 0; i < DKV_BK_EVENTS; i++)
        if (cudaEventCreate(&b->ev[i]) != cudaSuccess) {
            teardown(b);
            return dkv_err_set(err, DKV_EIO, "cuda backend: cudaEventCreate failed");
        }
    STEP(bk_scratch_init(b, err));
    STEP(bk_scratch_reserve(b, b->max_L, b->dec.block_len, err));
    STEP(bk_arena_init(b, err));
    if (b->o.n_l2_flush)
        STEP(bk_l2_flush_init(b, err));
    if (s->pool.lowrank_rank)   /* before the warm-ups: its first call loads cuBLAS's SGEMM kernels */
        STEP(bk_compressor_begin(b, s->pool.lowrank_rank, b->o.warm_gemms && b->o.warm_compressor, err));
    if (b->o.warm_gemms && b->dec.cache == DKV_CACHE_SPARSE)
        STEP(warm_scores(b, err));   /* before warm_gemms: its idle follows all the warm-up's work */
    if (b->o.warm_gemms)
        STEP(warm_gemms(b, err));
    STEP(b->o.poison && ((b->arena_borrowed ? cudaSuccess : cudaMemset(b->arena, 0xff, b->arena_bytes)) != cudaSuccess ||
                         cudaMemset(b->act_mem, 0xff, b->cap_bytes_act) != cudaSuccess ||
                         cudaDeviceSynchronize() != cudaSuccess)
             ? dkv_err_set(err, DKV_EIO, "cuda backend: poisoning the arena failed") : DKV_OK);
    size_t fr = 0, tot = 0;   /* checked: else a least free of 0 that nothing measured */
    STEP(cudaMemGetInfo(&fr, &tot) != cudaSuccess ? dkv_err_set(err, DKV_EIO, "cuda backend: cudaMemGetInfo failed (begin)")
                                                  : DKV_OK);
#undef STEP
    b->rep.mem_total_bytes = tot;
    b->rep.mem_free_min_bytes = fr;
    b->rep.weights_bytes = b->w_borrowed ? 0 : b->w->bytes;   /* a borrowed copy is its owner's */
    b->rep.arena_bytes = b->arena_bytes;
    b->rep.block_bytes = b->block_bytes;
    b->rep.arena_blocks = b->n_pool;
    b->rep.staging_blocks = b->n_staging;
    b->rep.host_tier_bytes = b->host_bytes;
    return DKV_OK;
}

/* ------------------------------------------------------------------ one step */

static dkv_status sample_memory(dkv_cuda_backend *b, const dkv_step_plan *plan, dkv_err *err)
{
    if (b->rep.n_series == b->cap_series) {
        size_t nc = b->cap_series ? 2 * b->cap_series : 1024;
        dkv_cuda_mem_sample *n = realloc(b->rep.series, nc * sizeof *n);
        if (!n)
            return dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of host memory (memory series)");
        b->rep.series = n;
        b->cap_series = nc;
    }
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)   /* else a sample and a least free of 0 that nothing measured */
        return dkv_err_set(err, DKV_EIO, "cuda backend: cudaMemGetInfo failed (memory series, step %llu)",
                           (unsigned long long)plan->step_index);
    if (fr < b->rep.mem_free_min_bytes)
        b->rep.mem_free_min_bytes = fr;
    uint32_t used = 0;
    for (uint32_t i = 0; i < plan->n_items; i++)
        used += b->items[i].n_chain;
    b->rep.series[b->rep.n_series++] = (dkv_cuda_mem_sample){
        .step_index = plan->step_index, .time_s = bk_now() - b->t_begin, .free_bytes = fr, .total_bytes = tot,
        .pool_blocks_used = used, .staging_blocks_used = b->staging_used,
        .host_bytes_used = (uint64_t)(b->n_slots - b->n_slot_free) * b->slot_bytes};
    return DKV_OK;
}

static dkv_status debug_items(dkv_cuda_backend *b, const dkv_step_plan *plan, uint32_t **before, dkv_err *err)
{
    /* what each item computed on: its canvas before the step, with a step 0's block masked */
    DKV_CU(cudaStreamSynchronize(b->st));
    uint64_t tot = 0;
    for (uint32_t i = 0; i < plan->n_items; i++)
        tot += b->rq[b->items[i].req].L;
    *before = malloc((tot ? tot : 1) * sizeof **before);
    if (!*before)
        return dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of host memory");
    uint64_t o = 0;
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const bk_item *x = &b->items[i];
        const bk_req *r = &b->rq[x->req];
        DKV_CU(cudaMemcpy(*before + o, b->d_canvas + r->canvas_off, r->L * 4, cudaMemcpyDeviceToHost));
        if (plan->items[i].step == 0)
            for (uint32_t t = 0; t < x->B; t++)
                (*before)[o + x->s_b + t] = b->mask_id;
        o += r->L;
    }
    return DKV_OK;
}

/* options.follow: the block after the step is the block before it plus the positions the trajectory
 * committed at this step (decode/follow.h), written back to the device canvas. */
static dkv_status follow_item(dkv_cuda_backend *b, const dkv_step_plan *plan, const bk_item *x,
                              const uint32_t *before, uint32_t *after, dkv_err *err)
{
    const bk_req *r = &b->rq[x->req];
    uint32_t own = 0, n;
    for (uint32_t t = 0; t < x->B; t++)
        own += before[x->s_b + t] != after[x->s_b + t];
    memcpy(after + x->s_b, before + x->s_b, (size_t)x->B * 4);
    DKV_TRY(dkv_follow_apply(&b->o.follow[x->req], x->req, plan->step_index, r->P, r->G, x->s_b, x->B, after + x->s_b,
                             b->mask_id, b->m.vocab, own, &n, err));
    DKV_CU(cudaMemcpy(b->d_canvas + r->canvas_off + x->s_b, after + x->s_b, (size_t)x->B * 4, cudaMemcpyHostToDevice));
    return DKV_OK;
}

static dkv_status report_items(dkv_cuda_backend *b, const dkv_step_plan *plan, const uint32_t *before, dkv_err *err)
{
    DKV_CU(cudaStreamSynchronize(b->st));
    const dkv_model *m = &b->m;
    uint32_t R = 0, chunk = b->logit_chunk;
    if (plan->max_logit_rows && plan->max_logit_rows < chunk)
        chunk = plan->max_logit_rows;
    for (uint32_t i = 0; i < plan->n_items; i++)
        R += b->items[i].R;
    bool one_pass = R <= chunk;   /* b->logits holds the last LM-head pass only */
    uint64_t o = 0;
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const bk_item *x = &b->items[i];
        const dkv_step_item *it = &plan->items[i];
        const bk_req *r = &b->rq[x->req];
        size_t nb = it->n_kv_blocks;
        uint32_t *after = malloc(r->L * 4), *am = malloc(x->B * 4 + 4);
        float *cf = malloc(x->B * 4 + 4), *lg = malloc((size_t)x->B * m->vocab * 4 + 4);
        uint16_t *hid = malloc((size_t)x->B * m->hidden * 2 + 2);
        uint64_t *offs = malloc((nb ? nb : 1) * 8);
        dkv_status st = DKV_OK;
        if (!after || !am || !cf || !lg || !hid || !offs)
            st = dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of host memory");
        cudaError_t e = cudaSuccess;
        if (st == DKV_OK && x->R) {
            uint32_t hrow = x->blk_row;   /* the final-normed logit rows are packed like argmax */
            e = cudaMemcpy(after, b->d_canvas + r->canvas_off, r->L * 4, cudaMemcpyDeviceToHost);
            if (e == cudaSuccess)
                e = cudaMemcpy(am, b->argmax + x->blk_row, x->B * 4, cudaMemcpyDeviceToHost);
            if (e == cudaSuccess)
                e = cudaMemcpy(cf, b->conf + x->blk_row, x->B * 4, cudaMemcpyDeviceToHost);
            if (e == cudaSuccess)
                e = cudaMemcpy(hid, b->h + (size_t)hrow * m->hidden, (size_t)x->B * m->hidden * 2,
                               cudaMemcpyDeviceToHost);
            if (e == cudaSuccess && one_pass)
                e = cudaMemcpy(lg, b->logits + (size_t)x->blk_row * m->vocab, (size_t)x->B * m->vocab * 4,
                               cudaMemcpyDeviceToHost);
            if (e != cudaSuccess)
                st = dkv_err_set(err, DKV_EIO, "cuda backend: item report: %s", cudaGetErrorString(e));
        }
        if (st == DKV_OK && x->R && b->o.follow) {
            if (!one_pass)
                st = dkv_err_set(err, DKV_EINVAL, "cuda backend: follow needs every logit row in one LM-head pass (%u "
                                 "rows, max_logit_rows %u)", R, chunk);
            else
                st = follow_item(b, plan, x, before + o, after, err);
        }
        if (st == DKV_OK && x->R) {
            for (size_t j = 0; j < nb; j++)
                offs[j] = (uint64_t)it->kv_blocks[j] * b->block_bytes;
            dkv_cuda_item_report rp = {
                .step_index = plan->step_index, .item = i, .request = it->request, .block = it->block,
                .step = it->step, .phase = it->phase, .prompt = r->P, .canvas = r->L, .block_start = x->s_b,
                .block_len = x->B, .q_tokens = it->q_tokens, .kv_tokens = it->kv_tokens,
                .kv_write_tokens = it->kv_write_tokens, .logit_rows = it->logit_rows, .tokens_before = before + o,
                .tokens_after = after, .argmax = am, .conf = cf, .hidden = hid, .logits = one_pass ? lg : NULL,
                .vocab = m->vocab, .kv_blocks = it->kv_blocks, .n_kv_blocks = it->n_kv_blocks, .kv_offsets = offs};
            b->o.on_item(b->o.on_item_user, &rp);
        }
        free(after), free(am), free(cf), free(lg), free(hid), free(offs);
        if (st != DKV_OK)
            return st;
        o += r->L;
    }
    return DKV_OK;
}

/* The cost model's counts of plan into cs (initialised here; the caller frees it), HBM bytes
 * through the run's GPU preset's L2, as its simulated twin counts them. */
static dkv_status bk_count(const dkv_cuda_backend *b, const dkv_step_plan *plan, dkv_cost_step *cs, dkv_err *err)
{
    dkv_cost_hw hw = dkv_cost_hw_of(&b->g);
    dkv_cost_step_init(cs);
    return dkv_cost_count_hw(&b->m, &hw, plan, cs, err);
}

/* The host clock of one step (dkv_step_cost's host_enqueue_s, host_wait_s and stall). */
typedef struct {
    double t0, t_enq, t_wait, t_block;
} bk_step_wall;

/* The step's work on the device: transfers before, the batched forward, device-side transfers,
 * transfers after, between timing events; then waits for the step's end (and for a blocking
 * copy).  With on_item, each item's canvas before and results after are reported. */
static dkv_status step_execute(dkv_cuda_backend *b, const dkv_step_plan *plan, uint32_t T, uint32_t R,
                               bk_step_wall *w, dkv_err *err)
{
    uint32_t *before = NULL;
    if (b->o.on_item)
        DKV_TRY(debug_items(b, plan, &before, err));
    dkv_status st = DKV_OK;
    if (b->probe)   /* the step's start: every SM's cycle counter and the global timer */
        st = dkv_sm_probe_mark(b->probe, false, b->st, err);
    bk_mark(b, (dkv_kernel_class)DKV_BK_STALL);
    if (st == DKV_OK && (st = bk_xfers_before(b, plan, err)) == DKV_OK && (st = bk_forward(b, plan, T, R, err)) == DKV_OK)
        st = bk_xfers_device(b, plan, err);
    if (b->probe && st == DKV_OK)   /* and its end */
        st = dkv_sm_probe_mark(b->probe, true, b->st, err);
    bk_mark(b, DKV_KCLASS_N);
    if (st == DKV_OK && b->ev_fail)
        st = dkv_err_set(err, DKV_EIO, "cuda backend: recording timing events failed (more than %d segments?)",
                         DKV_BK_EVENTS);
    cudaEvent_t end = b->ev[b->n_ev - 1];
    if (st == DKV_OK)
        st = bk_xfers_after(b, plan, end, err);
    w->t_enq = bk_now();
    cudaError_t e = cudaEventSynchronize(end);
    w->t_wait = bk_now() - w->t_enq;
    if (st == DKV_OK && e != cudaSuccess)
        st = dkv_err_set(err, DKV_EIO, "cuda backend: step %llu failed on the device: %s",
                         (unsigned long long)plan->step_index, cudaGetErrorString(e));
    w->t_block = 0;
    if (st == DKV_OK && b->step_block_epoch) {
        double tb = bk_now();
        e = cudaEventSynchronize(b->copies[b->step_block_epoch % BK_COPIES].done);
        w->t_block = bk_now() - tb;
        if (e != cudaSuccess)
            st = dkv_err_set(err, DKV_EIO, "cuda backend: copy failed: %s", cudaGetErrorString(e));
    }
    if (st == DKV_OK && b->o.targets)
        st = bk_teacher_force(b, plan, err);
    if (st == DKV_OK && b->o.on_item)
        st = report_items(b, plan, before, err);
    if (st == DKV_OK)
        st = bk_report_entropy(b, plan, err);
    free(before);
    return st;
}

/* Measured: the time of each kernel class (segments between the events, at cls[]), the span from
 * the first event to the last (*span), and this step's copies that are done (*pcie). */
static void step_measure(dkv_cuda_backend *b, uint32_t first_epoch, double *cls, double *span, double *pcie)
{
    float ms;
    for (uint32_t k = 0; k + 1 < b->n_ev; k++)
        if (cudaEventElapsedTime(&ms, b->ev[k], b->ev[k + 1]) == cudaSuccess)
            cls[b->ev_class[k]] += ms * 1e-3;
    if (b->n_ev > 1 && cudaEventElapsedTime(&ms, b->ev[0], b->ev[b->n_ev - 1]) == cudaSuccess)
        *span = ms * 1e-3;
    for (uint32_t ep = first_epoch + 1; ep <= b->epoch; ep++) {   /* this step's copies that are done */
        bk_copy *c = &b->copies[ep % BK_COPIES];
        if (cudaEventQuery(c->done) == cudaSuccess && cudaEventElapsedTime(&ms, c->start, c->done) == cudaSuccess)
            *pcie += ms * 1e-3;
    }
}

/* Counted: the cost model's FLOPs and bytes of the same plan (core/cost), at *tot; one kernel
 * record per class that launched or has a count (measured time beside counted work); the number
 * of launches at *n_kernels. */
static dkv_status step_count(dkv_cuda_backend *b, const dkv_step_plan *plan, const double *cls, dkv_cost_totals *tot,
                             uint32_t *n_kernels, dkv_err *err)
{
    dkv_cost_step cs;
    dkv_status cst = bk_count(b, plan, &cs, err);
    if (cst != DKV_OK) {
        dkv_cost_step_free(&cs);
        return cst;
    }
    dkv_cost_step_totals(&cs, tot);
    uint32_t n_k = 0;
    for (int c = 0; c < DKV_KCLASS_N; c++) {
        n_k += b->launches[c];
        dkv_kernel_record cr = {0};
        bool have = dkv_cost_class_record(&cs, (dkv_kernel_class)c, plan->step_index, &cr);
        if (!b->on_kernel || (!b->launches[c] && !have))
            continue;
        dkv_kernel_record r = {.step_index = plan->step_index, .kind = (dkv_kernel_class)c, .layer = UINT32_MAX,
                               .n_launches = b->launches[c], .time_s = b->o.class_timing ? cls[c] : NAN,
                               .flops = cr.flops, .read_bytes = cr.read_bytes, .write_bytes = cr.write_bytes};
        b->on_kernel(b->on_kernel_user, &r);
    }
    dkv_cost_step_free(&cs);
    *n_kernels = n_k;
    return DKV_OK;
}

/* Requests whose last step this was give their host slot back (later copies are ordered after). */
static void step_release_slots(dkv_cuda_backend *b, const dkv_step_plan *plan)
{
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const dkv_step_item *it = &plan->items[i];
        bk_req *r = &b->rq[it->request];
        if (r->host_slot >= 0 && it->block + 1 == r->n_blocks && it->step + 1 >= it->steps_in_block) {
            b->slot_free[b->n_slot_free++] = r->host_slot;
            r->host_slot = -1;
        }
    }
}

static dkv_status bk_run_step(void *ctx, const dkv_step_plan *plan, dkv_step_cost *out, dkv_err *err)
{
    dkv_cuda_backend *b = ctx;
    if (!b->begun)
        return dkv_err_set(err, DKV_ESTATE, "cuda backend: run_step before begin");
    bk_step_wall w = {.t0 = bk_now()};
    if (b->o.device != 0 && cudaSetDevice(b->o.device) != cudaSuccess)   /* this thread's device */
        return dkv_err_set(err, DKV_EIO, "cuda backend: cudaSetDevice(%d) failed", b->o.device);
    memset(out, 0, sizeof *out);
    memset(b->launches, 0, sizeof b->launches);
    b->n_ev = 0;
    b->ev_fail = false;
    b->step_pcie_h2d = b->step_pcie_d2h = 0;
    b->step_n_fetch = 0;
    b->step_block_epoch = 0;
    uint32_t T = 0, R = 0, first_epoch = b->epoch;
    if (plan->n_items == 0)
        return plan->n_xfers ? dkv_err_set(err, DKV_EINVAL, "cuda backend: transfer orders in a step without items")
                             : DKV_OK;
    DKV_TRY(bk_prepare(b, plan, &T, &R, err));
    DKV_TRY(step_execute(b, plan, T, R, &w, err));
    double wall = bk_now() - w.t0;
    double cls[DKV_KCLASS_N + 2] = {0}, span = 0, pcie = 0;
    step_measure(b, first_epoch, cls, &span, &pcie);
    double stall = cls[DKV_BK_STALL];
    dkv_cost_totals tot;
    uint32_t n_k = 0;
    DKV_TRY(step_count(b, plan, cls, &tot, &n_k, err));
    out->time_s = wall;
    out->host_enqueue_s = w.t_enq - w.t0;
    out->host_wait_s = w.t_wait + w.t_block;
    double mhz = dkv_cuda_clock_mean(b->clock, w.t0, w.t0 + wall);
    out->sm_mhz = isnan(mhz) ? 0 : mhz;
    out->sm_probe_mhz = b->probe ? dkv_sm_probe_mhz(b->probe) : 0;
    out->compute_s = span - stall > 0 ? span - stall : 0;
    out->pcie_s = pcie;
    out->stall_s = stall + w.t_block;
    out->flops = tot.flops;
    out->hbm_read_bytes = tot.hbm_read_bytes;
    out->hbm_write_bytes = tot.hbm_write_bytes;
    out->pcie_h2d_bytes = b->step_pcie_h2d;
    out->pcie_d2h_bytes = b->step_pcie_d2h;
    out->n_kernels = n_k;
    out->flops_util = out->compute_s > 0 ? out->flops / (out->compute_s * b->g.flops_bf16) : 0;
    out->bw_util = out->compute_s > 0
                       ? (double)(out->hbm_read_bytes + out->hbm_write_bytes) / (out->compute_s * b->g.hbm_bw) : 0;
    b->rep.steps++;
    b->rep.items += plan->n_items;
    b->rep.gpu_time_s += span;
    b->rep.wall_time_s += wall;
    DKV_TRY(sample_memory(b, plan, err));
    step_release_slots(b, plan);
    return DKV_OK;
}

static void bk_end(void *ctx)
{
    dkv_cuda_backend *b = ctx;
    if (!b->begun)
        return;
    bk_copies_reap(b, true);
    b->rep.scratch_bytes = b->scratch_bytes;
    b->rep.devmem_counted_bytes = b->dm.peak;
    b->rep.devmem_allocated_bytes = b->alloc_peak;
    if (b->o.report) {
        dkv_cuda_backend_report_clear(b->o.report);
        *b->o.report = b->rep;   /* the series and the scores move to the caller */
        b->rep.series = NULL;
        b->rep.n_series = 0;
        b->rep.score = NULL;
        b->rep.n_score = 0;
        b->cap_series = 0;
    }
    teardown(b);
}

static void bk_free(void *ctx)
{
    dkv_cuda_backend *b = ctx;
    if (!b)
        return;
    if (b->begun || b->ctx || b->rq)
        teardown(b);
    free(b->rep.series);
    free(b->rep.score);
    free(b);
}

static const dkv_backend_i cuda_iface = {
    .name = "cuda", .begin = bk_begin, .run_step = bk_run_step, .end = bk_end, .free = bk_free,
};

dkv_status dkv_cuda_backend_new(const dkv_cuda_backend_options *o, dkv_backend *out, dkv_err *err)
{
    out->iface = NULL;
    out->ctx = NULL;
    if (!o)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: no options");
    char desc[160] = "";
    DKV_TRY(dkv_cuda_probe(desc, sizeof desc, err));
    dkv_cuda_backend *b = calloc(1, sizeof *b);
    if (!b)
        return dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of host memory");
    if (o->follow && o->targets) {
        free(b);
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: options.follow and options.targets both decide the committed "
                           "tokens: give one");
    }
    if (o->follow && !o->on_item) {
        free(b);
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: options.follow needs options.on_item (replay runs "
                           "synchronously, item by item)");
    }
    if (o->n_l2_flush > DKV_CUDA_L2_FLUSH_MAX || (o->n_l2_flush && !o->l2_flush)) {
        free(b);
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: options.l2_flush: %u points (at most %d)", o->n_l2_flush,
                           DKV_CUDA_L2_FLUSH_MAX);
    }
    for (uint32_t i = 0; i < o->n_l2_flush; i++)
        if ((unsigned)o->l2_flush[i].after >= DKV_CUDA_L2P_N || (unsigned)o->l2_flush[i].read >= DKV_CUDA_L2B_N) {
            free(b);
            return dkv_err_set(err, DKV_EINVAL, "cuda backend: options.l2_flush[%u]: after %d is no point of a layer, "
                               "or read %d no buffer", i, (int)o->l2_flush[i].after, (int)o->l2_flush[i].read);
        }
    b->o = *o;
    if (o->n_l2_flush)
        memcpy(b->l2f, o->l2_flush, o->n_l2_flush * sizeof b->l2f[0]);
    b->o.l2_flush = b->l2f;
    snprintf(b->desc, sizeof b->desc, "%s", desc);
    out->iface = &cuda_iface;
    out->ctx = b;
    return DKV_OK;
}

void *dkv_cuda_backend_block_ptr(const dkv_backend *be, uint32_t block)
{
    if (!be || be->iface != &cuda_iface)
        return NULL;
    const dkv_cuda_backend *b = be->ctx;
    if (!b->arena || block >= b->n_pool)
        return NULL;
    return (char *)b->arena + (uint64_t)block * b->block_bytes;
}

uint64_t dkv_cuda_backend_block_bytes(const dkv_backend *be)
{
    if (!be || be->iface != &cuda_iface)
        return 0;
    return ((const dkv_cuda_backend *)be->ctx)->block_bytes;
}
