/* backend_scores.cu - attention mass each key receives from a block's queries, per KV head
 * (the sparse cache's selection score, dkv_ref_attention_scores), through cuBLAS:
 *   S_h = q_h k_g^T (fp32, one strided-batched bf16 GEMM over the heads), row statistics of
 *   softmax(S_h / sqrt(D)) per query, then score[g][j] = sum over the group's heads and the
 *   queries of the softmax probabilities, one thread per key (a fixed order: deterministic).
 * The same scores give each query row's normalised attention entropy (dkv_bk_entropy: retention
 * from measured entropy, engine/backend.h setup.on_entropy).
 * Declared in backend_internal.h. */
#include <math.h>

#include <cublas_v2.h>

#include "cuda/backend_internal.h"
#include "cuda/common.cuh"

/* grid (Tq, H): max and sum of exp(scale * (s - max)) over the Tk scores of one query row. */
static __global__ void row_stats_kernel(const float *S, float *stats, uint32_t Tq, uint32_t Tk, float scale)
{
    __shared__ float red[32];
    uint32_t r = blockIdx.x, h = blockIdx.y;
    const float *row = S + ((size_t)h * Tq + r) * Tk;
    float m = -INFINITY;
    for (uint32_t j = threadIdx.x; j < Tk; j += blockDim.x)
        m = fmaxf(m, row[j] * scale);
    m = warp_max(m);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = m;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : -INFINITY;
        v = warp_max(v);
        if (threadIdx.x == 0)
            red[0] = v;
    }
    __syncthreads();
    m = red[0];
    __syncthreads();
    float s = 0;
    for (uint32_t j = threadIdx.x; j < Tk; j += blockDim.x)
        s += __expf(row[j] * scale - m);
    s = warp_sum(s);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : 0.0f;
        v = warp_sum(v);
        if (threadIdx.x == 0) {
            stats[2 * ((size_t)h * Tq + r)] = m;
            stats[2 * ((size_t)h * Tq + r) + 1] = v;
        }
    }
}

/* grid (ceil(Tk / 256), Hkv): score[g][j] = sum over heads h of group g and rows r of p. */
static __global__ void col_sum_kernel(float *score, const float *S, const float *stats, uint32_t Tq, uint32_t Tk,
                                      uint32_t G, float scale)
{
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x, g = blockIdx.y;
    if (j >= Tk)
        return;
    float acc = 0;
    for (uint32_t h = g * G; h < (g + 1) * G; h++)
        for (uint32_t r = 0; r < Tq; r++) {
            const float *st = stats + 2 * ((size_t)h * Tq + r);
            acc += __expf(S[((size_t)h * Tq + r) * Tk + j] * scale - st[0]) / st[1];
        }
    score[(size_t)g * Tk + j] = acc;
}

extern "C" size_t dkv_bk_scores_workspace_bytes(uint32_t Tq, uint32_t Tk, uint32_t H)
{
    return (size_t)H * Tq * Tk * sizeof(float) + (size_t)2 * H * Tq * sizeof(float) + 256;
}

/* grid (Tq, H): normalised entropy of softmax(scale * row) from its stats (max m, sum l of
 * exp(x - m)): H = ln l - sum_j exp(x_j - m) (x_j - m) / l, divided by ln Tk (0 for Tk = 1). */
static __global__ void row_entropy_kernel(float *ent, const float *S, const float *stats, uint32_t Tq, uint32_t Tk,
                                          float scale)
{
    __shared__ float red[32];
    uint32_t r = blockIdx.x, h = blockIdx.y;
    const float *row = S + ((size_t)h * Tq + r) * Tk, *st = stats + 2 * ((size_t)h * Tq + r);
    float m = st[0], a = 0;
    for (uint32_t j = threadIdx.x; j < Tk; j += blockDim.x) {
        float x = row[j] * scale - m;
        a += __expf(x) * x;
    }
    a = warp_sum(a);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = a;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : 0.0f;
        v = warp_sum(v);
        if (threadIdx.x == 0)
            ent[(size_t)h * Tq + r] = Tk > 1 ? (logf(st[1]) - v / st[1]) / logf((float)Tk) : 0.0f;
    }
}

/* S_h = q_h k_g^T (fp32) per head, then each row's max and sum of exp (the softmax statistics). */
static dkv_status scores_rows(void *blas, const dkv_bf16 *q, uint32_t ldq, uint32_t Tq, const dkv_bf16 *k, uint32_t ldk,
                              uint32_t Tk, uint32_t H, uint32_t Hkv, uint32_t D, float *S, float *stats, float scale,
                              cudaStream_t s, const char *fn, dkv_err *err)
{
    cublasHandle_t h = (cublasHandle_t)blas;
    const float one = 1.0f, zero = 0.0f;
    uint32_t G = H / Hkv;
    /* column-major: S_h^T (Tk x Tq) = k_g (D x Tk)^T q_h (D x Tq) */
    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
    if (cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS)
        return dkv_err_set(err, DKV_EIO, "%s: cublasSetStream failed", fn);
    if (G == 1) {
        bs = cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, Tk, Tq, D, &one, k, CUDA_R_16BF, ldk, D, q,
                                        CUDA_R_16BF, ldq, D, &zero, S, CUDA_R_32F, Tk, (long long)Tq * Tk, H,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else {
        for (uint32_t g = 0; g < Hkv && bs == CUBLAS_STATUS_SUCCESS; g++)
            bs = cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, Tk, Tq, D, &one, k + (size_t)g * D,
                                            CUDA_R_16BF, ldk, 0, q + (size_t)g * G * D, CUDA_R_16BF, ldq, D, &zero,
                                            S + (size_t)g * G * Tq * Tk, CUDA_R_32F, Tk, (long long)Tq * Tk, G,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    if (bs != CUBLAS_STATUS_SUCCESS)
        return dkv_err_set(err, DKV_EIO, "%s: cublasGemmStridedBatchedEx failed (status %d)", fn, (int)bs);
    row_stats_kernel<<<dim3(Tq, H), 256, 0, s>>>(S, stats, Tq, Tk, scale);
    return dkv_launch_check("row_stats_kernel", err);
}

extern "C" dkv_status dkv_bk_scores(void *blas, float *score, const dkv_bf16 *q, uint32_t ldq, uint32_t Tq,
                                    const dkv_bf16 *k, uint32_t ldk, uint32_t Tk, uint32_t H, uint32_t Hkv, uint32_t D,
                                    void *ws, size_t ws_bytes, cudaStream_t s, dkv_err *err)
{
    const char *fn = "dkv_bk_scores";
    DKV_ARG(blas && score && q && k && ws, fn);
    DKV_ARG(Tq > 0 && Tk > 0 && Tq <= 65535 && H > 0 && Hkv > 0 && H % Hkv == 0 && H <= 65535, fn);
    DKV_ARG(ws_bytes >= dkv_bk_scores_workspace_bytes(Tq, Tk, H), fn);
    float *S = (float *)ws, *stats = S + (size_t)H * Tq * Tk, scale = 1.0f / sqrtf((float)D);
    dkv_status st = scores_rows(blas, q, ldq, Tq, k, ldk, Tk, H, Hkv, D, S, stats, scale, s, fn, err);
    if (st != DKV_OK)
        return st;
    col_sum_kernel<<<dim3((Tk + 255) / 256, Hkv), 256, 0, s>>>(score, S, stats, Tq, Tk, H / Hkv, scale);
    return dkv_launch_check("col_sum_kernel", err);
}

extern "C" dkv_status dkv_bk_entropy(void *blas, float *ent, const dkv_bf16 *q, uint32_t ldq, uint32_t Tq,
                                     const dkv_bf16 *k, uint32_t ldk, uint32_t Tk, uint32_t H, uint32_t Hkv, uint32_t D,
                                     void *ws, size_t ws_bytes, cudaStream_t s, dkv_err *err)
{
    const char *fn = "dkv_bk_entropy";
    DKV_ARG(blas && ent && q && k && ws, fn);
    DKV_ARG(Tq > 0 && Tk > 0 && Tq <= 65535 && H > 0 && Hkv > 0 && H % Hkv == 0 && H <= 65535, fn);
    DKV_ARG(ws_bytes >= dkv_bk_scores_workspace_bytes(Tq, Tk, H), fn);
    float *S = (float *)ws, *stats = S + (size_t)H * Tq * Tk, scale = 1.0f / sqrtf((float)D);
    dkv_status st = scores_rows(blas, q, ldq, Tq, k, ldk, Tk, H, Hkv, D, S, stats, scale, s, fn, err);
    if (st != DKV_OK)
        return st;
    row_entropy_kernel<<<dim3(Tq, H), 256, 0, s>>>(ent, S, stats, Tq, Tk, scale);
    return dkv_launch_check("row_entropy_kernel", err);
}
