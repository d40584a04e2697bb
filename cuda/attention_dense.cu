/* attention_dense.cu - Refresh attention (every key is one of the computed rows).  Head dims 64
 * and 128 with 16-byte aligned rows go to the flash kernel of attention.cu (no S in memory, no
 * workspace); any other head dim falls back to batched cuBLAS GEMMs: S = q k^T (fp32), row
 * softmax to bf16 P, O = P v, heads in chunks that fit the workspace. */
#include <math.h>

#include "cuda/common.cuh"
#include "cuda/ctx_internal.h"

#define SM_THREADS 256

/* One block per row of S (rows Tk floats): P = softmax(S row) in bf16. */
static __global__ void __launch_bounds__(SM_THREADS) softmax_rows_kernel(dkv_bf16 *P, const float *S, uint32_t Tk)
{
    __shared__ float red[SM_THREADS / 32];
    const float *row = S + (size_t)blockIdx.x * Tk;
    float m = -INFINITY;
    for (uint32_t j = threadIdx.x; j < Tk; j += blockDim.x)
        m = fmaxf(m, row[j]);
    m = warp_max(m);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = red[0];
    for (int w = 1; w < SM_THREADS / 32; w++)
        m = fmaxf(m, red[w]);
    __syncthreads();
    float l = 0.0f;
    for (uint32_t j = threadIdx.x; j < Tk; j += blockDim.x)
        l += __expf(row[j] - m);
    l = warp_sum(l);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = l;
    __syncthreads();
    l = 0.0f;
    for (int w = 0; w < SM_THREADS / 32; w++)
        l += red[w];
    float inv = 1.0f / l;
    dkv_bf16 *out = P + (size_t)blockIdx.x * Tk;
    for (uint32_t j = threadIdx.x; j < Tk; j += blockDim.x)
        out[j] = f2bf(__expf(row[j] - m) * inv);
}

#define BLAS(call)                                                                                 \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                           \
            return dkv_err_set(err, DKV_EIO, "%s:%d: %s: cuBLAS status %d", __FILE__, __LINE__,    \
                               #call, (int)s_);                                                    \
    } while (0)

/* The launcher of one chunk of n heads sharing the KV stride kstride (D: one KV head per head;
 * 0: one KV head for all n). */
static dkv_status launch_dense_chunk(dkv_cuda_ctx *ctx, dkv_bf16 *out, uint32_t ldo, const dkv_bf16 *q, uint32_t ldq,
                                     const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ldkv, long long kstride,
                                     uint32_t Tq, uint32_t Tk, uint32_t n, uint32_t D, float *S, dkv_bf16 *P,
                                     dkv_err *err)
{
    float alpha = 1.0f / sqrtf((float)D), one = 1.0f, zero = 0.0f;
    long long st_s = (long long)Tq * Tk;
    /* S^T (Tk x Tq, col-major) = K^T-op * Q: m = Tk, n = Tq, k = D */
    BLAS(cublasGemmStridedBatchedEx(ctx->blas, CUBLAS_OP_T, CUBLAS_OP_N, Tk, Tq, D, &alpha, k, CUDA_R_16BF, ldkv,
                                    kstride, q, CUDA_R_16BF, ldq, D, &zero, S, CUDA_R_32F, Tk, st_s, n,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    softmax_rows_kernel<<<n * Tq, SM_THREADS, 0, ctx->stream>>>(P, S, Tk);
    dkv_status st = dkv_launch_check("softmax_rows_kernel", err);
    if (st != DKV_OK)
        return st;
    /* O^T (D x Tq, col-major, ld ldo) = V^T * P^T: m = D, n = Tq, k = Tk */
    BLAS(cublasGemmStridedBatchedEx(ctx->blas, CUBLAS_OP_N, CUBLAS_OP_N, D, Tq, Tk, &one, v, CUDA_R_16BF, ldkv,
                                    kstride, P, CUDA_R_16BF, Tk, st_s, &zero, out, CUDA_R_16BF, ldo, D, n,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return dkv_launch_check("cublasGemmStridedBatchedEx", err);
}

extern "C" size_t dkv_cuda_attention_dense_workspace_bytes(uint32_t Tq, uint32_t Tk, uint32_t heads)
{
    size_t s = ((size_t)Tq * Tk * 4 + 255) / 256 * 256, p = (size_t)Tq * Tk * 2;
    return heads * (s + p);
}

extern "C" dkv_status dkv_cuda_attention_dense(dkv_cuda_ctx *ctx, dkv_bf16 *out, uint32_t ldo, const dkv_bf16 *q,
                                               uint32_t ldq, const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ldkv,
                                               uint32_t Tq, uint32_t Tk, uint32_t H, uint32_t Hkv, uint32_t D,
                                               void *workspace, size_t workspace_bytes, dkv_err *err)
{
    const char *fn = "dkv_cuda_attention_dense";
    DKV_ARG(ctx && out && q && k && v, fn);
    DKV_ARG(H > 0 && Hkv > 0 && H % Hkv == 0 && D > 0 && D % 8 == 0, fn);
    DKV_ARG(ldq >= H * D && ldkv >= Hkv * D && ldo >= H * D, fn);
    DKV_ARG(Tk > 0, fn);
    if (Tq == 0)
        return DKV_OK;
    if ((D == 64 || D == 128) && ldq % 8 == 0 && ldkv % 8 == 0 && ldo % 8 == 0) {   /* flash: no workspace */
        dkv_cuda_attn_args a = {};
        a.out = out, a.q = q, a.ldq = ldq, a.ldo = ldo, a.Tq = Tq, a.n_heads = H, a.n_kv_heads = Hkv;
        a.head_dim = D, a.k_own = k, a.v_own = v, a.ld_own = ldkv, a.n_own = Tk;
        a.cache.kind = DKV_KV_SRC_NONE;
        return dkv_cuda_attention(&a, ctx->stream, err);
    }
    DKV_ARG(workspace, fn);
    uint32_t G = H / Hkv;
    size_t per = dkv_cuda_attention_dense_workspace_bytes(Tq, Tk, 1);
    uint32_t fit = (uint32_t)(workspace_bytes / per < H ? workspace_bytes / per : H);
    if (fit < G)
        return dkv_err_set(err, DKV_EINVAL, "%s: workspace of %zu bytes holds %u heads; a KV group needs %u "
                           "(dkv_cuda_attention_dense_workspace_bytes)", fn, workspace_bytes, fit, G);
    size_t s_bytes = ((size_t)Tq * Tk * 4 + 255) / 256 * 256;
    float *S = (float *)workspace;   /* S of the chunk's n heads, then their P */
    if (G == 1) {   /* one KV head per head: chunks of `fit` heads, KV stride D */
        for (uint32_t h0 = 0; h0 < H; h0 += fit) {
            uint32_t n = H - h0 < fit ? H - h0 : fit;
            dkv_bf16 *Pc = (dkv_bf16 *)((char *)workspace + n * s_bytes);
            dkv_status st = launch_dense_chunk(ctx, out + (size_t)h0 * D, ldo, q + (size_t)h0 * D, ldq,
                                               k + (size_t)h0 * D, v + (size_t)h0 * D, ldkv, D, Tq, Tk, n, D, S, Pc,
                                               err);
            if (st != DKV_OK)
                return st;
        }
        return DKV_OK;
    }
    for (uint32_t g = 0; g < Hkv; g++) {   /* a KV group: its G heads share one KV head (stride 0) */
        dkv_bf16 *Pc = (dkv_bf16 *)((char *)workspace + G * s_bytes);
        dkv_status st = launch_dense_chunk(ctx, out + (size_t)g * G * D, ldo, q + (size_t)g * G * D, ldq,
                                           k + (size_t)g * D, v + (size_t)g * D, ldkv, 0, Tq, Tk, G, D, S, Pc, err);
        if (st != DKV_OK)
            return st;
    }
    return DKV_OK;
}
