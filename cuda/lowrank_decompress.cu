/* lowrank_decompress.cu - the reconstruction of low-rank KV into pool blocks (dkv_cuda.h,
 * dkv_cuda_lowrank_decompress): for each of the n_layers*2*Hkv matrices of a compressed range
 * (cuda/lowrank.h's Q (m x r) and B (r x D), staged as bf16 for the copy), the rows Q B are
 * written at canvas positions [0, m) of a block table: rounded to bf16, or into an FP8 pool as
 * e4m3 codes with the scale of a store covering the block's rows (kv_fp8.cu's rule).  This is the
 * "decompress on fetch" half of the progressive offload's low-rank phase: attention reads the
 * reconstruction. */
#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

/* Row t of matrix lkh, column d: sum_k Q[t][k] B[k][d] in fp32 (q: the row of Q in shared memory). */
static __device__ __forceinline__ float qb_at(const float *q, const dkv_bf16 *bm, uint32_t r, uint32_t D, uint32_t d)
{
    float acc = 0;
    for (uint32_t k = 0; k < r; k++)
        acc += q[k] * bf2f(bm[(size_t)k * D + d]);
    return acc;
}

/* grid (m, n_layers*2*Hkv), D threads: row t of matrix lkh into a bf16 pool. */
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
    kv_row(p, table, l, kv, h, t)[d] = f2bf(qb_at(q, bm, r, D, d));
}

/* grid (blocks of the range, n_layers*2*Hkv), D threads (<= 1024, a multiple of 32): the rows of
 * one block of matrix lkh into an FP8 pool, twice computed: amax, then the codes at amax / 448. */
static __global__ void lowrank_decompress_fp8_kernel(dkv_cuda_kv_pool p, const uint32_t *table, const dkv_bf16 *Q,
                                                     const dkv_bf16 *B, uint32_t m, uint32_t r)
{
    extern __shared__ float q[];   /* r floats, then 32 for the reduction */
    float *red = q + r;
    uint32_t j = blockIdx.x, lkh = blockIdx.y, D = p.head_dim, d = threadIdx.x, bt = p.block_tokens;
    uint32_t h = lkh % p.n_kv_heads, kv = (lkh / p.n_kv_heads) % 2, l = lkh / (2 * p.n_kv_heads), b = table[j];
    uint32_t t0 = j * bt, t1 = t0 + bt < m ? t0 + bt : m;
    const dkv_bf16 *bm = B + (size_t)lkh * r * D;
    float amax = 0;
    for (int pass = 0; pass < 2; pass++) {
        float inv = 0;
        if (pass == 1) {   /* the block-wide amax of pass 0, then the scale */
            amax = block_max(amax, red);
            float s = amax > 0.0f ? amax / 448.0f : 1.0f;
            inv = 1.0f / s;
            if (d == 0)
                *kv_scale(p, b, l, kv, h) = s;
        }
        for (uint32_t t = t0; t < t1; t++) {
            __syncthreads();   /* q of the previous row is read by everyone */
            for (uint32_t k = d; k < r; k += blockDim.x)
                q[k] = bf2f(Q[((size_t)lkh * m + t) * r + k]);
            __syncthreads();
            float x = qb_at(q, bm, r, D, d);
            if (pass == 0)
                amax = fmaxf(amax, fabsf(x));
            else
                kv_row8_at(p, b, l, kv, h, t - t0)[d] = e4m3_encode(x * inv);
        }
    }
}

static dkv_status launch_lowrank_decompress(const dkv_cuda_kv_pool *pool, const uint32_t *table, const dkv_bf16 *Q,
                                            const dkv_bf16 *B, uint32_t m, uint32_t r, cudaStream_t s, dkv_err *err)
{
    uint32_t lkh = pool->n_layers * 2 * pool->n_kv_heads;
    if (pool->elem == DKV_KV_ELEM_E4M3) {
        dim3 grid((m + pool->block_tokens - 1) / pool->block_tokens, lkh);
        lowrank_decompress_fp8_kernel<<<grid, pool->head_dim, (r + 32) * sizeof(float), s>>>(*pool, table, Q, B, m, r);
        return dkv_launch_check("lowrank_decompress_fp8_kernel", err);
    }
    lowrank_decompress_kernel<<<dim3(m, lkh), pool->head_dim, r * sizeof(float), s>>>(*pool, table, Q, B, m, r);
    return dkv_launch_check("lowrank_decompress_kernel", err);
}

extern "C" dkv_status dkv_cuda_lowrank_decompress(const dkv_cuda_kv_pool *pool, const uint32_t *block_table,
                                                  const dkv_bf16 *Q, const dkv_bf16 *B, uint32_t m, uint32_t r,
                                                  cudaStream_t s, dkv_err *err)
{
    const char *fn = "dkv_cuda_lowrank_decompress";
    DKV_ARG(pool && pool->base && block_table && Q && B, fn);
    DKV_ARG(pool->head_dim > 0 && pool->head_dim <= 1024 && r > 0 && r <= pool->head_dim, fn);
    DKV_ARG(pool->n_layers * 2 * pool->n_kv_heads <= 65535, fn);
    DKV_ARG(pool->elem == DKV_KV_ELEM_BF16 || (pool->scale && pool->head_dim % 32 == 0 && pool->block_tokens > 0), fn);
    if (m == 0)
        return DKV_OK;
    return launch_lowrank_decompress(pool, block_table, Q, B, m, r, s, err);
}
