/* dkv_cuda.h - the CUDA kernels and calls of dkv's GPU backend (one operation per .cu file in cuda/).
 *
 * Every entry here is the outer layer of the three-layer shape (STYLE.md habit 7): it checks
 * its arguments, then calls a launcher that takes a stream and checks cudaGetLastError(), which
 * launches a static __global__ kernel.  Entries return a dkv_status and fill err with a message
 * naming the call and the argument (DKV_EINVAL), or the CUDA error (DKV_EIO).  Nothing prints.
 * Launches are asynchronous: an error inside a kernel surfaces at the next synchronising call.
 *
 * Storage is bf16 (dkv_bf16: the raw 16 bits), arithmetic and accumulation fp32.  All buffers
 * passed as pointers live on the device unless the comment says "host".  Layouts are row-major
 * and match core/ref (ref.h): activations (T, C); q (T, H*D) with row stride ldq; weights
 * (out, in) as in PyTorch; the reference each entry is checked against is named beside it.
 *
 * KV pool: one arena of fixed-size blocks; a block holds block_tokens tokens of K and V for
 * every layer and KV head: block_bytes = block_tokens * n_layers * 2 * n_kv_heads * D * element
 * bytes (2 for bf16, 1 for FP8 e4m3: core/mem's dkv_block_bytes, the one rule).
 * Block id b lives at byte offset b * block_bytes (the core/mem block pool's ids and offsets).
 * An FP8 pool (elem DKV_KV_ELEM_E4M3) holds OCP e4m3 codes, one byte an element, and one fp32
 * scale per (block id, layer, k|v, kv head) in a device array beside it (pool.scale, index
 * block * n_layers*2*n_kv_heads + (layer*2 + kv)*n_kv_heads + head); every kernel that reads the
 * pool dequantizes on load, value = e4m3 * scale in fp32 (kv_addr.cuh's kv_load8), rounded to bf16
 * where the kernel computes in bf16 (attention's tensor cores, the gather for compression); the
 * format and the scale rule are the CPU backend's (docs/CPU.md "KV in the pool's blocks").
 * A sequence's tokens map to blocks through a block table (device array of ids): canvas
 * position p sits in block table[p / block_tokens], slot p % block_tokens.  Inside a block:
 *   DKV_KV_LAYER_MAJOR  [layer][k|v][head][slot][d]  (layer-major, step-minor: for one layer and
 *                                                     head, the block's tokens are one run)
 *   DKV_KV_TOKEN_MAJOR  [slot][layer][k|v][head][d]  (t-major: a token's KV for all layers is
 *                                                     one run; a layer's read strides by token)
 */
#ifndef DKV_CUDA_H
#define DKV_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "model/model.h"
#include "ref/ref.h"
#include "util/status.h"

/* A failed CUDA runtime call as a dkv status, the one definition: DKV_EIO naming the function, the
 * file:line and the call; the enclosing function has a dkv_err *err.  DKV_CU returns it,
 * DKV_CU_OR(st, call, label) stores it in st and jumps to label. */
#define DKV_CU_STATUS(e, call)                                                                                \
    dkv_err_set(err, DKV_EIO, "%s: %s:%d: %s: CUDA error %s (%s)", __func__, __FILE__, __LINE__, #call,      \
                cudaGetErrorName(e), cudaGetErrorString(e))
#define DKV_CU(call)                                    \
    do {                                                \
        cudaError_t dkv_cu_e_ = (call);                 \
        if (dkv_cu_e_ != cudaSuccess)                   \
            return DKV_CU_STATUS(dkv_cu_e_, call);      \
    } while (0)
#define DKV_CU_OR(st, call, label)                      \
    do {                                                \
        cudaError_t dkv_cu_e_ = (call);                 \
        if (dkv_cu_e_ != cudaSuccess) {                 \
            (st) = DKV_CU_STATUS(dkv_cu_e_, call);      \
            goto label;                                 \
        }                                               \
    } while (0)

typedef uint16_t dkv_bf16;   /* bf16 bits, as stored */

/* ------------------------------------------------------------------ device and context */

/* DKV_OK when at least one CUDA device is usable; otherwise DKV_ENODEV with the reason (no
 * driver, no device, ...) in err.  desc (may be NULL) gets "NVIDIA H200, sm_90, 132 SMs, ...". */
dkv_status dkv_cuda_probe(char *desc, size_t desc_len, dkv_err *err);

/* Writes "driver X.Y, runtime X.Y" (cudaDriverGetVersion, cudaRuntimeGetVersion) into out. */
void dkv_cuda_versions(char *out, size_t out_len);

/* A device context: a compute stream, a copy stream (non-blocking, for offload/fetch), a
 * cuBLASLt handle and its workspace.  Caller frees with dkv_cuda_ctx_free (NULL is a no-op). */
typedef struct dkv_cuda_ctx dkv_cuda_ctx;
dkv_status   dkv_cuda_ctx_new(int device, dkv_cuda_ctx **out, dkv_err *err);
void         dkv_cuda_ctx_free(dkv_cuda_ctx *ctx);
cudaStream_t dkv_cuda_ctx_stream(const dkv_cuda_ctx *ctx);
cudaStream_t dkv_cuda_ctx_copy_stream(const dkv_cuda_ctx *ctx);

/* Fills n bf16 values with a seeded pseudo-random N(0, scale^2)-like pattern (a hash of
 * seed and index; same seed, same values on any device), plus offset. */
dkv_status dkv_cuda_fill_random(dkv_bf16 *x, size_t n, uint64_t seed, float scale, float offset,
                                cudaStream_t s, dkv_err *err);

/* Reads bytes of buf (a multiple of 16; at least twice the L2 to evict all of it) through the L2, leaving it
 * holding clean lines of buf; sink: 16 bytes, written only by chance.  Used by `dkv profile` before each timed
 * call and by the backend's l2_flush diagnostic (backend.h). */
dkv_status dkv_cuda_l2_flush(cudaStream_t s, const void *buf, size_t bytes, void *sink, dkv_err *err);
/* The bytes such a flush reads on a device of l2_bytes of L2: twice the L2, at least DKV_CUDA_L2_FLUSH_MIN, rounded up
 * to 4 KiB (its buffer takes DKV_CUDA_L2_FLUSH_SINK more, the sink). */
#define DKV_CUDA_L2_FLUSH_MIN ((size_t)128 << 20)
#define DKV_CUDA_L2_FLUSH_SINK 256
size_t dkv_cuda_l2_flush_bytes(size_t l2_bytes);

/* ------------------------------------------------------------------ elementwise */

/* out (T, C) = wte[tokens[t]]; tokens (T) < V (out-of-range rows are set to zero: the entry
 * cannot see device token values; check them on the host).        ref: dkv_ref_embedding */
dkv_status dkv_cuda_embedding(dkv_bf16 *out, const uint32_t *tokens, const dkv_bf16 *wte, uint32_t T,
                              uint32_t C, uint32_t V, cudaStream_t s, dkv_err *err);

/* out (T, C) = in * rsqrt(mean(in^2) + eps) * w.  C % 8 == 0.      ref: dkv_ref_rmsnorm */
dkv_status dkv_cuda_rmsnorm(dkv_bf16 *out, const dkv_bf16 *in, const dkv_bf16 *w, uint32_t T, uint32_t C,
                            float eps, cudaStream_t s, dkv_err *err);

/* In place: x rows (T, stride ld elements) holding n_heads heads of head_dim, rotate-half RoPE
 * at positions pos (device, T).                                      ref: dkv_ref_rope */
dkv_status dkv_cuda_rope(dkv_bf16 *x, uint32_t ld, const uint32_t *pos, uint32_t T, uint32_t n_heads,
                         uint32_t head_dim, float theta, cudaStream_t s, dkv_err *err);

/* out (T, F) = SiLU(gate) * up; gate and up rows have stride ld_in (2F for a fused [gate|up]
 * GEMM output, F for separate buffers).                            ref: dkv_ref_swiglu */
dkv_status dkv_cuda_swiglu(dkv_bf16 *out, const dkv_bf16 *gate, const dkv_bf16 *up, uint32_t ld_in,
                           uint32_t T, uint32_t F, cudaStream_t s, dkv_err *err);

/* ------------------------------------------------------------------ GEMM (cuBLASLt) */

/* y (T, N) = x (T, K) w^T + bias + beta * y, with w (N, K) (PyTorch layout), bias (N) or NULL,
 * beta 0 or 1 (1 fuses a residual add: y += x w^T).  bf16 in and out, fp32 accumulation.
 * Runs on the context's compute stream.                             ref: dkv_ref_matmul */
dkv_status dkv_cuda_gemm(dkv_cuda_ctx *ctx, dkv_bf16 *y, const dkv_bf16 *x, const dkv_bf16 *w,
                         const dkv_bf16 *bias, uint32_t T, uint32_t K, uint32_t N, float beta, dkv_err *err);

/* The same with fp32 output (logits): y (T, N) float. */
dkv_status dkv_cuda_gemm_f32(dkv_cuda_ctx *ctx, float *y, const dkv_bf16 *x, const dkv_bf16 *w, uint32_t T,
                             uint32_t K, uint32_t N, dkv_err *err);

/* One GEMM shape to warm: y (T, N) = x (T, K) w^T (+ bias) (+ beta y), as dkv_cuda_gemm (f32_out 0)
 * or dkv_cuda_gemm_f32 (f32_out 1) runs it, at every warm-up row count up to max_T. */
typedef struct dkv_gemm_warm_shape {
    const dkv_bf16 *w, *bias;   /* w (N, K); bias (N) or NULL */
    uint32_t        K, N, max_T;
    float           beta;       /* 0 or 1 */
    int             f32_out;
} dkv_gemm_warm_shape;

/* For every shape, asks cuBLASLt's heuristic at each warm-up row count (core/model/gemm_warm.h,
 * dkv_gemm_warm_rows: every multiple of 8 to 8,192) and keeps the algorithm it
 * chose there (for the context's life), and runs each distinct algorithm of the shape once, at the
 * first row count that chose it, on one scratch buffer of at most max_bytes that it allocates and frees
 * (a row count whose operands do not fit is left out), so that its kernel is loaded (CUDA loads a kernel
 * lazily, at its first launch: 2.5-7 ms each on the H200) before a timed step; then it drops the plans.
 * From then on a shape of T <= 8,192 rows plans with the algorithm of its bucket (T rounded up to a
 * multiple of 8; no heuristic query, no kernel the warm-up did not load; the heuristic's own choice
 * where cuBLASLt refuses the bucket's for T).  *n_run: the GEMMs run.  Synchronises the context's stream.
 * docs/COST_MODEL.md "Cold shapes", "Bucket algorithms" */
dkv_status dkv_cuda_gemm_warm(dkv_cuda_ctx *ctx, const dkv_gemm_warm_shape *s, uint32_t n, size_t max_bytes,
                              uint32_t *n_run, dkv_err *err);

/* Plans the context holds now (tests). */
uint32_t dkv_cuda_gemm_plans(const dkv_cuda_ctx *ctx);
/* Plans made so far with a bucket's algorithm from the warm-up, and algorithms the warm-up kept (tests). */
uint32_t dkv_cuda_gemm_bucket_plans(const dkv_cuda_ctx *ctx);
uint32_t dkv_cuda_gemm_warm_algos(const dkv_cuda_ctx *ctx);

/* Which kernel a GEMM runs on.  AUTO (what dkv_cuda_gemm does) and CUBLASLT: cuBLASLt.  SKINNY:
 * a weight-streaming tensor-core kernel for T <= 32 rows with 16-byte aligned x and w, K up to
 * 12288 (K split over a thread-block cluster of up to 8 CTAs); correct, but slower than
 * cuBLASLt on the H200 at LLaDA-8B shapes, so only for study (docs/perf_notes.md). */
typedef enum dkv_gemm_path {
    DKV_GEMM_AUTO = 0,
    DKV_GEMM_CUBLASLT = 1,
    DKV_GEMM_SKINNY = 2
} dkv_gemm_path;

/* dkv_cuda_gemm with the path chosen, and for the skinny kernel the number of K splits (1..8;
 * 0: chosen from the shape and the GPU).  For benchmarks and tests.      ref: dkv_ref_matmul */
dkv_status dkv_cuda_gemm_ex(dkv_cuda_ctx *ctx, dkv_bf16 *y, const dkv_bf16 *x, const dkv_bf16 *w,
                            const dkv_bf16 *bias, uint32_t T, uint32_t K, uint32_t N, float beta,
                            dkv_gemm_path path, uint32_t splits, dkv_err *err);

/* y (T, N) = SwiGLU(gu) w^T + beta * y with gu (T, 2F) the fused [gate | up] GEMM output and w
 * (N, F).  With ff (T, F; caller-owned): dkv_cuda_swiglu into ff, then a cuBLASLt GEMM (the fast
 * path).  With ff NULL (T <= 32 only): the SwiGLU fused into the skinny GEMM (SiLU(gate) * up
 * computed and rounded to bf16 while x is staged, as dkv_cuda_swiglu writes it); one launch,
 * but slower than the two on the H200 (docs/perf_notes.md).
 *                                         ref: dkv_ref_swiglu, then dkv_ref_matmul */
dkv_status dkv_cuda_gemm_swiglu(dkv_cuda_ctx *ctx, dkv_bf16 *y, const dkv_bf16 *gu, const dkv_bf16 *w,
                                uint32_t T, uint32_t F, uint32_t N, float beta, dkv_bf16 *ff, dkv_err *err);

/* ------------------------------------------------------------------ KV pool */

typedef enum dkv_kv_layout {
    DKV_KV_LAYER_MAJOR = 0,
    DKV_KV_TOKEN_MAJOR = 1
} dkv_kv_layout;

typedef enum dkv_kv_elem {
    DKV_KV_ELEM_BF16 = 0,   /* 2 bytes an element, read as they are */
    DKV_KV_ELEM_E4M3 = 1    /* FP8: 1 byte an element, times the scale of its (block, layer, k|v, head) */
} dkv_kv_elem;

typedef struct dkv_cuda_kv_pool {
    void         *base;          /* the arena (device) */
    uint32_t      block_tokens;
    uint32_t      n_layers, n_kv_heads, head_dim;
    dkv_kv_layout layout;
    dkv_kv_elem   elem;          /* 0 (zero-initialised): bf16 */
    float        *scale;         /* E4M3: n_layers*2*n_kv_heads scales per block id (device) */
} dkv_cuda_kv_pool;

/* Bytes of one block: block_tokens * n_layers * 2 * n_kv_heads * head_dim * (2 bf16, 1 e4m3). */
size_t dkv_cuda_kv_block_bytes(const dkv_cuda_kv_pool *pool);

/* Element offset of (layer, kv 0|1, head, slot, d=0) inside a block (host helper, for tests). */
size_t dkv_cuda_kv_offset(const dkv_cuda_kv_pool *pool, uint32_t layer, uint32_t kv, uint32_t head,
                          uint32_t slot);

/* Stores T rows of K and V (rows of stride ld, n_kv_heads*D values from k and v) for one layer at
 * canvas positions pos (device, T) of the sequence whose blocks are block_table (device).  A bf16
 * pool only (an FP8 pool's scales need a block's rows together: dkv_cuda_kv_fp8_store). */
dkv_status dkv_cuda_kv_store(const dkv_cuda_kv_pool *pool, const uint32_t *block_table, uint32_t layer,
                             const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ld, const uint32_t *pos, uint32_t T,
                             cudaStream_t s, dkv_err *err);

/* FP8 KV (kv_fp8.cu): stores rows of K and V of layer `layer` into an FP8 pool (elem E4M3, scale
 * set) at canvas positions [tok_lo, tok_hi) of a sequence (block_table, device), as e4m3 codes.
 * Row i (position tok_lo + i) of head h comes from source row t = i (idx NULL) or t = idx[h*n + i]
 * (n = tok_hi - tok_lo; shared: idx[i], every head the same): k + t*ld + h*D and v likewise (bf16,
 * device).  The scale rule (the CPU backend's, docs/CPU.md): tok_valid (>= tok_hi): positions
 * below it were stored; a store that covers every stored row of a block sets its scale to
 * amax(new) / 448 (1 when all are zero); otherwise the scale becomes max(old, amax(new) / 448)
 * and, when it grows, the block's older rows (below tok_lo and in [tok_hi, tok_valid)) are
 * decoded with the old scale and encoded again with the new.  Encode: e4m3(x * (1 / scale)),
 * round to nearest even, saturating at 448; the pool's scales start at zero. */
dkv_status dkv_cuda_kv_fp8_store(const dkv_cuda_kv_pool *pool, const uint32_t *block_table, uint32_t layer,
                                 const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ld, const uint32_t *idx, bool shared,
                                 uint32_t tok_lo, uint32_t tok_hi, uint32_t tok_valid, cudaStream_t s, dkv_err *err);

/* Low-rank reconstruction (lowrank_decompress.cu): for each of the n_layers*2*n_kv_heads
 * matrices lkh = (layer*2 + kv)*n_kv_heads + head, rows Q[lkh] (m x r) B[lkh] (r x head_dim)
 * (bf16, row-major, contiguous per matrix: cuda/lowrank.h's outputs staged as bf16) are written
 * at canvas positions [0, m) of block_table (device).  r <= head_dim.  An FP8 pool: each block's
 * rows of each matrix are encoded with the scale amax / 448 of its reconstructed rows (a store
 * covering them: positions [0, m) are all the rows the blocks hold). */
dkv_status dkv_cuda_lowrank_decompress(const dkv_cuda_kv_pool *pool, const uint32_t *block_table, const dkv_bf16 *Q,
                                       const dkv_bf16 *B, uint32_t m, uint32_t r, cudaStream_t s, dkv_err *err);

/* RoPE and KV store in one launch (a bf16 pool, or no store): qkv rows (T, stride ld) hold n_heads q heads, then
 * pool->n_kv_heads k heads, then as many v heads, of pool->head_dim each.  The q and k heads are
 * rotated in place at positions pos (device, T), as dkv_cuda_rope(qkv, ld, pos, T, n_heads +
 * n_kv_heads, ...) does; rows [store_lo, store_hi) then have their rotated K and their V stored
 * for `layer` at canvas positions pos[t], as dkv_cuda_kv_store does (store_lo == store_hi: no
 * store; pool then only gives the head counts).        ref: dkv_ref_rope (+ the store, exact) */
dkv_status dkv_cuda_rope_kv_store(const dkv_cuda_kv_pool *pool, const uint32_t *block_table, uint32_t layer,
                                  dkv_bf16 *qkv, uint32_t ld, const uint32_t *pos, uint32_t T, uint32_t n_heads,
                                  uint32_t store_lo, uint32_t store_hi, float theta, cudaStream_t s, dkv_err *err);

/* The same with the store addressed by its own positions: row t's K/V go to position spos[t] of
 * block_table (device, T) while RoPE turns it by pos[t]; every row is stored (a batch of several
 * sequences: spos indexes one table made of all their blocks, rows not to keep aim at a discard
 * block).                                               ref: dkv_ref_rope (+ the store, exact) */
dkv_status dkv_cuda_rope_kv_store_at(const dkv_cuda_kv_pool *pool, const uint32_t *block_table, uint32_t layer,
                                     dkv_bf16 *qkv, uint32_t ld, const uint32_t *pos, const uint32_t *spos,
                                     uint32_t T, uint32_t n_heads, float theta, cudaStream_t s, dkv_err *err);

/* Copies n_blocks blocks (ids in device array ids) from src to dst, converting src->layout to
 * dst->layout (shapes and elements must match; the arenas must not overlap).  FP8: the codes are
 * moved as bytes and the blocks' scales copied to dst->scale. */
dkv_status dkv_cuda_kv_reorder(const dkv_cuda_kv_pool *dst, const dkv_cuda_kv_pool *src, const uint32_t *ids,
                               uint32_t n_blocks, cudaStream_t s, dkv_err *err);

/* ------------------------------------------------------------------ attention */

typedef enum dkv_kv_src_kind {
    DKV_KV_SRC_NONE = 0,
    DKV_KV_SRC_PAGED,    /* pool + block table, positions 0..n_tokens-1 */
    DKV_KV_SRC_PACKED    /* per-head packed [head, token, feature]: (n_kv_heads, n_tokens, D) */
} dkv_kv_src_kind;

typedef struct dkv_cuda_kv_src {
    dkv_kv_src_kind         kind;
    uint32_t                n_tokens;
    const dkv_cuda_kv_pool *pool;          /* PAGED */
    const uint32_t         *block_table;   /* PAGED, device */
    uint32_t                layer;         /* PAGED */
    const dkv_bf16         *k_packed, *v_packed;   /* PACKED */
} dkv_cuda_kv_src;

/* Bidirectional attention: every query row attends every key of the cached segment (if any)
 * followed by the n_own dense keys (if any), softmax(q k^T / sqrt(D)) v: a flash-attention kernel
 * (bf16 tensor cores, fp32 online softmax, P rounded to bf16 before P v); when the queries are
 * too few to fill the GPU the keys are split over a thread-block cluster of up to 8 CTAs that
 * merge through distributed shared memory.  Rows and pointers 16-byte aligned.
 *   Refresh: cache NONE, own = all L tokens.
 *   Reuse (dual): KV of the block stored in place first, cache PAGED with L tokens, n_own 0.
 *   Reuse (prefix): cache PAGED with s_b tokens, own = the L - s_b computed tokens.
 *   Reuse (sparse): cache PACKED with k tokens per head, own = the block's B tokens. */
typedef struct dkv_cuda_attn_args {
    dkv_bf16       *out;            /* (Tq, n_heads*D), row stride ldo */
    const dkv_bf16 *q;              /* (Tq, n_heads*D), row stride ldq */
    uint32_t        ldq, ldo;
    uint32_t        Tq, n_heads, n_kv_heads, head_dim;   /* head_dim == 128 (LLaDA, Dream) or 64 */
    dkv_cuda_kv_src cache;
    const dkv_bf16 *k_own, *v_own;  /* (n_own, n_kv_heads*D), row stride ld_own */
    uint32_t        ld_own, n_own;
    float          *workspace;      /* unused (kept for callers): no workspace is needed */
    size_t          workspace_bytes;
} dkv_cuda_attn_args;

/* 0: the key splits merge in distributed shared memory (kept for callers that size buffers). */
size_t     dkv_cuda_attention_workspace_bytes(uint32_t Tq, uint32_t n_heads, uint32_t head_dim, uint32_t n_keys);
dkv_status dkv_cuda_attention(const dkv_cuda_attn_args *a, cudaStream_t s, dkv_err *err);

/* ---- batched (varlen) attention: every item of a step in one launch per kernel shape ----
 * Each item is dkv_cuda_attention with the cache PAGED (or NONE) and own keys, its rows at
 * offsets into shared buffers: queries rows [q_row, q_row + n_q) of q (out likewise), own keys
 * rows [own_row, own_row + n_own) of k_own / v_own, and n_cache keys read first from the pool
 * through block_table + table_off (n_cache 0: none).  Items of at most 32 queries run as one
 * launch (2-warp CTAs, keys split over a cluster when the items are too few to fill the GPU),
 * the others as a second one (4-warp CTAs); the grid is (splits x query tiles of all items,
 * heads).  Usage, once per step (the metadata does not depend on the layer):
 *     dkv_cuda_attn_batch b;
 *     dkv_cuda_attn_batch_plan(&b, items, n, H, D, NULL, 0, err);        // sizes: b.bytes
 *     dkv_cuda_attn_batch_plan(&b, items, n, H, D, host, cap, err);      // lays it out in host
 *     cudaMemcpyAsync(dev, host, b.bytes, ...);                          // with the step's metadata
 * then per layer dkv_cuda_attention_batch(&args{..., .batch = &b, .meta = dev, .layer = l}). */
typedef struct dkv_cuda_attn_item {
    uint32_t q_row, n_q;        /* queries (n_q 0: the item is skipped) */
    uint32_t own_row, n_own;    /* own keys */
    uint32_t n_cache;           /* keys from the pool first (n_cache + n_own > 0 when n_q > 0) */
    uint32_t table_off;         /* the item's block table: block_table + table_off */
    uint32_t split_keys, tile0; /* filled by dkv_cuda_attn_batch_plan (ignored on input) */
} dkv_cuda_attn_item;

typedef struct dkv_cuda_attn_batch {
    uint32_t n_items, n_heads, head_dim;
    uint32_t n_tiles[2], n_splits[2];   /* group 0: items of <= 32 queries; group 1: the others */
    size_t   tiles_off[2];              /* byte offset of each group's tile -> item map in the metadata */
    size_t   bytes;                     /* metadata bytes: the items, then the two maps */
    bool     any_cache, any_own;        /* some item reads the pool / has own keys */
} dkv_cuda_attn_batch;

/* Plans n items for n_heads heads of head_dim: fills b; with host_meta (cap >= b->bytes,
 * 16-byte aligned) also writes the metadata there.  DKV_EINVAL names a bad item. */
dkv_status dkv_cuda_attn_batch_plan(dkv_cuda_attn_batch *b, const dkv_cuda_attn_item *items, uint32_t n,
                                    uint32_t n_heads, uint32_t head_dim, void *host_meta, size_t cap, dkv_err *err);

typedef struct dkv_cuda_attn_batch_args {
    dkv_bf16       *out;                /* rows stride ldo */
    const dkv_bf16 *q;                  /* rows stride ldq */
    uint32_t        ldq, ldo, n_heads, n_kv_heads, head_dim;
    const dkv_bf16 *k_own, *v_own;      /* rows stride ld_own (may be NULL when no item has own keys) */
    uint32_t        ld_own;
    const dkv_cuda_kv_pool *pool;       /* needed when batch->any_cache */
    const uint32_t *block_table;        /* device */
    uint32_t        layer;
    const dkv_cuda_attn_batch *batch;   /* host, from dkv_cuda_attn_batch_plan */
    const void     *meta;               /* device copy of its metadata, 16-byte aligned */
} dkv_cuda_attn_batch_args;

/* How many clusters of `splits` CTAs (1..8) of dkv_cuda_attention_batch's kernel fit on this GPU at
 * once (cudaOccupancyMaxActiveClusters): group 0 is the launch of items of <= 32 queries, group 1 the
 * other; head_dim 64 or 128.  A launch of more clusters runs in waves (docs/COST_MODEL.md). */
dkv_status dkv_cuda_attention_clusters(uint32_t head_dim, int group, uint32_t splits, uint32_t *clusters,
                                       dkv_err *err);

/* Attention of every item of the batch (one or two launches on s).     ref: dkv_ref_attention */
dkv_status dkv_cuda_attention_batch(const dkv_cuda_attn_batch_args *a, cudaStream_t s, dkv_err *err);

/* Dense attention for Refresh steps where every key is one of the computed rows.  q (Tq, H*D)
 * stride ldq; k, v (Tk, Hkv*D) stride ldkv; out (Tq, H*D) stride ldo.  With head_dim 64 or 128
 * and strides % 8 == 0 it is dkv_cuda_attention with own keys k, v (no workspace: it may be
 * NULL).  Otherwise batched cuBLAS GEMMs: S = q k^T / sqrt(D) in fp32, a row softmax to bf16 P,
 * O = P v; the workspace holds Tq*Tk*6 bytes per head of a chunk; heads are processed in chunks
 * that fit it (at least one KV group: n_heads / n_kv_heads heads).  Runs on the context's stream.
 *                                                                 ref: dkv_ref_attention */
size_t     dkv_cuda_attention_dense_workspace_bytes(uint32_t Tq, uint32_t Tk, uint32_t heads);
dkv_status dkv_cuda_attention_dense(dkv_cuda_ctx *ctx, dkv_bf16 *out, uint32_t ldo, const dkv_bf16 *q, uint32_t ldq,
                                    const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ldkv, uint32_t Tq, uint32_t Tk,
                                    uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, void *workspace,
                                    size_t workspace_bytes, dkv_err *err);

/* ------------------------------------------------------------------ sparse cache */

/* score (n_kv_heads, Tk) = attention mass each own key receives from the Tq queries, summed over
 * the queries and the query heads of each KV group.  q rows stride ldq, k rows stride ldk.
 * workspace: 2 * Tq * n_heads floats.                     ref: dkv_ref_attention_scores */
dkv_status dkv_cuda_attn_scores(float *score, const dkv_bf16 *q, uint32_t ldq, uint32_t Tq, const dkv_bf16 *k,
                                uint32_t ldk, uint32_t Tk, uint32_t n_heads, uint32_t n_kv_heads,
                                uint32_t head_dim, float *workspace, cudaStream_t s, dkv_err *err);

/* Per row (KV head) of score (rows, n): the k largest among indices outside [excl_lo, excl_hi),
 * ties to the lower index, written ascending to idx (rows, k).  With sum_rows, the rows are
 * summed first and one row of k is written (the shared-set variant).  n <= 8192.
 *                                                         ref: dkv_ref_topk */
dkv_status dkv_cuda_topk(uint32_t *idx, const float *score, uint32_t rows, uint32_t n, uint32_t k,
                         uint32_t excl_lo, uint32_t excl_hi, bool sum_rows, cudaStream_t s, dkv_err *err);

/* Packs the chosen tokens per head: k_out, v_out (n_kv_heads, kk, D) from k, v (T, n_kv_heads*D,
 * stride ld) at idx (n_kv_heads, kk) or, shared, idx (kk) for every head.  ref: dkv_ref_pack_heads */
dkv_status dkv_cuda_kv_pack(dkv_bf16 *k_out, dkv_bf16 *v_out, const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ld,
                            const uint32_t *idx, uint32_t n_kv_heads, uint32_t head_dim, uint32_t kk, bool shared,
                            cudaStream_t s, dkv_err *err);

/* ------------------------------------------------------------------ LM head */

/* For x (T, C) and w (V, C): argmax (T) and its softmax probability conf (T), computing the
 * logits chunk_rows rows at a time into logits (chunk_rows * V floats, device, caller-owned):
 * never [T, V] at once.  Ties go to the lower index.       ref: dkv_ref_lm_head_argmax */
dkv_status dkv_cuda_lm_head_argmax(dkv_cuda_ctx *ctx, uint32_t *argmax, float *conf, const dkv_bf16 *x,
                                   const dkv_bf16 *w, uint32_t T, uint32_t C, uint32_t V, uint32_t chunk_rows,
                                   float *logits, dkv_err *err);

/* ------------------------------------------------------------------ host tier and copies */

/* Pinned host memory for the offload tier.  dkv_cuda_host_free(NULL) is a no-op. */
dkv_status dkv_cuda_host_alloc(void **p, size_t bytes, dkv_err *err);
void       dkv_cuda_host_free(void *p);

/* Raw KV offload (device -> pinned host) and fetch (pinned host -> device) on the context's
 * copy stream.  The copy waits for `after` (an event recorded on the compute stream; NULL: no
 * wait) and records `done` (NULL: none) when finished, so compute overlaps the copy.  Pageable
 * host memory is refused (DKV_EINVAL): it would serialise with compute. */
dkv_status dkv_cuda_offload(dkv_cuda_ctx *ctx, void *host_dst, const void *dev_src, size_t bytes,
                            cudaEvent_t after, cudaEvent_t done, dkv_err *err);
dkv_status dkv_cuda_fetch(dkv_cuda_ctx *ctx, void *dev_dst, const void *host_src, size_t bytes,
                          cudaEvent_t after, cudaEvent_t done, dkv_err *err);

/* ------------------------------------------------------------------ the forward pass */

/* Device weights in bf16, one arena; Q/K/V and gate/up are fused row-wise so one GEMM computes
 * each group (the layout the loaders and the CUDA forward use; core/ref keeps them apart). */
typedef struct dkv_cuda_layer {
    dkv_bf16 *attn_norm;   /* (C) */
    dkv_bf16 *wqkv;        /* (H*D + 2*Hkv*D, C): q_proj rows, k_proj rows, v_proj rows */
    dkv_bf16 *bqkv;        /* (H*D + 2*Hkv*D) or NULL without qkv_bias */
    dkv_bf16 *wo;          /* (C, H*D) */
    dkv_bf16 *ffn_norm;    /* (C) */
    dkv_bf16 *wgu;         /* (2F, C): gate (ff_proj) rows, then up (up_proj) rows */
    dkv_bf16 *wdown;       /* (C, F) */
} dkv_cuda_layer;

typedef struct dkv_cuda_weights {
    dkv_model       m;
    float           rms_eps;
    dkv_bf16       *wte, *ln_f, *lm_head;   /* (V, C), (C), (V, C); lm_head == wte when tied */
    dkv_cuda_layer *layers;                 /* host array of n_layers */
    dkv_bf16       *mem;                    /* the device arena */
    size_t          bytes;
} dkv_cuda_weights;

/* Allocates (cudaMalloc, uninitialised) weights for m.  Free with dkv_cuda_weights_free. */
dkv_status dkv_cuda_weights_new(const dkv_model *m, float rms_eps, dkv_cuda_weights **out, dkv_err *err);
void       dkv_cuda_weights_free(dkv_cuda_weights *w);
/* Seeded random weights at any shape (LLaDA-8B, Dream-7B): scales as dkv_ref_weights_randomize. */
dkv_status dkv_cuda_weights_randomize(dkv_cuda_weights *w, uint64_t seed, cudaStream_t s, dkv_err *err);
/* Copies ref weights (same shapes) to the device, rounding to bf16 (synchronous). */
dkv_status dkv_cuda_weights_upload(dkv_cuda_weights *w, const dkv_ref_weights *ref, dkv_err *err);

/* One request's device-side state for dkv_cuda_step. */
typedef struct dkv_cuda_seq {
    const uint32_t *tokens;       /* device (L) */
    const uint32_t *pos;          /* device (L): 0, 1, ..., L-1 */
    const uint32_t *block_table;  /* device: the pool blocks holding positions 0..L-1, in order */
    dkv_bf16      **k_packed;     /* sparse: host array of n_layers device buffers (Hkv, cap, D) */
    dkv_bf16      **v_packed;
    uint32_t        packed_cap;   /* tokens each packed buffer holds */
    uint32_t        packed_tokens;/* set by the selecting step */
} dkv_cuda_seq;

/* Activations and workspaces for steps of up to max_tokens computed rows. */
typedef struct dkv_cuda_scratch dkv_cuda_scratch;
dkv_status dkv_cuda_scratch_new(const dkv_model *m, uint32_t max_tokens, uint32_t logit_chunk,
                                dkv_cuda_scratch **out, dkv_err *err);
void       dkv_cuda_scratch_free(dkv_cuda_scratch *s);
size_t     dkv_cuda_scratch_bytes(const dkv_cuda_scratch *s);

/* One decoding step of one request on the context's stream, with the semantics and token counts
 * of dkv_ref_step (same args; a->logit_chunk rows per LM-head pass, 0 = the scratch's chunk).
 * Writes argmax and conf (device, B each) and, when block_hidden is not NULL, the block's
 * final-normed hidden rows (device, B x C).  The pool must hold the sequence's blocks (bf16: an
 * FP8 pool is run by the backend, which stores through dkv_cuda_kv_fp8_store). */
dkv_status dkv_cuda_step(dkv_cuda_ctx *ctx, const dkv_cuda_weights *w, const dkv_cuda_kv_pool *pool,
                         dkv_cuda_seq *seq, dkv_cuda_scratch *scr, const dkv_ref_step_args *a,
                         uint32_t *argmax, float *conf, dkv_bf16 *block_hidden, dkv_err *err);

#ifdef __cplusplus
}
#endif

#endif
