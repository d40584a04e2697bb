/* kv_reorder.cu - converts pool blocks between the t-major and layer-major layouts (bf16 or FP8:
 * elements are moved as they are stored; an FP8 block's scales do not depend on the layout and
 * are copied beside). */
#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

/* grid (blocks of work, n_blocks); each thread moves one piece of 8 elements (P: 16 bytes of bf16,
 * 8 bytes of e4m3).  Pieces are numbered in the destination's order, so writes are contiguous and
 * reads gather. */
template <typename P>
static __global__ void kv_reorder_kernel(dkv_cuda_kv_pool dst, dkv_cuda_kv_pool src, const uint32_t *ids)
{
    size_t elems = kv_block_elems(dst), pieces = elems / 8;
    uint32_t per_row = dst.head_dim / 8, b = ids[blockIdx.y];
    P *d0 = reinterpret_cast<P *>(dst.base) + (size_t)b * pieces;
    const P *s0 = reinterpret_cast<const P *>(src.base) + (size_t)b * pieces;
    if (dst.elem == DKV_KV_ELEM_E4M3 && blockIdx.x == 0)
        for (uint32_t i = threadIdx.x; i < kv_n_scales(dst); i += blockDim.x)
            dst.scale[(size_t)b * kv_n_scales(dst) + i] = src.scale[(size_t)b * kv_n_scales(src) + i];
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < pieces; i += (size_t)gridDim.x * blockDim.x) {
        size_t row = i / per_row;
        uint32_t c = (uint32_t)(i % per_row), layer, kv, head, slot;
        if (dst.layout == DKV_KV_LAYER_MAJOR) {   /* row = ((layer*2 + kv)*H + head)*BT + slot */
            slot = row % dst.block_tokens, row /= dst.block_tokens;
            head = row % dst.n_kv_heads, row /= dst.n_kv_heads;
            kv = row % 2, layer = (uint32_t)(row / 2);
        } else {                                  /* row = ((slot*L + layer)*2 + kv)*H + head */
            head = row % dst.n_kv_heads, row /= dst.n_kv_heads;
            kv = row % 2, row /= 2;
            layer = row % dst.n_layers, slot = (uint32_t)(row / dst.n_layers);
        }
        d0[i] = s0[kv_off(src, layer, kv, head, slot) / 8 + c];
    }
}

static dkv_status launch_kv_reorder(const dkv_cuda_kv_pool *dst, const dkv_cuda_kv_pool *src, const uint32_t *ids,
                                    uint32_t n_blocks, cudaStream_t s, dkv_err *err)
{
    size_t pieces = kv_block_elems(*dst) / 8, per = (pieces + 255) / 256;
    dim3 grid((unsigned)(per < 1024 ? per : 1024), n_blocks);
    if (dst->elem == DKV_KV_ELEM_E4M3)
        kv_reorder_kernel<uint2><<<grid, 256, 0, s>>>(*dst, *src, ids);
    else
        kv_reorder_kernel<bf16x8><<<grid, 256, 0, s>>>(*dst, *src, ids);
    return dkv_launch_check("kv_reorder_kernel", err);
}

extern "C" dkv_status dkv_cuda_kv_reorder(const dkv_cuda_kv_pool *dst, const dkv_cuda_kv_pool *src,
                                          const uint32_t *ids, uint32_t n_blocks, cudaStream_t s, dkv_err *err)
{
    DKV_ARG(dst && src && dst->base && src->base && ids, "dkv_cuda_kv_reorder");
    DKV_ARG(dst->block_tokens == src->block_tokens && dst->n_layers == src->n_layers &&
            dst->n_kv_heads == src->n_kv_heads && dst->head_dim == src->head_dim, "dkv_cuda_kv_reorder");
    DKV_ARG(dst->elem == src->elem && (dst->elem == DKV_KV_ELEM_BF16 || (dst->scale && src->scale)),
            "dkv_cuda_kv_reorder");
    DKV_ARG(dst->head_dim % 8 == 0 && dst->block_tokens > 0, "dkv_cuda_kv_reorder");
    DKV_ARG(n_blocks <= 65535, "dkv_cuda_kv_reorder");
    if (n_blocks == 0)
        return DKV_OK;
    return launch_kv_reorder(dst, src, ids, n_blocks, s, err);
}
