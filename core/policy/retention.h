/* retention.h - sparse KV retention (dLLM-Serve / Sparse-dLLM): how many tokens each head keeps
 * and what reading them costs.
 *
 * At the selecting step of a block (sparse cache mode), each head keeps
 *     k = ceil(rho * (L - B))
 * of the L - B context tokens (L canvas, B block length).  Two ways to keep them:
 *   DKV_RETAIN_PER_HEAD  each head its own top-k, packed [head, token, feature]: a Reuse step
 *                        reads, per (layer, KV head, K|V), one run of k * head_dim * b bytes.
 *   DKV_RETAIN_SHARED    one token set for all heads, gathered as whole token rows
 *                        [token][head][dim] from the cache: per (layer, K|V) the gather reads
 *                        runs of adjacent selected tokens.  With the set a random subset of
 *                        density rho, a run holds 1 / (1 - rho) tokens on average (geometric),
 *                        capped at k: run = min(k, 1/(1-rho)) * n_kv_heads * head_dim * b.
 * Bytes are the same either way (k tokens of K and V, all layers); run length and hence
 * efficiency (dkv_gpu_bw_efficiency) differ.  The B tokens of the current block are read as
 * well, as one run of B * head_dim * b per (layer, head, K|V) in both cases.  Quality is not
 * modelled: in simulation retention changes bytes, not accuracy.
 *
 * rho per block: DKV_RHO_FIXED (rho); DKV_RHO_ENTROPY: a normalised attention entropy
 * e in [0, 1] is drawn per block, from Beta(ent_a, ent_b) or cycled from a list the script
 * gives, and
 *     rho = clamp(rho_min + (rho_max - rho_min) * e, rho_min, rho_max)
 * (spread-out attention -> keep more; E[rho] = rho_min + (rho_max - rho_min) * E[e]); with
 * cfg.measured, e is instead the normalised attention entropy an executing backend measured at the
 * block's first step (dkv_retention_rho_of_entropy);
 * DKV_RHO_CALLBACK: a function (e.g. a Lua callback the engine wraps) returns rho per block,
 * which must lie in [rho_min, rho_max] (an error otherwise; cfg.clamp clamps and counts).  dkv_retention_rho_fn has decode.h's dkv_rho_fn signature, so
 * the engine can hand a dkv_retention to the decoding model as its rho_fn/rho_ctx.
 *
 * Pure computation (random draws through util/rng.h from a fixed seed).  Units: tokens, bytes.
 */
#ifndef DKV_POLICY_RETENTION_H
#define DKV_POLICY_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "util/names.h"
#include "util/rng.h"
#include "util/status.h"
#include "policy/policy_desc.h"

typedef enum dkv_retain_set {
    DKV_RETAIN_PER_HEAD = 0,   /* per-head top-k, packed [head, token, feature] */
    DKV_RETAIN_SHARED          /* one token set for all heads, gathered token rows */
} dkv_retain_set;

typedef enum dkv_rho_mode {
    DKV_RHO_FIXED = 0,
    DKV_RHO_ENTROPY,           /* from a distribution of attention entropies */
    DKV_RHO_CALLBACK           /* from a per-block callback */
} dkv_rho_mode;

extern const dkv_names dkv_retain_set_names;        /* "per_head", "shared" (util/names.h) */
extern const dkv_names dkv_rho_mode_names;          /* "fixed", "entropy", "callback" */
const char *dkv_retain_set_name(dkv_retain_set s);
const char *dkv_rho_mode_name(dkv_rho_mode m);

/* Per-block callback: request id, block index, the base rho; returns the block's rho.
 * A non-finite return is an error (reported by dkv_retention_next_rho). */
typedef double (*dkv_retention_cb)(void *ud, uint64_t request, uint32_t block, double rho);

typedef struct dkv_retention_config {
    double rho;                /* fixed ratio, (0, 1].  Default 0.5 (GPU presets: sizing.h) */
    dkv_retain_set set;        /* default DKV_RETAIN_PER_HEAD */
    dkv_rho_mode mode;         /* default DKV_RHO_FIXED */
    double rho_min, rho_max;   /* dynamic bounds, 0 < rho_min <= rho_max <= 1.  Default 0.1, 0.9 */
    double ent_a, ent_b;       /* Beta(a, b) of the normalised entropy, > 0.  Default 2, 2 */
    const double *ent_samples; /* borrowed: if n_ent_samples > 0, entropies cycled from this list
                                  (each in [0, 1]) instead of the Beta draw */
    size_t n_ent_samples;
    dkv_retention_cb callback; /* DKV_RHO_CALLBACK: required */
    void  *callback_ud;        /* borrowed */
    uint64_t seed;             /* entropy draws.  Default 1 */
    bool measured;             /* ENTROPY: e is the attention entropy the backend measured for the
                                  block (engine/backend.h, setup.on_entropy; the engine passes it to
                                  dkv_retention_rho_of_entropy) instead of a draw.  Default false */
    bool clamp;                /* CALLBACK: a value outside [rho_min, rho_max] is clamped (and
                                  counted in n_clamped) instead of an error.  Default false */
} dkv_retention_config;

void       dkv_retention_config_default(dkv_retention_config *c);
dkv_status dkv_retention_config_validate(const dkv_retention_config *c, dkv_err *err);
/* The policy as data (policy_desc.h), registered in core/engine/engine_policy.c. */
extern const dkv_policy dkv_retention_policy;

/* Per-run state of the dynamic rules (the RNG, the sample cursor, the last error). */
typedef struct dkv_retention {
    dkv_retention_config cfg;  /* copy (ent_samples and callback_ud still borrowed) */
    dkv_rng  rng;
    size_t   next_sample;
    uint64_t n_blocks;         /* rho values handed out */
    double   rho_sum;          /* their sum (mean = rho_sum / n_blocks) */
    uint64_t n_clamped;        /* callback values clamped into [rho_min, rho_max] (cfg.clamp) */
    dkv_err  err;              /* first callback error, if any */
} dkv_retention;

/* Validates c and starts a state (no allocation). */
dkv_status dkv_retention_init(dkv_retention *r, const dkv_retention_config *c, dkv_err *err);

/* rho for the next block of `request` (FIXED: cfg.rho; ENTROPY: a draw; CALLBACK: the callback).
 * Fails (DKV_EINVAL, naming "retention.callback", the request, the block and the value) on a
 * non-finite callback value, and on one outside [rho_min, rho_max] unless cfg.clamp. */
dkv_status dkv_retention_next_rho(dkv_retention *r, uint64_t request, uint32_t block, double *rho, dkv_err *err);

/* ENTROPY: rho = clamp(rho_min + (rho_max - rho_min) * e) of a measured entropy e (clamped to
 * [0, 1]), counted in n_blocks / rho_sum as a drawn one.  Pure. */
double dkv_retention_rho_of_entropy(dkv_retention *r, double e);

/* decode.h's dkv_rho_fn: ctx is a dkv_retention*.  Ignores the rho passed in (uses the state's
 * rule); on error returns cfg.rho and keeps the error in r->err. */
double dkv_retention_rho_fn(void *ctx, uint64_t request, uint32_t block, double rho);

/* What one block retains and what each Reuse step reads. */
typedef struct dkv_retention_plan {
    double   rho;
    uint64_t context_tokens;   /* L - B */
    uint64_t k;                /* tokens kept per head: ceil(rho * (L - B)) */
    uint64_t retained_bytes;   /* k * kv_bytes_per_token (K + V, all layers) */
    uint64_t read_bytes;       /* per Reuse step: (k + B) * kv_bytes_per_token */
    uint64_t n_runs;           /* contiguous runs of that read */
    double   run_bytes;        /* mean run, bytes */
    double   retained_run_bytes; /* run of the retained part alone */
    double   efficiency;       /* read_bytes / (hbm_bw * time_s): the two parts combined */
    double   time_s;           /* read_bytes / (hbm_bw * efficiency) */
} dkv_retention_plan;

/* Prices a block: canvas L, block length B (B < L), ratio rho in (0, 1], set kind `set`.
 * g may be NULL (efficiency 1, time 0). */
dkv_status dkv_retention_plan_block(dkv_retain_set set, const dkv_model *m, const dkv_gpu *g, double rho,
                                    uint64_t canvas, uint32_t block_len, dkv_retention_plan *out, dkv_err *err);

/* k = ceil(rho * (L - B)) with a 1e-9 tolerance against rounding (0 when L <= B). */
uint64_t dkv_retention_k(double rho, uint64_t canvas, uint32_t block_len);

#endif
