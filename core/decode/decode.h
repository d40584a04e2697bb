/* decode.h - the decoding model: what one dLLM request does, step by step.
 *
 * LLaDA-style semi-autoregressive block diffusion (DESIGN.md, "Decoding model").  A request has a
 * prompt of P tokens and generates G tokens; the canvas is L = P + G.  G is cut into
 * n_blocks = G / B blocks of B = block_len tokens; block b starts at s_b = P + b*B and is
 * denoised in S steps (steps per block: fixed, the request's own, or drawn per request).
 * For every step this module gives the token counts of DESIGN.md's table (the contract the
 * simulator and the CUDA backend honour):
 *
 *   mode    first step(s) of block b                         next steps of block b
 *   none    q = L, a = L, w = 0      Refresh                 same (Refresh)
 *   prefix  q = L, a = L, w = s_b    Refresh                 q = L - s_b, a = L, w = 0   Reuse
 *   dual    q = L, a = L, w = L      Refresh                 q = B, a = L, w = B (in place) Reuse
 *   sparse  step 0: q = L, a = L, w = 0;                     q = B, a = k + B, w = 0     Reuse
 *           step 1: q = L, a = L, select k = ceil(rho*(L-B)) per head, w = k  (both Refresh)
 *
 * and, given a dkv_model, the bytes and FLOPs of that step (formulas in docs/WORKLOADS.md).
 *
 *     dkv_decode_cfg cfg;  dkv_decode_cfg_default(&cfg);  cfg.cache = DKV_CACHE_DUAL;
 *     dkv_decode_request r = {.id = 7, .prompt_tokens = 512, .gen_tokens = 256};
 *     dkv_decode_state st;  dkv_decode_step s;  dkv_err err = {0};
 *     if (dkv_decode_begin(&st, &r, &cfg, &model, &err) != DKV_OK) ...;   // model may be NULL
 *     while (dkv_decode_next(&st, &s)) cost(&s);
 *
 * Pure computation: no I/O, no allocation.  The state is a plain struct the caller owns (so an
 * engine can hold thousands without malloc); it borrows cfg and model, which must outlive it.
 */
#ifndef DKV_DECODE_DECODE_H
#define DKV_DECODE_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "util/names.h"
#include "util/status.h"

typedef enum dkv_cache_mode {
    DKV_CACHE_NONE = 0,  /* every step a full forward, nothing cached */
    DKV_CACHE_PREFIX,    /* Fast-dLLM PrefixCache */
    DKV_CACHE_DUAL,      /* Fast-dLLM DualCache */
    DKV_CACHE_SPARSE     /* dLLM-Serve / Sparse-dLLM, delay 1 */
} dkv_cache_mode;

typedef enum dkv_logit_mode {
    DKV_LOGITS_BLOCK = 0, /* the current block's B rows (dLLM-Serve) */
    DKV_LOGITS_ALL        /* all q rows computed this step (Fast-dLLM) */
} dkv_logit_mode;

#ifndef DKV_PHASE_DEFINED
#define DKV_PHASE_DEFINED
typedef enum dkv_phase {
    DKV_PHASE_REFRESH = 0, /* forward over the full canvas (q = L) */
    DKV_PHASE_REUSE = 1    /* forward over part of the canvas, the rest from the cache */
} dkv_phase;
#endif

/* The names (util/names.h: parse with dkv_names_parse, Lua reads the same tables). */
extern const dkv_names dkv_cache_mode_names;             /* "none", "prefix", "dual", "sparse" */
extern const dkv_names dkv_logit_mode_names;             /* "block", "all" */
extern const dkv_names dkv_phase_names;                  /* "refresh", "reuse" */
const char *dkv_cache_mode_name(dkv_cache_mode m);
const char *dkv_logit_mode_name(dkv_logit_mode m);
const char *dkv_phase_name(dkv_phase p);

/* Dynamic retention: called at the selecting step of every block (sparse mode) with the
 * request id, the block index and the ratio in force; returns the ratio for this block,
 * in (0, 1] (values outside are clamped).  May be NULL. */
typedef double (*dkv_rho_fn)(void *ctx, uint64_t request_id, uint32_t block, double rho);

typedef struct dkv_decode_cfg {
    uint32_t block_len;        /* B, tokens (> 0; must divide every request's G) */
    uint32_t steps_per_block;  /* S when fixed; 0 = block_len */
    uint32_t steps_min;        /* if steps_max > 0: S drawn per request uniformly in */
    uint32_t steps_max;        /*   [steps_min, steps_max] from seed and request id */
    uint64_t seed;
    dkv_cache_mode cache;
    dkv_logit_mode logits;
    double   rho;              /* sparse: retention ratio in (0, 1] */
    bool     shared_set;       /* sparse: one token set shared by all heads (else per head);
                                * same bytes in this model, flagged in every step */
    bool     materialize_scores; /* activation model: attention scores [heads, q, a] materialised
                                  * (eager attention) instead of fused (flash attention) */
    dkv_rho_fn rho_fn;         /* optional per-block retention (dynamic retention) */
    void      *rho_ctx;
} dkv_decode_cfg;

/* B = 32, S = B, no draw, seed 1, dual cache, block logits, rho 0.5 per head, flash attention. */
void dkv_decode_cfg_default(dkv_decode_cfg *c);
/* Checks the config alone (block_len 0, steps range, rho range) with a message naming the field. */
dkv_status dkv_decode_cfg_validate(const dkv_decode_cfg *c, dkv_err *err);

/* What the decoding model needs of a request (the engine copies it from a dkv_request). */
typedef struct dkv_decode_request {
    uint64_t id;
    uint32_t prompt_tokens;    /* P */
    uint32_t gen_tokens;       /* G, > 0, a multiple of block_len */
    uint32_t steps_per_block;  /* 0: from the config (fixed or drawn); else this S */
} dkv_decode_request;

/* One denoising step of one request: token counts, then byte figures (0 without a model). */
typedef struct dkv_decode_step {
    uint32_t  block;            /* b, 0..n_blocks-1 */
    uint32_t  step;             /* step index within the block, 0..steps_in_block-1 */
    uint32_t  steps_in_block;   /* S */
    uint32_t  index;            /* step index within the request, 0..total_steps-1 */
    uint32_t  block_start;      /* s_b = P + b*B */
    uint32_t  canvas;           /* L */
    uint32_t  block_len;        /* B */
    dkv_phase phase;
    uint32_t  q_tokens;         /* tokens computed (queries) */
    uint32_t  a_tokens;         /* tokens attended (keys) */
    uint32_t  w_tokens;         /* KV tokens written to the cache */
    uint32_t  w_start;          /* first canvas position written (0 for refresh writes, s_b in place) */
    uint32_t  cached_tokens;    /* a - q when keys come from the cache, else 0: tokens whose KV is read
                                 * from the cache this step */
    uint32_t  resident_tokens;  /* KV tokens held in the cache for this request after the step */
    uint32_t  logit_rows;
    uint32_t  retained_k;       /* sparse: k in force (0 before the block's selecting step) */
    double    rho;              /* sparse: ratio used for this block (0 otherwise) */
    bool      selects;          /* sparse: this step selects the retained set */
    bool      shared_set;       /* sparse: shared token set (else per head) */
    bool      block_done;       /* last step of the block */
    bool      request_done;     /* last step of the request */
    /* bytes and FLOPs, all layers (formulas in docs/WORKLOADS.md); 0 when begun without a model */
    uint64_t  weight_bytes;     /* weights read (as if this request ran alone in the step) */
    uint64_t  kv_read_bytes;    /* cached_tokens of KV read from the cache */
    uint64_t  attn_kv_bytes;    /* a_tokens of K and V read by attention (cache + freshly computed) */
    uint64_t  kv_write_bytes;   /* w_tokens of KV written */
    uint64_t  act_peak_bytes;   /* largest live activation set within a layer, incl. FFN gate+up */
    uint64_t  logit_bytes;      /* logit_rows * vocab * act bytes, before chunking */
    double    flops;            /* dkv_model_forward_flops(q, a, logit_rows) */
} dkv_decode_step;

/* Iterator state.  Fields are private: use the functions below. */
typedef struct dkv_decode_state {
    const dkv_decode_cfg *cfg;  /* borrowed */
    const dkv_model      *model;/* borrowed, may be NULL */
    uint64_t id;
    uint32_t P, G, B, S, L, n_blocks;
    uint32_t block, step, index, k;
    double   rho, rho_block;
    bool     done;
} dkv_decode_state;

/* Starts a request.  Fails (DKV_EINVAL) on block_len 0, G == 0, G not a multiple of block_len,
 * a bad steps range, rho outside (0, 1] in sparse mode; the message names the request id and
 * the field.  model may be NULL (token counts only). */
dkv_status dkv_decode_begin(dkv_decode_state *st, const dkv_decode_request *req, const dkv_decode_cfg *cfg,
                            const dkv_model *model, dkv_err *err);

/* Fills *out with the next step and advances; returns false (out untouched) when done. */
bool dkv_decode_next(dkv_decode_state *st, dkv_decode_step *out);

/* Sets the retention ratio for the blocks whose selecting step has not yet run (sparse);
 * the rho_fn callback, when set, still gets the last word.  Clamped to (0, 1]. */
void dkv_decode_set_rho(dkv_decode_state *st, double rho);

/* The steps per block this request uses (after the draw), steps done and left. */
uint32_t dkv_decode_steps_per_block(const dkv_decode_state *st);
uint32_t dkv_decode_total_steps(const dkv_decode_state *st);
uint32_t dkv_decode_steps_left(const dkv_decode_state *st);
bool     dkv_decode_done(const dkv_decode_state *st);

/* For the phase-multiplexed scheduler: the request's NEXT step without advancing. */
typedef struct dkv_decode_peek {
    dkv_phase phase;
    uint32_t  budget_tokens;  /* dLLM-Serve budget: L for Refresh, B for Reuse */
    uint32_t  q_tokens;       /* exact tokens the step computes */
    uint32_t  steps_left;     /* including the peeked step */
    uint32_t  block, step;
} dkv_decode_peek;
/* Returns false when the request is done. */
bool dkv_decode_peek_next(const dkv_decode_state *st, dkv_decode_peek *out);

/* Whole-request totals, by iterating a fresh state (rho_fn is called as in a run). */
typedef struct dkv_decode_totals {
    uint32_t steps, refresh_steps, reuse_steps, blocks, steps_per_block;
    uint64_t q_tokens, a_tokens, w_tokens, cached_tokens, logit_rows;
    uint64_t weight_bytes, kv_read_bytes, attn_kv_bytes, kv_write_bytes, logit_bytes;
    uint64_t act_peak_bytes;      /* max over steps */
    uint64_t logit_peak_bytes;    /* max over steps */
    uint32_t resident_peak_tokens;/* max over steps */
    double   flops;
} dkv_decode_totals;

dkv_status dkv_decode_request_totals(const dkv_decode_request *req, const dkv_decode_cfg *cfg,
                                     const dkv_model *model, dkv_decode_totals *out, dkv_err *err);

/* The byte figures of one step with the given counts (used by dkv_decode_next; exposed so a
 * backend can cost a batched or modified item the same way).  Fills the byte/FLOP fields of *s
 * from its q_tokens, a_tokens, w_tokens, cached_tokens, logit_rows, selects, canvas, block_len. */
void dkv_decode_step_bytes(const dkv_model *m, bool materialize_scores, dkv_decode_step *s);

#endif
