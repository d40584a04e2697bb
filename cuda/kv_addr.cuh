/* kv_addr.cuh - where (block, layer, k|v, head, slot) lives in the KV pool (see dkv_cuda.h). */
#ifndef DKV_CUDA_KV_ADDR_CUH
#define DKV_CUDA_KV_ADDR_CUH

#include "cuda/dkv_cuda.h"

static __host__ __device__ __forceinline__ size_t kv_block_elems(const dkv_cuda_kv_pool &p)
{
    return (size_t)p.block_tokens * p.n_layers * 2 * p.n_kv_heads * p.head_dim;
}

static __host__ __device__ __forceinline__ size_t kv_off(const dkv_cuda_kv_pool &p, uint32_t layer, uint32_t kv,
                                                         uint32_t head, uint32_t slot)
{
    if (p.layout == DKV_KV_LAYER_MAJOR)
        return ((((size_t)layer * 2 + kv) * p.n_kv_heads + head) * p.block_tokens + slot) * p.head_dim;
    return ((((size_t)slot * p.n_layers + layer) * 2 + kv) * p.n_kv_heads + head) * p.head_dim;
}

/* Address of the D values of (layer, kv, head) for canvas position pos of a sequence. */
static __device__ __forceinline__ dkv_bf16 *kv_row(const dkv_cuda_kv_pool &p, const uint32_t *table, uint32_t layer,
                                                    uint32_t kv, uint32_t head, uint32_t pos)
{
    uint32_t b = table[pos / p.block_tokens];
    return p.base + (size_t)b * kv_block_elems(p) + kv_off(p, layer, kv, head, pos % p.block_tokens);
}

#endif
