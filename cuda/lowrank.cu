/* lowrank.cu - randomized range finder with shifted CholeskyQR2 through cuBLAS, dependent columns
 * dropped (see lowrank.h).
 *
 * cuBLAS is column-major: a row-major (rows x cols) matrix is its column-major transpose, so
 * below Xc = X^T (n x m, ld n), Yc = Y^T (r x m, ld r), Qc = Q^T, Bc = B^T (n x r, ld n). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>

#include "cuda/common.cuh"
#include "cuda/lowrank.h"
extern "C" {
#include "util/rng.h"
}

struct dkv_cuda_lowrank {
    cudaStream_t   s;
    cublasHandle_t h;
    uint32_t       max_m, max_n, max_r, max_b;
    float         *X, *E, *Y, *Q, *Z, *G, *Linv, *Bw, *Om, *nrm;
    float         *h_om;       /* pinned host staging of Omega */
    void          *mem;
    size_t         bytes;
};

/* ------------------------------------------------------------------ kernels */

static __global__ void bf16_to_f32_kernel(float *out, const dkv_bf16 *in, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = bf2f(in[i]);
}

static __global__ void f32_to_bf16_kernel(dkv_bf16 *out, const float *in, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = f2bf(in[i]);
}

/* One block per matrix: G (r x r, column-major, symmetric) + s I = L L^T in double, then
 * Linv = L^-1 (column-major, zero above the diagonal).  A column of Y numerically in the span of the
 * earlier ones (fewer distinct rows than r, as layer 0's V of a short range of a byte-level model)
 * has a Schur pivot of rounding noise, which L^-1 amplified into Q (garbage or NaN: device call 13's
 * lowrank_0.5).  The pivot is floored at shift + tau x the column's own squared norm (tau = 16 m u,
 * u = 2^-24: what an fp32 Gram of m rows cannot resolve), so such a column comes out of the first pass
 * as bounded noise and the second pass orthonormalises it: Q stays orthonormal and finite, its extra
 * columns are harmless directions (the projection still reproduces the rank-deficient matrix).  A
 * zero column (the second pass of a zero input) is dropped: its row of L^-1 is zero. */
static __global__ void cholinv_kernel(const float *G, float *Linv, uint32_t r, uint32_t m)
{
    __shared__ double Ls[DKV_LOWRANK_MAX_RANK * DKV_LOWRANK_MAX_RANK];
    __shared__ double d0[DKV_LOWRANK_MAX_RANK];
    __shared__ unsigned char drop[DKV_LOWRANK_MAX_RANK];
    __shared__ double shift;
    const float *g = G + (size_t)blockIdx.x * r * r;
    float *li = Linv + (size_t)blockIdx.x * r * r;
    const double tau = 16.0 * (double)m * 5.9604644775390625e-8;
    for (uint32_t i = threadIdx.x; i < r * r; i += blockDim.x)
        Ls[i] = g[i];
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < r; i += blockDim.x)
        d0[i] = Ls[i + i * r];
    if (threadIdx.x == 0) {
        double tr = 0;
        for (uint32_t i = 0; i < r; i++)
            tr += Ls[i + i * r];
        shift = 1e-7 * tr + 1e-30;
    }
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < r; i += blockDim.x)
        Ls[i + i * r] += shift;
    __syncthreads();
    for (uint32_t k = 0; k < r; k++) {
        if (threadIdx.x == 0) {
            double p = Ls[k + k * r], floor = shift + tau * d0[k];
            drop[k] = !(d0[k] > 1e-300);   /* a zero column stays zero */
            Ls[k + k * r] = drop[k] ? 1.0 : sqrt(p > floor ? p : floor);
        }
        __syncthreads();
        for (uint32_t i = k + 1 + threadIdx.x; i < r; i += blockDim.x)
            Ls[i + k * r] = drop[k] ? 0.0 : Ls[i + k * r] / Ls[k + k * r];
        __syncthreads();
        uint32_t w = r - k - 1;
        for (uint32_t t = threadIdx.x; t < w * w; t += blockDim.x) {
            uint32_t i = k + 1 + t / w, j = k + 1 + t % w;
            if (j <= i)
                Ls[i + j * r] -= Ls[i + k * r] * Ls[j + k * r];
        }
        __syncthreads();
    }
    /* column j of L^-1 by forward substitution, one thread per column; a dropped row is zero */
    for (uint32_t j = threadIdx.x; j < r; j += blockDim.x) {
        double x[DKV_LOWRANK_MAX_RANK];
        for (uint32_t i = 0; i < r; i++) {
            double v = i == j ? 1.0 : 0.0;
            if (i < j) {
                x[i] = 0;
                li[i + j * r] = 0.0f;
                continue;
            }
            for (uint32_t k = j; k < i; k++)
                v -= Ls[i + k * r] * x[k];
            x[i] = v / Ls[i + i * r];
            li[i + j * r] = drop[i] ? 0.0f : (float)x[i];
        }
    }
}

/* rel_err[b] = ||E_b|| / ||X_b|| over mn values each. */
static __global__ void relerr_kernel(const float *X, const float *E, size_t mn, float *rel)
{
    __shared__ double sx[256], se[256];
    const float *x = X + blockIdx.x * mn, *e = E + blockIdx.x * mn;
    double ax = 0, ae = 0;
    for (size_t i = threadIdx.x; i < mn; i += blockDim.x) {
        ax += (double)x[i] * x[i];
        ae += (double)e[i] * e[i];
    }
    sx[threadIdx.x] = ax;
    se[threadIdx.x] = ae;
    __syncthreads();
    for (uint32_t o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) {
            sx[threadIdx.x] += sx[threadIdx.x + o];
            se[threadIdx.x] += se[threadIdx.x + o];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        rel[blockIdx.x] = sx[0] > 0 ? (float)sqrt(se[0] / sx[0]) : 0.0f;
}

/* ------------------------------------------------------------------ launchers */

static dkv_status launch_convert(float *out, const dkv_bf16 *in, size_t n, cudaStream_t s, dkv_err *err)
{
    unsigned blocks = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
    bf16_to_f32_kernel<<<blocks ? blocks : 1, 256, 0, s>>>(out, in, n);
    return dkv_launch_check("bf16_to_f32_kernel", err);
}

static dkv_status launch_cholinv(const float *G, float *Linv, uint32_t r, uint32_t m, uint32_t b, cudaStream_t s,
                                 dkv_err *err)
{
    cholinv_kernel<<<b, 64, 0, s>>>(G, Linv, r, m);
    return dkv_launch_check("cholinv_kernel", err);
}

static dkv_status launch_relerr(const float *X, const float *E, size_t mn, float *rel, uint32_t b, cudaStream_t s,
                                dkv_err *err)
{
    relerr_kernel<<<b, 256, 0, s>>>(X, E, mn, rel);
    return dkv_launch_check("relerr_kernel", err);
}

#define BL(call)                                                                                   \
    do {                                                                                           \
        cublasStatus_t b_ = (call);                                                                \
        if (b_ != CUBLAS_STATUS_SUCCESS)                                                           \
            return dkv_err_set(err, DKV_EIO, "%s:%d: %s: cuBLAS status %d", __FILE__, __LINE__, #call, \
                               (int)b_);                                                           \
    } while (0)

/* Q (r x m col-major, i.e. row-major m x r) = orth(Y): shifted CholeskyQR, twice.  Y is clobbered. */
static dkv_status orth(dkv_cuda_lowrank *lr, uint32_t m, uint32_t r, uint32_t b, dkv_err *err)
{
    const float one = 1.0f, zero = 0.0f;
    float *in = lr->Y, *out = lr->Q;
    for (int pass = 0; pass < 2; pass++) {
        BL(cublasSgemmStridedBatched(lr->h, CUBLAS_OP_N, CUBLAS_OP_T, r, r, m, &one, in, r, (long long)m * r, in, r,
                                     (long long)m * r, &zero, lr->G, r, (long long)r * r, b));
        DKV_TRY(launch_cholinv(lr->G, lr->Linv, r, m, b, lr->s, err));
        BL(cublasSgemmStridedBatched(lr->h, CUBLAS_OP_N, CUBLAS_OP_N, r, m, r, &one, lr->Linv, r, (long long)r * r, in,
                                     r, (long long)m * r, &zero, out, r, (long long)m * r, b));
        float *t = in;
        in = out;
        out = t;
    }
    /* two passes: the result is back in Y; keep it in Q */
    DKV_CU(cudaMemcpyAsync(lr->Q, lr->Y, (size_t)b * m * r * sizeof(float), cudaMemcpyDeviceToDevice, lr->s));
    return DKV_OK;
}

static dkv_status compress_piece(dkv_cuda_lowrank *lr, const dkv_bf16 *A, uint32_t m, uint32_t n, uint32_t b,
                                 uint32_t r, uint32_t power, float *Q, float *B, float *rel, dkv_err *err)
{
    const float one = 1.0f, zero = 0.0f, minus = -1.0f;
    const long long mn = (long long)m * n, mr = (long long)m * r, nr = (long long)n * r;
    DKV_TRY(launch_convert(lr->X, A, (size_t)b * mn, lr->s, err));
    BL(cublasSgemmStridedBatched(lr->h, CUBLAS_OP_N, CUBLAS_OP_N, r, m, n, &one, lr->Om, r, 0, lr->X, n, mn, &zero,
                                 lr->Y, r, mr, b));
    DKV_TRY(orth(lr, m, r, b, err));
    for (uint32_t it = 0; it < power; it++) {
        BL(cublasSgemmStridedBatched(lr->h, CUBLAS_OP_N, CUBLAS_OP_T, r, n, m, &one, lr->Q, r, mr, lr->X, n, mn,
                                     &zero, lr->Z, r, nr, b));
        BL(cublasSgemmStridedBatched(lr->h, CUBLAS_OP_N, CUBLAS_OP_N, r, m, n, &one, lr->Z, r, nr, lr->X, n, mn,
                                     &zero, lr->Y, r, mr, b));
        DKV_TRY(orth(lr, m, r, b, err));
    }
    BL(cublasSgemmStridedBatched(lr->h, CUBLAS_OP_N, CUBLAS_OP_T, n, r, m, &one, lr->X, n, mn, lr->Q, r, mr, &zero,
                                 lr->Bw, n, nr, b));
    if (rel) {
        DKV_CU(cudaMemcpyAsync(lr->E, lr->X, (size_t)b * mn * sizeof(float), cudaMemcpyDeviceToDevice, lr->s));
        BL(cublasSgemmStridedBatched(lr->h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, r, &minus, lr->Bw, n, nr, lr->Q, r, mr,
                                     &one, lr->E, n, mn, b));
        DKV_TRY(launch_relerr(lr->X, lr->E, (size_t)mn, rel, b, lr->s, err));
    }
    if (Q)
        DKV_CU(cudaMemcpyAsync(Q, lr->Q, (size_t)b * mr * sizeof(float), cudaMemcpyDeviceToDevice, lr->s));
    if (B)
        DKV_CU(cudaMemcpyAsync(B, lr->Bw, (size_t)b * nr * sizeof(float), cudaMemcpyDeviceToDevice, lr->s));
    return DKV_OK;
}

/* ------------------------------------------------------------------ entries */

extern "C" dkv_status dkv_cuda_lowrank_new(cudaStream_t s, uint32_t max_m, uint32_t max_n, uint32_t max_rank,
                                           uint32_t max_batch, dkv_cuda_lowrank **out, dkv_err *err)
{
    const char *fn = "dkv_cuda_lowrank_new";
    *out = NULL;
    DKV_ARG(max_m > 0 && max_n > 0 && max_batch > 0, fn);
    DKV_ARG(max_rank > 0 && max_rank <= DKV_LOWRANK_MAX_RANK, fn);
    dkv_cuda_lowrank *lr = (dkv_cuda_lowrank *)calloc(1, sizeof *lr);
    if (!lr)
        return dkv_err_set(err, DKV_ENOMEM, "%s: out of host memory", fn);
    lr->s = s;
    lr->max_m = max_m, lr->max_n = max_n, lr->max_r = max_rank, lr->max_b = max_batch;
    size_t b = max_batch, mn = (size_t)max_m * max_n, mr = (size_t)max_m * max_rank, nr = (size_t)max_n * max_rank,
           rr = (size_t)max_rank * max_rank;
    size_t sizes[] = {b * mn, b * mn, b * mr, b * mr, b * nr, b * rr, b * rr, b * nr, nr, b};
    size_t off[10], total = 0;
    for (int i = 0; i < 10; i++) {
        off[i] = total;
        total += (sizes[i] * sizeof(float) + 255) / 256 * 256;
    }
    dkv_status st = DKV_OK;
    cudaError_t e = cudaMalloc(&lr->mem, total);
    if (e != cudaSuccess) {
        free(lr);
        return dkv_err_set(err, DKV_ENOMEM, "%s: cudaMalloc of %zu bytes: %s", fn, total, cudaGetErrorString(e));
    }
    lr->bytes = total;
    float **ptrs[] = {&lr->X, &lr->E, &lr->Y, &lr->Q, &lr->Z, &lr->G, &lr->Linv, &lr->Bw, &lr->Om, &lr->nrm};
    for (int i = 0; i < 10; i++)
        *ptrs[i] = (float *)((char *)lr->mem + off[i]);
    if ((e = cudaMallocHost((void **)&lr->h_om, nr * sizeof(float))) != cudaSuccess) {
        st = dkv_err_set(err, DKV_ENOMEM, "%s: cudaMallocHost: %s", fn, cudaGetErrorString(e));
        goto fail;
    }
    if (cublasCreate(&lr->h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(lr->h, s) != CUBLAS_STATUS_SUCCESS ||
        cublasSetMathMode(lr->h, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
        st = dkv_err_set(err, DKV_EIO, "%s: cuBLAS handle set-up failed", fn);
        goto fail;
    }
    *out = lr;
    return DKV_OK;
fail:
    dkv_cuda_lowrank_free(lr);
    return st;
}

extern "C" void dkv_cuda_lowrank_free(dkv_cuda_lowrank *lr)
{
    if (!lr)
        return;
    if (lr->s)
        cudaStreamSynchronize(lr->s);
    if (lr->h)
        cublasDestroy(lr->h);
    cudaFreeHost(lr->h_om);
    cudaFree(lr->mem);
    free(lr);
}

extern "C" size_t dkv_cuda_lowrank_bytes(const dkv_cuda_lowrank *lr) { return lr ? lr->bytes : 0; }

extern "C" dkv_status dkv_cuda_lowrank_compress(dkv_cuda_lowrank *lr, const dkv_bf16 *A, uint32_t m, uint32_t n,
                                                uint32_t batch, uint32_t rank, uint32_t power_iters, uint64_t seed,
                                                float *Q, float *B, float *rel_err, dkv_err *err)
{
    const char *fn = "dkv_cuda_lowrank_compress";
    DKV_ARG(lr && A, fn);
    DKV_ARG(m > 0 && m <= lr->max_m && n > 0 && n <= lr->max_n, fn);
    DKV_ARG(rank > 0 && rank <= lr->max_r && rank <= m && rank <= n, fn);
    if (batch == 0)
        return DKV_OK;
    /* Omega (n x r row-major = r x n column-major, ld r): N(0, 1) from the seed, on the host */
    DKV_CU(cudaStreamSynchronize(lr->s));   /* the previous call may still read h_om */
    dkv_rng rng;
    dkv_rng_seed(&rng, seed);
    for (size_t i = 0; i < (size_t)n * rank; i++)
        lr->h_om[i] = (float)dkv_rng_normal(&rng);
    DKV_CU(cudaMemcpyAsync(lr->Om, lr->h_om, (size_t)n * rank * sizeof(float), cudaMemcpyHostToDevice, lr->s));
    for (uint32_t i0 = 0; i0 < batch; i0 += lr->max_b) {
        uint32_t b = batch - i0 < lr->max_b ? batch - i0 : lr->max_b;
        DKV_TRY(compress_piece(lr, A + (size_t)i0 * m * n, m, n, b, rank, power_iters, Q ? Q + (size_t)i0 * m * rank : NULL,
                           B ? B + (size_t)i0 * rank * n : NULL, rel_err ? rel_err + i0 : NULL, err));
    }
    return DKV_OK;
}

extern "C" dkv_status dkv_cuda_f32_to_bf16(dkv_bf16 *out, const float *in, size_t n, cudaStream_t s, dkv_err *err)
{
    DKV_ARG(out && in, "dkv_cuda_f32_to_bf16");
    if (n == 0)
        return DKV_OK;
    unsigned blocks = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
    f32_to_bf16_kernel<<<blocks, 256, 0, s>>>(out, in, n);
    return dkv_launch_check("f32_to_bf16_kernel", err);
}
