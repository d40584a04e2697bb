/* lm_head.cu - chunked LM head: logits of at most chunk_rows rows at a time (fp32, through
 * cuBLASLt), then per row the argmax (ties to the lower index) and its softmax probability. */
#include <math.h>

#include "cuda/common.cuh"

#define AM_THREADS 512

/* One block per row: each thread keeps (max, index, sum of exp relative to its max). */
static __global__ void __launch_bounds__(AM_THREADS) argmax_conf_kernel(uint32_t *argmax, float *conf,
                                                                       const float *logits, uint32_t V)
{
    __shared__ float sm[AM_THREADS / 32], sl[AM_THREADS / 32];
    __shared__ uint32_t si[AM_THREADS / 32];
    const float *row = logits + (size_t)blockIdx.x * V;
    float m = -INFINITY, l = 0.0f;
    uint32_t best = 0xffffffffu;
    for (uint32_t i = threadIdx.x; i < V; i += blockDim.x) {
        float x = row[i];
        if (x > m) {
            l = l * __expf(m - x) + 1.0f;
            m = x, best = i;
        } else {
            l += __expf(x - m);
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), l2 = __shfl_xor_sync(0xffffffffu, l, o);
        uint32_t b2 = __shfl_xor_sync(0xffffffffu, best, o);
        float mn = fmaxf(m, m2);
        l = (mn == -INFINITY) ? 0.0f : l * __expf(m - mn) + l2 * __expf(m2 - mn);
        if (m2 > m || (m2 == m && b2 < best))
            best = b2;
        m = mn;
    }
    if ((threadIdx.x & 31) == 0)
        sm[threadIdx.x >> 5] = m, sl[threadIdx.x >> 5] = l, si[threadIdx.x >> 5] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
        float M = sm[0];
        uint32_t B = si[0];
        for (int w = 1; w < AM_THREADS / 32; w++)
            if (sm[w] > M || (sm[w] == M && si[w] < B))
                M = sm[w], B = si[w];
        float L = 0.0f;
        for (int w = 0; w < AM_THREADS / 32; w++)
            L += sl[w] * __expf(sm[w] - M);
        if (argmax)
            argmax[blockIdx.x] = B;
        if (conf)
            conf[blockIdx.x] = 1.0f / L;
    }
}

static dkv_status launch_argmax_conf(uint32_t *argmax, float *conf, const float *logits, uint32_t rows, uint32_t V,
                                     cudaStream_t s, dkv_err *err)
{
    argmax_conf_kernel<<<rows, AM_THREADS, 0, s>>>(argmax, conf, logits, V);
    return dkv_launch_check("argmax_conf_kernel", err);
}

extern "C" dkv_status dkv_cuda_lm_head_argmax(dkv_cuda_ctx *ctx, uint32_t *argmax, float *conf, const dkv_bf16 *x,
                                              const dkv_bf16 *w, uint32_t T, uint32_t C, uint32_t V,
                                              uint32_t chunk_rows, float *logits, dkv_err *err)
{
    const char *fn = "dkv_cuda_lm_head_argmax";
    DKV_ARG(ctx && x && w && logits, fn);
    DKV_ARG(argmax || conf, fn);
    DKV_ARG(chunk_rows > 0 && C % 8 == 0 && V > 0, fn);
    cudaStream_t s = dkv_cuda_ctx_stream(ctx);
    for (uint32_t t0 = 0; t0 < T; t0 += chunk_rows) {
        uint32_t n = T - t0 < chunk_rows ? T - t0 : chunk_rows;
        dkv_status st = dkv_cuda_gemm_f32(ctx, logits, x + (size_t)t0 * C, w, n, C, V, err);
        if (st == DKV_OK)
            st = launch_argmax_conf(argmax ? argmax + t0 : NULL, conf ? conf + t0 : NULL, logits, n, V, s, err);
        if (st != DKV_OK)
            return st;
    }
    return DKV_OK;
}
