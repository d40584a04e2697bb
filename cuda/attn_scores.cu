/* attn_scores.cu - attention mass each key receives from a set of queries, per KV head (the
 * importance the sparse cache ranks tokens by).  Two passes: the softmax statistics (max, sum) of
 * every (query, head) row, then per (KV head, key) the sum of normalised probabilities over the
 * queries and the query heads of the group. */
#include <math.h>

#include "cuda/common.cuh"

#define SC_THREADS 128

/* grid (Tq, H): row max and sum of exp of the scores of query t, head h over the Tk keys. */
static __global__ void score_stats_kernel(float *stats, const dkv_bf16 *q, uint32_t ldq, const dkv_bf16 *k,
                                          uint32_t ldk, uint32_t Tk, uint32_t H, uint32_t G, uint32_t D, float scale)
{
    extern __shared__ float qs[];
    __shared__ float red_m[SC_THREADS / 32], red_l[SC_THREADS / 32];
    uint32_t t = blockIdx.x, h = blockIdx.y, g = h / G;
    for (uint32_t d = threadIdx.x; d < D; d += blockDim.x)
        qs[d] = bf2f(q[(size_t)t * ldq + (size_t)h * D + d]) * scale;
    __syncthreads();
    float m = -INFINITY, l = 0.0f;
    for (uint32_t j = threadIdx.x; j < Tk; j += blockDim.x) {
        const dkv_bf16 *kr = k + (size_t)j * ldk + (size_t)g * D;
        float s = 0.0f;
        for (uint32_t d = 0; d < D; d++)
            s += qs[d] * bf2f(kr[d]);
        float mn = fmaxf(m, s);
        l = l * exp2f(m - mn) + exp2f(s - mn);
        m = mn;
    }
    for (int o = 16; o > 0; o >>= 1) {   /* merge (m, l) pairs */
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), l2 = __shfl_xor_sync(0xffffffffu, l, o);
        float mn = fmaxf(m, m2);
        l = (mn == -INFINITY) ? 0.0f : l * exp2f(m - mn) + l2 * exp2f(m2 - mn);
        m = mn;
    }
    if ((threadIdx.x & 31) == 0)
        red_m[threadIdx.x >> 5] = m, red_l[threadIdx.x >> 5] = l;
    __syncthreads();
    if (threadIdx.x == 0) {
        float M = -INFINITY, L = 0.0f;
        for (int w = 0; w < SC_THREADS / 32; w++)
            M = fmaxf(M, red_m[w]);
        for (int w = 0; w < SC_THREADS / 32; w++)
            L += red_l[w] * exp2f(red_m[w] - M);
        stats[((size_t)t * H + h) * 2] = M;
        stats[((size_t)t * H + h) * 2 + 1] = L;
    }
}

/* grid (ceil(Tk / SC_THREADS), Hkv): one thread per key. */
static __global__ void score_sum_kernel(float *score, const float *stats, const dkv_bf16 *q, uint32_t ldq,
                                        uint32_t Tq, const dkv_bf16 *k, uint32_t ldk, uint32_t Tk, uint32_t H,
                                        uint32_t G, uint32_t D, float scale)
{
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x, g = blockIdx.y;
    if (j >= Tk)
        return;
    const dkv_bf16 *kr = k + (size_t)j * ldk + (size_t)g * D;
    float total = 0.0f;
    for (uint32_t t = 0; t < Tq; t++)
        for (uint32_t h = g * G; h < (g + 1) * G; h++) {
            const dkv_bf16 *qr = q + (size_t)t * ldq + (size_t)h * D;
            float s = 0.0f;
            for (uint32_t d = 0; d < D; d++)
                s += bf2f(qr[d]) * scale * bf2f(kr[d]);
            const float *st = stats + ((size_t)t * H + h) * 2;
            total += exp2f(s - st[0]) / st[1];
        }
    score[(size_t)g * Tk + j] = total;
}

static dkv_status launch_attn_scores(float *score, const dkv_bf16 *q, uint32_t ldq, uint32_t Tq, const dkv_bf16 *k,
                                     uint32_t ldk, uint32_t Tk, uint32_t H, uint32_t Hkv, uint32_t D, float *ws,
                                     cudaStream_t s, dkv_err *err)
{
    float scale = (float)(1.4426950408889634 / sqrt((double)D));
    score_stats_kernel<<<dim3(Tq, H), SC_THREADS, D * sizeof(float), s>>>(ws, q, ldq, k, ldk, Tk, H, H / Hkv, D, scale);
    dkv_status st = dkv_launch_check("score_stats_kernel", err);
    if (st != DKV_OK)
        return st;
    score_sum_kernel<<<dim3((Tk + SC_THREADS - 1) / SC_THREADS, Hkv), SC_THREADS, 0, s>>>(score, ws, q, ldq, Tq, k, ldk,
                                                                                         Tk, H, H / Hkv, D, scale);
    return dkv_launch_check("score_sum_kernel", err);
}

extern "C" dkv_status dkv_cuda_attn_scores(float *score, const dkv_bf16 *q, uint32_t ldq, uint32_t Tq,
                                           const dkv_bf16 *k, uint32_t ldk, uint32_t Tk, uint32_t n_heads,
                                           uint32_t n_kv_heads, uint32_t head_dim, float *workspace, cudaStream_t s,
                                           dkv_err *err)
{
    const char *fn = "dkv_cuda_attn_scores";
    DKV_ARG(score && q && k && workspace, fn);
    DKV_ARG(n_heads > 0 && n_kv_heads > 0 && n_heads % n_kv_heads == 0, fn);
    DKV_ARG(head_dim > 0 && head_dim <= 1024, fn);
    DKV_ARG(ldq >= n_heads * head_dim && ldk >= n_kv_heads * head_dim, fn);
    DKV_ARG(Tk > 0, fn);
    if (Tq == 0)
        return DKV_OK;
    return launch_attn_scores(score, q, ldq, Tq, k, ldk, Tk, n_heads, n_kv_heads, head_dim, workspace, s, err);
}
