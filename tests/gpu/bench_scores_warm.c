/* bench_scores_warm.c - the sparse selection's scores (dkv_bk_scores: cuBLAS's strided batched GEMM, a
 * kernel picked and lazily loaded per shape) before and after the CUDA backend's scores warm-up
 * (cuda/backend.c warm_scores: every key count 1..max_L at block_len query rows; docs/COST_MODEL.md
 * "Cold shapes").  Per head configuration (LLaDA-8B 32 / 32, Dream-7B 28 / 4; head_dim 128, 32 query rows):
 *   cold   the first call at each of 8 key counts of real steps (after one call at 1,024 keys) less the
 *          median of 5 later calls at the same count: the first use's cost without the warm-up
 *   warm   the warm-up's loop over 1..4,096 keys: its wall time
 *   after  the same excess at 8 other key counts after the warm-up
 * Host clock around synchronised calls.  Prints one line per configuration; no assertion: a benchmark.
 * Prints "SKIP: ..." and exits 77 without a GPU. */
#include <cublas_v2.h>

#include "cuda/backend_internal.h"
#include "gpu_check.h"
#include "util/mono.h"

#include "bench_time.h"   /* cmp_float */

typedef struct sc {
    cublasHandle_t h;
    cudaStream_t st;
    dkv_bf16 *qkv;
    float *score, *ws;
    size_t ws_bytes;
    uint32_t H, Hkv, D, QKV;
} sc;

static double call_s(sc *c, uint32_t Tk)
{
    dkv_err e = {0};
    CK(cudaStreamSynchronize(c->st));
    double t0 = dkv_mono_s();
    if (dkv_bk_scores(c->h, c->score, c->qkv, c->QKV, 32, c->qkv + c->H * c->D, c->QKV, Tk, c->H, c->Hkv, c->D, c->ws,
                      c->ws_bytes, c->st, &e) != DKV_OK) {
        fprintf(stderr, "bench_scores_warm: %s\n", e.msg);
        exit(1);
    }
    CK(cudaStreamSynchronize(c->st));
    return dkv_mono_s() - t0;
}

/* The first call at Tk less the median of 5 more, ms. */
static double excess_ms(sc *c, uint32_t Tk)
{
    double first = call_s(c, Tk);
    float t[5];
    for (int i = 0; i < 5; i++)
        t[i] = (float)call_s(c, Tk);
    qsort(t, 5, sizeof t[0], cmp_float);
    return (first - t[2]) * 1e3;
}

int main(void)
{
    skip_without_gpu();
    enum { LMAX = 4096 };
    static const uint32_t cfg[][2] = {{32, 32}, {28, 4}};
    static const uint32_t cold[] = {1264, 1713, 2005, 2941, 3065, 777, 1001, 2500};
    static const uint32_t after[] = {1265, 1714, 2006, 2942, 3066, 779, 1003, 2503};
    for (int ci = 0; ci < 2; ci++) {
        sc c = {.H = cfg[ci][0], .Hkv = cfg[ci][1], .D = 128};
        c.QKV = (c.H + 2 * c.Hkv) * c.D;
        CK(cudaStreamCreate(&c.st));
        if (cublasCreate(&c.h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(c.h, c.st) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "bench_scores_warm: cuBLAS handle\n");
            return 1;
        }
        c.ws_bytes = dkv_bk_scores_workspace_bytes(32, LMAX, c.H);
        CK(cudaMalloc((void **)&c.qkv, (size_t)LMAX * c.QKV * 2));
        CK(cudaMalloc((void **)&c.score, (size_t)c.Hkv * LMAX * 4));
        CK(cudaMalloc((void **)&c.ws, c.ws_bytes));
        CK(cudaMemset(c.qkv, 0x3c, (size_t)LMAX * c.QKV * 2));
        call_s(&c, 1024);
        double ex_cold[8], ex_after[8], s_cold = 0, s_after = 0, m_cold = 0, m_after = 0;
        for (int i = 0; i < 8; i++) {
            ex_cold[i] = excess_ms(&c, cold[i]);
            s_cold += ex_cold[i], m_cold = ex_cold[i] > m_cold ? ex_cold[i] : m_cold;
        }
        double t0 = dkv_mono_s();
        for (uint32_t Tk = 1; Tk <= LMAX; Tk++)
            call_s(&c, Tk);
        double warm = dkv_mono_s() - t0;
        for (int i = 0; i < 8; i++) {
            ex_after[i] = excess_ms(&c, after[i]);
            s_after += ex_after[i], m_after = ex_after[i] > m_after ? ex_after[i] : m_after;
        }
        printf("scores %u/%u heads: cold first-call excess mean %.3f ms (largest %.3f; at", c.H, c.Hkv, s_cold / 8, m_cold);
        for (int i = 0; i < 8; i++)
            printf(" %u:%.2f", cold[i], ex_cold[i]);
        printf("); warm-up over 1..%u keys %.3f s; after it mean %.3f ms (largest %.3f)\n", (unsigned)LMAX, warm,
               s_after / 8, m_after);
        cudaFree(c.qkv), cudaFree(c.score), cudaFree(c.ws);
        cublasDestroy(c.h);
        CK(cudaStreamDestroy(c.st));
    }
    return 0;
}
