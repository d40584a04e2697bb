/* layout.h - KV layout: (step, layer, head) nesting vs layer-major / step-minor, heads contiguous.
 *
 * Flash-dLLM's "cross-timestep layout" claim: bandwidth utilisation 38 % -> 81 %, reorder cost
 * 0.7 %.  dkv models a layout by the contiguous run an attention head's read stream sees, and
 * turns the run length into an efficiency through the GPU preset's curve
 * (dkv_gpu_bw_efficiency).  Inside one pool block of `block_tokens` tokens:
 *
 *   DKV_LAYOUT_TMAJOR   [token (step-major)][layer][head][dim], K and V in separate planes:
 *                       the KV of a token (written at a step) for all layers is together, so a
 *                       (layer, head) read sees runs of head_dim * kv_bytes per token.
 *                       runs = 2 * n_layers * n_kv_heads * tokens,  run = head_dim * b
 *   DKV_LAYOUT_LAYER_MAJOR [layer][head][token (step-minor)][dim]: a (layer, head) read of the
 *                       tokens inside one block is one run; a read spans ceil(tokens / block)
 *                       blocks (the last one partial).
 *                       runs = 2 * n_layers * n_kv_heads * ceil(tokens / block_tokens),
 *                       run  = bytes / runs  (mean run)
 *
 * The efficiency applies to the cached-KV read time: time = bytes / (hbm_bw * eff(run)).
 *
 * Reorder cost: the forward pass produces new K/V as one [tokens, n_kv_heads * head_dim]
 * tensor per layer; storing it layer-major is a transpose.  dkv counts it as a separate copy:
 * it reads and writes the written KV once (2 * tokens * kv_bytes_per_token), at the efficiency
 * of its shorter run, the write side's min(tokens, block_tokens) * head_dim * b (the read side
 * is one contiguous tensor per layer).  Charged either every step for the step's written
 * tokens (DKV_REORDER_PER_STEP) or once per block when the block's KV is final
 * (DKV_REORDER_PER_BLOCK: the engine passes the block's tokens once).  The t-major layout
 * needs no reorder.  docs/POLICIES.md compares the result with the 0.7 % claim.
 *
 * Pure computation.  Units: bytes, seconds.
 */
#ifndef DKV_POLICY_LAYOUT_H
#define DKV_POLICY_LAYOUT_H

#include <stdint.h>

#include "model/model.h"
#include "util/names.h"
#include "util/status.h"
#include "policy/policy_desc.h"

typedef enum dkv_layout {
    DKV_LAYOUT_TMAJOR = 0,     /* (step, layer, head) nesting: the baseline */
    DKV_LAYOUT_LAYER_MAJOR     /* layer-major, step-minor, heads contiguous */
} dkv_layout;

typedef enum dkv_reorder {
    DKV_REORDER_PER_STEP = 0,  /* every step's written KV is transposed into place */
    DKV_REORDER_PER_BLOCK      /* a block's KV is transposed once, when the block is final */
} dkv_reorder;

extern const dkv_names dkv_layout_names;          /* "tmajor", "layer_major" (util/names.h) */
extern const dkv_names dkv_reorder_names;         /* "per_step", "per_block" */
const char *dkv_layout_name(dkv_layout l);

typedef struct dkv_layout_config {
    dkv_layout  layout;        /* default DKV_LAYOUT_TMAJOR */
    dkv_reorder reorder;       /* default DKV_REORDER_PER_STEP */
} dkv_layout_config;

void       dkv_layout_config_default(dkv_layout_config *c);
dkv_status dkv_layout_config_validate(const dkv_layout_config *c, dkv_err *err);
/* The policy as data (policy_desc.h), registered in core/engine/engine_policy.c. */
extern const dkv_policy dkv_layout_policy;

/* A KV read of one step under one layout. */
typedef struct dkv_layout_read {
    uint64_t bytes;            /* K + V bytes read: tokens * kv_bytes_per_token (all layers) */
    uint64_t n_runs;           /* contiguous runs */
    double   run_bytes;        /* mean run length, bytes (bytes / n_runs) */
    double   efficiency;       /* dkv_gpu_bw_efficiency(gpu, run_bytes) */
    double   time_s;           /* bytes / (hbm_bw * efficiency) */
} dkv_layout_read;

/* Prices a read of `tokens` cached tokens of model m (n_layers, n_kv_heads, head_dim, kv_dtype)
 * on gpu g from a pool of `block_tokens`-token blocks (> 0; the engine's sizing.block_tokens).
 * tokens == 0 gives an all-zero read with efficiency 1. */
dkv_status dkv_layout_read_cost(const dkv_layout_config *c, const dkv_model *m, const dkv_gpu *g,
                                uint32_t block_tokens, uint64_t tokens, dkv_layout_read *out, dkv_err *err);

/* Reorder work for `tokens` written tokens (per step: the step's w; per block: the block's B,
 * charged once).  Zero for the t-major layout. */
typedef struct dkv_layout_reorder_cost {
    uint64_t read_bytes;       /* bytes read by the transpose */
    uint64_t write_bytes;      /* bytes written */
    double   time_s;           /* (read + write) / (hbm_bw * eff(min run)) */
} dkv_layout_reorder_cost;

dkv_status dkv_layout_reorder(const dkv_layout_config *c, const dkv_model *m, const dkv_gpu *g,
                              uint32_t block_tokens, uint64_t tokens, dkv_layout_reorder_cost *out, dkv_err *err);

#endif
