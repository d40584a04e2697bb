/* exec_outputs.h - what dkv.execute{..., outputs = true} returns per request: the prompt, the
 * generated tokens, and the confidence each had when it was unmasked.  Bookkeeping fed by the
 * CUDA backend's per-item reports (cuda/backend.h, on_item), kept free of CUDA types so it is
 * tested anywhere; dkv_exec_outputs_save writes it into a run (docs/HDF5_SCHEMA.md, "Generated
 * tokens and text"), decoded to text where the model's tokenizer is known.
 *
 *     dkv_exec_outputs o = {0};
 *     dkv_exec_outputs_record(&o, request, P, L, block_start, B, before, after, conf);  // per item
 *     ... o.req[i] ...
 *     dkv_exec_outputs_free(&o);
 */
#ifndef DKV_LUA_EXEC_OUTPUTS_H
#define DKV_LUA_EXEC_OUTPUTS_H

#include <stdint.h>

#include "util/status.h"

typedef struct dkv_exec_output {
    uint32_t  id;          /* request id (workload order) */
    uint32_t  gen;         /* generated positions: canvas - prompt */
    uint32_t *tokens;      /* (gen) token at each generated position; UINT32_MAX: never unmasked */
    float    *conf;        /* (gen) its softmax probability at the step it was unmasked; NaN: never */
    uint32_t *step;        /* (gen) engine step index at which it was unmasked */
    /* the backend's own logits at the step each position was committed (dkv_exec_outputs_logits;
       NULL until a report carried logits): its argmax, the top-2 margin z[argmax] - z[second],
       the gap z[argmax] - z[committed token] (0 when they are the same), and max |z| of the row */
    uint32_t *argmax;      /* (gen) UINT32_MAX: not recorded */
    float    *margin, *gap, *zmax;   /* (gen) NaN: not recorded */
    uint32_t  prompt;      /* prompt length P */
    uint32_t *prompt_tokens; /* (prompt) the canvas's prompt at the first report */
} dkv_exec_output;

typedef struct dkv_exec_outputs {
    dkv_exec_output *req;  /* indexed by request id; req[i].tokens == NULL: no report seen */
    uint32_t n;            /* entries allocated (max id seen + 1) */
} dkv_exec_outputs;

/* Records one item report: every position of the block [block_start, block_start + block_len)
 * whose token changed between before and after (a mask became a token) is stored with
 * conf[p - block_start].  before/after hold the whole canvas (canvas tokens).  Returns DKV_EINVAL
 * when the block lies outside the generated part, DKV_ENOMEM on allocation failure, and
 * DKV_ESTATE when a request reappears with a different prompt/canvas. */
dkv_status dkv_exec_outputs_record(dkv_exec_outputs *o, uint64_t step_index, uint32_t request, uint32_t prompt,
                                   uint32_t canvas, uint32_t block_start, uint32_t block_len,
                                   const uint32_t *before, const uint32_t *after, const float *conf, dkv_err *err);

/* Records the backend's own logits (block_len rows of vocab floats, the block's rows) of the
 * positions of the block committed between before and after: argmax, top-2 margin, gap to the
 * committed token and max |z| (decode/follow.h's dkv_logit_top2).  Call after
 * dkv_exec_outputs_record for the same item.  DKV_ESTATE when the request has no record,
 * DKV_ENOMEM on allocation failure. */
dkv_status dkv_exec_outputs_logits(dkv_exec_outputs *o, uint32_t request, uint32_t block_start, uint32_t block_len,
                                   const uint32_t *before, const uint32_t *after, const float *logits, uint32_t vocab,
                                   dkv_err *err);

/* Writes o into run (open for writing): table `outputs` (one row per generated position of every
 * request with a report: request, position, token, conf, step, and argmax, margin, gap, zmax
 * where logits were recorded, else 4294967295 / NaN), table `prompts` (request,
 * position, token), and, when tok knows text, string attributes of `outputs_text`: prompt.<id>
 * and text.<id> (decoded: a position never unmasked reads as the mask, "_"; invalid UTF-8 and
 * NUL are written as U+FFFD) plus `tokenizer`.  tok may be
 * NULL (no text).  Nothing is written when no request has a report. */
struct dkv_h5_run;
struct dkv_tokenizer;
dkv_status dkv_exec_outputs_save(struct dkv_h5_run *run, const dkv_exec_outputs *o,
                                 const struct dkv_tokenizer *tok, dkv_err *err);

/* Frees everything; o is left empty (NULL is a no-op). */
void dkv_exec_outputs_free(dkv_exec_outputs *o);

#endif
