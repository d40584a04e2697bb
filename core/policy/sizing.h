/* sizing.h - default sizing of an engine from dLLM-Serve's budget rules and the GPU preset.
 *
 *   usable = HBM - weights - margin * HBM          (dkv_budget_compute, model.h)
 *   KV pool = kv_frac * usable, activations = the rest          (defaults 0.10, 0.7: 7 : 3)
 *   pool blocks = floor(KV pool / block_bytes), block_bytes = block_tokens * KV bytes per token
 *   max_num_logits, max_num_batched_tokens, retention: the config's if set, else the GPU
 *   preset's, else dLLM-Serve's code defaults (1024, 8192, 0.5).
 * It also reports whether the logit chunk's transient peak (logit.h) fits the activation
 * budget, and the largest chunk that would.
 *
 * Pure computation.  Units: bytes, tokens.
 */
#ifndef DKV_POLICY_SIZING_H
#define DKV_POLICY_SIZING_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "policy/logit.h"
#include "util/status.h"

typedef struct dkv_sizing_config {
    double   margin;                  /* fraction of HBM held back, [0, 1).  Default 0.10 */
    double   kv_frac;                 /* KV share of usable, (0, 1].  Default 0.7 */
    uint32_t block_tokens;            /* KV pool block, tokens (> 0).  Default 32 */
    uint32_t max_num_logits;          /* 0 = from the GPU preset */
    uint32_t max_num_batched_tokens;  /* 0 = from the GPU preset */
    double   retention;               /* < 0 = from the GPU preset; else (0, 1] */
} dkv_sizing_config;

void       dkv_sizing_config_default(dkv_sizing_config *c);
dkv_status dkv_sizing_config_validate(const dkv_sizing_config *c, dkv_err *err);

typedef struct dkv_sizing {
    dkv_budget budget;                /* usable / kv / act / weight / margin bytes */
    uint64_t block_bytes;             /* block_tokens * KV bytes per token */
    uint64_t n_blocks;                /* floor(kv_bytes / block_bytes) */
    uint64_t kv_pool_bytes;           /* n_blocks * block_bytes */
    uint64_t kv_tokens;               /* n_blocks * block_tokens: tokens of KV the pool holds */
    uint32_t max_num_logits;
    uint32_t max_num_batched_tokens;
    double   retention;
    uint64_t logit_peak_bytes;        /* transient peak of a max_num_logits chunk (logit.h defaults) */
    bool     logits_fit;              /* logit_peak_bytes <= budget.act_bytes */
    uint64_t max_logit_rows;          /* largest chunk whose peak fits the activation budget */
} dkv_sizing;

/* Fails like dkv_budget_compute (DKV_ENOMEM when the weights do not fit) or on a bad config. */
dkv_status dkv_sizing_default(const dkv_sizing_config *c, const dkv_model *m, const dkv_gpu *g, dkv_sizing *out,
                              dkv_err *err);

#endif
