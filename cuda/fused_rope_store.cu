/* fused_rope_store.cu - RoPE of the q and k heads of fused QKV rows, in place, and the store of
 * the rows' (rotated) K and V into the KV pool, in one launch: dkv_cuda_rope followed by
 * dkv_cuda_kv_store, with the same arithmetic (angle in double, one bf16 rounding). */
#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

#define RS_THREADS 256

/* One block per row t.  Thread j turns pair i = j % (D/2) of heads j / (D/2), + step, ...;
 * rows in [lo, hi) also go to the pool (k heads as rotated, v heads as they are). */
static __global__ void __launch_bounds__(RS_THREADS) rope_store_kernel(dkv_cuda_kv_pool p, const uint32_t *table,
                                                                      uint32_t layer, dkv_bf16 *qkv, uint32_t ld,
                                                                      const uint32_t *pos, const uint32_t *spos,
                                                                      uint32_t H, uint32_t lo, uint32_t hi,
                                                                      double log2_theta)
{
    const uint32_t t = blockIdx.x, D = p.head_dim, half = D / 2, Hkv = p.n_kv_heads;
    const uint32_t ps = pos[t], sp = spos ? spos[t] : ps;   /* rotation angle, store position */
    const bool store = t >= lo && t < hi;
    dkv_bf16 *row = qkv + (size_t)t * ld;
    const uint32_t step = blockDim.x / half;   /* head groups per pass (blockDim % half == 0) */
    if (threadIdx.x < step * half) {
        const uint32_t i = threadIdx.x % half;
        double sd, cd;
        sincos((double)ps * exp2(-2.0 * i / D * log2_theta), &sd, &cd);
        const float s = (float)sd, c = (float)cd;
        for (uint32_t h = threadIdx.x / half; h < H + Hkv; h += step) {
            dkv_bf16 *v = row + (size_t)h * D;
            float x1 = bf2f(v[i]), x2 = bf2f(v[i + half]);
            dkv_bf16 y1 = f2bf(x1 * c - x2 * s), y2 = f2bf(x2 * c + x1 * s);
            v[i] = y1;
            v[i + half] = y2;
            if (store && h >= H) {
                dkv_bf16 *dst = kv_row(p, table, layer, 0, h - H, sp);
                dst[i] = y1;
                dst[i + half] = y2;
            }
        }
    }
    if (store) {   /* V rows: 16 bytes per thread */
        const uint32_t per_head = D / 8, nv = Hkv * per_head;
        const dkv_bf16 *vsrc = row + (size_t)(H + Hkv) * D;
        for (uint32_t j = threadIdx.x; j < nv; j += blockDim.x) {
            uint32_t h = j / per_head, c8 = j % per_head;
            *reinterpret_cast<bf16x8 *>(kv_row(p, table, layer, 1, h, sp) + c8 * 8) =
                *reinterpret_cast<const bf16x8 *>(vsrc + (size_t)h * D + c8 * 8);
        }
    }
}

static dkv_status launch_rope_store(const dkv_cuda_kv_pool &p, const uint32_t *table, uint32_t layer, dkv_bf16 *qkv,
                                    uint32_t ld, const uint32_t *pos, const uint32_t *spos, uint32_t T, uint32_t H,
                                    uint32_t lo, uint32_t hi, float theta, cudaStream_t s, dkv_err *err)
{
    rope_store_kernel<<<T, RS_THREADS, 0, s>>>(p, table, layer, qkv, ld, pos, spos, H, lo, hi, log2((double)theta));
    return dkv_launch_check("rope_store_kernel", err);
}

extern "C" dkv_status dkv_cuda_rope_kv_store(const dkv_cuda_kv_pool *pool, const uint32_t *block_table,
                                             uint32_t layer, dkv_bf16 *qkv, uint32_t ld, const uint32_t *pos,
                                             uint32_t T, uint32_t n_heads, uint32_t store_lo, uint32_t store_hi,
                                             float theta, cudaStream_t s, dkv_err *err)
{
    const char *fn = "dkv_cuda_rope_kv_store";
    DKV_ARG(pool && qkv && pos, fn);
    DKV_ARG(pool->head_dim % 8 == 0 && pool->head_dim >= 8 && RS_THREADS % (pool->head_dim / 2) == 0, fn);
    DKV_ARG(pool->n_kv_heads > 0 && n_heads > 0, fn);
    DKV_ARG(ld % 8 == 0 && ld >= (n_heads + 2 * pool->n_kv_heads) * pool->head_dim, fn);
    DKV_ARG(theta > 0.0f, fn);
    DKV_ARG(store_lo <= store_hi && store_hi <= T, fn);
    DKV_ARG(store_lo == store_hi || (pool->base && block_table && layer < pool->n_layers && pool->block_tokens > 0 &&
                                     pool->elem == DKV_KV_ELEM_BF16), fn);
    if (T == 0)
        return DKV_OK;
    return launch_rope_store(*pool, block_table, layer, qkv, ld, pos, NULL, T, n_heads, store_lo, store_hi, theta, s,
                             err);
}

extern "C" dkv_status dkv_cuda_rope_kv_store_at(const dkv_cuda_kv_pool *pool, const uint32_t *block_table,
                                                uint32_t layer, dkv_bf16 *qkv, uint32_t ld, const uint32_t *pos,
                                                const uint32_t *spos, uint32_t T, uint32_t n_heads, float theta,
                                                cudaStream_t s, dkv_err *err)
{
    const char *fn = "dkv_cuda_rope_kv_store_at";
    DKV_ARG(pool && qkv && pos && spos && block_table && pool->base && pool->elem == DKV_KV_ELEM_BF16, fn);
    DKV_ARG(pool->head_dim % 8 == 0 && pool->head_dim >= 8 && RS_THREADS % (pool->head_dim / 2) == 0, fn);
    DKV_ARG(pool->n_kv_heads > 0 && n_heads > 0 && layer < pool->n_layers && pool->block_tokens > 0, fn);
    DKV_ARG(ld % 8 == 0 && ld >= (n_heads + 2 * pool->n_kv_heads) * pool->head_dim, fn);
    DKV_ARG(theta > 0.0f, fn);
    if (T == 0)
        return DKV_OK;
    return launch_rope_store(*pool, block_table, layer, qkv, ld, pos, spos, T, n_heads, 0, T, theta, s, err);
}
