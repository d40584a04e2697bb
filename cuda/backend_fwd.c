/* backend_fwd.c - the CUDA backend's batched forward: the rows of every item of a plan in one
 * pass (GEMMs, norms, RoPE and the KV store once per layer over all rows; attention per item
 * over its own block table), then the LM head over all logit rows and the unmask. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>

#include "cuda/backend_internal.h"


#define DENSE_MIN_TOKENS 128   /* per-item Refresh attention from this many rows: dkv_cuda_attention_dense */
#define AL(x) (((x) + 255) / 256 * 256)

/* ------------------------------------------------------------------ scratch */

dkv_status bk_scratch_init(dkv_cuda_backend *b, dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t Lmax = b->max_L, H = m->n_heads, Hkv = m->n_kv_heads, D = m->head_dim, B = b->dec.block_len;
    b->n_side = b->o.attn_streams > 1 ? b->o.attn_streams : 0;
    if (b->n_side > DKV_BK_MAX_STREAMS)
        b->n_side = DKV_BK_MAX_STREAMS;
    for (uint32_t q = 1; q <= Lmax; q++) {
        size_t x = dkv_cuda_attention_workspace_bytes(q, H, D, 2 * Lmax);
        b->attn_ws_bytes = x > b->attn_ws_bytes ? x : b->attn_ws_bytes;
    }
    (void)Hkv;   /* dense Refresh attention: the flash kernel (head_dim 64/128), no workspace */
    b->logit_chunk = b->o.max_logit_rows ? b->o.max_logit_rows : 1024;
    size_t n_ws = b->n_side + 1;
    b->score_ws_bytes = dkv_bk_scores_workspace_bytes(B, Lmax, H);
    size_t sz[] = {AL(b->attn_ws_bytes) * n_ws, 0, AL((size_t)m->n_kv_heads * Lmax * 4),
                   AL(b->score_ws_bytes), AL((size_t)Hkv * Lmax * 4), AL((size_t)b->logit_chunk * m->vocab * 4)};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++)
        total += sz[i];
    if (b->attn_ws_bytes != 0 || total != dkv_devmem_workspace_bytes(m, &b->dm.c))
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: the workspaces take %zu bytes (attention %zu), "
                           "core/model/devmem.c counts %llu: update dkv_devmem_workspace_bytes", total,
                           b->attn_ws_bytes, (unsigned long long)dkv_devmem_workspace_bytes(m, &b->dm.c));
    DKV_CU(cudaMalloc(&b->ws_mem, total));
    bk_alloc_note(b, (int64_t)total);
    char *p = b->ws_mem;
    for (size_t i = 0; i < n_ws; i++)
        b->attn_ws[i] = (float *)(p + i * AL(b->attn_ws_bytes));
    p += sz[0];
    p += sz[1];
    b->score = (float *)p, p += sz[2];
    b->score_ws = (float *)p, p += sz[3];
    b->sel = (uint32_t *)p, p += sz[4];
    b->logits = (float *)p;
    b->scratch_bytes = total;
    for (uint32_t i = 0; i < b->n_side; i++) {
        DKV_CU(cudaStreamCreateWithFlags(&b->side[i], cudaStreamNonBlocking));
        DKV_CU(cudaEventCreateWithFlags(&b->join[i], cudaEventDisableTiming));
    }
    DKV_CU(cudaEventCreateWithFlags(&b->fork, cudaEventDisableTiming));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(h, b->st) != CUBLAS_STATUS_SUCCESS)
        return dkv_err_set(err, DKV_EIO, "cuda backend: cuBLAS handle for the selection scores failed");
    b->blas = h;
    return DKV_OK;
}

dkv_status bk_scratch_reserve(dkv_cuda_backend *b, uint32_t T, uint32_t R, dkv_err *err)
{
    dkv_devmem_rows(&b->dm, T, R);   /* the count follows the same rule */
    uint32_t nT = b->act_mem ? b->cap_T : 0, nR = b->act_mem ? b->cap_R : 0;
    if (!dkv_devmem_act_grow(T, R, &nT, &nR))
        return DKV_OK;
    const dkv_model *m = &b->m;
    size_t C = m->hidden, F = m->ffn, QD = (size_t)m->n_heads * m->head_dim,
           QKV = QD + 2 * (size_t)m->n_kv_heads * m->head_dim;
    size_t sz[] = {AL(nT * C * 2), AL(nT * C * 2), AL(nT * QKV * 2), AL(nT * QD * 2), AL(nT * 2 * F * 2),
                   AL(nT * F * 2), AL((size_t)nR * 4), AL((size_t)nR * 4)};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++)
        total += sz[i];
    DKV_CU(cudaStreamSynchronize(b->st));
    if (total != dkv_devmem_act_bytes(m, nT, nR))
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: activations of %zu bytes, core/model/devmem.c counts "
                           "%llu: update dkv_devmem_act_bytes", total,
                           (unsigned long long)dkv_devmem_act_bytes(m, nT, nR));
    if (b->act_mem) {
        b->scratch_bytes -= (uint64_t)b->cap_bytes_act;
        bk_alloc_note(b, -(int64_t)b->cap_bytes_act);
        cudaFree(b->act_mem);
        b->act_mem = NULL;
    }
    cudaError_t e = cudaMalloc(&b->act_mem, total);
    if (e != cudaSuccess)
        return dkv_err_set(err, DKV_ENOMEM, "cuda backend: activations for %u rows (%zu bytes): %s", nT, total,
                           cudaGetErrorString(e));
    char *p = b->act_mem;
    dkv_bf16 **bf[] = {&b->x, &b->h, &b->qkv, &b->att, &b->gu, &b->ff};
    for (int i = 0; i < 6; i++)
        *bf[i] = (dkv_bf16 *)p, p += sz[i];
    b->argmax = (uint32_t *)p, p += sz[6];
    b->conf = (float *)p;
    b->cap_T = nT, b->cap_R = nR;
    b->cap_bytes_act = total;
    b->scratch_bytes += total;
    bk_alloc_note(b, (int64_t)total);
    return DKV_OK;
}

void bk_scratch_free(dkv_cuda_backend *b)
{
    for (uint32_t i = 0; i < b->n_side; i++) {
        if (b->side[i]) {
            cudaStreamSynchronize(b->side[i]);
            cudaStreamDestroy(b->side[i]);
        }
        if (b->join[i])
            cudaEventDestroy(b->join[i]);
        b->side[i] = NULL, b->join[i] = NULL;
    }
    if (b->fork)
        cudaEventDestroy(b->fork);
    b->fork = NULL;
    if (b->blas)
        cublasDestroy((cublasHandle_t)b->blas);
    b->blas = NULL;
    cudaFree(b->act_mem);
    cudaFree(b->ws_mem);
    cudaFree(b->fp8_scale);
    cudaFree(b->d_ent);
    b->act_mem = b->ws_mem = NULL;
    b->fp8_scale = b->d_ent = NULL;
    b->pool.scale = NULL;
    b->ent_cap = 0;
    b->cap_T = b->cap_R = 0;
}

/* ------------------------------------------------------------------ timing marks */

void bk_mark(dkv_cuda_backend *b, dkv_kernel_class c)
{
    bool edge = b->n_ev == 0 || c == DKV_KCLASS_N || b->ev_class[b->n_ev - 1] == DKV_BK_STALL;
    if (!edge && !b->o.class_timing)
        return;
    if (b->n_ev > 0 && b->ev_class[b->n_ev - 1] == (uint8_t)c)
        return;   /* the segment goes on */
    if (b->n_ev >= DKV_BK_EVENTS) {
        b->ev_fail = true;
        return;
    }
    if (cudaEventRecord(b->ev[b->n_ev], b->st) != cudaSuccess)
        b->ev_fail = true;
    b->ev_class[b->n_ev++] = (uint8_t)c;
}

/* ------------------------------------------------------------------ the step's items */

static dkv_status ensure_meta(dkv_cuda_backend *b, size_t bytes, dkv_err *err)
{
    if (bytes <= b->cap_meta)
        return DKV_OK;
    size_t nb = bytes + bytes / 2 + 4096;
    DKV_CU(cudaStreamSynchronize(b->st));
    cudaFreeHost(b->h_meta);
    cudaFree(b->d_meta);
    b->h_meta = b->d_meta = NULL;
    b->cap_meta = 0;
    DKV_CU(cudaMallocHost(&b->h_meta, nb));
    DKV_CU(cudaMalloc(&b->d_meta, nb));
    b->cap_meta = nb;
    b->rep.meta_bytes = nb;
    return DKV_OK;
}

static uint32_t cdiv(uint64_t a, uint64_t d) { return (uint32_t)((a + d - 1) / d); }

/* The item's computation from its token counts (DESIGN.md's table), checked against the mode. */
static dkv_status plan_item(dkv_cuda_backend *b, const dkv_step_item *it, uint32_t i, bk_item *x, dkv_err *err)
{
    const dkv_decode_cfg *dc = &b->dec;
    if (it->request >= b->n_rq)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u: request %u is not in the workload (%zu requests)",
                           i, it->request, b->n_rq);
    const bk_req *r = &b->rq[it->request];
    uint32_t B = dc->block_len, L = r->L;
    if (it->block >= r->n_blocks)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u: request %u has %u blocks, the plan runs block %u",
                           i, it->request, r->n_blocks, it->block);
    memset(x, 0, sizeof *x);
    x->req = it->request;
    x->s_b = r->P + it->block * B;
    x->B = B;
    x->nq = it->q_tokens;
    x->refresh = it->phase == DKV_STEP_REFRESH;
    uint32_t a = it->kv_tokens, w = it->kv_write_tokens, cached = it->kv_cached_tokens;
    if (x->refresh) {
        if (x->nq != L || a != L)
            return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u (request %u): a Refresh computes and attends "
                               "the canvas (q = a = L = %u), the plan has q = %u, a = %u", i, it->request, L, x->nq, a);
        x->q0 = 0, x->cache = DKV_KV_SRC_NONE, x->n_own = L;
        if (w > 0 && dc->cache == DKV_CACHE_SPARSE) {
            if (w > L - B)
                return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u: sparse selection keeps %u of %u tokens "
                                   "outside the block", i, w, L - B);
            x->write = BK_W_SELECT, x->keep = w, x->need_tokens = w;
            x->shared_set = dc->shared_set;
        } else if (w > 0) {
            if (w > L)
                return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u: writes %u > canvas %u", i, w, L);
            x->write = BK_W_STORE, x->w_lo = 0, x->w_n = w, x->need_tokens = w;
        }
    } else {
        x->q0 = x->s_b;
        if (x->q0 + x->nq > L || cached > a)
            return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u (request %u): Reuse rows [%u, %u) and cached "
                               "%u of %u keys do not fit a canvas of %u", i, it->request, x->q0, x->q0 + x->nq,
                               cached, a, L);
        if (w > 0) {   /* dual: the block's KV in place first, then every key from the pool */
            if (w > x->nq || a > L)
                return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u: in-place write of %u rows with %u "
                                   "computed and %u attended", i, w, x->nq, a);
            x->write = BK_W_STORE, x->w_lo = x->s_b, x->w_n = w;
            x->cache = DKV_KV_SRC_PAGED, x->n_cache = a, x->n_own = 0;
            x->need_tokens = a > x->s_b + w ? a : x->s_b + w;
        } else {       /* prefix: cached prefix + own rows; sparse: retained slots + own block */
            if (a - cached != x->nq)
                return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u (request %u): attends %u computed keys "
                                   "but computes %u rows", i, it->request, a - cached, x->nq);
            x->cache = cached ? DKV_KV_SRC_PAGED : DKV_KV_SRC_NONE;
            x->n_cache = cached, x->n_own = x->nq, x->need_tokens = cached;
        }
    }
    x->R = it->logit_rows;
    if (x->R != 0 && x->R != x->nq && x->R != B)
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u: %u logit rows are neither the block (%u) nor the "
                           "computed rows (%u)", i, x->R, B, x->nq);
    if (x->R && (x->s_b < x->q0 || x->s_b + B > x->q0 + x->nq))
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u: the block [%u, %u) is not among the computed rows",
                           i, x->s_b, x->s_b + B);
    return DKV_OK;
}

dkv_status bk_prepare(dkv_cuda_backend *b, const dkv_step_plan *plan, uint32_t *T_out, uint32_t *R_out, dkv_err *err)
{
    uint32_t n = plan->n_items, bt = b->block_tokens;
    if (n > b->cap_items) {
        bk_item *ni = realloc(b->items, (size_t)n * 2 * sizeof *ni);
        if (ni)
            b->items = ni;
        dkv_cuda_attn_item *na = ni ? realloc(b->attn_items, (size_t)n * 2 * sizeof *na) : NULL;
        if (!ni || !na)
            return dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of host memory");
        b->attn_items = na;
        b->cap_items = (size_t)n * 2;
    }
    uint32_t T = 0, R = 0, NB = 1;
    b->staging_used = 0;
    b->n_measure = 0;
    for (uint32_t i = 0; i < n; i++) {
        bk_item *x = &b->items[i];
        DKV_TRY(plan_item(b, &plan->items[i], i, x, err));
        x->measure = b->on_entropy && b->dec.cache == DKV_CACHE_SPARSE && plan->items[i].step == 0 && x->refresh;
        x->ent_slot = x->measure ? b->n_measure++ : 0;
        x->off = T, x->lr = R;
        T += x->nq, R += x->R;
        x->blk_row = x->lr + (x->R == x->nq ? x->s_b - x->q0 : 0);
        x->tb = NB;
        x->n_tb = cdiv(x->need_tokens, bt);
        x->n_chain = plan->items[i].n_kv_blocks < x->n_tb ? plan->items[i].n_kv_blocks : x->n_tb;
        if (x->n_tb > 0 && x->n_chain > 0 && !plan->items[i].kv_blocks)
            return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u (request %u) holds %u pool blocks but the plan "
                               "gives no block ids (kv_blocks): the engine must run a block pool (mem.kind "
                               "'blockpool')", i, plan->items[i].request, plan->items[i].n_kv_blocks);
        NB += x->n_tb;
    }
    DKV_TRY(bk_scratch_reserve(b, T, R, err));
    /* the batched attention's items: queries and own keys are the item's rows, cached keys
     * through its segment of the step's block table */
    for (uint32_t i = 0; i < n; i++) {
        const bk_item *x = &b->items[i];
        b->attn_items[i] = (dkv_cuda_attn_item){.q_row = x->off, .n_q = x->nq, .own_row = x->off, .n_own = x->n_own,
                                                .n_cache = x->cache == DKV_KV_SRC_PAGED ? x->n_cache : 0,
                                                .table_off = x->tb};
    }
    dkv_cuda_attn_batch *ab = &b->attn_batch;
    uint32_t n_attn = b->o.attn_per_item ? 0 : n;   /* per-item attention: an empty batch */
    DKV_TRY(dkv_cuda_attn_batch_plan(ab, b->attn_items, n_attn, b->m.n_heads, b->m.head_dim, NULL, 0, err));
    size_t off_pos = 0, off_spos = AL((size_t)T * 4), off_tab = off_spos + AL((size_t)T * 4),
           off_items = off_tab + AL((size_t)NB * 4), off_attn = off_items + AL((size_t)n * sizeof(dkv_bk_item)),
           bytes = off_attn + ab->bytes;
    DKV_TRY(ensure_meta(b, bytes, err));
    char *hm = b->h_meta;
    uint32_t *pos = (uint32_t *)(hm + off_pos), *spos = (uint32_t *)(hm + off_spos), *tab = (uint32_t *)(hm + off_tab);
    dkv_bk_item *hit = (dkv_bk_item *)(hm + off_items);
    tab[0] = b->discard;
    for (uint32_t i = 0; i < n; i++) {
        bk_item *x = &b->items[i];
        const dkv_step_item *it = &plan->items[i];
        bk_req *r = &b->rq[x->req];
        for (uint32_t j = 0; j < x->n_chain; j++) {
            uint32_t id = it->kv_blocks[j];
            if (id >= b->n_pool)
                return dkv_err_set(err, DKV_EINVAL, "cuda backend: item %u (request %u): pool block %u is outside the "
                                   "device arena (%u blocks; setup.pool.n_blocks)", i, x->req, id, b->n_pool);
            tab[x->tb + j] = id;
        }
        if (x->n_tb > x->n_chain) {   /* positions the request no longer holds: staging blocks */
            uint32_t first = bk_staging_take(b, x->n_tb - x->n_chain);
            if (first == UINT32_MAX)
                return dkv_err_set(err, DKV_ENOMEM, "cuda backend: item %u (request %u) needs %u staging blocks for "
                                   "KV it does not hold on the device; %u of %u are left (setup.pool.staging_blocks)",
                                   i, x->req, x->n_tb - x->n_chain, b->n_staging - b->staging_used + (x->n_tb - x->n_chain),
                                   b->n_staging);
            for (uint32_t j = x->n_chain; j < x->n_tb; j++)
                tab[x->tb + j] = first + (j - x->n_chain);
        }
        for (uint32_t t = 0; t < x->nq; t++) {
            uint32_t p = x->q0 + t, row = x->off + t;
            pos[row] = p;
            bool wr = x->write == BK_W_STORE && p >= x->w_lo && p < x->w_lo + x->w_n;
            spos[row] = wr ? x->tb * bt + p : row % bt;
        }
        /* the unmask rule, mirrored on the host: ceil(masked / steps left) per step */
        if (it->step == 0 || r->cur_block != it->block) {
            r->cur_block = it->block;
            r->masked = x->B;
        }
        uint32_t S = it->steps_in_block, left = it->step < S ? S - it->step : 1, nu = x->R ? (r->masked + left - 1) / left : 0;
        if (nu > r->masked)
            nu = r->masked;
        r->masked -= nu;
        x->n_unmask = nu;   /* with targets the host commits them (backend_score.c), the device none */
        hit[i] = (dkv_bk_item){.tokens = b->d_canvas + r->canvas_off, .block_start = x->s_b, .block_len = x->B,
                               .reset = it->step == 0, .n_unmask = b->o.targets ? 0 : nu, .logit_row = x->blk_row};
    }
    DKV_TRY(dkv_cuda_attn_batch_plan(ab, b->attn_items, n_attn, b->m.n_heads, b->m.head_dim, hm + off_attn, ab->bytes,
                                 err));
    char *dm = b->d_meta;
    b->d_attn_meta = dm + off_attn;
    b->d_pos = (uint32_t *)(dm + off_pos), b->d_spos = (uint32_t *)(dm + off_spos);
    b->d_table = (uint32_t *)(dm + off_tab), b->d_items = (dkv_bk_item *)(dm + off_items);
    DKV_CU(cudaMemcpyAsync(b->d_meta, b->h_meta, bytes, cudaMemcpyHostToDevice, b->st));
    *T_out = T, *R_out = R;
    return DKV_OK;
}

/* ------------------------------------------------------------------ the forward */

static dkv_status attention(dkv_cuda_backend *b, const bk_item *x, uint32_t l, cudaStream_t s, float *ws,
                            dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, QD = H * D, KD = Hkv * D, QKV = QD + 2 * KD;
    dkv_bf16 *q = b->qkv + (size_t)x->off * QKV, *k = q + QD, *v = q + QD + KD, *out = b->att + (size_t)x->off * QD;
    if (x->cache == DKV_KV_SRC_NONE && x->nq >= DENSE_MIN_TOKENS) {
        b->launches[DKV_KCLASS_ATTN] += 3;
        return dkv_cuda_attention_dense(b->ctx, out, QD, q, QKV, k, v, QKV, x->nq, x->n_own, H, Hkv, D, NULL, 0, err);
    }
    dkv_cuda_attn_args at = {.out = out, .q = q, .ldq = QKV, .ldo = QD, .Tq = x->nq, .n_heads = H, .n_kv_heads = Hkv,
                             .head_dim = D, .k_own = k, .v_own = v, .ld_own = QKV, .n_own = x->n_own,
                             .workspace = ws, .workspace_bytes = b->attn_ws_bytes};
    at.cache.kind = x->cache;
    at.cache.n_tokens = x->n_cache;
    if (x->cache == DKV_KV_SRC_PAGED)
        at.cache.pool = &b->pool, at.cache.block_table = b->d_table + x->tb, at.cache.layer = l;
    b->launches[DKV_KCLASS_ATTN] += 2;
    return dkv_cuda_attention(&at, s, err);
}

static dkv_status layer_attention(dkv_cuda_backend *b, uint32_t n, uint32_t l, dkv_err *err)
{
    if (!b->o.attn_per_item) {   /* every item in one launch per kernel shape */
        const dkv_model *m = &b->m;
        uint32_t QD = m->n_heads * m->head_dim, KD = m->n_kv_heads * m->head_dim, QKV = QD + 2 * KD;
        const dkv_cuda_attn_batch *ab = &b->attn_batch;
        dkv_cuda_attn_batch_args a = {.out = b->att, .q = b->qkv, .ldq = QKV, .ldo = QD, .n_heads = m->n_heads,
                                      .n_kv_heads = m->n_kv_heads, .head_dim = m->head_dim, .k_own = b->qkv + QD,
                                      .v_own = b->qkv + QD + KD, .ld_own = QKV, .pool = &b->pool,
                                      .block_table = b->d_table, .layer = l, .batch = ab, .meta = b->d_attn_meta};
        b->launches[DKV_KCLASS_ATTN] += (ab->n_tiles[0] > 0) + (ab->n_tiles[1] > 0);
        return dkv_cuda_attention_batch(&a, b->st, err);
    }
    /* Reuse items (paged) spread over the side streams, Refresh items on the compute stream
     * meanwhile; the compute stream then waits for the side streams */
    uint32_t n_side_items = 0;
    for (uint32_t i = 0; b->n_side && i < n; i++)
        n_side_items += b->items[i].cache == DKV_KV_SRC_PAGED;
    uint32_t used = n_side_items < b->n_side ? n_side_items : b->n_side;
    if (used) {
        DKV_CU(cudaEventRecord(b->fork, b->st));
        for (uint32_t s = 0; s < used; s++)
            DKV_CU(cudaStreamWaitEvent(b->side[s], b->fork, 0));
        uint32_t j = 0;
        for (uint32_t i = 0; i < n; i++) {
            const bk_item *x = &b->items[i];
            if (x->cache != DKV_KV_SRC_PAGED)
                continue;
            uint32_t s = j++ % b->n_side;
            DKV_TRY(attention(b, x, l, b->side[s], b->attn_ws[s], err));
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        const bk_item *x = &b->items[i];
        if (used && x->cache == DKV_KV_SRC_PAGED)
            continue;
        DKV_TRY(attention(b, x, l, b->st, b->attn_ws[b->n_side], err));
    }
    for (uint32_t s = 0; s < used; s++) {
        DKV_CU(cudaEventRecord(b->join[s], b->side[s]));
        DKV_CU(cudaStreamWaitEvent(b->st, b->join[s], 0));
    }
    return DKV_OK;
}

/* setup.on_entropy: each measuring item's block rows against its whole canvas (a sparse block's
 * step 0 is a Refresh), per head, into d_ent (slot, layer, head, row). */
static dkv_status layer_entropy(dkv_cuda_backend *b, uint32_t n, uint32_t l, dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, QD = H * D, KD = Hkv * D, QKV = QD + 2 * KD,
             B = b->dec.block_len;
    size_t need = (size_t)b->n_measure * m->n_layers * H * B;
    if (l == 0 && need > b->ent_cap) {
        cudaFree(b->d_ent);
        b->d_ent = NULL, b->ent_cap = 0;
        DKV_CU(cudaMalloc((void **)&b->d_ent, need * sizeof(float)));
        b->ent_cap = need;
    }
    for (uint32_t i = 0; i < n; i++) {
        const bk_item *x = &b->items[i];
        if (!x->measure)
            continue;
        dkv_bf16 *q = b->qkv + (size_t)x->off * QKV, *k = q + QD;
        float *out = b->d_ent + ((size_t)x->ent_slot * m->n_layers + l) * H * B;
        DKV_TRY(dkv_bk_entropy(b->blas, out, q + (size_t)(x->s_b - x->q0) * QKV, QKV, x->B, k, QKV, x->nq, H, Hkv, D,
                               b->score_ws, b->score_ws_bytes, b->st, err));
        b->launches[DKV_KCLASS_ATTN] += 3;
    }
    return DKV_OK;
}

dkv_status bk_report_entropy(dkv_cuda_backend *b, const dkv_step_plan *plan, dkv_err *err)
{
    if (!b->n_measure)
        return DKV_OK;
    const dkv_model *m = &b->m;
    size_t per = (size_t)m->n_layers * m->n_heads * b->dec.block_len;
    float *h = malloc(per * b->n_measure * sizeof *h);
    if (!h)
        return dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of host memory");
    cudaError_t e = cudaMemcpy(h, b->d_ent, per * b->n_measure * sizeof *h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        free(h);
        return dkv_err_set(err, DKV_EIO, "cuda backend: entropy copy: %s", cudaGetErrorString(e));
    }
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const bk_item *x = &b->items[i];
        if (!x->measure)
            continue;
        double sum = 0;   /* the mean over layers, heads and block rows, as the CPU backend's */
        for (size_t j = 0; j < per; j++)
            sum += h[(size_t)x->ent_slot * per + j];
        b->on_entropy(b->on_entropy_user, plan->items[i].request, plan->items[i].block, sum / (double)per);
    }
    free(h);
    return DKV_OK;
}

static dkv_status layer_select(dkv_cuda_backend *b, uint64_t step, uint32_t n, uint32_t l, dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, QD = H * D, KD = Hkv * D, QKV = QD + 2 * KD;
    for (uint32_t i = 0; i < n; i++) {
        const bk_item *x = &b->items[i];
        if (x->write != BK_W_SELECT)
            continue;
        dkv_bf16 *q = b->qkv + (size_t)x->off * QKV, *k = q + QD, *v = q + QD + KD;
        DKV_TRY(dkv_bk_scores(b->blas, b->score, q + (size_t)(x->s_b - x->q0) * QKV, QKV, x->B, k, QKV, x->nq, H, Hkv, D,
                          b->score_ws, b->score_ws_bytes, b->st, err));
        DKV_TRY(dkv_cuda_topk(b->sel, b->score, Hkv, x->nq, x->keep, x->s_b - x->q0, x->s_b - x->q0 + x->B, x->shared_set,
                          b->st, err));
        DKV_TRY(bk_select_replay(b, x, step, l, err));   /* selection report / replay (options.on_select, follow) */
        if (b->kv_fp8) {   /* the kept rows into slots [0, keep) as e4m3 (a store covering the slots) */
            DKV_TRY(bk_fp8_scales(b, err));
            DKV_TRY(dkv_cuda_kv_fp8_store(&b->pool, b->d_table + x->tb, l, k, v, QKV, b->sel, x->shared_set, 0, x->keep,
                                          x->keep, b->st, err));
        } else {
            DKV_TRY(dkv_bk_pack_paged(&b->pool, b->d_table + x->tb, l, k, v, QKV, b->sel, x->keep, x->shared_set, b->st,
                                      err));
        }
        b->launches[DKV_KCLASS_KV_GATHER] += 5;
    }
    return DKV_OK;
}

/* FP8 KV scales (kv_fp8.cu), one per arena block x layer x k|v x head (pool, staging and the
 * discard block: staging0 == n_pool, bk_begin), allocated at first use and zeroed; the pool's
 * kernels find them through b->pool.scale. */
dkv_status bk_fp8_scales(dkv_cuda_backend *b, dkv_err *err)
{
    if (b->fp8_scale)
        return DKV_OK;
    size_t bytes = dkv_devmem_fp8_scale_bytes(&b->m, (uint64_t)b->n_pool + b->n_staging + 1);
    DKV_CU(cudaMalloc((void **)&b->fp8_scale, bytes));
    bk_alloc_note(b, (int64_t)bytes);
    dkv_devmem_fp8(&b->dm);
    DKV_CU(cudaMemsetAsync(b->fp8_scale, 0, bytes, b->st));
    b->pool.scale = b->fp8_scale;
    return DKV_OK;
}

/* FP8 KV: the rows each storing item computes in layer l (its step rows, rotated K and V in qkv)
 * stored as e4m3 before attention reads them (dual's Reuse attends its own block from the pool). */
static dkv_status fp8_layer(dkv_cuda_backend *b, uint32_t n, uint32_t l, dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t QD = m->n_heads * m->head_dim, KD = m->n_kv_heads * m->head_dim, QKV = QD + 2 * KD;
    DKV_TRY(bk_fp8_scales(b, err));
    for (uint32_t i = 0; i < n; i++) {
        const bk_item *x = &b->items[i];
        if (x->write != BK_W_STORE || !x->w_n)
            continue;
        uint32_t hi = x->w_lo + x->w_n, valid = x->need_tokens > hi ? x->need_tokens : hi;
        const dkv_bf16 *k = b->qkv + (size_t)(x->off + x->w_lo - x->q0) * QKV + QD;   /* the row of position w_lo */
        DKV_TRY(dkv_cuda_kv_fp8_store(&b->pool, b->d_table + x->tb, l, k, k + KD, QKV, NULL, false, x->w_lo, hi, valid,
                                      b->st, err));
        b->launches[DKV_KCLASS_KV_STORE]++;
    }
    return DKV_OK;
}

dkv_status bk_forward(dkv_cuda_backend *b, const dkv_step_plan *plan, uint32_t T, uint32_t R, dkv_err *err)
{
    const dkv_model *m = &b->m;
    const dkv_cuda_weights *w = b->w;
    cudaStream_t st = b->st;
    uint32_t n = plan->n_items, C = m->hidden, F = m->ffn, D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads,
             QD = H * D, QKV = QD + 2 * Hkv * D;
    bool any_store = false, any_select = false;
    for (uint32_t i = 0; i < n; i++) {
        any_store |= b->items[i].write == BK_W_STORE;
        any_select |= b->items[i].write == BK_W_SELECT;
    }
    uint32_t *launch = b->launches;
    bk_mark(b, DKV_KCLASS_ELEMENTWISE);
    DKV_TRY(dkv_bk_reset(b->d_items, n, b->mask_id, st, err));
    for (uint32_t i = 0; i < n; i++) {
        const bk_item *x = &b->items[i];
        DKV_TRY(dkv_cuda_embedding(b->x + (size_t)x->off * C, b->d_canvas + b->rq[x->req].canvas_off + x->q0, w->wte,
                               x->nq, C, m->vocab, st, err));
    }
    launch[DKV_KCLASS_ELEMENTWISE] += 1 + n;
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const dkv_cuda_layer *Ly = &w->layers[l];
        bk_mark(b, DKV_KCLASS_ELEMENTWISE);
        DKV_TRY(dkv_cuda_rmsnorm(b->h, b->x, Ly->attn_norm, T, C, w->rms_eps, st, err));
        DKV_TRY(bk_l2_flush(b, l, DKV_CUDA_L2P_NORM, T, err));
        bk_mark(b, DKV_KCLASS_QKV);
        DKV_TRY(dkv_cuda_gemm(b->ctx, b->qkv, b->h, Ly->wqkv, Ly->bqkv, T, C, QKV, 0.0f, err));
        DKV_TRY(bk_l2_flush(b, l, DKV_CUDA_L2P_QKV, T, err));
        if (any_store && b->kv_fp8) {   /* RoPE (the store's kernel, no store), then each item's rows as e4m3 */
            bk_mark(b, DKV_KCLASS_KV_STORE);
            DKV_TRY(dkv_cuda_rope_kv_store(&b->pool, NULL, l, b->qkv, QKV, b->d_pos, T, H, 0, 0, (float)m->rope_theta,
                                           st, err));
            launch[DKV_KCLASS_KV_STORE]++;
            DKV_TRY(fp8_layer(b, n, l, err));
        } else if (any_store) {   /* RoPE and the store of every row (rows not kept go to the discard block) */
            bk_mark(b, DKV_KCLASS_KV_STORE);
            DKV_TRY(dkv_cuda_rope_kv_store_at(&b->pool, b->d_table, l, b->qkv, QKV, b->d_pos, b->d_spos, T, H,
                                          (float)m->rope_theta, st, err));
            launch[DKV_KCLASS_KV_STORE]++;
        } else {
            bk_mark(b, DKV_KCLASS_ELEMENTWISE);
            DKV_TRY(dkv_cuda_rope(b->qkv, QKV, b->d_pos, T, H + Hkv, D, (float)m->rope_theta, st, err));
            launch[DKV_KCLASS_ELEMENTWISE]++;
        }
        launch[DKV_KCLASS_ELEMENTWISE]++, launch[DKV_KCLASS_QKV]++;
        DKV_TRY(bk_l2_flush(b, l, DKV_CUDA_L2P_ROPE, T, err));
        if (any_select) {
            bk_mark(b, DKV_KCLASS_KV_GATHER);
            DKV_TRY(layer_select(b, plan->step_index, n, l, err));
        }
        bk_mark(b, DKV_KCLASS_ATTN);
        if (b->n_measure)   /* retention.measured: the block's attention entropy, timed as attention */
            DKV_TRY(layer_entropy(b, n, l, err));
        DKV_TRY(layer_attention(b, n, l, err));
        DKV_TRY(bk_l2_flush(b, l, DKV_CUDA_L2P_ATTN, T, err));
        bk_mark(b, DKV_KCLASS_O);
        DKV_TRY(dkv_cuda_gemm(b->ctx, b->x, b->att, Ly->wo, NULL, T, QD, C, 1.0f, err));
        DKV_TRY(bk_l2_flush(b, l, DKV_CUDA_L2P_O, T, err));
        bk_mark(b, DKV_KCLASS_ELEMENTWISE);
        DKV_TRY(dkv_cuda_rmsnorm(b->h, b->x, Ly->ffn_norm, T, C, w->rms_eps, st, err));
        DKV_TRY(bk_l2_flush(b, l, DKV_CUDA_L2P_FFN_NORM, T, err));
        bk_mark(b, DKV_KCLASS_FFN);
        DKV_TRY(dkv_cuda_gemm(b->ctx, b->gu, b->h, Ly->wgu, NULL, T, C, 2 * F, 0.0f, err));
        DKV_TRY(bk_l2_flush(b, l, DKV_CUDA_L2P_GATE_UP, T, err));
        bk_mark(b, DKV_KCLASS_ELEMENTWISE);
        DKV_TRY(dkv_cuda_swiglu(b->ff, b->gu, b->gu + F, 2 * F, T, F, st, err));
        DKV_TRY(bk_l2_flush(b, l, DKV_CUDA_L2P_SWIGLU, T, err));
        bk_mark(b, DKV_KCLASS_FFN);
        DKV_TRY(dkv_cuda_gemm(b->ctx, b->x, b->ff, Ly->wdown, NULL, T, F, C, 1.0f, err));
        DKV_TRY(bk_l2_flush(b, l, DKV_CUDA_L2P_DOWN, T, err));
        launch[DKV_KCLASS_O]++, launch[DKV_KCLASS_ELEMENTWISE] += 2, launch[DKV_KCLASS_FFN] += 2;
    }
    if (R > 0) {
        bk_mark(b, DKV_KCLASS_LM_HEAD);
        for (uint32_t i = 0; i < n; i++) {   /* final norm of each item's logit rows, packed */
            const bk_item *x = &b->items[i];
            if (!x->R)
                continue;
            uint32_t first = x->off + (x->R == x->nq ? 0 : x->s_b - x->q0);
            DKV_TRY(dkv_cuda_rmsnorm(b->h + (size_t)x->lr * C, b->x + (size_t)first * C, w->ln_f, x->R, C, w->rms_eps, st,
                                 err));
            launch[DKV_KCLASS_LM_HEAD]++;
        }
        uint32_t chunk = b->logit_chunk;
        if (plan->max_logit_rows && plan->max_logit_rows < chunk)
            chunk = plan->max_logit_rows;
        DKV_TRY(dkv_cuda_lm_head_argmax(b->ctx, b->argmax, b->conf, b->h, w->lm_head, R, C, m->vocab, chunk, b->logits,
                                    err));
        launch[DKV_KCLASS_LM_HEAD] += 2 * cdiv(R, chunk);
        bk_mark(b, DKV_KCLASS_ELEMENTWISE);
        DKV_TRY(dkv_bk_unmask(b->d_items, n, b->argmax, b->conf, b->mask_id, st, err));
        launch[DKV_KCLASS_ELEMENTWISE]++;
    }
    return DKV_OK;
}
