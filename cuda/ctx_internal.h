/* ctx_internal.h - the body of dkv_cuda_ctx, shared by device.cu and gemm.cu (not public). */
#ifndef DKV_CUDA_CTX_INTERNAL_H
#define DKV_CUDA_CTX_INTERNAL_H

#include <cublasLt.h>
#include <cublas_v2.h>

#include "cuda/dkv_cuda.h"

/* One cached cuBLASLt plan (descriptors + the heuristic's algorithm) per GEMM shape; a slot of the
 * context's open-addressing table (used 0: empty). */
typedef struct dkv_gemm_plan {
    int                    used;
    uint32_t               T, K, N;
    int                    f32_out, has_bias, accumulate;
    cublasLtMatmulDesc_t   op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t   algo;
} dkv_gemm_plan;

/* Slots of the plan table (a power of two).  A run's shapes (4 GEMM classes and the LM head at every
 * row count a step has) fill up to DKV_GEMM_PLANS_MAX of them; then the table starts over.  Until
 * 2026-12-01 (session 13) it held 64 plans, which a run of arrivals over time overflowed: every
 * shape was planned again, a cost the simulator's first-use model (warm for the process) did not see. */
#define DKV_GEMM_PLANS 2048
#define DKV_GEMM_PLANS_MAX 1536

/* An algorithm the warm-up's heuristic chose at a warm-up row count (core/model/gemm_warm.h), kept for
 * the context's life: a shape of T rows plans with its bucket's algorithm (gemm.cu, make_plan).  The
 * warm-up of a model's 5 GEMMs at 1,024 row counts keeps 5,120 of them. */
typedef struct dkv_gemm_warm_algo {
    uint32_t             T, K, N;
    int                  flags;   /* f32_out | has_bias << 1 | accumulate << 2 */
    cublasLtMatmulAlgo_t algo;
} dkv_gemm_warm_algo;

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
    dkv_gemm_warm_algo *warm;                       /* the warm-up's algorithms (malloc'd), in the order asked */
    uint32_t         n_warm, cap_warm;
    uint32_t         n_bucket_plans;                /* plans made with a bucket's algorithm (tests) */
};

void dkv_gemm_plans_free(dkv_cuda_ctx *ctx);   /* gemm.cu */

#endif
