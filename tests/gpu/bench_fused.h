/* bench_fused.h - a dual-cache Reuse step composed from the fused entries, to measure the step
 * composition proposed for cuda/forward.c (owned elsewhere) before it changes there.
 *
 * Per layer, against forward.c's dual Reuse path:
 *   rmsnorm -> GEMM QKV -> rope -> kv_store -> attention -> GEMM O (+=) -> rmsnorm -> GEMM gate+up
 *   -> swiglu -> GEMM down (+=)                                          (forward.c: 10 launches)
 *   rmsnorm -> GEMM QKV -> rope_kv_store -> attention -> GEMM O (+=) -> rmsnorm -> GEMM gate+up
 *   -> swiglu -> GEMM down (+=)                                          (here: 9 launches)
 * (dkv_cuda_gemm_swiglu with ff: the SwiGLU-fused skinny GEMM is slower than the two launches.)
 * fused_dual_refresh: forward.c's dual Refresh with rope + kv_store as one rope_kv_store. */
#ifndef DKV_BENCH_FUSED_H
#define DKV_BENCH_FUSED_H

#include "gpu_check.h"

typedef struct fused_bufs {
    dkv_bf16 *x, *h, *qkv, *att, *gu, *ff;
    float    *logits;
} fused_bufs;

static inline void fused_bufs_new(fused_bufs *b, const dkv_model *m, uint32_t T, uint32_t logit_rows)
{
    size_t C = m->hidden, QD = (size_t)m->n_heads * m->head_dim, QKV = QD + 2 * (size_t)m->n_kv_heads * m->head_dim;
    b->x = dev_alloc(T * C * 2), b->h = dev_alloc(T * C * 2), b->qkv = dev_alloc(T * QKV * 2);
    b->att = dev_alloc(T * QD * 2), b->gu = dev_alloc(T * 2 * (size_t)m->ffn * 2), b->ff = dev_alloc(T * (size_t)m->ffn * 2);
    b->logits = dev_alloc((size_t)logit_rows * m->vocab * 4);
}

static inline void fused_bufs_free(fused_bufs *b)
{
    cudaFree(b->x), cudaFree(b->h), cudaFree(b->qkv), cudaFree(b->att), cudaFree(b->gu), cudaFree(b->ff), cudaFree(b->logits);
}

/* One dual-cache Reuse step (a->step > 0) of the block [a->block_start, + a->block_len). */
static inline dkv_status fused_dual_reuse(dkv_cuda_ctx *ctx, const dkv_cuda_weights *w, const dkv_cuda_kv_pool *pool,
                                          const dkv_cuda_seq *seq, fused_bufs *b, const dkv_ref_step_args *a,
                                          uint32_t *argmax, float *conf, dkv_bf16 *block_hidden, dkv_err *e)
{
    const dkv_model *m = &w->m;
    cudaStream_t s = dkv_cuda_ctx_stream(ctx);
    uint32_t C = m->hidden, F = m->ffn, D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, QD = H * D;
    uint32_t QKV = QD + 2 * Hkv * D, T = a->block_len, s0 = a->block_start, L = a->canvas_len;
    dkv_status st;
#define F_TRY(call)              \
    do {                         \
        if ((st = (call)) != DKV_OK) \
            return st;           \
    } while (0)
    F_TRY(dkv_cuda_embedding(b->x, seq->tokens + s0, w->wte, T, C, m->vocab, s, e));
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const dkv_cuda_layer *Ly = &w->layers[l];
        F_TRY(dkv_cuda_rmsnorm(b->h, b->x, Ly->attn_norm, T, C, w->rms_eps, s, e));
        F_TRY(dkv_cuda_gemm(ctx, b->qkv, b->h, Ly->wqkv, Ly->bqkv, T, C, QKV, 0.0f, e));
        F_TRY(dkv_cuda_rope_kv_store(pool, seq->block_table, l, b->qkv, QKV, seq->pos + s0, T, H, 0, T,
                                     (float)m->rope_theta, s, e));
        dkv_cuda_attn_args at = {.out = b->att, .q = b->qkv, .ldq = QKV, .ldo = QD, .Tq = T, .n_heads = H,
                                 .n_kv_heads = Hkv, .head_dim = D};
        at.cache.kind = DKV_KV_SRC_PAGED, at.cache.n_tokens = L, at.cache.pool = pool;
        at.cache.block_table = seq->block_table, at.cache.layer = l;
        F_TRY(dkv_cuda_attention(&at, s, e));
        F_TRY(dkv_cuda_gemm(ctx, b->x, b->att, Ly->wo, NULL, T, QD, C, 1.0f, e));
        F_TRY(dkv_cuda_rmsnorm(b->h, b->x, Ly->ffn_norm, T, C, w->rms_eps, s, e));
        F_TRY(dkv_cuda_gemm(ctx, b->gu, b->h, Ly->wgu, NULL, T, C, 2 * F, 0.0f, e));
        F_TRY(dkv_cuda_gemm_swiglu(ctx, b->x, b->gu, Ly->wdown, T, F, C, 1.0f, b->ff, e));
    }
    dkv_bf16 *hid = block_hidden ? block_hidden : b->h;
    F_TRY(dkv_cuda_rmsnorm(hid, b->x, w->ln_f, T, C, w->rms_eps, s, e));
    return dkv_cuda_lm_head_argmax(ctx, argmax, conf, hid, w->lm_head, T, C, m->vocab, T, b->logits, e);
#undef F_TRY
}

/* One dual-cache Refresh step (a->step == 0): every row computed, all K/V stored, the block's
 * rows through the LM head; forward.c's composition with RoPE and the KV store in one launch. */
static inline dkv_status fused_dual_refresh(dkv_cuda_ctx *ctx, const dkv_cuda_weights *w,
                                            const dkv_cuda_kv_pool *pool, const dkv_cuda_seq *seq, fused_bufs *b,
                                            const dkv_ref_step_args *a, uint32_t *argmax, float *conf,
                                            dkv_bf16 *block_hidden, dkv_err *e)
{
    const dkv_model *m = &w->m;
    cudaStream_t s = dkv_cuda_ctx_stream(ctx);
    uint32_t C = m->hidden, F = m->ffn, D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, QD = H * D;
    uint32_t QKV = QD + 2 * Hkv * D, T = a->canvas_len, B = a->block_len;
    dkv_status st;
#define F_TRY(call)              \
    do {                         \
        if ((st = (call)) != DKV_OK) \
            return st;           \
    } while (0)
    F_TRY(dkv_cuda_embedding(b->x, seq->tokens, w->wte, T, C, m->vocab, s, e));
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const dkv_cuda_layer *Ly = &w->layers[l];
        F_TRY(dkv_cuda_rmsnorm(b->h, b->x, Ly->attn_norm, T, C, w->rms_eps, s, e));
        F_TRY(dkv_cuda_gemm(ctx, b->qkv, b->h, Ly->wqkv, Ly->bqkv, T, C, QKV, 0.0f, e));
        F_TRY(dkv_cuda_rope_kv_store(pool, seq->block_table, l, b->qkv, QKV, seq->pos, T, H, 0, T,
                                     (float)m->rope_theta, s, e));
        F_TRY(dkv_cuda_attention_dense(ctx, b->att, QD, b->qkv, QKV, b->qkv + QD, b->qkv + QD + Hkv * D, QKV, T, T, H,
                                       Hkv, D, NULL, 0, e));
        F_TRY(dkv_cuda_gemm(ctx, b->x, b->att, Ly->wo, NULL, T, QD, C, 1.0f, e));
        F_TRY(dkv_cuda_rmsnorm(b->h, b->x, Ly->ffn_norm, T, C, w->rms_eps, s, e));
        F_TRY(dkv_cuda_gemm(ctx, b->gu, b->h, Ly->wgu, NULL, T, C, 2 * F, 0.0f, e));
        F_TRY(dkv_cuda_gemm_swiglu(ctx, b->x, b->gu, Ly->wdown, T, F, C, 1.0f, b->ff, e));
    }
    dkv_bf16 *hid = block_hidden ? block_hidden : b->h;
    F_TRY(dkv_cuda_rmsnorm(hid, b->x + (size_t)a->block_start * C, w->ln_f, B, C, w->rms_eps, s, e));
    return dkv_cuda_lm_head_argmax(ctx, argmax, conf, hid, w->lm_head, B, C, m->vocab, B, b->logits, e);
#undef F_TRY
}

#endif
