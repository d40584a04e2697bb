/* forward.c - device weights, scratch, and one decoding step of one request composed from the
 * kernels (host code; every launch goes to the context's stream).  It mirrors core/ref's
 * dkv_ref_step (ref_step.c) mode by mode, so the two can be compared step by step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/dkv_cuda.h"


/* ------------------------------------------------------------------ weights */

static size_t layer_elems(const dkv_model *m)
{
    size_t C = m->hidden, F = m->ffn, QKV = ((size_t)m->n_heads + 2 * m->n_kv_heads) * m->head_dim;
    return 2 * C + QKV * C + (m->qkv_bias ? QKV : 0) + C * (size_t)m->n_heads * m->head_dim + 3 * F * C;
}

dkv_status dkv_cuda_weights_new(const dkv_model *m, float rms_eps, dkv_cuda_weights **out, dkv_err *err)
{
    *out = NULL;
    DKV_TRY(dkv_model_validate(m, err));
    dkv_cuda_weights *w = calloc(1, sizeof *w);
    if (!w || !(w->layers = calloc(m->n_layers, sizeof *w->layers))) {
        free(w);
        return dkv_err_set(err, DKV_ENOMEM, "dkv_cuda_weights_new: out of host memory");
    }
    w->m = *m;
    w->rms_eps = rms_eps;
    size_t C = m->hidden, V = m->vocab, F = m->ffn, QD = (size_t)m->n_heads * m->head_dim,
           QKV = QD + 2 * (size_t)m->n_kv_heads * m->head_dim;
    size_t elems = V * C * (m->tied_embeddings ? 1 : 2) + C + m->n_layers * layer_elems(m);
    w->bytes = elems * sizeof(dkv_bf16);
    cudaError_t e = cudaMalloc((void **)&w->mem, w->bytes);
    if (e != cudaSuccess) {
        free(w->layers);
        free(w);
        return dkv_err_set(err, DKV_ENOMEM, "dkv_cuda_weights_new: cudaMalloc of %zu bytes for '%s': %s",
                           elems * sizeof(dkv_bf16), m->name, cudaGetErrorString(e));
    }
    dkv_bf16 *p = w->mem;
#define TAKE(ptr, n) ((ptr) = p, p += (n))
    TAKE(w->wte, V * C);
    for (uint32_t l = 0; l < m->n_layers; l++) {
        dkv_cuda_layer *L = &w->layers[l];
        TAKE(L->attn_norm, C);
        TAKE(L->wqkv, QKV * C);
        if (m->qkv_bias)
            TAKE(L->bqkv, QKV);
        TAKE(L->wo, C * QD);
        TAKE(L->ffn_norm, C);
        TAKE(L->wgu, 2 * F * C);
        TAKE(L->wdown, C * F);
    }
    TAKE(w->ln_f, C);
    if (m->tied_embeddings)
        w->lm_head = w->wte;
    else
        TAKE(w->lm_head, V * C);
#undef TAKE
    *out = w;
    return DKV_OK;
}

void dkv_cuda_weights_free(dkv_cuda_weights *w)
{
    if (!w)
        return;
    cudaFree(w->mem);
    free(w->layers);
    free(w);
}

dkv_status dkv_cuda_weights_randomize(dkv_cuda_weights *w, uint64_t seed, cudaStream_t s, dkv_err *err)
{
    const dkv_model *m = &w->m;
    size_t C = m->hidden, V = m->vocab, F = m->ffn, QD = (size_t)m->n_heads * m->head_dim,
           QKV = QD + 2 * (size_t)m->n_kv_heads * m->head_dim;
    uint64_t k = seed * 1000003u;
    DKV_TRY(dkv_cuda_fill_random(w->wte, V * C, k++, 1.0f, 0.0f, s, err));
    for (uint32_t l = 0; l < m->n_layers; l++) {
        dkv_cuda_layer *L = &w->layers[l];
        DKV_TRY(dkv_cuda_fill_random(L->attn_norm, C, k++, 0.1f, 1.0f, s, err));
        DKV_TRY(dkv_cuda_fill_random(L->wqkv, QKV * C, k++, 1.0f / sqrtf((float)C), 0.0f, s, err));
        if (L->bqkv)
            DKV_TRY(dkv_cuda_fill_random(L->bqkv, QKV, k++, 0.02f, 0.0f, s, err));
        DKV_TRY(dkv_cuda_fill_random(L->wo, C * QD, k++, 1.0f / sqrtf((float)QD), 0.0f, s, err));
        DKV_TRY(dkv_cuda_fill_random(L->ffn_norm, C, k++, 0.1f, 1.0f, s, err));
        DKV_TRY(dkv_cuda_fill_random(L->wgu, 2 * F * C, k++, 1.0f / sqrtf((float)C), 0.0f, s, err));
        DKV_TRY(dkv_cuda_fill_random(L->wdown, C * F, k++, 1.0f / sqrtf((float)F), 0.0f, s, err));
    }
    DKV_TRY(dkv_cuda_fill_random(w->ln_f, C, k++, 0.1f, 1.0f, s, err));
    if (!m->tied_embeddings)
        DKV_TRY(dkv_cuda_fill_random(w->lm_head, V * C, k++, 1.0f / sqrtf((float)C), 0.0f, s, err));
    return DKV_OK;
}

static dkv_status put(dkv_bf16 *dst, const float *src, size_t n, dkv_err *err)
{
    uint16_t *h = malloc(n * sizeof *h + 2);
    if (!h)
        return dkv_err_set(err, DKV_ENOMEM, "dkv_cuda_weights_upload: out of host memory");
    for (size_t i = 0; i < n; i++) {   /* round to nearest even (the ref's data is finite) */
        uint32_t u;
        memcpy(&u, &src[i], 4);
        h[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    cudaError_t e = cudaMemcpy(dst, h, n * sizeof *h, cudaMemcpyHostToDevice);
    free(h);
    if (e != cudaSuccess)
        return dkv_err_set(err, DKV_EIO, "dkv_cuda_weights_upload: %s", cudaGetErrorString(e));
    return DKV_OK;
}

dkv_status dkv_cuda_weights_upload(dkv_cuda_weights *w, const dkv_ref_weights *r, dkv_err *err)
{
    const dkv_model *m = &w->m;
    if (r->m.n_layers != m->n_layers || r->m.hidden != m->hidden || r->m.ffn != m->ffn ||
        r->m.n_heads != m->n_heads || r->m.n_kv_heads != m->n_kv_heads || r->m.head_dim != m->head_dim ||
        r->m.vocab != m->vocab || r->m.qkv_bias != m->qkv_bias || r->m.tied_embeddings != m->tied_embeddings)
        return dkv_err_set(err, DKV_EINVAL, "dkv_cuda_weights_upload: ref model '%s' and device model '%s' differ "
                           "in shape", r->m.name, m->name);
    size_t C = m->hidden, V = m->vocab, F = m->ffn, QD = (size_t)m->n_heads * m->head_dim,
           KD = (size_t)m->n_kv_heads * m->head_dim;
    DKV_TRY(put(w->wte, r->wte, V * C, err));
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const dkv_ref_layer *R = &r->layers[l];
        dkv_cuda_layer *L = &w->layers[l];
        DKV_TRY(put(L->attn_norm, R->attn_norm, C, err));
        DKV_TRY(put(L->wqkv, R->wq, QD * C, err));
        DKV_TRY(put(L->wqkv + QD * C, R->wk, KD * C, err));
        DKV_TRY(put(L->wqkv + (QD + KD) * C, R->wv, KD * C, err));
        if (m->qkv_bias) {
            DKV_TRY(put(L->bqkv, R->bq, QD, err));
            DKV_TRY(put(L->bqkv + QD, R->bk, KD, err));
            DKV_TRY(put(L->bqkv + QD + KD, R->bv, KD, err));
        }
        DKV_TRY(put(L->wo, R->wo, C * QD, err));
        DKV_TRY(put(L->ffn_norm, R->ffn_norm, C, err));
        DKV_TRY(put(L->wgu, R->w_gate, F * C, err));
        DKV_TRY(put(L->wgu + F * C, R->w_up, F * C, err));
        DKV_TRY(put(L->wdown, R->w_down, C * F, err));
    }
    DKV_TRY(put(w->ln_f, r->ln_f, C, err));
    if (!m->tied_embeddings)
        DKV_TRY(put(w->lm_head, r->lm_head, V * C, err));
    return DKV_OK;
}

/* ------------------------------------------------------------------ scratch */

struct dkv_cuda_scratch {
    dkv_model m;
    uint32_t  max_tokens, logit_chunk;
    dkv_bf16 *x, *h, *qkv, *att, *gu, *ff;   /* (T, C), (T, C), (T, QKV), (T, H*D), (T, 2F), (T, F) */
    float    *attn_ws, *score, *score_ws, *logits;
    uint32_t *sel;                          /* (Hkv, T) selected indices */
    size_t    attn_ws_bytes, bytes;
    void     *mem;
};

dkv_status dkv_cuda_scratch_new(const dkv_model *m, uint32_t max_tokens, uint32_t logit_chunk,
                                dkv_cuda_scratch **out, dkv_err *err)
{
    *out = NULL;
    if (max_tokens == 0 || logit_chunk == 0)
        return dkv_err_set(err, DKV_EINVAL, "dkv_cuda_scratch_new: max_tokens and logit_chunk must be > 0");
    dkv_cuda_scratch *s = calloc(1, sizeof *s);
    if (!s)
        return dkv_err_set(err, DKV_ENOMEM, "dkv_cuda_scratch_new: out of host memory");
    s->m = *m;
    s->max_tokens = max_tokens;
    s->logit_chunk = logit_chunk;
    size_t T = max_tokens, C = m->hidden, F = m->ffn, QD = (size_t)m->n_heads * m->head_dim,
           QKV = QD + 2 * (size_t)m->n_kv_heads * m->head_dim;
    for (uint32_t q = 1; q <= max_tokens; q++) {   /* fewer queries split the keys more: take the worst */
        size_t b = dkv_cuda_attention_workspace_bytes(q, m->n_heads, m->head_dim, 2 * max_tokens);
        s->attn_ws_bytes = b > s->attn_ws_bytes ? b : s->attn_ws_bytes;
    }
    /* dense Refresh attention runs the flash kernel at head_dim 64/128 (the only ones the step
     * takes): no workspace */
    size_t sizes[] = {T * C * 2, T * C * 2, T * QKV * 2, T * QD * 2, T * 2 * F * 2, T * F * 2, s->attn_ws_bytes,
                      (size_t)m->n_kv_heads * T * 4, 2 * T * m->n_heads * 4, (size_t)logit_chunk * m->vocab * 4,
                      (size_t)m->n_kv_heads * T * 4};
    size_t off[sizeof sizes / sizeof sizes[0]], total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        off[i] = total;
        total += (sizes[i] + 255) / 256 * 256;
    }
    cudaError_t e = cudaMalloc(&s->mem, total);
    if (e != cudaSuccess) {
        free(s);
        return dkv_err_set(err, DKV_ENOMEM, "dkv_cuda_scratch_new: cudaMalloc of %zu bytes: %s", total,
                           cudaGetErrorString(e));
    }
    char *b = s->mem;
    s->x = (dkv_bf16 *)(b + off[0]), s->h = (dkv_bf16 *)(b + off[1]), s->qkv = (dkv_bf16 *)(b + off[2]);
    s->att = (dkv_bf16 *)(b + off[3]), s->gu = (dkv_bf16 *)(b + off[4]), s->ff = (dkv_bf16 *)(b + off[5]);
    s->attn_ws = (float *)(b + off[6]), s->score = (float *)(b + off[7]), s->score_ws = (float *)(b + off[8]);
    s->logits = (float *)(b + off[9]), s->sel = (uint32_t *)(b + off[10]);
    s->bytes = total;
    *out = s;
    return DKV_OK;
}

void dkv_cuda_scratch_free(dkv_cuda_scratch *s)
{
    if (!s)
        return;
    cudaFree(s->mem);
    free(s);
}

size_t dkv_cuda_scratch_bytes(const dkv_cuda_scratch *s) { return s->bytes; }

/* ------------------------------------------------------------------ one step */

typedef enum { W_NONE, W_STORE, W_SELECT } write_kind;

/* Refresh attention over at least this many tokens goes through dkv_cuda_attention_dense (the
 * same flash kernel at head_dim 64/128, no workspace); below, dkv_cuda_attention. */
#define DENSE_MIN_TOKENS 128

typedef struct plan {
    uint32_t q0, nq;          /* computed rows */
    dkv_kv_src_kind cache;    /* what the queries attend besides their own rows */
    uint32_t n_cache, n_own;  /* n_own: own rows attended (0 when they were stored in place first) */
    write_kind write;
    uint32_t w_lo, w_hi;      /* W_STORE: canvas positions stored (a sub-range of the rows) */
    uint32_t keep;            /* W_SELECT */
} plan;

static dkv_status layer_attention(dkv_cuda_ctx *ctx, const dkv_cuda_weights *w, const dkv_cuda_kv_pool *pool,
                                  dkv_cuda_seq *seq, dkv_cuda_scratch *s, const dkv_ref_step_args *a,
                                  const plan *p, uint32_t l, dkv_err *err)
{
    const dkv_model *m = &w->m;
    cudaStream_t st = dkv_cuda_ctx_stream(ctx);
    uint32_t D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, QD = H * D, KD = Hkv * D, QKV = QD + 2 * KD;
    dkv_bf16 *k = s->qkv + QD, *v = s->qkv + QD + KD;   /* rotated, and stored (W_STORE), by the step */
    if (p->write == W_SELECT) {   /* score own keys by the block's queries, keep the top k, pack */
        uint32_t blk = a->block_start - p->q0;
        DKV_TRY(dkv_cuda_attn_scores(s->score, s->qkv + (size_t)blk * QKV, QKV, a->block_len, k, QKV, p->nq, H, Hkv, D,
                                 s->score_ws, st, err));
        DKV_TRY(dkv_cuda_topk(s->sel, s->score, Hkv, p->nq, p->keep, a->block_start, a->block_start + a->block_len,
                          a->shared_set, st, err));
        DKV_TRY(dkv_cuda_kv_pack(seq->k_packed[l], seq->v_packed[l], k, v, QKV, s->sel, Hkv, D, p->keep, a->shared_set,
                             st, err));
    }
    if (p->cache == DKV_KV_SRC_NONE && p->nq >= DENSE_MIN_TOKENS)   /* Refresh: tensor cores */
        return dkv_cuda_attention_dense(ctx, s->att, QD, s->qkv, QKV, k, v, QKV, p->nq, p->n_own, H, Hkv, D, NULL, 0,
                                        err);
    dkv_cuda_attn_args at = {.out = s->att, .q = s->qkv, .ldq = QKV, .ldo = QD, .Tq = p->nq, .n_heads = H,
                             .n_kv_heads = Hkv, .head_dim = D, .k_own = k, .v_own = v, .ld_own = QKV,
                             .n_own = p->n_own, .workspace = s->attn_ws, .workspace_bytes = s->attn_ws_bytes};
    at.cache.kind = p->cache;
    at.cache.n_tokens = p->n_cache;
    if (p->cache == DKV_KV_SRC_PAGED)
        at.cache.pool = pool, at.cache.block_table = seq->block_table, at.cache.layer = l;
    if (p->cache == DKV_KV_SRC_PACKED)
        at.cache.k_packed = seq->k_packed[l], at.cache.v_packed = seq->v_packed[l];
    return dkv_cuda_attention(&at, st, err);
}

static dkv_status make_plan(const dkv_ref_step_args *a, dkv_cuda_seq *seq, plan *p, dkv_err *err)
{
    uint32_t L = a->canvas_len, s = a->block_start, B = a->block_len;
    memset(p, 0, sizeof *p);
    p->nq = L, p->n_own = L, p->cache = DKV_KV_SRC_NONE;
    bool reuse = a->mode != DKV_CACHE_NONE && a->step > (a->mode == DKV_CACHE_SPARSE ? 1u : 0u);
    switch (a->mode) {
    case DKV_CACHE_NONE:
        break;
    case DKV_CACHE_PREFIX:
        if (!reuse)
            p->write = W_STORE, p->w_lo = 0, p->w_hi = s;
        else
            p->q0 = s, p->nq = p->n_own = L - s, p->cache = DKV_KV_SRC_PAGED, p->n_cache = s;
        break;
    case DKV_CACHE_DUAL:
        if (!reuse)
            p->write = W_STORE, p->w_lo = 0, p->w_hi = L;
        else   /* the block's KV is stored in place first, then all L are read from the pool */
            p->q0 = s, p->nq = B, p->n_own = 0, p->cache = DKV_KV_SRC_PAGED, p->n_cache = L, p->write = W_STORE,
            p->w_lo = s, p->w_hi = s + B;
        break;
    case DKV_CACHE_SPARSE: {
        uint32_t keep = (uint32_t)ceil(a->retention * (L - B) - 1e-9);
        keep = keep > L - B ? L - B : keep;
        if (a->step == 1) {
            if (keep > seq->packed_cap || !seq->k_packed || !seq->v_packed)
                return dkv_err_set(err, DKV_EINVAL, "dkv_cuda_step: sparse step keeps %u tokens but the packed "
                                   "buffers hold %u", keep, seq->packed_cap);
            p->write = W_SELECT, p->keep = keep;
        } else if (reuse) {
            if (seq->packed_tokens != keep)
                return dkv_err_set(err, DKV_ESTATE, "dkv_cuda_step: sparse Reuse expects %u packed tokens, the "
                                   "sequence holds %u (run steps 0 and 1 first)", keep, seq->packed_tokens);
            p->q0 = s, p->nq = p->n_own = B, p->cache = DKV_KV_SRC_PACKED, p->n_cache = keep;
        }
        break;
    }
    }
    return DKV_OK;
}

dkv_status dkv_cuda_step(dkv_cuda_ctx *ctx, const dkv_cuda_weights *w, const dkv_cuda_kv_pool *pool,
                         dkv_cuda_seq *seq, dkv_cuda_scratch *s, const dkv_ref_step_args *a, uint32_t *argmax,
                         float *conf, dkv_bf16 *block_hidden, dkv_err *err)
{
    const dkv_model *m = &w->m;
    uint32_t L = a->canvas_len;
    if (L == 0 || a->block_len == 0 || a->block_start > L || a->block_len > L - a->block_start)
        return dkv_err_set(err, DKV_EINVAL, "dkv_cuda_step: block [%u, %u + %u) is not inside a canvas of %u",
                           a->block_start, a->block_start, a->block_len, L);
    if (a->mode != DKV_CACHE_NONE && (!pool || !seq->block_table))
        return dkv_err_set(err, DKV_EINVAL, "dkv_cuda_step: mode %s needs a KV pool and a block table",
                           dkv_cache_mode_name(a->mode));
    if (pool && pool->elem != DKV_KV_ELEM_BF16)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "dkv_cuda_step: the pool is FP8; this single-request step stores "
                           "bf16 rows (the CUDA backend runs FP8 pools, through dkv_cuda_kv_fp8_store)");
    plan p;
    DKV_TRY(make_plan(a, seq, &p, err));
    if (p.nq > s->max_tokens)
        return dkv_err_set(err, DKV_EINVAL, "dkv_cuda_step: %u rows exceed the scratch's %u", p.nq, s->max_tokens);
    cudaStream_t st = dkv_cuda_ctx_stream(ctx);
    uint32_t C = m->hidden, F = m->ffn, D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, QD = H * D,
             QKV = QD + 2 * Hkv * D, T = p.nq;
    DKV_TRY(dkv_cuda_embedding(s->x, seq->tokens + p.q0, w->wte, T, C, m->vocab, st, err));
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const dkv_cuda_layer *Ly = &w->layers[l];
        DKV_TRY(dkv_cuda_rmsnorm(s->h, s->x, Ly->attn_norm, T, C, w->rms_eps, st, err));
        DKV_TRY(dkv_cuda_gemm(ctx, s->qkv, s->h, Ly->wqkv, Ly->bqkv, T, C, QKV, 0.0f, err));
        /* q and k heads are adjacent in the fused row: one launch turns both and, with a pool,
         * stores the rows [w_lo, w_hi) of K (rotated) and V */
        if (pool) {
            uint32_t lo = p.write == W_STORE ? p.w_lo - p.q0 : 0, hi = p.write == W_STORE ? p.w_hi - p.q0 : 0;
            DKV_TRY(dkv_cuda_rope_kv_store(pool, seq->block_table, l, s->qkv, QKV, seq->pos + p.q0, T, H, lo,
                                       hi > lo ? hi : lo, (float)m->rope_theta, st, err));
        } else {
            DKV_TRY(dkv_cuda_rope(s->qkv, QKV, seq->pos + p.q0, T, H + Hkv, D, (float)m->rope_theta, st, err));
        }
        DKV_TRY(layer_attention(ctx, w, pool, seq, s, a, &p, l, err));
        DKV_TRY(dkv_cuda_gemm(ctx, s->x, s->att, Ly->wo, NULL, T, QD, C, 1.0f, err));
        DKV_TRY(dkv_cuda_rmsnorm(s->h, s->x, Ly->ffn_norm, T, C, w->rms_eps, st, err));
        DKV_TRY(dkv_cuda_gemm(ctx, s->gu, s->h, Ly->wgu, NULL, T, C, 2 * F, 0.0f, err));
        DKV_TRY(dkv_cuda_swiglu(s->ff, s->gu, s->gu + F, 2 * F, T, F, st, err));
        DKV_TRY(dkv_cuda_gemm(ctx, s->x, s->ff, Ly->wdown, NULL, T, F, C, 1.0f, err));
    }
    if (p.write == W_SELECT)
        seq->packed_tokens = p.keep;
    else if (a->mode == DKV_CACHE_SPARSE && a->step == 0)
        seq->packed_tokens = 0;
    dkv_bf16 *blk = s->x + (size_t)(a->block_start - p.q0) * C, *hid = block_hidden ? block_hidden : s->h;
    DKV_TRY(dkv_cuda_rmsnorm(hid, blk, w->ln_f, a->block_len, C, w->rms_eps, st, err));
    uint32_t chunk = a->logit_chunk && a->logit_chunk < s->logit_chunk ? a->logit_chunk : s->logit_chunk;
    return dkv_cuda_lm_head_argmax(ctx, argmax, conf, hid, w->lm_head, a->block_len, C, m->vocab, chunk, s->logits,
                                   err);
}
