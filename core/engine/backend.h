/* backend.h - the interface between the engine (what happens) and a backend (what it costs).
 *
 * Each iteration the engine builds one dkv_step_plan: the requests that run this step (one
 * dkv_step_item each, all batched into ONE forward pass per instance), and the transfer orders
 * the policies gave (offload, fetch, compress).  A backend costs the plan (sim/: roofline +
 * PCIe queue model) or executes it (cuda/: real kernels, CUDA events) and fills dkv_step_cost.
 * The engine never knows which backend runs it; both fill the same cost struct and emit the
 * same kernel records, so a simulated run and a hardware run compare line by line.
 *
 * The token counts of an item follow DESIGN.md's decoding table (q queries computed, a keys
 * attended, w KV tokens written); a backend must honour them exactly.
 *
 *     dkv_backend be;
 *     dkv_sim_backend_new(&sim_opts, &be, &err);          // sim/sim.h, or cuda/...
 *     dkv_backend_begin(&be, &setup, &err);
 *     for each step: dkv_backend_run_step(&be, &plan, &cost, &err);
 *     dkv_backend_end(&be);
 *     dkv_backend_free(&be);
 *
 * The setup carries every decision the engine made before the first step, so a backend never
 * re-derives one: the resolved decode configuration, the KV pool's geometry (block size, block
 * count, staging, host tier), the instance layout, and the loaded weights.  Each step's plan
 * carries what a backend needs to run that step (token counts, block ids, steps of the block).
 *
 * Ownership: a plan and everything it points to is owned by the engine and valid only during
 * run_step; a backend copies what it wants to keep.  The setup's model, gpu, workload and
 * decode are borrowed for the whole begin..end span; its weights only during begin.
 */
#ifndef DKV_ENGINE_BACKEND_H
#define DKV_ENGINE_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "decode/decode.h"
#include "mem/mem.h"
#include "model/model.h"
#include "util/names.h"
#include "util/status.h"
#include "workload/workload.h"

struct dkv_ref_weights;   /* core/ref/ref.h: host weights; the engine only passes the pointer */

/* Phase of one request-step (same values as decode/decode.h's phases). */
enum { DKV_STEP_REFRESH = 0, DKV_STEP_REUSE = 1 };

/* How the attention of an item reads its keys. */
enum {
    DKV_ATTN_DENSE = 0,       /* every head reads the same a tokens */
    DKV_ATTN_SPARSE_SHARED,   /* one retained token set for all heads (gathered per token) */
    DKV_ATTN_SPARSE_HEAD      /* per-head top-k, packed [head, token, feature] */
};

/* One request's share of a step. */
typedef struct dkv_step_item {
    uint32_t request;          /* request id (workload order) */
    uint32_t instance;         /* engine instance that runs it (multi-instance), 0 otherwise */
    uint32_t block;            /* generation block index */
    uint32_t step;             /* step index inside the block */
    uint32_t steps_in_block;   /* S: steps this block takes (decode.h), so the step is the last
                                  one when step + 1 == steps_in_block */
    uint8_t  phase;            /* DKV_STEP_REFRESH / DKV_STEP_REUSE */
    uint8_t  attn;             /* DKV_ATTN_* */
    uint8_t  kv_dtype_bytes;   /* bytes per KV element as stored (fp16/bf16 2, fp8 1); 0 = model's */
    uint32_t q_tokens;         /* q: query tokens computed through the whole network */
    uint32_t kv_tokens;        /* a: key tokens attended per query */
    uint32_t kv_cached_tokens; /* of a, tokens read from the KV cache (the rest is computed now) */
    uint32_t kv_write_tokens;  /* w: tokens whose K/V are stored into the cache this step */
    uint32_t logit_rows;       /* rows that go through the LM head */
    uint32_t kv_select_rows;   /* sparse cache: the kv_write_tokens are a top-k selection scored by
                                  this many query rows (the block) rather than a store of rows;
                                  0 = a plain store (or nothing written) */
    double   kv_run_bytes;     /* contiguous run length of cached-KV reads under the layout
                                  policy, bytes (0 = fully contiguous) */
    double   kv_host_bytes;    /* bytes of this item's cached KV that live in host memory and are
                                  read over PCIe this step (zero-copy), already in xfers if fetched */
    const uint32_t *kv_blocks; /* pool block ids in layout order (may be NULL in aggregate mode) */
    uint32_t n_kv_blocks;
} dkv_step_item;

/* A transfer (or on-device transformation) ordered by a policy. */
enum {
    DKV_XFER_OFFLOAD = 0,  /* device -> host copy of raw KV */
    DKV_XFER_FETCH,        /* host -> device copy */
    DKV_XFER_COMPRESS,     /* on-device low-rank projection of KV, then device -> host of the result */
    DKV_XFER_REORDER       /* on-device layout change (read + write device_bytes) */
};

typedef struct dkv_xfer {
    uint8_t  kind;          /* DKV_XFER_* */
    bool     pinned;        /* pinned host buffer (else pageable rates) */
    bool     blocking;      /* true: the step waits for it (serial); false: overlaps the step's compute */
    uint32_t request;
    uint32_t instance;
    uint64_t pcie_bytes;    /* bytes crossing PCIe (0 for REORDER) */
    uint64_t device_bytes;  /* HBM bytes read (+ written for REORDER) by the on-device part */
    double   flops;         /* FLOPs of the on-device part (COMPRESS projection) */
} dkv_xfer;

typedef struct dkv_step_plan {
    uint64_t step_index;       /* engine iteration counter */
    uint32_t instance;         /* instance that issued the plan (UINT32_MAX: merged plan) */
    const dkv_step_item *items;
    uint32_t n_items;
    const dkv_xfer *xfers;
    uint32_t n_xfers;
    uint32_t max_logit_rows;   /* logit chunk size (rows per LM-head pass); 0 = unchunked */
    uint32_t n_weight_streams; /* distinct weight copies read this step (instances in a merged
                                  plan without shared weights); 0 or 1 = one */
    double   start_s;          /* the engine's clock when the step starts (its steps clock: the step
                                  record's start_s); a backend that models the GPU's state over time
                                  reads it (sim/: the clocks' hold after heavy steps) */
} dkv_step_plan;

/* Kernel classes a backend reports per-kernel records for. */
typedef enum dkv_kernel_class {
    DKV_KCLASS_QKV = 0,
    DKV_KCLASS_ATTN,
    DKV_KCLASS_O,
    DKV_KCLASS_FFN,        /* gate + up + down GEMMs */
    DKV_KCLASS_LM_HEAD,    /* logits, all chunks */
    DKV_KCLASS_KV_STORE,
    DKV_KCLASS_KV_GATHER,  /* sparse gathers / host zero-copy reads */
    DKV_KCLASS_REORDER,
    DKV_KCLASS_ELEMENTWISE,/* norms, RoPE, activation, residual, embedding */
    DKV_KCLASS_COMPRESS,
    DKV_KCLASS_N
} dkv_kernel_class;

extern const dkv_names dkv_kernel_class_names;   /* "qkv", "attn", ... (util/names.h) */
const char *dkv_kernel_class_name(dkv_kernel_class k);

/* One kernel (or a class aggregate of one step, see setup.kernel_records). */
typedef struct dkv_kernel_record {
    uint64_t step_index;
    dkv_kernel_class kind;
    uint32_t layer;           /* UINT32_MAX for a whole-step aggregate */
    uint32_t n_launches;
    double   time_s;
    double   flops;
    uint64_t read_bytes, write_bytes;
    uint32_t l2_seq;          /* 0: a class record (the fields above); k >= 1: the k-th kernel of the step's L2
                                 replay (core/cost/cost.h dkv_cost_l2_trace; the simulator with
                                 dkv_sim_options.l2_records): kind, the HBM bytes the replay charges it,
                                 n_launches 1, layer UINT32_MAX, time_s and flops 0 */
    uint32_t l2_part;         /* with l2_seq: 0 the step's start (reset, embeddings), 1 one layer (every layer
                                 charges the same kernels: the class totals count them n_layers times), 2 the
                                 step's end (LM head, argmax, unmask) */
    uint64_t l2_dirty_bytes;  /* with l2_seq: the dirty bytes the replay's L2 holds after the kernel */
    uint64_t l2_held_x, l2_held_qkv, l2_held_att;   /* with l2_seq: what it holds then of the residual stream, the
                                                       q|k|v buffer and the attention's output (bytes) */
} dkv_kernel_record;

typedef void (*dkv_kernel_fn)(void *user, const dkv_kernel_record *rec);

/* The KV pool as the engine sized it (engine_mem.c, dkv_engine_config_resolve): a backend
 * holding real memory lays out exactly this, so block id b of a plan is block b of its pool. */
typedef struct dkv_backend_pool {
    dkv_mem_kind kind;         /* the KV manager (only DKV_MEM_BLOCKPOOL hands out block ids) */
    uint32_t block_tokens;     /* tokens per pool block */
    uint64_t block_bytes;      /* bytes per block (dkv_block_bytes: block_tokens x KV bytes per token
                                  unless cfg.mem.block_bytes says otherwise) */
    uint64_t capacity_bytes;   /* KV capacity of the pool, all instances */
    uint64_t n_blocks;         /* capacity_bytes / block_bytes: every plan block id is below it */
    uint64_t staging_blocks;   /* blocks for KV fetched back from the host tier (offload on: a
                                  quarter of the pool; off: 0) */
    uint64_t host_bytes;       /* host tier for offloaded KV (offload on: one slot of the longest
                                  canvas per concurrent request, at most 64 GiB; off: 0) */
    uint32_t lowrank_rank;     /* progressive offload with a phase 2: about the rank its COMPRESS
                                  orders take, round(lowrank_ratio x head_dim) clamped as
                                  core/model/devmem.h does (a backend that compresses sets its
                                  compressor up at begin, and may warm it at this rank);
                                  0: the policy never orders COMPRESS */
} dkv_backend_pool;

/* How the engine's instances share the GPU (engine.h, "Multi-instance"). */
typedef struct dkv_backend_instances {
    uint32_t n;                /* instances (>= 1); item.instance is below it */
    bool     shared_weights;   /* merged plans of several instances read one weight copy */
    bool     partitioned;      /* one pool per instance: block ids are numbered per instance;
                                  false: one pool whose ids all instances share */
    bool     spatial;          /* plans of several instances are merged (MPS-like); false:
                                  instances take turns (timeslice) */
    uint64_t pool_blocks[DKV_MEM_MAX_INSTANCES]; /* blocks of instance i's pool (partitioned: its
                                  quota; shared: the whole pool's n_blocks) */
} dkv_backend_instances;

/* What a backend gets before the first step. */
typedef struct dkv_backend_setup {
    const dkv_model *model;    /* borrowed */
    const dkv_gpu   *gpu;      /* borrowed */
    const dkv_workload *workload; /* borrowed: the requests; item.request indexes it */
    const dkv_decode_cfg *decode; /* borrowed: the resolved decode configuration (cache mode,
                                  block_len, steps, shared_set and seed from the engine) */
    dkv_backend_pool pool;
    dkv_backend_instances instances;
    const struct dkv_ref_weights *weights; /* loaded host weights (core/ref), borrowed during
                                  begin only; NULL: a backend with real weights makes its own */
    dkv_kernel_fn on_kernel;   /* optional: per-kernel-class records per step (NULL: none) */
    void    *on_kernel_user;
    /* optional (NULL: not wanted): measured attention entropy, for retention mode 'entropy' with
       measured = true (policy/retention.h).  A backend that executes attention calls it during the
       run_step of a sparse block's first step (step 0: a Refresh of the whole canvas) with the
       block's normalised entropy: over the block's query rows, every query head and layer, the
       mean of H = -sum_j p_j ln p_j / ln(n_keys) of the softmax attention probabilities (0 = all
       mass on one key, 1 = uniform).  The engine turns it into the block's rho when it plans
       the selecting step (step 1).  A backend that does not measure leaves it uncalled, and the
       engine stops with an error naming the request and block. */
    void (*on_entropy)(void *user, uint32_t request, uint32_t block, double entropy);
    void    *on_entropy_user;
} dkv_backend_setup;

/* What a step cost: predicted (sim) or measured (cuda). */
typedef struct dkv_step_cost {
    double   time_s;           /* wall time of the step: compute and PCIe with overlap applied */
    double   compute_s;        /* GPU busy time of the kernels */
    double   pcie_s;           /* time the PCIe copies take (both directions, overlap inside) */
    double   stall_s;          /* part of time_s spent waiting for blocking or unhidden copies */
    double   flops;
    uint64_t hbm_read_bytes, hbm_write_bytes;
    uint64_t pcie_h2d_bytes, pcie_d2h_bytes;
    uint32_t n_kernels;
    double   flops_util;       /* flops / (compute_s * peak) */
    double   bw_util;          /* HBM traffic / (compute_s * hbm_bw) */
    /* host (CPU) time inside run_step, measured by a backend that executes (0 from the
       simulator): enqueueing the step's work, and waiting for it to finish */
    double   host_enqueue_s;   /* run_step entry to the last launch/copy issued */
    double   host_wait_s;      /* blocked in synchronisation (the step's end event, blocking copies) */
    double   sm_mhz;           /* SM clock of the step, MHz: executed, the mean sampled over the step
                                  (the CUDA backend's options.sm_clock; 0: not sampled); simulated,
                                  the clock the simulator runs it at (the profile's clock block,
                                  sim/sim_clock.c; 0 without one) */
    double   sm_probe_mhz;     /* executed with the CUDA backend's options.clock_probe: the SMs' mean clock
                                  over the step, from their cycle counters against the global timer
                                  (0: not probed; the simulator leaves it 0) */
    /* simulator only (0 from an executing backend): */
    double   roofline_s;       /* of compute_s, seconds costed by the roofline (no measured profile
                                  covered the class or shape; all of compute_s without a profile) */
    double   host_s;           /* modelled host time the instance spends after the step before it
                                  can issue the next (profile host table; 0 without one) */
    double   handover_s;       /* modelled extra GPU idle time when another instance's host thread
                                  takes the GPU over after this step (profile host table:
                                  handover_s - resume_s; 0 without one) */
} dkv_step_cost;

/* The vtable (ggml style).  NULL entries take defaults: begin/end do nothing, run_step
 * returns a zero cost, free does nothing.  Every entry returning dkv_status fills err. */
typedef struct dkv_backend_i {
    const char *name;
    dkv_status (*begin)(void *ctx, const dkv_backend_setup *setup, dkv_err *err);
    dkv_status (*run_step)(void *ctx, const dkv_step_plan *plan, dkv_step_cost *out, dkv_err *err);
    void (*end)(void *ctx);
    void (*free)(void *ctx);   /* releases ctx */
} dkv_backend_i;

typedef struct dkv_backend {
    const dkv_backend_i *iface; /* static, not owned */
    void *ctx;                  /* owned: released by dkv_backend_free */
} dkv_backend;

/* Wrappers that apply the defaults above.  b may not be NULL except for dkv_backend_free. */
dkv_status dkv_backend_begin(dkv_backend *b, const dkv_backend_setup *setup, dkv_err *err);
dkv_status dkv_backend_run_step(dkv_backend *b, const dkv_step_plan *plan, dkv_step_cost *out, dkv_err *err);
void       dkv_backend_end(dkv_backend *b);
void       dkv_backend_free(dkv_backend *b);    /* NULL or an empty backend: no-op */
const char *dkv_backend_name(const dkv_backend *b);

/* Bytes the plan offloads raw (DKV_XFER_OFFLOAD orders) for one request: a COMPRESS order's range
 * is the blocks before them (cpu/cpu_step.c, cuda/arena.c). */
uint64_t dkv_plan_offload_bytes(const dkv_step_plan *plan, uint32_t request);
/* The plan's item of a request; NULL when the request has none in the step. */
const dkv_step_item *dkv_plan_item(const dkv_step_plan *plan, uint32_t request);
/* The canvas tokens an item's block table covers (the CUDA backend's plan_item rule): a Refresh its
 * written rows; a dual Reuse (writes in place) up to the end of its block or its attended keys,
 * whichever is later; otherwise its cached keys.  prompt_tokens: the request's; block_len: the
 * decode configuration's. */
uint32_t dkv_plan_item_tokens(const dkv_step_item *it, uint32_t prompt_tokens, uint32_t block_len);

#endif
