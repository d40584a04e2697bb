/* test_kernels.c - every elementwise kernel, the GEMMs (cuBLASLt, the skinny kernel with every
 * split count, SwiGLU fused into a GEMM), the LM head and the copies against
 * core/ref on fresh random bf16 inputs (never zeros), outputs poisoned first.  Attention, the KV
 * pool and the sparse-cache kernels are in test_kernels_attn.c.
 * Prints "SKIP: ..." and exits 77 without a usable GPU; exits 1 when any check fails. */
#include "gpu_check.h"

#include <time.h>

#include "model/gemm_warm.h"
#include "ref/ref.h"

static dkv_cuda_ctx *ctx;
static cudaStream_t st;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_fill_random(dkv_rng *r)
{
    size_t n = 1 << 20;
    dkv_bf16 *d = dev_alloc(n * 2);
    uint64_t seed = dkv_rng_u64(r);
    OK(dkv_cuda_fill_random(d, n, seed, 0.5f, 1.0f, st, &err));
    float *x = download_bf16(d, n);
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i], s2 += (double)x[i] * x[i];
    double mean = s / n, sd = sqrt(s2 / n - mean * mean);
    char line[128];
    snprintf(line, sizeof line, "mean %.4f (want 1), sd %.4f (want 0.5)", mean, sd);
    check_true("fill_random", fabs(mean - 1) < 0.01 && fabs(sd - 0.5) < 0.01, line);
    OK(dkv_cuda_fill_random(d, n, seed, 0.5f, 1.0f, st, &err));   /* same seed, same values */
    float *y = download_bf16(d, n);
    check_true("fill_random reproducible", memcmp(x, y, n * sizeof(float)) == 0, "same seed -> same bits");
    free(x);
    free(y);
    cudaFree(d);
}

static void test_embedding(dkv_rng *r)
{
    enum { T = 37, C = 264, V = 300 };
    float *wte = rand_bf16_values((size_t)V * C, 1, 0, r), ref[T * C];
    uint32_t tok[T];
    for (int t = 0; t < T; t++)
        tok[t] = (uint32_t)dkv_rng_below(r, V);
    dkv_bf16 *dw = upload_bf16(wte, (size_t)V * C), *dout = dev_alloc(T * C * 2);
    uint32_t *dt = upload(tok, sizeof tok);
    poison(dout, T * C * 2);
    OK(dkv_cuda_embedding(dout, dt, dw, T, C, V, st, &err));
    float *got = download_bf16(dout, T * C);
    dkv_ref_embedding(ref, tok, wte, T, C);
    check("embedding", got, ref, T * C, 0, 0);
    free(got), free(wte);
    cudaFree(dw), cudaFree(dout), cudaFree(dt);
}

static void test_rmsnorm(dkv_rng *r)
{
    static const uint32_t Cs[2] = {264, 4096 + 8 * 256 * 4};   /* short rows, and rows longer than kept */
    for (int c = 0; c < 2; c++) {
        uint32_t T = 29, C = Cs[c];
        float *x = rand_bf16_values((size_t)T * C, 2, 0.3f, r), *w = rand_bf16_values(C, 0.2f, 1, r);
        float *ref = malloc((size_t)T * C * 4);
        dkv_bf16 *dx = upload_bf16(x, (size_t)T * C), *dw = upload_bf16(w, C), *dout = dev_alloc((size_t)T * C * 2);
        poison(dout, (size_t)T * C * 2);
        OK(dkv_cuda_rmsnorm(dout, dx, dw, T, C, 1e-5f, st, &err));
        float *got = download_bf16(dout, (size_t)T * C);
        dkv_ref_rmsnorm(ref, x, w, T, C, 1e-5f);
        check(c ? "rmsnorm (C=12288)" : "rmsnorm (C=264)", got, ref, (size_t)T * C, 1e-3, 8e-3);
        free(got), free(x), free(w), free(ref);
        cudaFree(dx), cudaFree(dw), cudaFree(dout);
    }
}

static void test_rope(dkv_rng *r)
{
    enum { T = 41, H = 6, D = 128, LD = H * D + 64 };
    float *x = rand_bf16_values((size_t)T * LD, 1, 0, r), ref[T * H * D];
    uint32_t pos[T];
    for (int t = 0; t < T; t++)
        pos[t] = (uint32_t)dkv_rng_below(r, 4096);   /* positions up to LLaDA's max length */
    dkv_bf16 *dx = upload_bf16(x, (size_t)T * LD);
    uint32_t *dp = upload(pos, sizeof pos);
    OK(dkv_cuda_rope(dx, LD, dp, T, H, D, 500000.0f, st, &err));
    float *got = download_bf16(dx, (size_t)T * LD), g2[T * H * D];
    for (int t = 0; t < T; t++) {
        memcpy(ref + t * H * D, x + t * LD, H * D * 4);
        memcpy(g2 + t * H * D, got + t * LD, H * D * 4);
    }
    dkv_ref_rope(ref, pos, T, H, D, 500000.0);
    check("rope (theta 5e5, pos < 4096)", g2, ref, T * H * D, 1e-2, 8e-3);
    int untouched = 1;   /* the 64 values past the heads stay as they were */
    for (int t = 0; t < T; t++)
        untouched &= memcmp(got + t * LD + H * D, x + t * LD + H * D, 64 * 4) == 0;
    check_true("rope leaves the row tail", untouched, "values beyond n_heads*head_dim unchanged");
    free(x), free(got);
    cudaFree(dx), cudaFree(dp);
}

static void test_swiglu(dkv_rng *r)
{
    enum { T = 33, F = 200 };
    float *gu = rand_bf16_values((size_t)T * 2 * F, 2, 0, r), g[T * F], u[T * F], ref[T * F];
    for (int t = 0; t < T; t++) {
        memcpy(g + t * F, gu + t * 2 * F, F * 4);
        memcpy(u + t * F, gu + t * 2 * F + F, F * 4);
    }
    dkv_bf16 *dgu = upload_bf16(gu, (size_t)T * 2 * F), *dout = dev_alloc(T * F * 2);
    poison(dout, T * F * 2);
    OK(dkv_cuda_swiglu(dout, dgu, dgu + F, 2 * F, T, F, st, &err));
    float *got = download_bf16(dout, T * F);
    dkv_ref_swiglu(ref, g, u, T, F);
    check("swiglu (fused [gate|up])", got, ref, T * F, 1e-3, 8e-3);
    free(got), free(gu);
    cudaFree(dgu), cudaFree(dout);
}

static void test_gemm(dkv_rng *r)
{
    static const uint32_t shapes[][3] = {{32, 512, 768}, {7, 256, 1000}, {100, 1024, 520}};
    for (int i = 0; i < 3; i++) {
        uint32_t T = shapes[i][0], K = shapes[i][1], N = shapes[i][2];
        int bias = i == 1, acc = i == 2;
        float *x = rand_bf16_values((size_t)T * K, 1, 0, r), *w = rand_bf16_values((size_t)N * K, 1 / sqrtf(K), 0, r);
        float *b = rand_bf16_values(N, 0.5f, 0, r), *y0 = rand_bf16_values((size_t)T * N, 1, 0, r);
        float *ref = malloc((size_t)T * N * 4);
        dkv_bf16 *dx = upload_bf16(x, (size_t)T * K), *dw = upload_bf16(w, (size_t)N * K), *db = upload_bf16(b, N);
        dkv_bf16 *dy = acc ? upload_bf16(y0, (size_t)T * N) : dev_alloc((size_t)T * N * 2);
        if (!acc)
            poison(dy, (size_t)T * N * 2);
        OK(dkv_cuda_gemm(ctx, dy, dx, dw, bias ? db : NULL, T, K, N, acc ? 1.0f : 0.0f, &err));
        float *got = download_bf16(dy, (size_t)T * N);
        dkv_ref_matmul(ref, x, w, bias ? b : NULL, T, K, N);
        if (acc)
            dkv_ref_residual(ref, y0, (size_t)T * N);
        char name[64];
        snprintf(name, sizeof name, "gemm %ux%ux%u%s", T, K, N, bias ? " +bias" : acc ? " +=y" : "");
        check(name, got, ref, (size_t)T * N, 1e-2, 1e-2);
        free(got), free(x), free(w), free(b), free(y0), free(ref);
        cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dy);
    }
}

/* The plan table keeps every shape of a run (it held 64 until session 13 and started over), a
 * lookup after many shapes still finds its own plan, and the warm-up runs each shape at every
 * warm-up row count, leaves no plan behind and stays within its byte cap.  Prints (does not
 * assert) the first call of a new shape without and after the warm-up: the lazy kernel load. */
/* Mean seconds of n calls of y = x w^T (T x K by N x K) on c, after one untimed call. */
static double gemm_call_s(dkv_cuda_ctx *c, dkv_bf16 *y, const dkv_bf16 *x, const dkv_bf16 *w, uint32_t T, uint32_t K,
                          uint32_t N, int n)
{
    OK(dkv_cuda_gemm(c, y, x, w, NULL, T, K, N, 0.0f, &err));
    CK(cudaDeviceSynchronize());
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        OK(dkv_cuda_gemm(c, y, x, w, NULL, T, K, N, 0.0f, &err));
    CK(cudaDeviceSynchronize());
    return (now_s() - t0) / n;
}

/* Prints (does not assert) LLaDA-8B's q|k|v and gate|up at row counts off the warm-up grid: the
 * first call after the warm-up (its bucket's algorithm: no heuristic, no kernel load), then the
 * time per call back to back with the bucket's algorithm and with the heuristic's own (a second
 * context, no warm-up).  docs/COST_MODEL.md "Cold shapes". */
static void gemm_bucket_times(void)
{
    enum { K = 4096, TMAX = 4000 };
    static const uint32_t Ns[2] = {12288, 24576}, Ts[5] = {200, 612, 969, 1713, 3466};
    dkv_cuda_ctx *c2 = NULL;
    OK(dkv_cuda_ctx_new(0, &c2, &err));
    dkv_bf16 *x = dev_alloc((size_t)TMAX * K * 2), *w = dev_alloc((size_t)Ns[1] * K * 2);
    dkv_bf16 *y = dev_alloc((size_t)TMAX * Ns[1] * 2);
    CK(cudaMemset(x, 0x3c, (size_t)TMAX * K * 2));
    CK(cudaMemset(w, 0x3c, (size_t)Ns[1] * K * 2));
    for (int j = 0; j < 2; j++) {
        uint32_t n_run = 0;
        dkv_gemm_warm_shape ws = {w, NULL, K, Ns[j], TMAX, 0.0f, 0};
        double tw = now_s();
        OK(dkv_cuda_gemm_warm(ctx, &ws, 1, (size_t)1 << 30, &n_run, &err));
        printf("INFO gemm warm-up %ux%u to %u rows: %.3f s, %u GEMMs run (distinct algorithms)\n", (unsigned)K,
               (unsigned)Ns[j], (unsigned)TMAX, now_s() - tw, n_run);
        for (int i = 0; i < 5; i++) {
            CK(cudaDeviceSynchronize());
            double t0 = now_s();
            OK(dkv_cuda_gemm(ctx, y, x, w, NULL, Ts[i], K, Ns[j], 0.0f, &err));
            CK(cudaDeviceSynchronize());
            double first = now_s() - t0;
            double tb = gemm_call_s(ctx, y, x, w, Ts[i], K, Ns[j], 50);
            CK(cudaDeviceSynchronize());
            t0 = now_s();
            OK(dkv_cuda_gemm(c2, y, x, w, NULL, Ts[i], K, Ns[j], 0.0f, &err));
            CK(cudaDeviceSynchronize());
            double first_h = now_s() - t0;
            double th = gemm_call_s(c2, y, x, w, Ts[i], K, Ns[j], 50);
            printf("INFO gemm %ux%ux%u: first call after the warm-up %.3f ms (heuristic, cold context %.3f ms); "
                   "per call: bucket algorithm %.1f us, heuristic's %.1f us (%+.1f %%)\n", (unsigned)Ts[i], (unsigned)K,
                   (unsigned)Ns[j], first * 1e3, first_h * 1e3, tb * 1e6, th * 1e6, (tb / th - 1) * 100);
        }
    }
    cudaFree(x), cudaFree(w), cudaFree(y);
    dkv_cuda_ctx_free(c2);
}

static void test_gemm_plans_warm(dkv_rng *r)
{
    enum { K = 256, N = 264, NT = 100 };
    float *x = rand_bf16_values((size_t)NT * K, 1, 0, r), *w = rand_bf16_values((size_t)N * K, 1 / sqrtf(K), 0, r);
    dkv_bf16 *dx = upload_bf16(x, (size_t)NT * K), *dw = upload_bf16(w, (size_t)N * K);
    dkv_bf16 *dy = dev_alloc((size_t)NT * N * 2);
    uint32_t p0 = dkv_cuda_gemm_plans(ctx);
    for (uint32_t T = 1; T <= NT; T++)
        OK(dkv_cuda_gemm(ctx, dy, dx, dw, NULL, T, K, N, 0.0f, &err));
    uint32_t p1 = dkv_cuda_gemm_plans(ctx);
    char msg[160];
    snprintf(msg, sizeof msg, "%u plans before, %u after %d new shapes", p0, p1, NT);
    check_true("gemm plans: every shape of a run kept", p1 == p0 + NT, msg);
    poison(dy, (size_t)NT * N * 2);
    OK(dkv_cuda_gemm(ctx, dy, dx, dw, NULL, 37, K, N, 0.0f, &err));
    float *got = download_bf16(dy, (size_t)37 * N), *ref = malloc((size_t)37 * N * 4);
    dkv_ref_matmul(ref, x, w, NULL, 37, K, N);
    check("gemm 37x256x264 after 100 plans", got, ref, (size_t)37 * N, 1e-2, 1e-2);
    free(got), free(ref);

    uint32_t rows[1024];
    uint32_t n600 = dkv_gemm_warm_rows(600, rows, 1024), n8k = dkv_gemm_warm_rows(100000, rows, 1024);
    snprintf(msg, sizeof msg, "%u rows up to 600 (want 75: every multiple of 8), %u up to 8,192 (want 1,024), "
             "first %u last %u", n600, n8k, rows[0], rows[n8k - 1]);
    check_true("gemm warm-up rows", n600 == 75 && n8k == 1024 && rows[0] == 8 && rows[n8k - 1] == 8192, msg);
    dkv_gemm_warm_shape sh[2] = {{dw, NULL, K, N, 600, 0.0f, 0}, {dw, NULL, K, N, 100, 1.0f, 1}};
    uint32_t n_run = 0, a0 = dkv_cuda_gemm_warm_algos(ctx);
    OK(dkv_cuda_gemm_warm(ctx, sh, 2, (size_t)64 << 20, &n_run, &err));
    uint32_t n100 = dkv_gemm_warm_rows(100, rows, 1024), a1 = dkv_cuda_gemm_warm_algos(ctx);
    snprintf(msg, sizeof msg, "%u algorithms kept (want %u: one per row count and shape), %u GEMMs run (each "
             "distinct algorithm once), %u plans left", a1 - a0, n600 + n100, n_run, dkv_cuda_gemm_plans(ctx));
    check_true("gemm warm-up: every row count's algorithm kept, each run once, plans dropped",
               a1 - a0 == n600 + n100 && n_run >= 2 && n_run <= n600 + n100 && dkv_cuda_gemm_plans(ctx) == 0, msg);
    /* after the warm-up a shape plans with its bucket's algorithm (37 rows: the 40-row count's) and
     * computes the same product; a (K, N) the warm-up did not run asks the heuristic */
    uint32_t b0 = dkv_cuda_gemm_bucket_plans(ctx);
    poison(dy, (size_t)NT * N * 2);
    OK(dkv_cuda_gemm(ctx, dy, dx, dw, NULL, 37, K, N, 0.0f, &err));
    uint32_t b1 = dkv_cuda_gemm_bucket_plans(ctx);
    OK(dkv_cuda_gemm(ctx, dy, dx, dw, NULL, 37, K, N - 8, 0.0f, &err));
    uint32_t b2 = dkv_cuda_gemm_bucket_plans(ctx);
    snprintf(msg, sizeof msg, "bucket plans %u -> %u (37 rows of a warm shape) -> %u (an unwarmed N)", b0, b1, b2);
    check_true("gemm after the warm-up: a bucket's algorithm, only for a warm shape", b1 == b0 + 1 && b2 == b1, msg);
    got = download_bf16(dy, (size_t)37 * (N - 8)), ref = malloc((size_t)37 * (N - 8) * 4);
    dkv_ref_matmul(ref, x, w, NULL, 37, K, N - 8);
    check("gemm 37x256x256 (heuristic)", got, ref, (size_t)37 * (N - 8), 1e-2, 1e-2);
    free(got), free(ref);
    OK(dkv_cuda_gemm(ctx, dy, dx, dw, NULL, 37, K, N, 0.0f, &err));
    got = download_bf16(dy, (size_t)37 * N), ref = malloc((size_t)37 * N * 4);
    dkv_ref_matmul(ref, x, w, NULL, 37, K, N);
    check("gemm 37x256x264 with the 40-row bucket's algorithm", got, ref, (size_t)37 * N, 1e-2, 1e-2);
    free(got), free(ref);
    /* a cap of 100 rows of x (K x 2 bytes) and y: row counts above about 100 are left out */
    size_t cap = (size_t)100 * K * 2 + 256 + (size_t)100 * N * 2;
    dkv_cuda_ctx *c3 = NULL;   /* a fresh context: nothing kept yet */
    OK(dkv_cuda_ctx_new(0, &c3, &err));
    OK(dkv_cuda_gemm_warm(c3, sh, 1, cap, &n_run, &err));
    uint32_t n_fit = 0;
    dkv_gemm_warm_rows(600, rows, 1024);
    for (uint32_t i = 0; i < n600; i++)
        n_fit += rows[i] <= 100;
    snprintf(msg, sizeof msg, "%u algorithms kept within %zu bytes (want %u: the row counts up to 100)",
             dkv_cuda_gemm_warm_algos(c3), cap, n_fit);
    check_true("gemm warm-up: the byte cap holds", dkv_cuda_gemm_warm_algos(c3) == n_fit && n_run >= 1, msg);
    dkv_cuda_ctx_free(c3);
    dkv_gemm_warm_shape bad = {NULL, NULL, K, N, 64, 0.0f, 0};
    dkv_status s = dkv_cuda_gemm_warm(ctx, &bad, 1, cap, &n_run, &err);
    check_true("gemm warm-up refuses a NULL weight", s == DKV_EINVAL && strstr(err.msg, "dkv_cuda_gemm_warm"), err.msg);
    free(x), free(w);
    cudaFree(dx), cudaFree(dw), cudaFree(dy);

    /* The first call of a new shape, LLaDA-8B's q|k|v at 200 rows (not a warm-up row count): on a fresh
     * (K, N), then on another (K, N) after its warm-up (same kernels as far as cuBLASLt picks them). */
    enum { K2 = 4096, N2a = 12288, N2b = 12544, T2 = 200 };
    dkv_bf16 *bx = dev_alloc((size_t)T2 * K2 * 2), *bw = dev_alloc((size_t)N2b * K2 * 2), *by = dev_alloc((size_t)T2 * N2b * 2);
    CK(cudaMemset(bx, 0x3c, (size_t)T2 * K2 * 2));
    CK(cudaMemset(bw, 0x3c, (size_t)N2b * K2 * 2));
    double t_cold, t_warm;
    CK(cudaDeviceSynchronize());
    double t0 = now_s();
    OK(dkv_cuda_gemm(ctx, by, bx, bw, NULL, T2, K2, N2a, 0.0f, &err));
    CK(cudaDeviceSynchronize());
    t_cold = now_s() - t0;
    dkv_gemm_warm_shape wb = {bw, NULL, K2, N2b, 4096, 0.0f, 0};
    OK(dkv_cuda_gemm_warm(ctx, &wb, 1, (size_t)256 << 20, &n_run, &err));
    t0 = now_s();
    OK(dkv_cuda_gemm(ctx, by, bx, bw, NULL, T2, K2, N2b, 0.0f, &err));
    CK(cudaDeviceSynchronize());
    t_warm = now_s() - t0;
    printf("INFO gemm first call %ux%ux%u: %.3f ms on a fresh shape; %ux%ux%u after its warm-up (%u GEMMs): %.3f ms\n",
           (unsigned)T2, (unsigned)K2, (unsigned)N2a, t_cold * 1e3, (unsigned)T2, (unsigned)K2, (unsigned)N2b, n_run,
           t_warm * 1e3);
    cudaFree(bx), cudaFree(bw), cudaFree(by);
    gemm_bucket_times();
}

/* The skinny (T <= 32) weight-streaming kernel forced, against the reference and against the
 * cuBLASLt path on the same inputs: K with a partial last chunk of 256, N with a partial last
 * block of 128 features, every split count from 1 to 8 (clamped to the 7 chunks). */
static void test_gemm_skinny(dkv_rng *r)
{
    enum { K = 1544, N = 392 };
    static const uint32_t Ts[3] = {32, 17, 1};
    for (int i = 0; i < 3; i++) {
        uint32_t T = Ts[i];
        float *x = rand_bf16_values((size_t)T * K, 1, 0, r), *w = rand_bf16_values((size_t)N * K, 1 / sqrtf(K), 0, r);
        float *b = rand_bf16_values(N, 0.5f, 0, r), *y0 = rand_bf16_values((size_t)T * N, 1, 0, r);
        float *ref = malloc((size_t)T * N * 4);
        dkv_bf16 *dx = upload_bf16(x, (size_t)T * K), *dw = upload_bf16(w, (size_t)N * K), *db = upload_bf16(b, N);
        dkv_bf16 *dy = dev_alloc((size_t)T * N * 2), *dy0 = upload_bf16(y0, (size_t)T * N);
        dkv_ref_matmul(ref, x, w, b, T, K, N);
        dkv_ref_residual(ref, y0, (size_t)T * N);
        for (uint32_t sp = 1; sp <= 8; sp++) {
            if (T != 32 && sp != 3)
                continue;
            CK(cudaMemcpy(dy, dy0, (size_t)T * N * 2, cudaMemcpyDeviceToDevice));
            OK(dkv_cuda_gemm_ex(ctx, dy, dx, dw, db, T, K, N, 1.0f, DKV_GEMM_SKINNY, sp, &err));
            float *got = download_bf16(dy, (size_t)T * N);
            char name[64];
            snprintf(name, sizeof name, "gemm skinny %ux%ux%u +bias +=y, %u split%s", T, K, N, sp, sp > 1 ? "s" : "");
            check(name, got, ref, (size_t)T * N, 1e-2, 1e-2);
            free(got);
        }
        poison(dy, (size_t)T * N * 2);   /* beta 0, no bias: every element written */
        OK(dkv_cuda_gemm_ex(ctx, dy, dx, dw, NULL, T, K, N, 0.0f, DKV_GEMM_SKINNY, 0, &err));
        float *got = download_bf16(dy, (size_t)T * N);
        poison(dy, (size_t)T * N * 2);
        OK(dkv_cuda_gemm_ex(ctx, dy, dx, dw, NULL, T, K, N, 0.0f, DKV_GEMM_CUBLASLT, 0, &err));
        float *lt = download_bf16(dy, (size_t)T * N);
        char name[64];
        snprintf(name, sizeof name, "gemm skinny %ux%ux%u == cuBLASLt", T, K, N);
        check(name, got, lt, (size_t)T * N, 1e-2, 1e-2);
        free(got), free(lt), free(x), free(w), free(b), free(y0), free(ref);
        cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dy), cudaFree(dy0);
    }
    dkv_status s = dkv_cuda_gemm_ex(ctx, (dkv_bf16 *)16, (dkv_bf16 *)16, (dkv_bf16 *)16, NULL, 33, 64, 64, 0.0f,
                                    DKV_GEMM_SKINNY, 0, &err);
    check_true("gemm skinny refuses T = 33", s == DKV_EINVAL && strstr(err.msg, "skinny"), err.msg);
}

/* SwiGLU fused into the down projection: y += SwiGLU([gate | up]) w^T, against dkv_ref_swiglu +
 * dkv_ref_matmul + residual; T <= 32 runs fused, T = 40 through ff (the unfused fallback). */
static void test_gemm_swiglu(dkv_rng *r)
{
    enum { F = 776, N = 264 };
    static const uint32_t Ts[2] = {19, 40};
    for (int i = 0; i < 2; i++) {
        uint32_t T = Ts[i];
        float *gu = rand_bf16_values((size_t)T * 2 * F, 2, 0, r), *w = rand_bf16_values((size_t)N * F, 1 / sqrtf(F), 0, r);
        float *y0 = rand_bf16_values((size_t)T * N, 1, 0, r), *g = malloc((size_t)T * F * 4), *u = malloc((size_t)T * F * 4);
        float *h = malloc((size_t)T * F * 4), *ref = malloc((size_t)T * N * 4);
        for (uint32_t t = 0; t < T; t++) {
            memcpy(g + (size_t)t * F, gu + (size_t)t * 2 * F, F * 4);
            memcpy(u + (size_t)t * F, gu + (size_t)t * 2 * F + F, F * 4);
        }
        dkv_ref_swiglu(h, g, u, T, F);
        for (size_t j = 0; j < (size_t)T * F; j++)   /* the kernel rounds SwiGLU to bf16, as the ff buffer does */
            h[j] = h_bf2f(h_f2bf(h[j]));
        dkv_ref_matmul(ref, h, w, NULL, T, F, N);
        dkv_ref_residual(ref, y0, (size_t)T * N);
        dkv_bf16 *dgu = upload_bf16(gu, (size_t)T * 2 * F), *dw = upload_bf16(w, (size_t)N * F);
        dkv_bf16 *dy = upload_bf16(y0, (size_t)T * N), *dff = dev_alloc((size_t)T * F * 2);
        OK(dkv_cuda_gemm_swiglu(ctx, dy, dgu, dw, T, F, N, 1.0f, T > 32 ? dff : NULL, &err));
        float *got = download_bf16(dy, (size_t)T * N);
        char name[64];
        snprintf(name, sizeof name, "gemm_swiglu %ux%ux%u +=y (%s)", T, F, N, T > 32 ? "via ff" : "fused");
        check(name, got, ref, (size_t)T * N, 1e-2, 1e-2);
        free(gu), free(w), free(y0), free(g), free(u), free(h), free(ref), free(got);
        cudaFree(dgu), cudaFree(dw), cudaFree(dy), cudaFree(dff);
    }
}

static void test_lm_head(dkv_rng *r)
{
    enum { T = 45, C = 256, V = 5003, CHUNK = 16 };
    float *x = rand_bf16_values((size_t)T * C, 1, 0, r), *w = rand_bf16_values((size_t)V * C, 0.2f, 0, r);
    dkv_bf16 *dx = upload_bf16(x, (size_t)T * C), *dw = upload_bf16(w, (size_t)V * C);
    float *dlog = dev_alloc((size_t)CHUNK * V * 4), *dconf = dev_alloc(T * 4);
    uint32_t *dam = dev_alloc(T * 4);
    poison(dam, T * 4), poison(dconf, T * 4);
    OK(dkv_cuda_lm_head_argmax(ctx, dam, dconf, dx, dw, T, C, V, CHUNK, dlog, &err));
    uint32_t *am = download(dam, T * 4), ram[T];
    float *conf = download(dconf, T * 4), rconf[T], *logits = malloc((size_t)T * V * 4);
    dkv_ref_lm_head_argmax(ram, rconf, x, w, T, C, V, 0, NULL);
    dkv_ref_matmul(logits, x, w, NULL, T, C, V);
    int same = 0, near = 1;
    for (int t = 0; t < T; t++) {   /* a different pick is only allowed between near-equal logits */
        same += am[t] == ram[t];
        near &= am[t] < V && logits[(size_t)t * V + am[t]] >= logits[(size_t)t * V + ram[t]] - 1e-3f;
    }
    char line[96];
    snprintf(line, sizeof line, "%d/%d rows pick the reference's token; the rest are ties within 1e-3", same, T);
    check_true("lm_head argmax (3 chunks of 16)", near && same >= T - 2, line);
    check("lm_head confidence", conf, rconf, T, 1e-5, 2e-3);
    free(x), free(w), free(am), free(conf), free(logits);
    cudaFree(dx), cudaFree(dw), cudaFree(dlog), cudaFree(dconf), cudaFree(dam);
}

static void test_copies(dkv_rng *r)
{
    size_t n = (3u << 20) + 5;
    uint8_t *h0 = malloc(n), *pin = NULL, *pin2 = NULL;
    for (size_t i = 0; i < n; i++)
        h0[i] = (uint8_t)dkv_rng_u64(r);
    OK(dkv_cuda_host_alloc((void **)&pin, n, &err));
    OK(dkv_cuda_host_alloc((void **)&pin2, n, &err));
    memset(pin, 0xab, n);
    void *d = upload(h0, n), *d2 = dev_alloc(n);
    poison(d2, n);
    cudaEvent_t ready, off_done, fetch_done;
    CK(cudaEventCreate(&ready));
    CK(cudaEventCreate(&off_done));
    CK(cudaEventCreate(&fetch_done));
    CK(cudaEventRecord(ready, st));
    OK(dkv_cuda_offload(ctx, pin, d, n, ready, off_done, &err));
    CK(cudaEventSynchronize(off_done));
    memcpy(pin2, pin, n);
    OK(dkv_cuda_fetch(ctx, d2, pin2, n, off_done, fetch_done, &err));
    CK(cudaStreamWaitEvent(st, fetch_done, 0));
    uint8_t *back = download(d2, n);
    check_true("offload + fetch round trip", memcmp(pin, h0, n) == 0 && memcmp(back, h0, n) == 0,
               "3 MiB through pinned memory on the copy stream, bit for bit");
    dkv_status s = dkv_cuda_offload(ctx, h0, d, n, NULL, NULL, &err);
    check_true("offload refuses pageable memory", s == DKV_EINVAL && strstr(err.msg, "not pinned"), err.msg);
    free(h0), free(back);
    dkv_cuda_host_free(pin), dkv_cuda_host_free(pin2), dkv_cuda_host_free(NULL);
    cudaFree(d), cudaFree(d2);
    cudaEventDestroy(ready), cudaEventDestroy(off_done), cudaEventDestroy(fetch_done);
}

static void test_bad_arguments(void)
{
    dkv_status s = dkv_cuda_rmsnorm(NULL, NULL, NULL, 1, 7, 1e-5f, st, &err);
    check_true("entries validate arguments", s == DKV_EINVAL && strstr(err.msg, "dkv_cuda_rmsnorm"), err.msg);
    s = dkv_cuda_gemm(ctx, (dkv_bf16 *)8, (dkv_bf16 *)8, (dkv_bf16 *)8, NULL, 4, 16, 16, 0.5f, &err);
    check_true("gemm refuses beta 0.5", s == DKV_EINVAL && strstr(err.msg, "beta"), err.msg);
}

int main(void)
{
    skip_without_gpu();
    OK(dkv_cuda_ctx_new(0, &ctx, &err));
    st = dkv_cuda_ctx_stream(ctx);
    dkv_rng r;
    dkv_rng_seed(&r, 20261129);
    test_fill_random(&r);
    test_embedding(&r);
    test_rmsnorm(&r);
    test_rope(&r);
    test_swiglu(&r);
    test_gemm(&r);
    test_gemm_plans_warm(&r);
    test_gemm_skinny(&r);
    test_gemm_swiglu(&r);
    test_lm_head(&r);
    test_copies(&r);
    test_bad_arguments();
    CK(cudaDeviceSynchronize());
    dkv_cuda_ctx_free(ctx);
    dkv_cuda_ctx_free(NULL);
    printf("%s: %d check(s) failed\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
