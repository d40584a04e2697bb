/* backend_kernels.cu - the small kernels the CUDA backend needs besides cuda/'s operations:
 * canvas reset and unmasking (the decoding model's token updates, on the device), packing of
 * retained sparse rows into bf16 pool blocks, and a gather of pool blocks into a contiguous
 * [layer, k|v, head, token, d] buffer (compression input: dequantized; layout reorder: raw).  Declared in
 * backend_internal.h. */
#include "cuda/backend_internal.h"
#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

/* ------------------------------------------------------------------ canvas reset / unmask */

/* One block per item: a step 0 sets the block's positions to the mask token. */
static __global__ void reset_kernel(const dkv_bk_item *items, uint32_t mask_id)
{
    const dkv_bk_item it = items[blockIdx.x];
    if (!it.reset)
        return;
    for (uint32_t i = threadIdx.x; i < it.block_len; i += blockDim.x)
        it.tokens[it.block_start + i] = mask_id;
}

/* One block per item: the n_unmask most confident masked positions of the block (ties to the
 * lower position) take their argmax. */
static __global__ void unmask_kernel(const dkv_bk_item *items, const uint32_t *argmax, const float *conf,
                                     uint32_t mask_id)
{
    __shared__ float cf[DKV_BK_MAX_BLOCK];
    __shared__ float bv[256];
    __shared__ uint32_t bi[256];
    const dkv_bk_item it = items[blockIdx.x];
    uint32_t *tok = it.tokens + it.block_start;
    for (uint32_t i = threadIdx.x; i < it.block_len; i += blockDim.x)
        cf[i] = tok[i] == mask_id ? conf[it.logit_row + i] : -INFINITY;
    __syncthreads();
    for (uint32_t n = 0; n < it.n_unmask; n++) {
        float best = -INFINITY;
        uint32_t bidx = UINT32_MAX;
        for (uint32_t i = threadIdx.x; i < it.block_len; i += blockDim.x)
            if (cf[i] > best || (cf[i] == best && i < bidx && cf[i] != -INFINITY))
                best = cf[i], bidx = i;
        bv[threadIdx.x] = best;
        bi[threadIdx.x] = bidx;
        __syncthreads();
        for (uint32_t o = blockDim.x / 2; o > 0; o >>= 1) {
            if (threadIdx.x < o) {
                float v = bv[threadIdx.x + o];
                uint32_t j = bi[threadIdx.x + o];
                if (v > bv[threadIdx.x] || (v == bv[threadIdx.x] && j < bi[threadIdx.x]))
                    bv[threadIdx.x] = v, bi[threadIdx.x] = j;
            }
            __syncthreads();
        }
        uint32_t pick = bi[0];
        bool any = bv[0] != -INFINITY && pick != UINT32_MAX;
        __syncthreads();
        if (!any)
            break;
        if (threadIdx.x == 0) {
            tok[pick] = argmax[it.logit_row + pick];
            cf[pick] = -INFINITY;
        }
        __syncthreads();
    }
}

extern "C" dkv_status dkv_bk_reset(const dkv_bk_item *items, uint32_t n, uint32_t mask_id, cudaStream_t s,
                                   dkv_err *err)
{
    if (n == 0)
        return DKV_OK;
    reset_kernel<<<n, 128, 0, s>>>(items, mask_id);
    return dkv_launch_check("reset_kernel", err);
}

extern "C" dkv_status dkv_bk_unmask(const dkv_bk_item *items, uint32_t n, const uint32_t *argmax, const float *conf,
                                    uint32_t mask_id, cudaStream_t s, dkv_err *err)
{
    if (n == 0)
        return DKV_OK;
    unmask_kernel<<<n, 256, 0, s>>>(items, argmax, conf, mask_id);
    return dkv_launch_check("unmask_kernel", err);
}

/* ------------------------------------------------------------------ sparse rows into the pool */

/* grid (kk, Hkv): row j of head g is own row idx[g*kk + j] (shared: idx[j]) of k and v, written
 * to canvas slot j of the block table (each head its own token in the same slot). */
static __global__ void pack_paged_kernel(dkv_cuda_kv_pool pool, const uint32_t *table, uint32_t layer,
                                         const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ld, const uint32_t *idx,
                                         uint32_t kk, int shared)
{
    uint32_t j = blockIdx.x, g = blockIdx.y, D = pool.head_dim, per = D / 8;
    uint32_t t = idx[(shared ? 0 : (size_t)g * kk) + j];
    for (uint32_t i = threadIdx.x; i < 2 * per; i += blockDim.x) {
        uint32_t isv = i >= per, c = i % per;
        const bf16x8 *src = reinterpret_cast<const bf16x8 *>((isv ? v : k) + (size_t)t * ld + (size_t)g * D) + c;
        bf16x8 *dst = reinterpret_cast<bf16x8 *>(kv_row(pool, table, layer, isv, g, j)) + c;
        *dst = *src;
    }
}

extern "C" dkv_status dkv_bk_pack_paged(const dkv_cuda_kv_pool *pool, const uint32_t *table, uint32_t layer,
                                        const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ld, const uint32_t *idx,
                                        uint32_t kk, bool shared, cudaStream_t s, dkv_err *err)
{
    if (kk == 0)
        return DKV_OK;
    if (pool->head_dim % 8 || pool->n_kv_heads > 65535 || pool->elem != DKV_KV_ELEM_BF16)
        return dkv_err_set(err, DKV_EINVAL, "dkv_bk_pack_paged: head_dim %% 8 == 0 and a bf16 pool must hold (FP8: "
                           "dkv_cuda_kv_fp8_store with the indices)");
    pack_paged_kernel<<<dim3(kk, pool->n_kv_heads), 32, 0, s>>>(*pool, table, layer, k, v, ld, idx, kk, shared);
    return dkv_launch_check("pack_paged_kernel", err);
}

/* ------------------------------------------------------------------ gather */

/* grid (n_tokens, n_layers*2*Hkv): out[(l, kv, h)][t][d] = pool value of token t (block
 * ids[t / block_tokens], slot t % block_tokens): dequantized to bf16 (kv_load8), or with raw the
 * stored elements as they are (an FP8 pool's codes: 1 byte each). */
static __global__ void gather_kernel(void *out, dkv_cuda_kv_pool pool, const uint32_t *ids, uint32_t n_tokens, int raw)
{
    uint32_t t = blockIdx.x, lkh = blockIdx.y, D = pool.head_dim, per = D / 8;
    uint32_t h = lkh % pool.n_kv_heads, kv = (lkh / pool.n_kv_heads) % 2, l = lkh / (2 * pool.n_kv_heads);
    size_t row = (size_t)lkh * n_tokens + t;
    if (raw && pool.elem == DKV_KV_ELEM_E4M3) {
        uint32_t b = ids[t / pool.block_tokens], s = t % pool.block_tokens;
        const uint2 *src = reinterpret_cast<const uint2 *>(kv_row8_at(pool, b, l, kv, h, s));
        for (uint32_t c = threadIdx.x; c < per; c += blockDim.x)
            reinterpret_cast<uint2 *>((uint8_t *)out + row * D)[c] = src[c];
        return;
    }
    for (uint32_t c = threadIdx.x; c < per; c += blockDim.x)
        reinterpret_cast<bf16x8 *>((dkv_bf16 *)out + row * D)[c] = kv_load8(pool, ids, l, kv, h, t, c);
}

extern "C" dkv_status dkv_bk_gather(void *out, const dkv_cuda_kv_pool *pool, const uint32_t *ids, uint32_t n_tokens,
                                    bool raw, cudaStream_t s, dkv_err *err)
{
    if (n_tokens == 0)
        return DKV_OK;
    uint32_t lkh = pool->n_layers * 2 * pool->n_kv_heads;
    if (lkh > 65535 || pool->head_dim % 8)
        return dkv_err_set(err, DKV_EINVAL, "dkv_bk_gather: n_layers*2*n_kv_heads <= 65535, head_dim %% 8 == 0");
    gather_kernel<<<dim3(n_tokens, lkh), 32, 0, s>>>(out, *pool, ids, n_tokens, raw ? 1 : 0);
    return dkv_launch_check("gather_kernel", err);
}

