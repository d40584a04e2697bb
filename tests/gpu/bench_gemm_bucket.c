/* bench_gemm_bucket.c - how much a GEMM loses when it runs with the algorithm cuBLASLt's heuristic chose
 * for a larger row count (the CUDA backend's bucket algorithms, docs/COST_MODEL.md "Cold shapes",
 * "Bucket algorithms"), by the spacing of the warm-up grid (device call 47 chose every multiple of 8
 * with it; the last column is the grid core/model/gemm_warm.h holds now).
 *
 * LLaDA-8B's four GEMMs (q|k|v, o +=, gate|up, down +=; bf16, fp32 accumulation, as cuda/gemm.cu plans
 * them) at row counts of real steps off the warm-up grid: each timed (median of 20 event-timed calls
 * after 5) with the heuristic's own algorithm at T, and with the heuristic's algorithm at Tb = T rounded up
 * to a multiple of g (g = 8 ... 256) and at the shipped grid's bucket (core/model/gemm_warm.h), where
 * cublasLtMatmulAlgoCheck accepts it for T.  Prints one line per shape and row count, then per spacing
 * the mean and the largest loss.  No assertion: a benchmark. */
#include "gpu_check.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"   /* cublasLt.h declares f() */
#include <cublasLt.h>
#pragma GCC diagnostic pop

#include "bench_time.h"
#include "model/gemm_warm.h"

static cudaStream_t st;
static const int reps = 20, warm = 5;
static cublasLtHandle_t lt;
static void *ws;
static const size_t WS = (size_t)32 << 20;

#define LTC(x)                                                                                \
    do {                                                                                      \
        cublasStatus_t s_ = (x);                                                              \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                    \
            fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #x, (int)s_); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

typedef struct plan {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
} plan;

static void plan_make(plan *p, uint32_t T, uint32_t K, uint32_t N)
{
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LTC(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LTC(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LTC(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LTC(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, K, N, K));
    LTC(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, K, T, K));
    LTC(cublasLtMatrixLayoutCreate(&p->c, CUDA_R_16BF, N, T, N));
}

static void plan_free(plan *p)
{
    cublasLtMatrixLayoutDestroy(p->a), cublasLtMatrixLayoutDestroy(p->b), cublasLtMatrixLayoutDestroy(p->c);
    cublasLtMatmulDescDestroy(p->op);
}

static cublasLtMatmulAlgo_t heuristic(uint32_t T, uint32_t K, uint32_t N)
{
    plan p;
    plan_make(&p, T, K, N);
    cublasLtMatmulPreference_t pref;
    LTC(cublasLtMatmulPreferenceCreate(&pref));
    LTC(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &WS, sizeof WS));
    cublasLtMatmulHeuristicResult_t r;
    int n = 0;
    LTC(cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.a, p.b, p.c, p.c, pref, 1, &r, &n));
    cublasLtMatmulPreferenceDestroy(pref);
    plan_free(&p);
    if (n == 0) {
        fprintf(stderr, "no algorithm for %u x %u x %u\n", T, K, N);
        exit(1);
    }
    return r.algo;
}

/* Median microseconds of y = x w^T (+ y when beta) at T rows with algo; < 0 when cuBLASLt refuses it. */
static float time_algo(const cublasLtMatmulAlgo_t *algo, uint32_t T, uint32_t K, uint32_t N, float beta,
                       const void *x, const void *w, void *y)
{
    plan p;
    plan_make(&p, T, K, N);
    cublasLtMatmulHeuristicResult_t chk;
    memset(&chk, 0, sizeof chk);
    float us = -1, alpha = 1;
    if (cublasLtMatmulAlgoCheck(lt, p.op, p.a, p.b, p.c, p.c, algo, &chk) == CUBLAS_STATUS_SUCCESS &&
        chk.workspaceSize <= WS)
        TIME_US(us, LTC(cublasLtMatmul(lt, p.op, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, algo, ws, WS, st)));
    plan_free(&p);
    return us;
}

int main(void)
{
    skip_without_gpu();
    CK(cudaStreamCreate(&st));
    LTC(cublasLtCreate(&lt));
    CK(cudaMalloc(&ws, WS));
    static const struct { const char *name; uint32_t K, N; float beta; } sh[] = {
        {"qkv", 4096, 12288, 0}, {"o", 4096, 4096, 1}, {"gate|up", 4096, 24576, 0}, {"down", 12288, 4096, 1}};
    static const uint32_t Ts[] = {200, 401, 612, 873, 969, 1264, 1713, 2005, 2845, 3466, 4430, 5962, 7105};
    static const uint32_t G[] = {8, 16, 32, 64, 128, 256};
    enum { NG = 6, NT = sizeof Ts / sizeof Ts[0], TMAX = 8192 };
    void *x, *w, *y;
    CK(cudaMalloc(&x, (size_t)TMAX * 12288 * 2));
    CK(cudaMalloc(&w, (size_t)24576 * 4096 * 2));
    CK(cudaMalloc(&y, (size_t)TMAX * 24576 * 2));
    CK(cudaMemset(x, 0x3c, (size_t)TMAX * 12288 * 2));
    CK(cudaMemset(w, 0x3c, (size_t)24576 * 4096 * 2));
    CK(cudaMemset(y, 0, (size_t)TMAX * 24576 * 2));
    double sum[NG + 1] = {0}, worst[NG + 1] = {0};
    int cnt[NG + 1] = {0};
    printf("GEMM T: heuristic's us | loss with the algorithm of T rounded up to g = 8 16 32 64 128 256 | the backend's bucket\n");
    for (size_t s = 0; s < sizeof sh / sizeof sh[0]; s++)
        for (int i = 0; i < NT; i++) {
            uint32_t T = Ts[i], K = sh[s].K, N = sh[s].N;
            cublasLtMatmulAlgo_t h = heuristic(T, K, N);
            float th = time_algo(&h, T, K, N, sh[s].beta, x, w, y);
            printf("%-8s %5u: %8.1f |", sh[s].name, T, th);
            for (int g = 0; g <= NG; g++) {
                uint32_t Tb = g < NG ? (T + G[g] - 1) / G[g] * G[g] : dkv_gemm_warm_bucket(T);
                cublasLtMatmulAlgo_t a = heuristic(Tb, K, N);
                float t = time_algo(&a, T, K, N, sh[s].beta, x, w, y);
                if (t < 0) {
                    printf(" %7s", "refused");
                    continue;
                }
                double loss = (t / th - 1) * 100;
                sum[g] += loss, cnt[g]++, worst[g] = loss > worst[g] ? loss : worst[g];
                printf(" %+6.1f%%", loss);
                if (g == NG - 1)
                    printf(" |");
            }
            printf("\n");
        }
    for (int g = 0; g <= NG; g++) {
        char name[24];
        snprintf(name, sizeof name, g < NG ? "g = %u" : "backend grid", g < NG ? G[g] : 0);
        printf("SUMMARY %-12s mean loss %+.2f %%, largest %+.1f %% (%d shapes)\n", name, cnt[g] ? sum[g] / cnt[g] : 0,
               worst[g], cnt[g]);
    }
    cudaFree(x), cudaFree(w), cudaFree(y), cudaFree(ws);
    cublasLtDestroy(lt);
    CK(cudaStreamDestroy(st));
    return 0;
}
