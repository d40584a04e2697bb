/* bench_sel_align.c - the sparse selection's parts at aligned and unaligned key counts (issue 9,
 * session 13; docs/COST_MODEL.md "Unaligned key counts"): per head configuration (LLaDA-8B 32 / 32,
 * Dream-7B 28 / 4, head_dim 128, 32 block rows) and key count, the median time of
 *   scores    dkv_bk_scores: the score GEMM(s), row statistics and column sums (as the backend runs it)
 *   gemm      the score GEMM(s) alone, the same cuBLAS call as cuda/backend_scores.cu (ldc = keys)
 *   gemm_pad8 the same GEMM(s) with ldc = keys rounded up to a multiple of 8 floats (32 bytes)
 *   topk      dkv_cuda_topk over the scores (per-head sets)
 * If the unaligned excess of `scores` is the GEMM's and gemm_pad8 removes it, the cause is the GEMM's
 * output stride (C's columns 4-byte aligned at an odd count).
 *
 *   bench_sel_align          medians of 25 after 5 warm-ups (CUDA events, L2 warm), one line per point
 *   bench_sel_align --ncu    each call once, no timing, in the order above per point (under Nsight Compute:
 *                            the kernels cuBLAS picks per key count; scripts/sel_align_ncu.py reads its CSV)
 * Prints "SKIP: ..." and exits 77 without a GPU. */
#include <cublas_v2.h>

#include "cuda/backend_internal.h"
#include "gpu_args.h"
#include "gpu_check.h"

static cudaStream_t st;
static int reps = 25, warm = 5;

#include "bench_time.h"

/* The score GEMM(s) of cuda/backend_scores.cu scores_rows, C's leading dimension ldc (>= Tk). */
static void score_gemm(cublasHandle_t h, const dkv_bf16 *q, uint32_t ldq, uint32_t Tq, const dkv_bf16 *k,
                       uint32_t ldk, uint32_t Tk, uint32_t H, uint32_t Hkv, uint32_t D, float *S, uint32_t ldc)
{
    const float one = 1.0f, zero = 0.0f;
    uint32_t G = H / Hkv;
    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
    if (G == 1)
        bs = cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, Tk, Tq, D, &one, k, CUDA_R_16BF, ldk, D, q,
                                        CUDA_R_16BF, ldq, D, &zero, S, CUDA_R_32F, ldc, (long long)Tq * ldc, H,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else
        for (uint32_t g = 0; g < Hkv && bs == CUBLAS_STATUS_SUCCESS; g++)
            bs = cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, Tk, Tq, D, &one, k + (size_t)g * D,
                                            CUDA_R_16BF, ldk, 0, q + (size_t)g * G * D, CUDA_R_16BF, ldq, D, &zero,
                                            S + (size_t)g * G * Tq * ldc, CUDA_R_32F, ldc, (long long)Tq * ldc, G,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "bench_sel_align: cublasGemmStridedBatchedEx failed (status %d) at %u keys, ldc %u\n", (int)bs,
                Tk, ldc);
        exit(1);
    }
}

static uint32_t align_class(uint32_t keys)
{
    uint32_t c = 1;
    while (c < 32 && keys % (2 * c) == 0)
        c *= 2;
    return c;
}

int main(int argc, char **argv)
{
    int ncu = gpu_args_flag(argc, argv, "bench_sel_align", "--ncu", "for Nsight Compute: warm-up launches only, no timed repetitions");
    skip_without_gpu();
    if (ncu)
        reps = 0, warm = 1;
    CK(cudaStreamCreate(&st));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(h, st) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "bench_sel_align: cublasCreate failed\n");
        return 1;
    }
    enum { BT = 32, D = 128, LMAX = 1312 };
    static const uint32_t cfg[][2] = {{32, 32}, {28, 4}};
    static const uint32_t keys[] = {832, 833, 834, 836, 840, 848, 1264, 1280, 1281};
    size_t qkv_max = (size_t)(32 + 2 * 32) * D;
    dkv_bf16 *qkv = dev_alloc((size_t)LMAX * qkv_max * 2);
    OK(dkv_cuda_fill_random(qkv, (size_t)LMAX * qkv_max, 3, 1, 0, st, &err));
    size_t ws_bytes = dkv_bk_scores_workspace_bytes(BT, LMAX + 8, 32);
    float *ws = dev_alloc(ws_bytes), *score = dev_alloc((size_t)32 * LMAX * 4);
    uint32_t *sel = dev_alloc((size_t)32 * LMAX * 4);
    printf("bench_sel_align: per call, us (median of %d after %d warm-ups, L2 warm); block rows %d, head_dim %d\n",
           reps, warm, BT, D);
    printf("%-6s %-7s %5s %5s %9s %9s %9s %9s\n", "heads", "kv", "keys", "align", "scores", "gemm", "gemm_pad8",
           "topk");
    for (int c = 0; c < 2; c++)
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            uint32_t H = cfg[c][0], Hkv = cfg[c][1], L = keys[i], QKV = (H + 2 * Hkv) * D;
            uint32_t keep = (L - BT) / 2, pad = (L + 7) / 8 * 8;
            const dkv_bf16 *q = qkv + (size_t)(L - BT) * QKV, *k = qkv + (size_t)H * D;
            float us_sc = 0, us_g = 0, us_p = 0, us_t = 0;
            TIME_US(us_sc, OK(dkv_bk_scores(h, score, q, QKV, BT, k, QKV, L, H, Hkv, D, ws, ws_bytes, st, &err)));
            TIME_US(us_g, score_gemm(h, q, QKV, BT, k, QKV, L, H, Hkv, D, ws, L));
            TIME_US(us_p, score_gemm(h, q, QKV, BT, k, QKV, L, H, Hkv, D, ws, pad));
            TIME_US(us_t, OK(dkv_cuda_topk(sel, score, Hkv, L, keep, L - BT, L, false, st, &err)));
            CK(cudaStreamSynchronize(st));
            printf("%-6u %-7u %5u %5u %9.2f %9.2f %9.2f %9.2f\n", H, Hkv, L, align_class(L), us_sc, us_g, us_p, us_t);
        }
    CK(cudaGetLastError());
    cublasDestroy(h);
    printf("bench_sel_align: done\n");
    return 0;
}
