/* gemm.cu - bf16 GEMMs through cuBLASLt: y = x w^T (+ bias) (+ y), fp32 accumulation.
 *
 * Row-major y (T, N) is column-major y^T (N, T); w (N, K) row-major is column-major (K, N), so
 * y^T = op_T(w_cm) * x_cm with m = N, n = T, k = K.  Plans (descriptors and the heuristic's
 * algorithm) are cached per shape in the context: the heuristic query costs tens of
 * microseconds, a Reuse step issues ~130 GEMMs.  The heuristic's first algorithm is used: timing
 * its 8 candidates per shape (tried on the H200, 2026-11-29) gained nothing measurable at T = 32,
 * and two nvjet kernels it picked were flagged by compute-sanitizer racecheck (inside cuBLASLt). */
#include "cuda/common.cuh"
#include "cuda/ctx_internal.h"

#define LT(call)                                                                                   \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                           \
            return dkv_err_set(err, DKV_EIO, "%s:%d: %s: cuBLAS status %d", __FILE__, __LINE__,    \
                               #call, (int)s_);                                                    \
    } while (0)

void dkv_gemm_plans_free(dkv_cuda_ctx *ctx)
{
    for (uint32_t i = 0; i < ctx->n_plans; i++) {
        dkv_gemm_plan *p = &ctx->plans[i];
        cublasLtMatrixLayoutDestroy(p->a);
        cublasLtMatrixLayoutDestroy(p->b);
        cublasLtMatrixLayoutDestroy(p->c);
        cublasLtMatmulDescDestroy(p->op);
    }
    ctx->n_plans = 0;
}

static dkv_status make_plan(dkv_cuda_ctx *ctx, dkv_gemm_plan *p, dkv_err *err)
{
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (p->has_bias) {
        cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bt = CUDA_R_16BF;
        LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
        LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    }
    LT(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, p->K, p->N, p->K));
    LT(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, p->K, p->T, p->K));
    LT(cublasLtMatrixLayoutCreate(&p->c, p->f32_out ? CUDA_R_32F : CUDA_R_16BF, p->N, p->T, p->N));
    cublasLtMatmulPreference_t pref;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ctx->lt_ws_bytes,
                                         sizeof ctx->lt_ws_bytes);
    cublasLtMatmulHeuristicResult_t res[1];
    int n = 0;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(ctx->lt, p->op, p->a, p->b, p->c, p->c, pref, 1, res, &n);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS || n == 0)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "dkv_cuda_gemm: cuBLASLt has no algorithm for T=%u K=%u N=%u "
                           "(status %d)", p->T, p->K, p->N, (int)s);
    p->algo = res[0].algo;
    return DKV_OK;
}

static dkv_status get_plan(dkv_cuda_ctx *ctx, uint32_t T, uint32_t K, uint32_t N, int f32_out, int has_bias,
                           int accumulate, dkv_gemm_plan **out, dkv_err *err)
{
    for (uint32_t i = 0; i < ctx->n_plans; i++) {
        dkv_gemm_plan *p = &ctx->plans[i];
        if (p->T == T && p->K == K && p->N == N && p->f32_out == f32_out && p->has_bias == has_bias &&
            p->accumulate == accumulate) {
            *out = p;
            return DKV_OK;
        }
    }
    if (ctx->n_plans == DKV_GEMM_PLANS)   /* full: start over (shapes of a run are few) */
        dkv_gemm_plans_free(ctx);
    dkv_gemm_plan *p = &ctx->plans[ctx->n_plans];
    memset(p, 0, sizeof *p);
    p->T = T, p->K = K, p->N = N, p->f32_out = f32_out, p->has_bias = has_bias, p->accumulate = accumulate;
    dkv_status st = make_plan(ctx, p, err);
    if (st != DKV_OK) {
        if (p->a) cublasLtMatrixLayoutDestroy(p->a);
        if (p->b) cublasLtMatrixLayoutDestroy(p->b);
        if (p->c) cublasLtMatrixLayoutDestroy(p->c);
        if (p->op) cublasLtMatmulDescDestroy(p->op);
        return st;
    }
    ctx->n_plans++;
    *out = p;
    return DKV_OK;
}

/* The launcher: one cublasLtMatmul on the context's stream, then the launch check. */
static dkv_status launch_gemm(dkv_cuda_ctx *ctx, void *y, int f32_out, const dkv_bf16 *x, const dkv_bf16 *w,
                              const dkv_bf16 *bias, uint32_t T, uint32_t K, uint32_t N, float beta, dkv_err *err)
{
    dkv_gemm_plan *p;
    dkv_status st = get_plan(ctx, T, K, N, f32_out, bias != NULL, beta != 0.0f, &p, err);
    if (st != DKV_OK)
        return st;
    if (bias)
        LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    float alpha = 1.0f;
    LT(cublasLtMatmul(ctx->lt, p->op, &alpha, w, p->a, x, p->b, &beta, y, p->c, y, p->c, &p->algo, ctx->lt_ws,
                      ctx->lt_ws_bytes, ctx->stream));
    return dkv_launch_check("cublasLtMatmul", err);
}

extern "C" dkv_status dkv_cuda_gemm(dkv_cuda_ctx *ctx, dkv_bf16 *y, const dkv_bf16 *x, const dkv_bf16 *w,
                                    const dkv_bf16 *bias, uint32_t T, uint32_t K, uint32_t N, float beta, dkv_err *err)
{
    DKV_ARG(ctx && y && x && w, "dkv_cuda_gemm");
    DKV_ARG(K > 0 && N > 0 && K % 8 == 0 && N % 8 == 0, "dkv_cuda_gemm");
    DKV_ARG(beta == 0.0f || beta == 1.0f, "dkv_cuda_gemm");
    if (T == 0)
        return DKV_OK;
    return launch_gemm(ctx, y, 0, x, w, bias, T, K, N, beta, err);
}

extern "C" dkv_status dkv_cuda_gemm_f32(dkv_cuda_ctx *ctx, float *y, const dkv_bf16 *x, const dkv_bf16 *w, uint32_t T,
                                        uint32_t K, uint32_t N, dkv_err *err)
{
    DKV_ARG(ctx && y && x && w, "dkv_cuda_gemm_f32");
    DKV_ARG(K > 0 && N > 0 && K % 8 == 0, "dkv_cuda_gemm_f32");
    if (T == 0)
        return DKV_OK;
    return launch_gemm(ctx, y, 1, x, w, NULL, T, K, N, 0.0f, err);
}
