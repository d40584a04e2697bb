/* kv_store.cu - KV store: computed K and V rows of one layer into their pool blocks, and the
 * pool's host-side address helpers. */
#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

extern "C" size_t dkv_cuda_kv_block_bytes(const dkv_cuda_kv_pool *pool)
{
    return kv_block_elems(*pool) * kv_elem_bytes(*pool);
}

extern "C" size_t dkv_cuda_kv_offset(const dkv_cuda_kv_pool *pool, uint32_t layer, uint32_t kv, uint32_t head,
                                     uint32_t slot)
{
    return kv_off(*pool, layer, kv, head, slot);
}

/* One block per token row; thread i moves 16 bytes of K (i < nv) or V. */
static __global__ void kv_store_kernel(dkv_cuda_kv_pool p, const uint32_t *table, uint32_t layer, const dkv_bf16 *k,
                                       const dkv_bf16 *v, uint32_t ld, const uint32_t *pos)
{
    uint32_t t = blockIdx.x, per_head = p.head_dim / 8, nv = p.n_kv_heads * per_head;
    for (uint32_t i = threadIdx.x; i < 2 * nv; i += blockDim.x) {
        uint32_t kv = i >= nv, j = i % nv, h = j / per_head, c = j % per_head;
        const dkv_bf16 *src = (kv ? v : k) + (size_t)t * ld + (size_t)h * p.head_dim + c * 8;
        dkv_bf16 *dst = kv_row(p, table, layer, kv, h, pos[t]) + c * 8;
        *reinterpret_cast<bf16x8 *>(dst) = *reinterpret_cast<const bf16x8 *>(src);
    }
}

static dkv_status launch_kv_store(const dkv_cuda_kv_pool *pool, const uint32_t *table, uint32_t layer,
                                  const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ld, const uint32_t *pos, uint32_t T,
                                  cudaStream_t s, dkv_err *err)
{
    kv_store_kernel<<<T, 128, 0, s>>>(*pool, table, layer, k, v, ld, pos);
    return dkv_launch_check("kv_store_kernel", err);
}

extern "C" dkv_status dkv_cuda_kv_store(const dkv_cuda_kv_pool *pool, const uint32_t *block_table, uint32_t layer,
                                        const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ld, const uint32_t *pos,
                                        uint32_t T, cudaStream_t s, dkv_err *err)
{
    DKV_ARG(pool && pool->base && block_table && k && v && pos, "dkv_cuda_kv_store");
    DKV_ARG(pool->elem == DKV_KV_ELEM_BF16, "dkv_cuda_kv_store");
    DKV_ARG(pool->block_tokens > 0 && pool->head_dim % 8 == 0 && pool->n_kv_heads > 0, "dkv_cuda_kv_store");
    DKV_ARG(layer < pool->n_layers, "dkv_cuda_kv_store");
    DKV_ARG(ld % 8 == 0 && ld >= pool->n_kv_heads * pool->head_dim, "dkv_cuda_kv_store");
    if (T == 0)
        return DKV_OK;
    return launch_kv_store(pool, block_table, layer, k, v, ld, pos, T, s, err);
}
