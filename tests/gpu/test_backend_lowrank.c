/* test_backend_lowrank.c - the low-rank projection of KV (cuda/lowrank.h: randomized range
 * finder through cuBLAS, Gram-Schmidt in double) against a CPU computation on random
 * low-rank-plus-noise matrices.
 *
 * Each of 6 matrices A (m x n = 200 x 64, KV rows of head_dim 64) is U diag(s) V^T of rank 8
 * (s = 10, 8, 6.4, ...) plus N(0, sigma^2) noise, rounded to bf16 (what the device stores).
 * For rank 8 and rank 16 the test checks, against float64 computations on the CPU:
 *   - the device's relative error equals ||A - Q B||_F / ||A||_F computed from its Q and B;
 *   - that error is never below, and at most 2 % (12 % with noise 0.05, 15 % at rank 16) above,
 *     the optimum of a rank-r approximation, sqrt(sum of the squared singular values beyond r)
 *     / ||A||_F (eigenvalues of A^T A by Jacobi rotations);
 *   - Q has orthonormal columns (|Q^T Q - I| <= 1e-3);
 * that a pure rank-8 matrix is recovered at rank 8 to bf16 precision; and rank deficiency (the
 * CUDA frontier's lowrank_0.5 NaN, device call 13: layer 0's V of a short range has fewer
 * distinct rows than r): 200 rows drawn from 20 distinct ones at r = 32 give finite Q and B,
 * an error <= 1e-5, and Q^T Q = diag of 20 ones and 12 zeros (dropped columns) within 1e-3.
 * Outputs are poisoned first.  Prints "SKIP: ..." and exits 77 without a usable GPU. */
#include "gpu_check.h"

#include "cuda/lowrank.h"

enum { M = 200, N = 64, NB = 6, K = 8 };

/* Singular values squared of A (m x n, row-major, double) via cyclic Jacobi on A^T A. */
static void sing2(const double *A, uint32_t m, uint32_t n, double *ev)
{
    double *G = calloc((size_t)n * n, sizeof *G);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++) {
            double s = 0;
            for (uint32_t k = 0; k < m; k++)
                s += A[(size_t)k * n + i] * A[(size_t)k * n + j];
            G[(size_t)i * n + j] = s;
        }
    for (int sweep = 0; sweep < 60; sweep++) {
        double off = 0;
        for (uint32_t p = 0; p < n; p++)
            for (uint32_t q = p + 1; q < n; q++)
                off += G[(size_t)p * n + q] * G[(size_t)p * n + q];
        if (off < 1e-22)
            break;
        for (uint32_t p = 0; p < n; p++)
            for (uint32_t q = p + 1; q < n; q++) {
                double apq = G[(size_t)p * n + q];
                if (fabs(apq) < 1e-300)
                    continue;
                double th = (G[(size_t)q * n + q] - G[(size_t)p * n + p]) / (2 * apq);
                double t = (th >= 0 ? 1.0 : -1.0) / (fabs(th) + sqrt(th * th + 1)), c = 1 / sqrt(t * t + 1), s = t * c;
                for (uint32_t k = 0; k < n; k++) {   /* G = J^T G J */
                    double gkp = G[(size_t)k * n + p], gkq = G[(size_t)k * n + q];
                    G[(size_t)k * n + p] = c * gkp - s * gkq;
                    G[(size_t)k * n + q] = s * gkp + c * gkq;
                }
                for (uint32_t k = 0; k < n; k++) {
                    double gpk = G[(size_t)p * n + k], gqk = G[(size_t)q * n + k];
                    G[(size_t)p * n + k] = c * gpk - s * gqk;
                    G[(size_t)q * n + k] = s * gpk + c * gqk;
                }
            }
    }
    for (uint32_t i = 0; i < n; i++)
        ev[i] = G[(size_t)i * n + i] > 0 ? G[(size_t)i * n + i] : 0;
    for (uint32_t i = 0; i < n; i++)   /* descending */
        for (uint32_t j = i + 1; j < n; j++)
            if (ev[j] > ev[i]) {
                double t = ev[i];
                ev[i] = ev[j], ev[j] = t;
            }
    free(G);
}

static void run_case(const char *name, double sigma, uint32_t rank, double over, dkv_cuda_lowrank *lr, dkv_rng *rng)
{
    size_t mn = (size_t)M * N;
    float *A = malloc(NB * mn * sizeof *A);
    for (int b = 0; b < NB; b++) {
        double U[M * K], Vt[K * N], s = 10;
        for (size_t i = 0; i < M * K; i++)
            U[i] = dkv_rng_normal(rng) / sqrt((double)M);
        for (size_t i = 0; i < K * N; i++)
            Vt[i] = dkv_rng_normal(rng) / sqrt((double)N);
        for (uint32_t i = 0; i < M; i++)
            for (uint32_t j = 0; j < N; j++) {
                double v = 0, sk = s;
                for (uint32_t k = 0; k < K; k++, sk *= 0.8)
                    v += U[i * K + k] * sk * Vt[k * N + j];
                v += sigma * dkv_rng_normal(rng);
                A[b * mn + (size_t)i * N + j] = h_bf2f(h_f2bf((float)v));
            }
    }
    dkv_bf16 *dA = upload_bf16(A, NB * mn);
    float *dQ = dev_alloc(NB * (size_t)M * rank * 4), *dB = dev_alloc(NB * (size_t)rank * N * 4),
          *dE = dev_alloc(NB * 4);
    poison(dQ, NB * (size_t)M * rank * 4), poison(dB, NB * (size_t)rank * N * 4), poison(dE, NB * 4);
    OK(dkv_cuda_lowrank_compress(lr, dA, M, N, NB, rank, 1, dkv_rng_u64(rng), dQ, dB, dE, &err));
    float *Q = download(dQ, NB * (size_t)M * rank * 4), *Bm = download(dB, NB * (size_t)rank * N * 4),
          *E = download(dE, NB * 4);
    float got[NB], cpu[NB], opt[NB];
    double orth = 0;
    double *Ad = malloc(mn * sizeof *Ad), ev[N];
    for (int b = 0; b < NB; b++) {
        const float *a = A + b * mn, *q = Q + (size_t)b * M * rank, *bb = Bm + (size_t)b * rank * N;
        double num = 0, den = 0;
        for (uint32_t i = 0; i < M; i++)
            for (uint32_t j = 0; j < N; j++) {
                double r = 0;
                for (uint32_t k = 0; k < rank; k++)
                    r += (double)q[i * rank + k] * bb[k * N + j];
                double d = a[(size_t)i * N + j] - r;
                num += d * d;
                den += (double)a[(size_t)i * N + j] * a[(size_t)i * N + j];
                Ad[(size_t)i * N + j] = a[(size_t)i * N + j];
            }
        got[b] = E[b];
        cpu[b] = (float)sqrt(num / den);
        sing2(Ad, M, N, ev);
        double tail = 0;
        for (uint32_t k = rank; k < N; k++)
            tail += ev[k];
        opt[b] = (float)sqrt(tail / den);
        for (uint32_t i = 0; i < rank; i++)
            for (uint32_t j = 0; j < rank; j++) {
                double s = 0;
                for (uint32_t k = 0; k < M; k++)
                    s += (double)q[k * rank + i] * q[k * rank + j];
                s -= i == j;
                orth = fabs(s) > orth ? fabs(s) : orth;
            }
    }
    char line[200];
    printf("-- %s: rank %u, device error %.4e, CPU from its factors %.4e, optimum %.4e\n", name, rank, got[0], cpu[0],
           opt[0]);
    char nm[96];
    snprintf(nm, sizeof nm, "%s: error = CPU(Q, B)", name);
    check(nm, got, cpu, NB, 1e-5, 1e-3);
    int ok = 1;
    double worst = 0;
    for (int b = 0; b < NB; b++) {   /* never below the optimum (Eckart-Young), at most `over` above */
        ok &= got[b] >= opt[b] * (1 - 1e-3) - 1e-6 && got[b] <= opt[b] * (1 + over) + 1e-4;
        worst = got[b] / opt[b] - 1 > worst ? got[b] / opt[b] - 1 : worst;
    }
    snprintf(nm, sizeof nm, "%s: error vs optimum", name);
    snprintf(line, sizeof line, "at most %.2f%% above the optimal rank-%u error (tol %.0f%%)", 100 * worst, rank,
             100 * over);
    check_true(nm, ok, line);
    snprintf(line, sizeof line, "max |Q^T Q - I| = %.2e (tol 1e-3)", orth);
    snprintf(nm, sizeof nm, "%s: Q orthonormal", name);
    check_true(nm, orth <= 1e-3, line);
    free(A), free(Q), free(Bm), free(E), free(Ad);
    cudaFree(dA), cudaFree(dQ), cudaFree(dB), cudaFree(dE);
}

/* 200 rows, each one of 20 distinct bf16 rows, compressed at rank 32 > 20. */
static void run_deficient(dkv_cuda_lowrank *lr, dkv_rng *rng)
{
    enum { DISTINCT = 20, R = 32 };
    size_t mn = (size_t)M * N;
    float *A = malloc(NB * mn * sizeof *A), rows[DISTINCT * N];
    for (int b = 0; b < NB; b++) {
        for (size_t i = 0; i < DISTINCT * N; i++)
            rows[i] = h_bf2f(h_f2bf((float)dkv_rng_normal(rng)));
        for (uint32_t i = 0; i < M; i++)
            memcpy(A + b * mn + (size_t)i * N, rows + (size_t)dkv_rng_below(rng, DISTINCT) * N, N * sizeof *A);
    }
    dkv_bf16 *dA = upload_bf16(A, NB * mn);
    float *dQ = dev_alloc(NB * (size_t)M * R * 4), *dB = dev_alloc(NB * (size_t)R * N * 4), *dE = dev_alloc(NB * 4);
    poison(dQ, NB * (size_t)M * R * 4), poison(dB, NB * (size_t)R * N * 4), poison(dE, NB * 4);
    OK(dkv_cuda_lowrank_compress(lr, dA, M, N, NB, R, 1, dkv_rng_u64(rng), dQ, dB, dE, &err));
    float *Q = download(dQ, NB * (size_t)M * R * 4), *Bm = download(dB, NB * (size_t)R * N * 4), *E = download(dE, NB * 4);
    int finite = 1, kept_ok = 1;
    double worst_err = 0, orth = 0;
    for (size_t i = 0; i < NB * (size_t)M * R; i++)
        finite &= isfinite(Q[i]);
    for (size_t i = 0; i < NB * (size_t)R * N; i++)
        finite &= isfinite(Bm[i]);
    for (int b = 0; b < NB; b++) {
        const float *q = Q + (size_t)b * M * R;
        finite &= isfinite(E[b]);
        worst_err = E[b] > worst_err ? E[b] : worst_err;
        uint32_t kept = 0;
        for (uint32_t i = 0; i < R; i++)
            for (uint32_t j = 0; j < R; j++) {
                double s = 0;
                for (uint32_t k = 0; k < M; k++)
                    s += (double)q[k * R + i] * q[k * R + j];
                double want = i == j && s > 0.5 ? 1.0 : 0.0;
                kept += i == j && s > 0.5;
                orth = fabs(s - want) > orth ? fabs(s - want) : orth;
            }
        kept_ok &= kept >= DISTINCT;   /* the signal's 20 directions, and any extra ones orthonormal or zero */
    }
    char line[160];
    printf("-- 20 distinct rows, r 32: device error %.3e, Q/B/error finite %d, max |Q^T Q - diag(1 x 20, 0 x 12)| "
           "%.2e\n", worst_err, finite, orth);   /* D: 1 on kept columns, 0 on zero ones */
    check_true("rank deficient: Q, B, error finite", finite, "a NaN or inf in the outputs");
    snprintf(line, sizeof line, "largest error %.3e (tol 1e-5)", worst_err);
    check_true("rank deficient: exact recovery", finite && worst_err <= 1e-5, line);
    snprintf(line, sizeof line, "max |Q^T Q - D| = %.2e (tol 1e-3), >= 20 columns kept each: %d", orth, kept_ok);
    check_true("rank deficient: columns orthonormal or zero, >= 20 kept", finite && kept_ok && orth <= 1e-3, line);
    free(A), free(Q), free(Bm), free(E);
    cudaFree(dA), cudaFree(dQ), cudaFree(dB), cudaFree(dE);
}

int main(void)
{
    skip_without_gpu();
    dkv_rng rng;
    dkv_rng_seed(&rng, 7);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    dkv_cuda_lowrank *lr = NULL;
    OK(dkv_cuda_lowrank_new(s, M, N, 32, 4, &lr, &err));   /* batches of 4: the 6 matrices in two pieces */
    run_case("rank 8 + noise 0.01", 0.01, 8, 0.02, lr, &rng);
    run_case("rank 8 + noise 0.01, r 16", 0.01, 16, 0.15, lr, &rng);
    /* a small gap between the 8th singular value (~2) and the noise's largest (~1.1): without
     * oversampling and with one power iteration the range finder lands ~8 % above the optimum
     * (measured on the H200, 2026-11-29) */
    run_case("rank 8 + noise 0.05", 0.05, 8, 0.12, lr, &rng);
    run_case("rank 8, no noise", 0.0, 8, 0.05, lr, &rng);
    run_deficient(lr, &rng);
    dkv_err e = {0};
    dkv_status st = dkv_cuda_lowrank_compress(lr, (const dkv_bf16 *)1, M, N, 1, 33, 1, 1, NULL, NULL, NULL, &e);
    check_true("rank above max_rank is EINVAL", st == DKV_EINVAL, e.msg);
    dkv_cuda_lowrank_free(lr);
    cudaStreamDestroy(s);
    printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
