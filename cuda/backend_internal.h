/* backend_internal.h - the CUDA backend's private state, shared by backend.c (vtable, set-up,
 * step orchestration, measurement), backend_fwd.c (the batched forward), arena.c (arena, host
 * tier, transfers) and backend_kernels.cu.  Not a public header: see backend.h. */
#ifndef DKV_CUDA_BACKEND_INTERNAL_H
#define DKV_CUDA_BACKEND_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cuda/backend.h"
#include "cuda/clock.h"
#include "cuda/dkv_cuda.h"
#include "cuda/lowrank.h"
#include "cuda/sm_probe.h"
#include "model/devmem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DKV_BK_MAX_BLOCK   4096   /* longest generation block the unmask kernel takes */
#define DKV_BK_MAX_STREAMS 8
#define DKV_BK_EVENTS      4096   /* timing events per step */
#define DKV_BK_STALL       (DKV_KCLASS_N + 1)   /* segment class: waiting for fetched KV */

/* Per item of a step, on the device (uploaded with the step's metadata). */
typedef struct dkv_bk_item {
    uint32_t *tokens;        /* the request's canvas (device) */
    uint32_t  block_start, block_len;
    uint32_t  reset;         /* step 0: the block is set to mask_id before the forward */
    uint32_t  n_unmask;      /* positions unmasked after the LM head */
    uint32_t  logit_row;     /* row of the block's first position in argmax / conf */
} dkv_bk_item;

/* backend_kernels.cu */
dkv_status dkv_bk_reset(const dkv_bk_item *items, uint32_t n, uint32_t mask_id, cudaStream_t s, dkv_err *err);
dkv_status dkv_bk_unmask(const dkv_bk_item *items, uint32_t n, const uint32_t *argmax, const float *conf,
                         uint32_t mask_id, cudaStream_t s, dkv_err *err);
dkv_status dkv_bk_pack_paged(const dkv_cuda_kv_pool *pool, const uint32_t *table, uint32_t layer, const dkv_bf16 *k,
                             const dkv_bf16 *v, uint32_t ld, const uint32_t *idx, uint32_t kk, bool shared,
                             cudaStream_t s, dkv_err *err);
/* n_tokens of the blocks ids into out [layer, k|v, head, token, d]: bf16 (an FP8 pool's values
 * dequantized, e4m3 * scale), or with raw the pool's elements as stored (FP8: the e4m3 bytes). */
dkv_status dkv_bk_gather(void *out, const dkv_cuda_kv_pool *pool, const uint32_t *ids, uint32_t n_tokens, bool raw,
                         cudaStream_t s, dkv_err *err);
/* backend_scores.cu: score (Hkv, Tk) = attention mass of each key from the Tq queries, summed
 * over the queries and the heads of each KV group (dkv_ref_attention_scores), through cuBLAS
 * (blas: a cublasHandle_t; its stream is set to s).  ws: dkv_bk_scores_workspace_bytes. */
size_t     dkv_bk_scores_workspace_bytes(uint32_t Tq, uint32_t Tk, uint32_t H);
dkv_status dkv_bk_scores(void *blas, float *score, const dkv_bf16 *q, uint32_t ldq, uint32_t Tq, const dkv_bf16 *k,
                         uint32_t ldk, uint32_t Tk, uint32_t H, uint32_t Hkv, uint32_t D, void *ws, size_t ws_bytes,
                         cudaStream_t s, dkv_err *err);
/* ent (H, Tq) = each query row's normalised entropy -sum p ln p / ln Tk of softmax(q k^T / sqrt D)
 * over the Tk keys of its KV group (same arguments and workspace as dkv_bk_scores). */
dkv_status dkv_bk_entropy(void *blas, float *ent, const dkv_bf16 *q, uint32_t ldq, uint32_t Tq, const dkv_bf16 *k,
                          uint32_t ldk, uint32_t Tk, uint32_t H, uint32_t Hkv, uint32_t D, void *ws, size_t ws_bytes,
                          cudaStream_t s, dkv_err *err);

/* One request of the workload, as the backend tracks it. */
typedef struct bk_req {
    uint32_t P, G, L;            /* prompt, generation, canvas */
    uint32_t n_blocks;
    uint64_t canvas_off;         /* tokens into the canvas slab */
    uint32_t cur_block, masked;  /* host mirror of the unmask rule */
    int32_t  host_slot;          /* host tier slot, -1 none */
    dkv_devmem_lr_form lr;       /* the low-rank form the slot holds (core/model/devmem.h's rule) */
    uint64_t lr_plan_bytes;      /* the plan's bytes for the form (its COMPRESS order's pcie_bytes) */
} bk_req;

/* What one item does in the forward (host side, built per step). */
typedef enum { BK_W_NONE = 0, BK_W_STORE, BK_W_SELECT } bk_write;

typedef struct bk_item {
    uint32_t req, q0, nq, off;   /* rows [q0, q0+nq) of the canvas at rows [off, off+nq) of the step */
    uint32_t s_b, B;
    bool     refresh;
    dkv_kv_src_kind cache;       /* NONE (Refresh) or PAGED */
    uint32_t n_cache, n_own;
    bk_write write;
    uint32_t w_lo, w_n;          /* STORE: canvas positions [w_lo, w_lo + w_n) */
    uint32_t keep;               /* SELECT */
    bool     shared_set;
    uint32_t need_tokens;        /* positions the item's block table must cover */
    uint32_t tb, n_tb;           /* its segment of the step's block table */
    uint32_t n_chain;            /* of which the plan's blocks */
    uint32_t lr, R, blk_row;     /* logit rows [lr, lr+R) of the step; the block's first row */
    uint32_t n_unmask;           /* the unmask rule's count this step (on the device 0 with targets) */
    bool     measure;            /* setup.on_entropy: a sparse block's step 0 measures its entropy */
    uint32_t ent_slot;           /* its rows of d_ent: slot * n_layers * H * B */
} bk_item;

/* A copy in flight on the copy stream (one transfer order). */
typedef struct bk_copy {
    cudaEvent_t start, done;
    uint64_t    bytes;
    uint32_t    n_err;       /* COMPRESS: relative errors at h_err[slot * err_stride] */
    bool        d2h, in_use;
} bk_copy;

#define BK_COPIES 64

#define DKV_CUDA_L2_FLUSH_MAX 64   /* options.n_l2_flush at most */

typedef struct dkv_cuda_backend {
    dkv_cuda_backend_options o;
    dkv_cuda_l2_flush_at l2f[DKV_CUDA_L2_FLUSH_MAX];   /* options.l2_flush, copied (o.l2_flush points here) */
    void        *flush;        /* the l2_flush diagnostic's buffer, flush_bytes + DKV_CUDA_L2_FLUSH_SINK (NULL: none) */
    size_t       flush_bytes;
    dkv_model    m;
    dkv_gpu      g;
    /* what begin was told (dkv_backend_setup): the engine's decisions */
    const dkv_workload *wl;                 /* borrowed until end */
    dkv_decode_cfg dec;                     /* resolved decode configuration */
    uint32_t     block_tokens;              /* tokens per pool block */
    uint64_t     want_pool, want_staging, want_host;   /* blocks, blocks, bytes */
    bool         begun;
    dkv_kernel_fn on_kernel;
    void        *on_kernel_user;
    char         desc[160];

    dkv_cuda_ctx     *ctx;
    dkv_cuda_clock   *clock;                /* options.sm_clock: the sampled SM clock (NULL: none) */
    dkv_sm_probe     *probe;                /* options.clock_probe: the SMs' clock over each step (NULL: none) */
    cudaStream_t      st, cp;               /* compute, copy */
    dkv_cuda_weights *w;
    uint64_t          kvbpt;                /* KV bytes per token, all layers, as the device pool holds
                                               them (the model's: bf16 2, FP8 1 byte an element) */
    bool              kv_fp8;               /* the model's KV is FP8: the pool holds e4m3 codes
                                               (kv_fp8.cu), pool.elem E4M3 */
    float            *fp8_scale;            /* its scales, per arena block x layer x k|v x head (lazy;
                                               pool.scale once allocated) */
    float            *host_scale;           /* FP8 with a host tier: the scales of each slot's blocks
                                               (pinned, slot_blocks * n_scale per slot) */
    uint32_t          slot_blocks;          /* blocks a host slot holds */

    /* the arena: [pool | staging | discard] */
    void            *arena;
    uint64_t         arena_bytes, block_bytes;
    uint32_t         n_pool, n_staging, discard;
    uint32_t         staging0;              /* first staging block id of this backend's region */
    bool             arena_borrowed, w_borrowed;  /* share_from's: not freed here */
    dkv_cuda_kv_pool pool;
    uint32_t         staging_used;          /* this step */
    uint32_t        *blk_epoch;             /* per pool block: copy epoch that reads it, 0 none */

    /* requests */
    bk_req   *rq;
    size_t    n_rq;
    uint32_t *d_canvas;                     /* all canvases */
    uint32_t  max_L, mask_id;

    /* scratch (activations grow on demand) */
    uint32_t  cap_T, cap_R;
    size_t    cap_bytes_act;
    void     *act_mem;
    dkv_bf16 *x, *h, *qkv, *att, *gu, *ff;
    float    *logits, *conf;
    uint32_t *argmax;
    void     *ws_mem;                       /* attention / selection workspaces (fixed) */
    float    *attn_ws[DKV_BK_MAX_STREAMS];
    size_t    attn_ws_bytes;
    void    (*on_entropy)(void *user, uint32_t request, uint32_t block, double entropy); /* setup's */
    void     *on_entropy_user;
    float    *d_ent;                        /* measured row entropies of the step's measuring items */
    size_t    ent_cap;                      /* floats of d_ent */
    uint32_t  n_measure;                    /* measuring items of the step */
    float    *score, *score_ws;             /* score_ws: dkv_bk_scores' workspace */
    size_t    score_ws_bytes;
    void     *blas;                         /* cublasHandle_t of the selection scores */
    uint32_t *sel;
    uint32_t  logit_chunk;
    cudaStream_t side[DKV_BK_MAX_STREAMS];
    cudaEvent_t  fork, join[DKV_BK_MAX_STREAMS];
    uint32_t  n_side;
    uint64_t  scratch_bytes;
    /* device memory: the count (core/model/devmem.h, the same calls as the sizes below) and the
     * bytes actually passed to cudaMalloc besides the weights, the arena and the step metadata */
    dkv_devmem dm;
    uint64_t  alloc_now, alloc_peak;

    /* per-step metadata: pinned host + device mirror */
    void     *h_meta, *d_meta;
    size_t    cap_meta;
    uint32_t *d_pos, *d_spos, *d_table;
    dkv_bk_item *d_items;
    bk_item  *items;
    size_t    cap_items;
    dkv_cuda_attn_item *attn_items;         /* cap_items: the batched attention's items (host) */
    dkv_cuda_attn_batch attn_batch;         /* its plan for this step */
    const void *d_attn_meta;                /* its metadata inside d_meta */

    /* timing */
    cudaEvent_t ev[DKV_BK_EVENTS];
    uint8_t   ev_class[DKV_BK_EVENTS];
    uint32_t  n_ev;
    uint32_t  launches[DKV_KCLASS_N];
    bool      ev_fail;

    /* host tier and copies */
    void     *host;
    uint64_t  host_bytes, slot_bytes;
    uint32_t  n_slots, slots_used;
    int32_t  *slot_free;                    /* stack */
    uint32_t  n_slot_free;
    bk_copy   copies[BK_COPIES];
    uint32_t  epoch;                        /* copies issued; copy e in copies[e % BK_COPIES] */
    uint32_t  done_epoch;                   /* every copy up to this one has finished */
    uint32_t  compress_epoch;               /* last copy reading lr_out */
    uint64_t  lr_orders;                    /* COMPRESS orders that compressed: Omega's seed offset */
    dkv_bf16 *gbuf;                         /* gather buffer (compression, reorder), lazy */
    size_t    gbuf_bytes;
    dkv_cuda_lowrank *lr;
    float    *lr_q, *lr_b, *lr_err;         /* projection output (device) */
    dkv_bf16 *lr_out;                       /* bf16 staging of the projection for the copy */
    size_t    lr_cap;                       /* matrices the buffers hold */
    float    *h_err;                        /* pinned: errors read back, err_stride per copy slot */
    dkv_bf16 *lr_in;                        /* a fetched low-rank form, before its reconstruction */
    size_t    lr_in_bytes;
    cudaEvent_t lr_in_ev;                   /* the last reconstruction has read lr_in */
    bool      lr_in_used;
    uint32_t  err_stride;

    /* step measurement */
    double    t_begin;                      /* host clock at begin */
    uint64_t  step_pcie_h2d, step_pcie_d2h;
    uint32_t  step_n_fetch;                 /* fetches the compute stream waited for */
    uint32_t  step_block_epoch;             /* blocking copy to wait for at the step's end, 0 none */
    cudaEvent_t cmp_ev;                     /* projection kernels done (the copy waits for it) */
    dkv_cuda_backend_report rep;
    size_t    cap_series;
} dkv_cuda_backend;

/* A cudaMalloc of bytes counted in alloc_now (freed: a negative delta). */
void       bk_alloc_note(dkv_cuda_backend *b, int64_t delta);

/* backend_fwd.c */
dkv_status bk_scratch_init(dkv_cuda_backend *b, dkv_err *err);
dkv_status bk_scratch_reserve(dkv_cuda_backend *b, uint32_t T, uint32_t R, dkv_err *err);
void       bk_scratch_free(dkv_cuda_backend *b);
/* Builds the host-side items and the step's metadata from the plan (validating its counts),
 * uploads it; then runs the forward of all items and the unmask.  Events go into b->ev. */
dkv_status bk_prepare(dkv_cuda_backend *b, const dkv_step_plan *plan, uint32_t *T, uint32_t *R, dkv_err *err);
/* backend_fwd.c: FP8 scales allocated (first use; pool.scale set) */
dkv_status bk_fp8_scales(dkv_cuda_backend *b, dkv_err *err);
/* backend_fwd.c: after the step's completion, each measuring item's mean entropy to setup.on_entropy. */
dkv_status bk_report_entropy(dkv_cuda_backend *b, const dkv_step_plan *plan, dkv_err *err);
/* The l2_flush diagnostic (backend_l2flush.c): its layers checked and its buffer allocated at begin; after point p
 * of layer l (backend.h), each entry listed there, a step of T rows. */
dkv_status bk_l2_flush_init(dkv_cuda_backend *b, dkv_err *err);
dkv_status bk_l2_flush(dkv_cuda_backend *b, uint32_t l, dkv_cuda_l2_point p, uint32_t T, dkv_err *err);
dkv_status bk_forward(dkv_cuda_backend *b, const dkv_step_plan *plan, uint32_t T, uint32_t R, dkv_err *err);
/* backend_select.c: a selecting item of layer l, after the device's own scores (b->score) and
 * top-k (b->sel): the boundary report to options.on_select and, when the trajectory carries
 * selections, the recorded sets written over b->sel (decode/follow.h).  Synchronises. */
dkv_status bk_select_replay(dkv_cuda_backend *b, const bk_item *x, uint64_t step, uint32_t l, dkv_err *err);

/* backend_score.c: options.targets, after the step's completion: each item's block takes the
 * targets of its most confident masked positions, scored into b->rep.score (decode/score.h). */
dkv_status bk_teacher_force(dkv_cuda_backend *b, const dkv_step_plan *plan, dkv_err *err);
/* Records a timing event on the compute stream starting a segment of class c. */
void       bk_mark(dkv_cuda_backend *b, dkv_kernel_class c);

/* arena.c */
dkv_status bk_arena_init(dkv_cuda_backend *b, dkv_err *err);
dkv_status bk_compressor_begin(dkv_cuda_backend *b, uint32_t rank, bool warm, dkv_err *err);
void       bk_arena_free(dkv_cuda_backend *b);
uint32_t   bk_staging_take(dkv_cuda_backend *b, uint32_t n);      /* first id, or UINT32_MAX */
/* Before the step's kernels: the compute stream waits for copies still reading its blocks,
 * then the FETCH orders run (the compute stream waits for them). */
dkv_status bk_xfers_before(dkv_cuda_backend *b, const dkv_step_plan *plan, dkv_err *err);
/* After the step's kernels: OFFLOAD / COMPRESS / REORDER orders, released blocks marked. */
dkv_status bk_xfers_after(dkv_cuda_backend *b, const dkv_step_plan *plan, cudaEvent_t compute_done, dkv_err *err);
/* On the compute stream, inside the step: REORDER and the projection of COMPRESS orders. */
dkv_status bk_xfers_device(dkv_cuda_backend *b, const dkv_step_plan *plan, dkv_err *err);
/* Copies that finished: their time into the report.  wait: wait for all first. */
void       bk_copies_reap(dkv_cuda_backend *b, bool wait);

double bk_now(void);

/* Status plumbing shared by the backend's host files: TRY returns a failed dkv_status;
 * CU turns a CUDA error into DKV_EIO naming file:line and the call (needs `dkv_err *err`). */

#ifdef __cplusplus
}
#endif

#endif
