/* lowrank.h - low-rank compression of KV on the GPU (the middle phase of progressive offload):
 * a randomized range finder through cuBLAS, with the relative reconstruction error reported.
 *
 * For each of `batch` matrices A (m x n, bf16, row-major, contiguous: matrix i at A + i*m*n):
 *   Omega (n x r) ~ N(0, 1), seeded (core/util/rng.h), the same for every matrix;
 *   Y = A Omega, then `power_iters` times Y = A (A^T Q) with Q = orth(Y) in between;
 *   Q = orth(Y) (m x r): shifted CholeskyQR2 on the fp32 Gram matrix (shift 1e-7 trace), each
 *       Schur pivot floored at shift + 16 m u x the column's own squared norm (lowrank.cu's
 *       cholinv_kernel): on rank-deficient Y (fewer distinct rows than r, as layer 0's V of a
 *       short range of a byte-level model) the null directions come out of the first pass as
 *       bounded noise, which the second pass orthonormalises, instead of rounding noise blown up
 *       into Q (garbage or NaN before 2026-12-01: device call 13's lowrank_0.5).  A Gram-Schmidt
 *       kernel was tried (call 15): correct, but 4-37x slower (compress 6.8 ms -> 25.9 ms at
 *       524,288 rows rank 38; 24.5 ms -> 916 ms at 2,097,152 rows rank 64), so not kept.
 *   B = Q^T A (r x n);  A ~ Q B.
 *   rel_err = ||A - Q B||_F / ||A||_F per matrix.
 * All GEMMs are cublasSgemmStridedBatched in fp32 (A is converted once); the workspace holds the
 * Gram matrices G and L^-1 (core/model/devmem.c counts it).  Storage of the
 * approximation: (m + n) * r values instead of m * n; for KV rows of head_dim n with
 * r = round(ratio * n) the m * r coefficients are ratio of the raw size and the n * r basis is
 * shared by the m rows.
 *
 *     dkv_cuda_lowrank *lr;
 *     dkv_cuda_lowrank_new(stream, 768, 128, 38, 256, &lr, &err);
 *     dkv_cuda_lowrank_compress(lr, A, 768, 128, batch, 38, 1, seed, Q, B, rel_err, &err);
 *     dkv_cuda_lowrank_free(lr);
 *
 * Work is queued on the stream given at creation (asynchronous); batches larger than max_batch
 * are processed in pieces.  A handle is single-threaded.
 */
#ifndef DKV_CUDA_LOWRANK_H
#define DKV_CUDA_LOWRANK_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "cuda/dkv_cuda.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DKV_LOWRANK_MAX_RANK 64

typedef struct dkv_cuda_lowrank dkv_cuda_lowrank;

/* A workspace for up to max_batch matrices of at most max_m x max_n, rank <= max_rank
 * (<= DKV_LOWRANK_MAX_RANK), and a cuBLAS handle on stream s.  Free with dkv_cuda_lowrank_free
 * (NULL is a no-op). */
dkv_status dkv_cuda_lowrank_new(cudaStream_t s, uint32_t max_m, uint32_t max_n, uint32_t max_rank,
                                uint32_t max_batch, dkv_cuda_lowrank **out, dkv_err *err);
void       dkv_cuda_lowrank_free(dkv_cuda_lowrank *lr);
size_t     dkv_cuda_lowrank_bytes(const dkv_cuda_lowrank *lr);   /* device workspace */

/* Compresses `batch` matrices (see above).  Outputs (device, fp32, row-major): Q (batch, m, r),
 * B (batch, r, n), rel_err (batch); any of them may be NULL (not written).  rank <= min(m, n).
 * Requires m <= max_m, n <= max_n, rank <= max_rank; n_batch any (processed in pieces). */
dkv_status dkv_cuda_lowrank_compress(dkv_cuda_lowrank *lr, const dkv_bf16 *A, uint32_t m, uint32_t n,
                                     uint32_t batch, uint32_t rank, uint32_t power_iters, uint64_t seed,
                                     float *Q, float *B, float *rel_err, dkv_err *err);

/* fp32 -> bf16 (round to nearest even), n values; for staging a projection before a copy. */
dkv_status dkv_cuda_f32_to_bf16(dkv_bf16 *out, const float *in, size_t n, cudaStream_t s, dkv_err *err);

#ifdef __cplusplus
}
#endif

#endif
