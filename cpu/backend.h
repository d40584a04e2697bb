/* backend.h - the CPU backend: the engine's step plans executed on the CPU with real weights.
 *
 * A sibling of sim/ (costs a plan) and cuda/ (runs it on a GPU) behind the engine's vtable
 * (engine/backend.h): the same plans in, the same step costs and per-item reports out, so the
 * whole engine (scheduler, pool, every policy) runs end to end where there is no GPU, and the
 * quality a memory policy costs is measured in CI (docs/CPU.md).
 *
 *     dkv_cpu_backend_options o = dkv_cpu_backend_options_default();
 *     dkv_backend be;
 *     dkv_cpu_backend_new(&o, &be, &err);
 *     ec.backend = &be;  ec.weights = rw;  dkv_engine_run(&ec, &res, &err);
 *     dkv_backend_free(&be);
 *
 * ---- Memory (what begin sets up) ----
 *   weights   fp32 copies of setup.weights (core/ref's dkv_ref_weights), or seeded random ones
 *             (dkv_ref_weights_randomize(seed)) when it is NULL;
 *   pool      ONE anonymous mapping (MAP_NORESERVE: pages exist once written) of
 *             [setup.pool.n_blocks | staging blocks] x block_bytes: pool block id b of a plan is
 *             byte b * block_bytes, the engine's own numbering (as cuda/arena.c).  A block holds
 *             block_tokens token slots, each the token's K and V of every layer and KV head,
 *             [layer][k|v][kv head][head_dim], in the item's KV dtype: bf16 (2 bytes) or FP8
 *             e4m3 (1 byte, item.kv_dtype_bytes = 1) with one fp32 scale per (block, layer,
 *             k|v, kv head) kept beside the pool (metadata, not counted in block_bytes);
 *   host tier one slot per request, canvas-sized, indexed like the request's block chain.
 *
 * ---- One step ----
 * Each item is computed as DESIGN.md's table says (q rows, a keys, w writes): the rows
 * [q0, q0 + q) of the canvas in fp32 (GEMMs through cblas_sgemm: OpenBLAS, one thread),
 * attention per KV head group over the cached keys read from the pool through the item's block
 * table (dequantized: bf16 -> fp32 or e4m3 * scale) plus the item's own fresh keys; KV stores
 * quantize into the pool (dual/prefix: slot = canvas position; sparse selecting step: the k
 * retained rows of each KV head, chosen by the block queries' attention mass
 * (dkv_ref_attention_scores) and top-k (dkv_ref_topk), packed into slots 0..k-1, one set per
 * head or one shared set).  Then the LM head over the block's rows and the unmask rule of
 * cuda/backend.h (the ceil(masked / steps left) most confident masked positions take their
 * argmax), or, with targets, teacher forcing (below).
 *
 * Transfers: OFFLOAD copies the request's last pcie_bytes of blocks to its host slot; COMPRESS
 * takes the device_bytes of blocks before those, projects every (layer, k|v, kv head) matrix of
 * their m tokens x head_dim to rank r = round(ratio * head_dim) (ratio = pcie_bytes /
 * device_bytes) with cuda/lowrank.h's randomized range finder (Omega ~ N(0, 1) seeded with
 * options.seed + the number of orders compressed before, one Omega for all matrices of the order
 * as the CUDA backend draws it; one power iteration, Q = orth(Y), B = Q^T A) and stores the reconstruction Q B into the host slot
 * (decompressed on fetch) -- where the CUDA backend would store the low-rank form: the range, rank and
 * form-or-raw choice are core/model/devmem.h's rule (dkv_devmem_compress_range, dkv_devmem_lr_compressed),
 * and an order whose form would be larger than its raw blocks goes raw, exact; FETCH fills the staging blocks of positions a request no longer holds
 * from its host slot, so attention reads the raw or reconstructed KV.  REORDER is counted only.
 *
 * ---- Targets (held-out scoring) ----
 * With options.targets, request i's generated positions have known bytes: at each step the
 * positions the unmask rule picks take the TARGET token instead of the argmax (teacher
 * forcing), and each is scored once, at that step, under the KV state the policy left:
 * -log2 softmax(logits)[target] and argmax == target (decode/score.h, dkv_score_block: the
 * arithmetic the CUDA backend shares; docs/CPU.md, "Quality metrics").
 *
 * ---- Follow (trajectory replay) ----
 * With options.follow, each step's unmask commits the positions the trajectory recorded at that
 * engine step with the recorded tokens (decode/follow.h; an error when they do not fit the
 * step's block or the unmask rule's count); the item report still carries this backend's own
 * argmax, confidence and logits, so agreement with the recorded run is measured position by
 * position on the same canvases.  Not combined with targets.  When the trajectory carries the
 * leader's selections (dkv_follow.has_sel), each sparse selecting step keeps the recorded key sets
 * instead of its own top-k (an error when no record fits), and on_select reports per set whether
 * its own top-k differs and its own boundary margin (dkv_select_boundary).
 *
 * ---- Timing ----
 * Step cost time_s = compute_s = CPU wall clock of run_step (one core): CPU time, not GPU time.
 * flops and bytes are the cost model's counts of the same plan (core/cost/cost.h).
 */
#ifndef DKV_CPU_BACKEND_H
#define DKV_CPU_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/follow.h"
#include "decode/score.h"
#include "engine/backend.h"

/* What the on_item hook sees after each item with logit rows (arrays valid during the call). */
typedef struct dkv_cpu_item_report {
    uint64_t        step_index;
    uint32_t        item, request, block, step, phase;
    uint32_t        prompt, canvas, block_start, block_len;
    const uint32_t *tokens_before;   /* (canvas) before the step (a step 0's block masked) */
    const uint32_t *tokens_after;    /* (canvas) after the unmask */
    const uint32_t *argmax;          /* (block_len) */
    const float    *conf;            /* (block_len) softmax probability of the argmax */
    const float    *logits;          /* (block_len, vocab) fp32 logits of the block's rows */
    uint32_t        vocab;
} dkv_cpu_item_report;
typedef void (*dkv_cpu_item_fn)(void *user, const dkv_cpu_item_report *r);

/* One measured attention entropy (setup.on_entropy, retention mode entropy with measured = true):
 * the block's normalised entropy at its first step, and the rows its selecting step then kept
 * per KV head (k = ceil(rho (L - B)) of the rho the policy made of it; 0 until that step ran). */
typedef struct dkv_cpu_entropy {
    uint32_t request, block, keep;
    double   entropy;
} dkv_cpu_entropy;

typedef struct dkv_cpu_backend_report {
    uint64_t steps, items;
    double   cpu_time_s;           /* sum of the steps' wall clock */
    double   thread_cpu_s;         /* sum of the steps' CPU time of the calling thread (one core) */
    uint64_t pool_bytes;           /* mapping: pool + staging blocks */
    uint64_t pool_blocks_touched;  /* distinct pool blocks written */
    uint64_t n_compress, n_fetch, n_offload;
    uint64_t n_lowrank_stored;     /* COMPRESS orders projected to low rank: those whose form the CUDA backend
                                      stores (core/model/devmem.h's rule); the others went raw, exact */
    double   compress_rel_err_sum; /* sum over compressed matrices of ||A - QB||_F / ||A||_F */
    uint64_t compress_matrices;
    uint64_t fetch_unwritten_blocks; /* staging blocks fetched from a host slot never written */
    dkv_score *score;              /* (n_requests) held-out scores (decode/score.h) when targets were
                                      given, else NULL; malloc'd */
    dkv_cpu_entropy *entropy;      /* (n_entropy) measured entropies in step order; malloc'd */
    uint32_t n_entropy;
    uint32_t n_score;
} dkv_cpu_backend_report;

void dkv_cpu_backend_report_clear(dkv_cpu_backend_report *r);

typedef struct dkv_cpu_backend_options {
    uint64_t seed;            /* canvases' random prompts, random weights, low-rank Omega */
    float    rms_eps;         /* random weights only (loaded weights carry their own) */
    const uint32_t *const *targets; /* optional: targets[i] = request i's gen_tokens target ids */
    size_t   n_targets;       /* entries of targets (must equal the workload's requests) */
    const dkv_follow *follow; /* optional: follow[i] = request i's recorded trajectory
                                 (decode/follow.h): each step commits the recorded positions with
                                 the recorded tokens instead of its own picks (trajectory replay) */
    size_t   n_follow;        /* entries of follow (must equal the workload's requests) */
    bool     bf16_activations;/* round the activations to bf16 where the CUDA backend stores them
                                 (embedding, norms, q/k/v, attention output, GEMM outputs, residual
                                 stream, SwiGLU, final norm): an emulation of its precision for the
                                 tie protocol's tests; false = fp32 throughout (the default) */
    dkv_cpu_item_fn on_item;  /* optional */
    void    *on_item_user;
    dkv_select_fn on_select;  /* optional: every sparse selection (decode/follow.h's dkv_select_report) */
    void    *on_select_user;
    dkv_cpu_backend_report *report; /* optional: filled at end() */
} dkv_cpu_backend_options;

dkv_cpu_backend_options dkv_cpu_backend_options_default(void);   /* seed 1, eps 1e-5, no hooks */

dkv_status dkv_cpu_backend_new(const dkv_cpu_backend_options *o, dkv_backend *out, dkv_err *err);

/* e4m3 (OCP FP8: bias 7, no infinities, max 448, NaN 0x7f/0xff): round to nearest even,
 * saturating to +-448.  Exposed for tests. */
uint8_t dkv_cpu_fp8_encode(float x);
float   dkv_cpu_fp8_decode(uint8_t b);
uint16_t dkv_cpu_bf16_encode(float x);   /* round to nearest even */
float    dkv_cpu_bf16_decode(uint16_t b);

/* Rank-r approximation of A (m x n, row-major) as cuda/lowrank.h defines it (Omega (n x r)
 * ~ N(0, 1) from seed, power_iters iterations, Q = orth(Y), B = Q^T A), written as the
 * reconstruction Q B into out (m x n; may equal A).  Returns ||A - QB||_F / ||A||_F (0 for A = 0).
 * r is clamped to [1, min(m, n)].  DKV_ENOMEM on allocation failure. */
dkv_status dkv_cpu_lowrank(float *out, const float *A, uint32_t m, uint32_t n, uint32_t r, uint32_t power_iters,
                           uint64_t seed, double *rel_err, dkv_err *err);

#endif
