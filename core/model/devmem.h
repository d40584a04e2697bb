/* devmem.h - the CUDA backend's device allocations besides the weights and the KV arena, counted
 * (issue 9: peak device memory against cudaMemGetInfo).
 *
 * Every buffer cuda/ allocates with cudaMalloc for a run is sized here, and cuda/ takes its sizes
 * from these functions, so the count and the allocation cannot drift: the cuBLASLt workspace
 * (device.cu), the fixed workspaces (score workspace, selection indices, logits of one LM-head
 * chunk: bk_scratch_init), the activations (grown on demand by the backend's rule,
 * bk_scratch_reserve), the canvases, and the on-demand buffers of transfers (gather buffer,
 * low-rank compressor and its projection, a fetched low-rank form) and FP8 scales.
 * Not counted here: the per-step metadata (bk_prepare's block tables and attention plan, a few
 * KiB to MiB, sized by the attention planner) — the backend reports it separately.
 *
 * A run's peak device memory is then (sim/, docs/COST_MODEL.md "Device memory"):
 *     fixed (a profile's memory section: CUDA context, cuBLAS/cuBLASLt handles, lazy modules)
 *   + weights + KV arena (whole) + dkv_devmem peak (this file).
 *
 * The tracker (dkv_devmem) follows the backend's on-demand growth step by step; the engine runs
 * it on the plans it hands to any backend, and the CUDA backend runs the same calls beside its
 * own cudaMalloc sizes (reported as allocated and counted).  Pure computation. */
#ifndef DKV_MODEL_DEVMEM_H
#define DKV_MODEL_DEVMEM_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"

#define DKV_DEVMEM_ALIGN             256u                  /* sub-buffer alignment inside one cudaMalloc */
#define DKV_DEVMEM_CUBLASLT_WS_BYTES ((uint64_t)32 << 20)  /* dkv_cuda_ctx_new's cuBLASLt workspace */
#define DKV_DEVMEM_LOGIT_ROWS        1024u                 /* the CUDA backend's default max_logit_rows */
#define DKV_DEVMEM_ATTN_STREAMS      4u                    /* its default attn_streams */
#define DKV_DEVMEM_MAX_STREAMS       8u                    /* side streams at most */
#define DKV_DEVMEM_LR_RANK           64u                   /* low-rank compressor's largest rank */
#define DKV_DEVMEM_LR_BATCH          256u                  /* and its batch of matrices */

/* The run's configuration as the CUDA backend sees it at begin. */
typedef struct dkv_devmem_cfg {
    uint32_t max_L;          /* longest canvas it holds (the longest request within max_len; block_len if none) */
    uint32_t block_len;      /* decode block length */
    uint64_t canvas_tokens;  /* every request's canvas (prompt + generation), summed */
    uint32_t logit_rows;     /* rows per LM-head pass the logits buffer holds (0: DKV_DEVMEM_LOGIT_ROWS) */
    uint32_t attn_streams;   /* streams for per-item Reuse attention (1: serial) */
    uint64_t arena_blocks;   /* pool + staging + discard blocks (FP8 scales: one set per block) */
} dkv_devmem_cfg;

/* The parts, bytes (each a separate cudaMalloc unless said). */
typedef struct dkv_devmem_parts {
    uint64_t cublaslt_ws;    /* dkv_cuda_ctx_new */
    uint64_t workspaces;     /* bk_scratch_init: attention + score workspaces, selection, logits chunk */
    uint64_t activations;    /* bk_scratch_reserve at the current capacity */
    uint64_t canvases;
    uint64_t lowrank;        /* the compressor (dkv_cuda_lowrank_new) + its projection buffer */
    uint64_t gather;         /* gather buffer (compression, reorder) */
    uint64_t lowrank_in;     /* a fetched low-rank form */
    uint64_t fp8_scales;
} dkv_devmem_parts;

uint64_t dkv_devmem_align(uint64_t bytes);
/* Sizes, as the backend allocates them. */
uint64_t dkv_devmem_scores_ws_bytes(uint32_t Tq, uint32_t Tk, uint32_t H);
uint32_t dkv_devmem_side_streams(uint32_t attn_streams);
uint64_t dkv_devmem_workspace_bytes(const dkv_model *m, const dkv_devmem_cfg *c);
uint64_t dkv_devmem_act_bytes(const dkv_model *m, uint32_t cap_T, uint32_t cap_R);
/* The activations' growth rule: a step of T rows and R logit rows beyond the capacity grows it to
 * T + T/4 (R + R/4, at least 1); true when it grew (the backend reallocates). */
bool     dkv_devmem_act_grow(uint32_t T, uint32_t R, uint32_t *cap_T, uint32_t *cap_R);
uint64_t dkv_devmem_canvas_bytes(uint64_t canvas_tokens);
/* Vectors a compression projects: every layer's K and V head (the backend's batch). */
uint32_t dkv_devmem_kv_vectors(const dkv_model *m);
uint64_t dkv_devmem_lowrank_bytes(uint32_t max_m, uint32_t max_n, uint32_t max_rank, uint32_t max_batch);
uint64_t dkv_devmem_lowrank_proj_bytes(const dkv_model *m, uint32_t max_L);
uint64_t dkv_devmem_fp8_scale_bytes(const dkv_model *m, uint64_t blocks);

/* The tracker. */
typedef struct dkv_devmem {
    dkv_model        m;
    dkv_devmem_cfg   c;
    uint32_t         cap_T, cap_R;
    dkv_devmem_parts now;
    uint64_t         bytes, peak;   /* sum of now, and its largest value */
} dkv_devmem;

/* begin: the cuBLASLt workspace, the workspaces, the activations for (max_L, block_len), the canvases. */
void dkv_devmem_init(dkv_devmem *d, const dkv_model *m, const dkv_devmem_cfg *c);
void dkv_devmem_rows(dkv_devmem *d, uint32_t T, uint32_t R);          /* a step's computed and logit rows */
void dkv_devmem_gather(dkv_devmem *d, uint64_t bytes);               /* a gather of bytes (grows, never shrinks) */
void dkv_devmem_compressor(dkv_devmem *d);                           /* the first COMPRESS order */
void dkv_devmem_lowrank_in(dkv_devmem *d, uint64_t bytes);           /* a fetched low-rank form */
void dkv_devmem_fp8(dkv_devmem *d);                                  /* FP8 KV scales (first use) */
/* A COMPRESS order's tokens, as the backend gathers them: the chain's blocks before the offloaded
 * ones, cmp_blocks of them, capped at max_L. */
uint32_t dkv_devmem_compress_tokens(uint32_t n_chain, uint32_t off_blocks, uint32_t cmp_blocks, uint32_t block_tokens,
                                    uint32_t max_L);
/* Its rank: round(pcie_bytes / device_bytes x head_dim) (the order's size ratio; 0.3 when
 * device_bytes is 0), clamped to [1, DKV_DEVMEM_LR_RANK] and to m_tok. */
uint32_t dkv_devmem_compress_rank(uint64_t pcie_bytes, uint64_t device_bytes, uint32_t head_dim, uint32_t m_tok);
/* The same rank from a size ratio alone (round(ratio x head_dim) in [1, DKV_DEVMEM_LR_RANK]): what an
 * offload policy's lowrank_ratio gives before any order exists. */
uint32_t dkv_devmem_ratio_rank(double ratio, uint32_t head_dim);
/* The whole rule of a COMPRESS order, in one place (cuda/arena.c compress, its twin in the
 * simulator sim/sim_lowrank.c, and the engine's device-memory count): the request's chain blocks
 * [start, end) before the offload_bytes offloaded raw in the same step (cdiv by block_bytes), the
 * device_bytes / block_bytes of them the order covers; m_tok = the rows the item holds there (at most
 * min(end x block_tokens, need_tokens) - start x block_tokens: never the unwritten tail of a last
 * block), capped by dkv_devmem_compress_tokens; rank = dkv_devmem_compress_rank (0 when m_tok is 0:
 * nothing held, no kernels, no copy).  The CPU backend keeps its own rank (round(ratio x head_dim),
 * uncapped: exact at ratio 1; docs/CPU.md). */
typedef struct dkv_devmem_range {
    uint32_t start, end, m_tok, rank;
} dkv_devmem_range;
dkv_devmem_range dkv_devmem_compress_range(uint32_t n_chain, uint64_t offload_bytes, uint64_t device_bytes,
                                           uint64_t pcie_bytes, uint64_t block_bytes, uint32_t block_tokens,
                                           uint32_t max_L, uint32_t need_tokens, uint32_t head_dim);
/* Its low-rank form: bf16 Q (m_tok x r) and B (r x head_dim) for each of `matrices` (layer, k|v,
 * KV head) matrices.  The backend stores the form only when it is not larger than the raw blocks
 * it replaces ((end - start) x block_bytes); else it stores those blocks raw (exact).  With FP8
 * KV (1 byte an element) the bf16 form is not larger only when 2 r (m_tok + head_dim) <=
 * m_tok head_dim: at ratio 0.3 and head_dim 64 (r 19), from 96 tokens (3 blocks of 32) on. */
uint64_t dkv_devmem_lowrank_form_bytes(uint32_t matrices, uint32_t m_tok, uint32_t r, uint32_t head_dim);

/* A request's low-rank form in its host slot, one rule for the CUDA backend that keeps it (cuda/arena.c)
 * and the engine's count of the buffer a fetch rebuilds it through (core/engine/engine_devmem.c):
 *   - a COMPRESS order sets it when its form is not larger than the raw blocks [start, end) of the
 *     request's chain it stands for (m_tok tokens at rank r; dkv_devmem_lr_compressed, which says
 *     whether the form or those raw blocks go to the slot), else drops it;
 *   - a raw OFFLOAD of the chain's last cdiv(pcie_bytes, block_bytes) blocks that reaches into
 *     [start, end) drops it: raw KV replaces part of it in the slot (dkv_devmem_lr_offload);
 *   - a FETCH rebuilds those blocks from it (and reads it into the backend's lr_in buffer of
 *     dkv_devmem_lr_bytes) when the form is valid and [start, end) lies within the fetched
 *     positions [n_chain, n_tb) (dkv_devmem_lr_rebuilds). */
typedef struct dkv_devmem_lr_form {
    bool     valid;
    uint32_t start, end;       /* chain blocks (the canvas table's indices) */
    uint32_t m_tok, rank;      /* the form: bf16 Q (matrices, m_tok, rank), B (matrices, rank, head_dim) */
} dkv_devmem_lr_form;
void     dkv_devmem_lr_stored(dkv_devmem_lr_form *f, const dkv_devmem_range *g);
bool     dkv_devmem_lr_compressed(dkv_devmem_lr_form *f, const dkv_devmem_range *g, uint32_t matrices, uint32_t head_dim,
                                  uint64_t block_bytes);
void     dkv_devmem_lr_offload(dkv_devmem_lr_form *f, uint32_t n_chain, uint64_t pcie_bytes, uint64_t block_bytes);
bool     dkv_devmem_lr_rebuilds(const dkv_devmem_lr_form *f, uint32_t n_chain, uint32_t n_tb);
uint64_t dkv_devmem_lr_bytes(const dkv_devmem_lr_form *f, uint32_t matrices, uint32_t head_dim);

#endif
