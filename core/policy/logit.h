/* logit.h - logit budget (dLLM-Serve): the LM head's [rows, V] output computed in chunks.
 *
 * The logit tensor is the transient peak of a dLLM step (V = 126,464 for LLaDA: 247 KiB per
 * bf16 row, so 1,024 rows are 247 MiB and a 32 x 768-row `all` batch would be 5.9 GiB).
 * dLLM-Serve computes the LM head in chunks of at most max_num_logits rows; each chunk is
 * consumed (softmax, confidence, sampling) before the next is computed.
 *
 * Transient peak model (per chunk of r rows, vocab V):
 *     peak = r * V * act_bytes                      the chunk's logits as the LM head writes them
 *          + r * V * upcast_bytes * upcast_tensors  temporaries of the sampling code
 * Defaults: upcast_bytes 4, upcast_tensors 2: the fp32 copy of the logits and the fp32 softmax
 * probabilities (LLaDA's generate.py upcasts before softmax; with Gumbel noise it even uses
 * fp64: set upcast_bytes = 8 to model that).  Set upcast_tensors = 0 for a fused kernel that
 * never materialises the upcast.  Which rows need logits (`block`: the current block's B rows,
 * dLLM-Serve; `all`: every computed row, Fast-dLLM) is the decoding model's choice
 * (decode.h, dkv_logit_mode); this module prices whatever row count it is given.
 *
 * Pure computation.  Units: rows, bytes.
 */
#ifndef DKV_POLICY_LOGIT_H
#define DKV_POLICY_LOGIT_H

#include <stdint.h>

#include "model/model.h"
#include "util/status.h"
#include "policy/policy_desc.h"

typedef struct dkv_logit_config {
    uint32_t max_num_logits;   /* rows per chunk; 0 = unchunked.  Default 1024 (dLLM-Serve's code;
                                  the GPU presets carry their own, see sizing.h) */
    uint32_t upcast_bytes;     /* bytes per element of the sampling temporaries: 0, 2, 4 or 8.  Default 4 */
    uint32_t upcast_tensors;   /* how many [r, V] temporaries of upcast_bytes live with the chunk
                                  (0..4).  Default 2 (fp32 copy + softmax probabilities) */
} dkv_logit_config;

/* max_num_logits 1024, upcast_bytes 4, upcast_tensors 2. */
void dkv_logit_config_default(dkv_logit_config *c);
/* Checks each field; the message names it ("logit.upcast_bytes ..."). */
dkv_status dkv_logit_config_validate(const dkv_logit_config *c, dkv_err *err);
/* The policy as data (policy_desc.h), registered in core/engine/engine_policy.c. */
extern const dkv_policy dkv_logit_policy;

typedef struct dkv_logit_plan {
    uint64_t rows;              /* logit rows of the step (all requests of the batch together) */
    uint32_t n_chunks;          /* ceil(rows / max_num_logits); 1 when unchunked; 0 when rows == 0 */
    uint64_t chunk_rows;        /* rows of the largest chunk: min(rows, max_num_logits) */
    uint64_t chunk_bytes;       /* chunk_rows * V * act_bytes: logits of the largest chunk */
    uint64_t temp_bytes;        /* chunk_rows * V * upcast_bytes * upcast_tensors */
    uint64_t peak_bytes;        /* chunk_bytes + temp_bytes: the transient peak */
    uint64_t unchunked_peak_bytes; /* the same for all rows at once (no chunking) */
    uint64_t write_bytes;       /* rows * V * act_bytes: logits written in all chunks (HBM traffic) */
} dkv_logit_plan;

/* Prices `rows` logit rows of a vocabulary of `vocab` entries stored as act_dtype. */
dkv_status dkv_logit_plan_compute(const dkv_logit_config *c, uint64_t rows, uint32_t vocab, dkv_dtype act_dtype,
                                  dkv_logit_plan *out, dkv_err *err);

/* Largest row count whose chunked peak fits in budget_bytes (0 when not even one row fits);
 * the answer for "which max_num_logits does this activation budget allow". */
uint64_t dkv_logit_max_rows_for_budget(const dkv_logit_config *c, uint32_t vocab, dkv_dtype act_dtype,
                                       double budget_bytes);

#endif
