/* profile_copy.c - `dkv profile`'s copy-engine and host sections.
 *   copy: pinned H2D (dkv_cuda_fetch) and D2H (dkv_cuda_offload) on the context's copy stream, the
 *         backend's path, each copy between two events on that stream: alone, then while the
 *         compute stream runs a loop of GEMMs (M 512 of LLaDA-8B's fused gate|up shape when the
 *         first model is it; the first model's gate|up in any case) long enough to cover the copies.
 *         The loop's time per GEMM alone, and beside back-to-back 256 MiB H2D copies, is kept too.
 *   host: host-clock time to enqueue one launch (dkv_cuda_rmsnorm) and one cached-plan cuBLASLt
 *         GEMM, the stream held by a spin kernel so the enqueue never waits. */
#include <stdlib.h>
#include <string.h>

#include "cuda/profile_internal.h"

#define COPY_MAX ((size_t)256 << 20)

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double med(double *v, uint32_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The contention load: n GEMMs of the first model's gate|up at 512 rows, between events on the
 * compute stream (ev[0], ev[1]); seconds per GEMM once synchronised (caller syncs). */
static dkv_status load(prof_ctx *P, uint32_t n, cudaEvent_t a, cudaEvent_t b, dkv_err *err)
{
    const dkv_model *m = &P->o->models[0];
    uint32_t T = 512, K = m->hidden, N = 2 * m->ffn;
    PR_CU(cudaEventRecord(a, P->st));
    for (uint32_t i = 0; i < n; i++)
        PR_TRY(dkv_cuda_gemm(P->ctx, (dkv_bf16 *)P->out, pr_in(P, (size_t)T * K * 2, i, 0),
                             pr_in(P, (size_t)N * K * 2, i, 1), NULL, T, K, N, 0.0f, err));
    PR_CU(cudaEventRecord(b, P->st));
    return DKV_OK;
}

static dkv_status copies(prof_ctx *P, void *host, uint32_t dir, size_t bytes, uint32_t R, double *out, dkv_err *err)
{
    cudaStream_t cs = dkv_cuda_ctx_copy_stream(P->ctx);
    for (uint32_t r = 0; r < R + 1; r++) {   /* the first copy is a warm-up */
        char *dev = P->pool + (size_t)(r % 8) * COPY_MAX;
        PR_CU(cudaEventRecord(P->ev[2 * r], cs));
        if (dir == 0)
            PR_TRY(dkv_cuda_fetch(P->ctx, dev, host, bytes, NULL, NULL, err));
        else
            PR_TRY(dkv_cuda_offload(P->ctx, host, dev, bytes, NULL, NULL, err));
        PR_CU(cudaEventRecord(P->ev[2 * r + 1], cs));
    }
    PR_CU(cudaStreamSynchronize(cs));
    for (uint32_t r = 1; r < R + 1; r++) {
        float ms = 0;
        PR_CU(cudaEventElapsedTime(&ms, P->ev[2 * r], P->ev[2 * r + 1]));
        out[r - 1] = 1e-3 * ms;
    }
    return DKV_OK;
}

static dkv_status copy_case(prof_ctx *P, void *host, uint32_t dir, size_t bytes, double gemm_s, dkv_err *err)
{
    uint32_t R = P->o->repeats;
    double s[64], alone, beside;
    PR_TRY(copies(P, host, dir, bytes, R, s, err));
    alone = med(s, R);
    /* the load covers the copies twice over (R + 1 copies at the alone rate) */
    uint32_t n = (uint32_t)(2.0 * (R + 1) * alone / gemm_s) + 8;
    cudaEvent_t a = P->ev[2 * 63], b = P->ev[2 * 63 + 1];
    PR_TRY(load(P, n > 4000 ? 4000 : n, a, b, err));
    PR_TRY(copies(P, host, dir, bytes, R, s, err));
    PR_CU(cudaStreamSynchronize(P->st));
    beside = med(s, R);
    dkv_prof *p = P->p;
    if (p->n_copy < sizeof p->copy / sizeof p->copy[0])
        p->copy[p->n_copy++] = (dkv_prof_copy_row){dir, (double)bytes, alone, beside};
    P->sec_rows++;
    return DKV_OK;
}

/* The compute side of the contention: 50 GEMMs of the load while h2d copies of COPY_MAX run on the
 * copy stream throughout (enqueued first, lasting about twice the load alone): seconds per GEMM. */
static dkv_status compute_beside(prof_ctx *P, void *host, double copy_s, dkv_err *err)
{
    cudaStream_t cs = dkv_cuda_ctx_copy_stream(P->ctx);
    uint32_t n = (uint32_t)(2.0 * 50 * P->p->compute_alone_s / copy_s) + 2;
    for (uint32_t i = 0; i < (n > 60 ? 60 : n); i++)
        PR_TRY(dkv_cuda_fetch(P->ctx, P->pool + (size_t)(i % 8) * COPY_MAX, host, COPY_MAX, NULL, NULL, err));
    cudaEvent_t a = P->ev[0], b = P->ev[1];
    PR_TRY(load(P, 50, a, b, err));
    PR_CU(cudaStreamSynchronize(P->st));
    PR_CU(cudaStreamSynchronize(cs));
    float ms = 0;
    PR_CU(cudaEventElapsedTime(&ms, a, b));
    P->p->compute_beside_s = 1e-3 * ms / 50;
    return DKV_OK;
}

dkv_status pr_sec_copy(prof_ctx *P, dkv_err *err)
{
    static const size_t sizes[] = {4096, 65536, 1 << 20, 16 << 20, COPY_MAX};
    uint32_t n = P->o->quick ? 2 : 5;
    const dkv_model *m = &P->o->models[0];
    double g = pr_est(2.0 * 512 * m->hidden * 2 * m->ffn, 2.0 * 2 * m->ffn * m->hidden, 1);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t d = 0; d < 2; d++) {
            size_t b = P->o->quick && i == 1 ? COPY_MAX : sizes[i];
            double c = 1e-5 + b / 25e9;
            if (P->dry) {
                P->est[P->sec] += (P->o->repeats + 1) * c * 4 + 0.01;
                continue;
            }
            if (!pr_want(P, c))
                return DKV_OK;
            if (P->o->repeats > 62)
                return dkv_err_set(err, DKV_EINVAL, "dkv profile: the copy section takes at most 62 repeats");
            PR_TRY(pr_events(P, 128, err));   /* R + 1 pairs for the copies, the last pair for the load */
            PR_TRY(pr_pool(P, err));
            if (!P->pinned)
                PR_TRY(dkv_cuda_host_alloc(&P->pinned, COPY_MAX, err));
            if (P->p->compute_alone_s == 0) {
                cudaEvent_t a = P->ev[0], bb = P->ev[1];
                PR_TRY(load(P, 4, a, bb, err));   /* plan and warm-up */
                PR_TRY(load(P, 50, a, bb, err));
                PR_CU(cudaStreamSynchronize(P->st));
                float ms = 0;
                PR_CU(cudaEventElapsedTime(&ms, a, bb));
                P->p->compute_alone_s = 1e-3 * ms / 50;
            }
            PR_TRY(copy_case(P, P->pinned, d, b, P->p->compute_alone_s > 0 ? P->p->compute_alone_s : g, err));
            if (d == 0 && b == COPY_MAX && P->n_copy_big == 0) {
                P->n_copy_big = 1;
                PR_TRY(compute_beside(P, P->pinned, P->p->copy[P->p->n_copy - 1].alone_s, err));
            }
        }
    return DKV_OK;
}

dkv_status pr_sec_host(prof_ctx *P, dkv_err *err)
{
    enum { N = 256, NG = 64 };
    if (P->dry) {
        P->est[P->sec] += 0.1;
        return DKV_OK;
    }
    if (!pr_want(P, 1e-3))
        return DKV_OK;
    const dkv_model *m = &P->o->models[0];
    uint32_t C = m->hidden;
    dkv_bf16 *x = pr_in(P, (size_t)32 * C * 2, 0, 0), *w = pr_in(P, (size_t)C * C * 2, 0, 1);
    PR_TRY(dkv_cuda_gemm(P->ctx, (dkv_bf16 *)P->out, x, w, NULL, 32, C, C, 0.0f, err));   /* the plan, cached */
    PR_CU(cudaStreamSynchronize(P->st));
    double t[2];
    for (int k = 0; k < 2; k++) {
        PR_TRY(dkv_prof_spin(P->st, 0.05, err));
        double a = pr_now();
        for (uint32_t i = 0; i < (k ? NG : N); i++) {
            if (k)
                PR_TRY(dkv_cuda_gemm(P->ctx, (dkv_bf16 *)P->out, x, w, NULL, 32, C, C, 0.0f, err));
            else
                PR_TRY(dkv_cuda_rmsnorm((dkv_bf16 *)P->out, x, w, 32, C, 1e-5f, P->st, err));
        }
        t[k] = (pr_now() - a) / (k ? NG : N);
        PR_CU(cudaStreamSynchronize(P->st));
    }
    P->p->host_launch_s = t[0], P->p->host_gemm_launch_s = t[1];
    P->sec_rows++;
    return pr_host_handover(P, err);
}
