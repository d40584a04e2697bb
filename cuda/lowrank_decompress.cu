/* lowrank_decompress.cu - the reconstruction of low-rank KV into pool blocks (dkv_cuda.h,
 * dkv_cuda_lowrank_decompress): for each of the n_layers*2*Hkv matrices of a compressed range
 * (cuda/lowrank.h's Q (m x r) and B (r x D), staged as bf16 for the copy), the rows Q B are
 * written, rounded to bf16, at canvas positions [0, m) of a block table.  This is the "decompress
 * on fetch" half of the progressive offload's low-rank phase: attention reads the reconstruction. */
#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

/* grid (m, n_layers*2*Hkv), D threads: row t of matrix lkh = sum_k Q[t][k] B[k][.] in fp32. */
static __global__ void lowrank_decompress_kernel(dkv_cuda_kv_pool p, const uint32_t *table, const dkv_bf16 *Q,
                                                 const dkv_bf16 *B, uint32_t m, uint32_t r)
{
    extern __shared__ float q[];
    uint32_t t = blockIdx.x, lkh = blockIdx.y, D = p.head_dim, d = threadIdx.x;
    uint32_t h = lkh % p.n_kv_heads, kv = (lkh / p.n_kv_heads) % 2, l = lkh / (2 * p.n_kv_heads);
    const dkv_bf16 *qr = Q + ((size_t)lkh * m + t) * r, *bm = B + (size_t)lkh * r * D;
    for (uint32_t k = d; k < r; k += blockDim.x)
        q[k] = bf2f(qr[k]);
    __syncthreads();
    float acc = 0;
    for (uint32_t k = 0; k < r; k++)
        acc += q[k] * bf2f(bm[(size_t)k * D + d]);
    kv_row(p, table, l, kv, h, t)[d] = f2bf(acc);
}

static dkv_status launch_lowrank_decompress(const dkv_cuda_kv_pool *pool, const uint32_t *table, const dkv_bf16 *Q,
                                            const dkv_bf16 *B, uint32_t m, uint32_t r, cudaStream_t s, dkv_err *err)
{
    dim3 grid(m, pool->n_layers * 2 * pool->n_kv_heads);
    lowrank_decompress_kernel<<<grid, pool->head_dim, r * sizeof(float), s>>>(*pool, table, Q, B, m, r);
    return dkv_launch_check("lowrank_decompress_kernel", err);
}

extern "C" dkv_status dkv_cuda_lowrank_decompress(const dkv_cuda_kv_pool *pool, const uint32_t *block_table,
                                                  const dkv_bf16 *Q, const dkv_bf16 *B, uint32_t m, uint32_t r,
                                                  cudaStream_t s, dkv_err *err)
{
    DKV_ARG(pool && pool->base && block_table && Q && B, "dkv_cuda_lowrank_decompress");
    DKV_ARG(pool->head_dim > 0 && pool->head_dim <= 1024 && r > 0 && r <= pool->head_dim, "dkv_cuda_lowrank_decompress");
    DKV_ARG(pool->n_layers * 2 * pool->n_kv_heads <= 65535, "dkv_cuda_lowrank_decompress");
    if (m == 0)
        return DKV_OK;
    return launch_lowrank_decompress(pool, block_table, Q, B, m, r, s, err);
}
