/* backend.h - the CUDA backend: the engine's step plans executed by real kernels on one GPU.
 *
 * The engine (core/engine) decides what happens; this backend runs it (DESIGN.md, "One engine,
 * two backends") behind the same vtable as the simulator (engine/backend.h), so one
 * configuration runs through either and the two are compared line by line.
 *
 *     dkv_cuda_backend_options o = dkv_cuda_backend_options_default();
 *     dkv_backend be;
 *     if (dkv_cuda_backend_new(&o, &be, &err) != DKV_OK) ...;     // DKV_ENODEV without a GPU
 *     ec.backend = &be;  ec.weights = rw;  dkv_engine_run(&ec, &res, &err);
 *     dkv_backend_free(&be);
 *
 * Everything the engine decided arrives through dkv_backend_setup at begin (engine/backend.h):
 * the workload, the resolved decode configuration (block_len, cache mode, shared_set), the
 * pool geometry (block tokens and bytes, block count, staging blocks, host tier) and the loaded
 * weights; the options below only say how to run on the device.
 *
 * ---- What begin sets up (device memory, all plain cudaMalloc) ----
 *   weights   bf16 at the model's shapes: setup.weights uploaded (loaded by the caller, e.g.
 *             from safetensors shards with core/io's dkv_st_load_weights), or seeded random
 *             (dkv_cuda_weights_randomize) when setup.weights is NULL;
 *   arena     ONE cudaMalloc: [pool: setup.pool.n_blocks blocks | staging: staging blocks |
 *             1 discard block].  Pool block id b (the engine's core/mem block pool id, from the
 *             plan's kv_blocks) lives at byte b * block_bytes: the block pool's own numbering,
 *             so the device takes exactly the blocks the simulator's run takes.  block_bytes =
 *             setup.pool.block_bytes (core/mem's dkv_block_bytes, the one rule): bf16 KV 2 bytes
 *             an element, FP8 KV e4m3 codes, 1 byte an element, with one fp32 scale per (block,
 *             layer, k|v, kv head) in a separate buffer (docs/GPU.md "Lossy policies");
 *             dkv_cuda.h's block layout, either layout; staging
 *             blocks hold KV fetched from the host tier for positions a request no longer holds
 *             on the device;
 *   scratch   activations of the largest step (grown on demand), attention workspaces;
 *   canvases  every request's tokens (prompt: the workload's token ids when it has them (prompts
 *             files), else seeded random ids; generation: mask_id);
 *   host tier pinned host memory (setup.pool.host_bytes unless options.host_bytes) for
 *             offloaded KV, one slot per request.
 *
 * ---- One step (run_step) ----
 * All items of the plan run in ONE forward: the q rows of every item are concatenated and every
 * GEMM (QKV, O, gate+up, down) runs once over all of them; RoPE, norms and the KV store are one
 * launch per layer over all rows (the store writes through one block table made of every item's
 * kv_blocks, fused with RoPE); attention runs for all items at once (dkv_cuda_attention_batch: each
 * item over its own block table, one launch for the items of <= 32 queries and one for the
 * others), or with attn_per_item one launch per item (Reuse items spread over attn_streams
 * streams); the LM head runs
 * over the logit rows of all items in chunks of min(plan.max_logit_rows, max_logit_rows).  Each
 * item honours DESIGN.md's table exactly: q rows computed, a keys attended (of which the
 * cached ones come from the pool), w KV rows stored (dual/prefix: into the pool at their
 * positions; sparse selecting step: k retained rows per head packed into the pool's slots),
 * logit_rows rows through the LM head.  After the LM head each item unmasks the most confident
 * masked positions of its block (ceil(masked / steps left), steps from the item's steps_in_block;
 * at least 1), on the device.
 *
 * Transfers (plan.xfers, progressive or plain offload): OFFLOAD copies pcie_bytes of the
 * request's last pool blocks (those the engine frees after the step) to its host slot; COMPRESS
 * projects device_bytes of the blocks before those to low rank (cuda/lowrank.h, rank
 * round(ratio * head_dim) per head vector) and copies the projection; FETCH copies pcie_bytes
 * from the host slot into staging blocks mapped to the positions the request no longer holds;
 * REORDER runs the layout reorder kernel over device_bytes of the item's blocks.  Copies run on
 * the copy stream: a FETCH before the step's kernels (the compute stream waits for it), an
 * OFFLOAD/COMPRESS after them, overlapping the next step; `blocking` orders are waited for at
 * the end of the step.  Release is stream-ordered: a pool block read by a copy still in flight
 * is written again only after the copy's event (the compute stream waits on it).
 * With options.follow (trajectory replay, docs/CPU.md "CPU against CUDA") the step's own unmask
 * still runs; after the step the host rewrites each item's block to its canvas before the step
 * plus the positions the trajectory committed at this step (an error when they do not fit the
 * step or the own unmask count).  When the trajectory carries the leader's selections
 * (dkv_follow.has_sel), each sparse selecting layer keeps the recorded key sets instead of the
 * device's own top-k (cuda/backend_select.c; an error when no record fits), and on_select reports
 * per set whether the device's own top-k differs and its own boundary margin.
 * With options.targets (teacher-forced held-out scoring, docs/GPU.md "Held-out scoring") the
 * device's unmask commits nothing; after the step the host copies each item's block tokens, the
 * fp32 logit rows of its block and their confidences and applies decode/score.h's
 * dkv_score_block, the CPU backend's definition: the unmask rule's count of the most confident
 * masked positions (the LM head's confidence, as the device's own unmask ranks) take their TARGET
 * tokens, each scored once from the logits (-log2 softmax[target], argmax == target), and the
 * block is written back before the next step.  Every logit row of a step must come from one LM-head
 * pass (rows <= max_logit_rows), else the step fails naming both.
 * Offloaded positions are read back raw from the host slot into the item's staging blocks;
 * positions the engine holds as a low-rank approximation are rebuilt there from the form (Q B,
 * docs/GPU.md "Lossy policies").  A fetch writes no block the item holds: bytes the plan orders
 * beyond the staging blocks land in the discard block (report fetch_discard_bytes).
 *
 * ---- What it measures ----
 * Per step: wall time (host clock, run_step entry to the step's completion: the engine's clock
 * advances by it), GPU time between events at the step's start and end, CUDA events around
 * every kernel class (options.class_timing), copy-stream time; FLOPs and HBM bytes as the
 * engine's cost model counts them (core/cost's counts of the same plan); PCIe bytes as
 * copied.  Per kernel class and step one dkv_kernel_record (layer = UINT32_MAX), the same
 * records the simulator emits, with measured time_s and real launch counts.  cudaMemGetInfo
 * and the arena's use after every step (dkv_cuda_backend_report).
 *
 * Ownership: options' pointers are borrowed and must outlive the backend's begin..end.
 */
#ifndef DKV_CUDA_BACKEND_H
#define DKV_CUDA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/dkv_cuda.h"
#include "decode/decode.h"
#include "decode/follow.h"
#include "decode/score.h"
#include "engine/backend.h"
#include "ref/ref.h"
#include "workload/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the on_item hook sees after each item of a step (debugging and tests).  Arrays are
 * host copies, valid during the call. */
typedef struct dkv_cuda_item_report {
    uint64_t        step_index;
    uint32_t        item;            /* index in the plan */
    uint32_t        request, block, step;
    uint8_t         phase;           /* DKV_STEP_* */
    uint32_t        prompt, canvas, block_start, block_len;
    uint32_t        q_tokens, kv_tokens, kv_write_tokens, logit_rows;
    const uint32_t *tokens_before;   /* (canvas) tokens the step computed on */
    const uint32_t *tokens_after;    /* (canvas) after the unmask */
    const uint32_t *argmax;          /* (block_len) LM-head argmax of the block's rows */
    const float    *conf;            /* (block_len) its softmax probability */
    const uint16_t *hidden;          /* (block_len, hidden) bf16: final-normed block rows */
    const float    *logits;          /* (block_len, vocab) fp32 LM-head logits of the block's rows;
                                        NULL when the step's logit rows took more than one LM-head
                                        pass (rows > max_logit_rows) */
    uint32_t        vocab;
    const uint32_t *kv_blocks;       /* the plan's block ids (n_kv_blocks) */
    uint32_t        n_kv_blocks;
    const uint64_t *kv_offsets;      /* their byte offsets in the arena, as the kernels used them */
} dkv_cuda_item_report;
typedef void (*dkv_cuda_item_fn)(void *user, const dkv_cuda_item_report *r);

/* One sample of device memory, taken after each step. */
typedef struct dkv_cuda_mem_sample {
    uint64_t step_index;
    double   time_s;                 /* host clock since begin */
    uint64_t free_bytes, total_bytes;/* cudaMemGetInfo */
    uint32_t pool_blocks_used;       /* distinct pool blocks the step's items held */
    uint32_t staging_blocks_used;
    uint64_t host_bytes_used;        /* host tier slots in use, bytes */
} dkv_cuda_mem_sample;

/* What the backend reports at end() (caller-owned; series is malloc'ed and owned by the
 * report: free it with dkv_cuda_backend_report_clear). */
typedef struct dkv_cuda_backend_report {
    char     device[160];            /* dkv_cuda_probe's description */
    uint64_t weights_bytes, arena_bytes, block_bytes, scratch_bytes, host_tier_bytes;
    uint64_t arena_blocks, staging_blocks;
    uint64_t mem_total_bytes, mem_free_min_bytes; /* cudaMemGetInfo: total, least free seen (at begin and
                                                     after each step; a failed call fails them: never a 0
                                                     that was not measured) */
    uint64_t devmem_counted_bytes;   /* core/model/devmem.h's count of the buffers besides weights,
                                        arena and metadata: its peak over the run */
    uint64_t devmem_allocated_bytes; /* the same buffers as cudaMalloc'ed: the peak of their sum */
    uint64_t meta_bytes;             /* the per-step metadata buffer at its largest (not counted) */
    uint64_t steps, items;
    double   gpu_time_s, wall_time_s, copy_time_s;
    uint64_t pcie_h2d_bytes, pcie_d2h_bytes;
    uint64_t xfer_h2d_counted, xfer_d2h_counted;  /* the plan's pcie_bytes, for comparison */
    double   compress_err_sum;       /* sum of the relative reconstruction errors of COMPRESS orders */
    uint64_t n_compress;
    uint64_t n_lowrank_stored;       /* COMPRESS orders whose low-rank form went to the host (the
                                        others' form was not smaller than the raw KV: raw copied) */
    uint64_t n_lowrank_rebuilt;      /* fetches that rebuilt KV from a low-rank form (Q B) */
    double   compressor_warm_s;      /* host seconds begin spent on the low-rank compressor's first
                                        call (warm_gemms and warm_compressor with a policy that
                                        compresses; else 0) */
    uint64_t lowrank_h2d_bytes;      /* of pcie_h2d_bytes, the forms those fetches copied (the
                                        basis makes a form of a short range more than the engine's
                                        ratio x raw) */
    uint64_t fetch_discard_bytes;    /* of pcie_h2d_bytes, fetched bytes beyond the item's staging
                                        blocks (the plan's rounding), copied into the discard block */
    dkv_cuda_mem_sample *series;
    size_t   n_series;
    dkv_score *score;                /* (n_score = the workload's requests) held-out scores per request
                                        (decode/score.h) when options.targets was given, else NULL;
                                        malloc'ed, owned by the report */
    uint32_t n_score;
} dkv_cuda_backend_report;
void dkv_cuda_backend_report_clear(dkv_cuda_backend_report *r);

#define DKV_CUDA_FROM_SETUP UINT64_MAX   /* an option left to the engine's setup */

/* Where in a layer the l2_flush diagnostic reads the flush buffer: after the kernel (backend_fwd.c's order). */
typedef enum dkv_cuda_l2_point {
    DKV_CUDA_L2P_NORM = 0,     /* the attention norm */
    DKV_CUDA_L2P_QKV,          /* the q|k|v GEMM */
    DKV_CUDA_L2P_ROPE,         /* RoPE (with the KV store when the step stores; FP8: and the e4m3 store) */
    DKV_CUDA_L2P_ATTN,         /* the attention (after a selecting step's selection) */
    DKV_CUDA_L2P_O,            /* the O projection */
    DKV_CUDA_L2P_FFN_NORM,     /* the FFN norm */
    DKV_CUDA_L2P_GATE_UP,      /* the gate|up GEMM */
    DKV_CUDA_L2P_SWIGLU,
    DKV_CUDA_L2P_DOWN,         /* the down GEMM */
    DKV_CUDA_L2P_N
} dkv_cuda_l2_point;
/* What the diagnostic reads there: the flush buffer (the L2's dirty bytes: the flush's DRAM writes), or one of the
 * forward's activation buffers, the step's rows of it (what of it the L2 still holds: the bytes less the read's DRAM
 * reads; since session 48). */
typedef enum dkv_cuda_l2_buf {
    DKV_CUDA_L2B_FLUSH = 0,
    DKV_CUDA_L2B_X,     /* the residual stream, T x hidden */
    DKV_CUDA_L2B_H,     /* the norms' output, T x hidden */
    DKV_CUDA_L2B_QKV,   /* q | k | v, T x (heads + 2 kv heads) x head_dim */
    DKV_CUDA_L2B_ATT,   /* the attention's output, T x heads x head_dim */
    DKV_CUDA_L2B_GU,    /* gate | up, T x 2 ffn */
    DKV_CUDA_L2B_FF,    /* SwiGLU's output, T x ffn */
    DKV_CUDA_L2B_N
} dkv_cuda_l2_buf;
typedef struct dkv_cuda_l2_flush_at {
    uint32_t          layer;   /* below the model's n_layers (an error at begin otherwise) */
    dkv_cuda_l2_point after;
    dkv_cuda_l2_buf   read;    /* DKV_CUDA_L2B_FLUSH (0): the flush */
} dkv_cuda_l2_flush_at;

typedef struct dkv_cuda_backend_options {
    int                 device;          /* CUDA device ordinal (0) */
    uint64_t            staging_bytes;   /* staging for fetched KV, bytes, in whole pool blocks
                                            (DKV_CUDA_FROM_SETUP: the engine's setup.pool.staging_blocks;
                                            0: fetch orders fail) */
    uint64_t            host_bytes;      /* pinned host tier (DKV_CUDA_FROM_SETUP: setup.pool.host_bytes;
                                            0: offload orders fail) */
    dkv_kv_layout       layout;          /* KV layout inside a block */
    uint64_t            seed;            /* random weights and prompt tokens (1) */
    float               rms_eps;         /* 1e-5 (LLaDA) */
    uint32_t            max_logit_rows;  /* device cap on rows per LM-head pass (1024) */
    bool                attn_per_item;   /* attention per item (one launch each, Reuse items over
                                            attn_streams streams) instead of the batched kernel
                                            (dkv_cuda_attention_batch: 1-2 launches per layer) (false) */
    uint32_t            attn_streams;    /* streams for per-item Reuse attention (4; 1 = serial) */
    bool                class_timing;    /* events around each kernel class (true) */
    bool                sm_clock;        /* sample the SM clock every millisecond on a thread (NVML,
                                            cuda/clock.h) and record each step's mean (dkv_step_cost
                                            sm_mhz); without NVML nothing is recorded (false) */
    bool                clock_probe;     /* read every SM's cycle counter and the global timer in a small
                                            kernel at each end of a step, and record the SMs' mean clock
                                            over the step (dkv_step_cost sm_probe_mhz; docs/COST_MODEL.md
                                            "The clock that follows the work"); adds two launches of a
                                            few microseconds to each step (false) */
    bool                kernel_records;  /* emit dkv_kernel_records through setup.on_kernel (true) */
    /* diagnostic (docs/GPU.md "The L2 flush diagnostic"): after each listed point of each step, read a buffer of
       twice the L2 (at least 128 MiB, allocated at begin) through it (dkv_cuda_l2_flush), so that Nsight Compute's
       DRAM writes of that flush_kernel are the dirty bytes the L2 held there.  The flush changes what every later
       kernel finds in L2 and adds its time to the step: for Nsight Compute runs, not for timing (NULL: none) */
    const dkv_cuda_l2_flush_at *l2_flush;
    uint32_t            n_l2_flush;
    bool                warm_gemms;      /* at begin, run every GEMM class of the model once per warm-up row
                                            count (dkv_cuda_gemm_warm: cuBLASLt's kernels loaded before the
                                            first timed step; plans still made at first use) (true) */
    bool                warm_compressor; /* with warm_gemms and a policy that compresses (setup.pool.lowrank_rank),
                                            run the low-rank compressor at begin (cuda/arena.c bk_compressor_begin), so its first call (cuBLAS's
                                            SGEMM kernels loaded: 0.09-0.14 s) is not inside a step (default true;
                                            the compressor's buffers are set up at begin either way) */
    bool                poison;          /* tests: fill the arena and the activations with 0xFF (bf16
                                            NaN) at begin, and each host-tier slot when a request takes
                                            it, so a read of unwritten KV shows (false) */
    dkv_cuda_item_fn    on_item;         /* optional: synchronises after every step */
    const dkv_follow   *follow;          /* optional (needs on_item): follow[i] = request i's recorded
                                            trajectory (decode/follow.h): after each step the block's
                                            tokens are those the trajectory committed at that step,
                                            not the device's own picks, while the item report keeps
                                            the device's own argmax, confidence and logits */
    size_t              n_follow;        /* entries of follow (the workload's requests) */
    const uint32_t *const *targets;      /* optional: targets[i] = request i's gen_tokens target ids:
                                            teacher-forced scoring (above; not with follow) */
    size_t              n_targets;       /* entries of targets (the workload's requests) */
    void               *on_item_user;
    dkv_select_fn       on_select;       /* optional: every sparse selection (decode/follow.h's
                                            dkv_select_report; synchronises at each selecting layer).
                                            Order: layer by layer, every item of the batched step,
                                            all before the step's first on_item (the CPU backend
                                            reports item by item): keep what is per request */
    void               *on_select_user;
    dkv_cuda_backend_report *report;     /* optional: filled at end() */
    /* several instances on one device (dkv.execute with instances.n > 1, docs/GPU.md): each
       instance has its own backend (context, streams, scratch, canvases); one may take what an
       earlier backend, begun first, set up */
    const dkv_backend  *share_from;      /* borrowed: a begun CUDA backend (NULL: own everything) */
    bool                share_weights;   /* read share_from's weights (read-only) instead of a copy */
    bool                share_pool;      /* address share_from's pool: block ids are one pool's ids,
                                            setup.pool.n_blocks must equal share_from's */
    uint32_t            arena_instances; /* the arena's owner: staging + discard regions for this many
                                            instances (0 or 1: itself only) */
    uint32_t            arena_instance;  /* share_pool: this backend's region (1..arena_instances-1) */
} dkv_cuda_backend_options;

dkv_cuda_backend_options dkv_cuda_backend_options_default(void);

/* Creates the backend (nothing on the device yet: begin allocates).  Checks the options and
 * probes the device: DKV_ENODEV with the reason when there is no usable GPU. */
dkv_status dkv_cuda_backend_new(const dkv_cuda_backend_options *o, dkv_backend *out, dkv_err *err);

/* Introspection for tests (valid between begin and end): the arena base and block size, and
 * the device address of pool block id (NULL when out of range). */
void *dkv_cuda_backend_block_ptr(const dkv_backend *be, uint32_t block);
uint64_t dkv_cuda_backend_block_bytes(const dkv_backend *be);

#ifdef __cplusplus
}
#endif

#endif
