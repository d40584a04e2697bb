/* ctx_internal.h - the body of dkv_cuda_ctx, shared by device.cu and gemm.cu (not public). */
#ifndef DKV_CUDA_CTX_INTERNAL_H
#define DKV_CUDA_CTX_INTERNAL_H

#include <cublasLt.h>
#include <cublas_v2.h>

#include "cuda/dkv_cuda.h"

/* One cached cuBLASLt plan (descriptors + the heuristic's algorithm) per GEMM shape. */
typedef struct dkv_gemm_plan {
    uint32_t               T, K, N;
    int                    f32_out, has_bias, accumulate;
    cublasLtMatmulDesc_t   op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t   algo;
} dkv_gemm_plan;

#define DKV_GEMM_PLANS 64

struct dkv_cuda_ctx {
    int              device;
    cudaStream_t     stream;        /* compute */
    cudaStream_t     copy;          /* offload / fetch */
    cublasLtHandle_t lt;
    cublasHandle_t   blas;          /* batched GEMMs (dense attention); shares lt_ws, same stream */
    void            *lt_ws;         /* cuBLASLt workspace (device) */
    size_t           lt_ws_bytes;
    dkv_gemm_plan    plans[DKV_GEMM_PLANS];
    uint32_t         n_plans;
};

void dkv_gemm_plans_free(dkv_cuda_ctx *ctx);   /* gemm.cu */

#endif
