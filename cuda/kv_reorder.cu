/* kv_reorder.cu - converts pool blocks between the t-major and layer-major layouts. */
#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

/* grid (blocks of work, n_blocks); each thread moves one 16-byte piece.  Pieces are numbered in
 * the destination's order, so writes are contiguous and reads gather. */
static __global__ void kv_reorder_kernel(dkv_cuda_kv_pool dst, dkv_cuda_kv_pool src, const uint32_t *ids)
{
    size_t elems = kv_block_elems(dst), pieces = elems / 8;
    uint32_t per_row = dst.head_dim / 8, b = ids[blockIdx.y];
    dkv_bf16 *d0 = dst.base + (size_t)b * elems;
    const dkv_bf16 *s0 = src.base + (size_t)b * elems;
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
        const bf16x8 *from = reinterpret_cast<const bf16x8 *>(s0 + kv_off(src, layer, kv, head, slot)) + c;
        reinterpret_cast<bf16x8 *>(d0)[i] = *from;
    }
}

static dkv_status launch_kv_reorder(const dkv_cuda_kv_pool *dst, const dkv_cuda_kv_pool *src, const uint32_t *ids,
                                    uint32_t n_blocks, cudaStream_t s, dkv_err *err)
{
    size_t pieces = kv_block_elems(*dst) / 8, per = (pieces + 255) / 256;
    dim3 grid((unsigned)(per < 1024 ? per : 1024), n_blocks);
    kv_reorder_kernel<<<grid, 256, 0, s>>>(*dst, *src, ids);
    return dkv_launch_check("kv_reorder_kernel", err);
}

extern "C" dkv_status dkv_cuda_kv_reorder(const dkv_cuda_kv_pool *dst, const dkv_cuda_kv_pool *src,
                                          const uint32_t *ids, uint32_t n_blocks, cudaStream_t s, dkv_err *err)
{
    DKV_ARG(dst && src && dst->base && src->base && ids, "dkv_cuda_kv_reorder");
    DKV_ARG(dst->block_tokens == src->block_tokens && dst->n_layers == src->n_layers &&
            dst->n_kv_heads == src->n_kv_heads && dst->head_dim == src->head_dim, "dkv_cuda_kv_reorder");
    DKV_ARG(dst->head_dim % 8 == 0 && dst->block_tokens > 0, "dkv_cuda_kv_reorder");
    DKV_ARG(n_blocks <= 65535, "dkv_cuda_kv_reorder");
    if (n_blocks == 0)
        return DKV_OK;
    return launch_kv_reorder(dst, src, ids, n_blocks, s, err);
}
