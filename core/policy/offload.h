/* offload.h - progressive KV offload (Flash-dLLM) and the plain CPU-offload baseline.
 *
 * The engine keeps one dkv_offload_state per request and calls dkv_offload_decide once per
 * step of that request.  The policy only decides: the simulator (or the CUDA backend) queues
 * the transfers it orders.  All byte counts of the state are RAW-EQUIVALENT KV bytes (what the
 * KV would take uncompressed); the orders carry PHYSICAL bytes (what crosses PCIe).
 *
 * A request's KV is split into its working set (the current block's KV: always on the GPU,
 * raw) and the cold rest.  With f = step / n_steps (step 0-based over the whole request):
 *
 *   phase 1  f < t1           all KV stays on the GPU.
 *   phase 2  t1 <= f < t2     cold raw KV on the GPU is projected to a low-rank approximation
 *                             (lowrank_ratio of its size: rank r = round(ratio * head_dim) per
 *                             head vector), the approximation is copied to the host and the raw
 *                             freed; the GPU keeps the working set.
 *   phase 3  f >= t2          cold raw KV on the GPU is copied to the host raw and freed; the GPU
 *                             keeps the minimum, the working set.  KV already on the host (as an
 *                             approximation) stays there.
 *   plain    (DKV_OFFLOAD_PLAIN) every step: all KV lives on the host; what a step reads and does
 *                             not compute itself is fetched, what it writes is copied back.
 *
 * Per step, in this order (the engine passes the step's read/write sizes):
 *   1. fetch  (h2d, before the step): the part of the step's cached read that lives on the host:
 *             cold_read = min(read - max(write, working), cold); the host-held share of it,
 *             proportionally: h2d = cold_read / cold * (host_raw + ratio * host_lowrank);
 *             staged in a transient GPU buffer of h2d bytes, released after the step
 *             (plain: the working set too, when the step does not rewrite it).
 *   2. writes (during the step): KV rewritten this step is on the GPU again, raw.  Writes cover
 *             the GPU-resident KV first; the excess, min(write - gpu_raw, host), was host-held and
 *             its host copy is dropped (low-rank first).  So a Refresh that recomputes the canvas
 *             brings all cold KV back, and in plain mode every written byte is recreated.
 *   3. offload (after the step, overlapping the next): as the phase says; freed after the copy.
 * Phase boundaries: phase 2 starts at the first step with step >= t1 * n_steps (1e-9 tolerance,
 * so 1/3 of 96 steps is step 32); likewise phase 3 at t2.
 *
 * Invariant after every call: gpu_raw + host_raw + host_lowrank == total (raw-equivalent),
 * i.e. offloaded + resident = total.
 *
 * Pure computation.  Units: bytes, FLOPs.
 */
#ifndef DKV_POLICY_OFFLOAD_H
#define DKV_POLICY_OFFLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "util/names.h"
#include "util/status.h"
#include "policy/policy_desc.h"

typedef enum dkv_offload_mode {
    DKV_OFFLOAD_NONE = 0,      /* everything stays on the GPU */
    DKV_OFFLOAD_PROGRESSIVE,   /* Flash-dLLM's three phases */
    DKV_OFFLOAD_PLAIN          /* baseline: all KV on the host, fetched every step it is read */
} dkv_offload_mode;

extern const dkv_names dkv_offload_mode_names;         /* "none", "progressive", "plain" (util/names.h) */
const char *dkv_offload_mode_name(dkv_offload_mode m);

typedef struct dkv_offload_config {
    dkv_offload_mode mode;     /* default DKV_OFFLOAD_NONE */
    double t1;                 /* phase 2 starts at this fraction of the request's steps.  Default 1/3 */
    double t2;                 /* phase 3 starts here; 0 <= t1 <= t2 <= 1.  Default 2/3 */
    double lowrank_ratio;      /* size of the phase-2 approximation / raw size, (0, 1].  Default 0.3 */
    bool   pinned;             /* host buffers pinned (else pageable PCIe rates).  Default true */
} dkv_offload_config;

void       dkv_offload_config_default(dkv_offload_config *c);
dkv_status dkv_offload_config_validate(const dkv_offload_config *c, dkv_err *err);
/* The policy as data (policy_desc.h), registered in core/engine/engine_policy.c. */
extern const dkv_policy dkv_offload_policy;

/* Where one request's KV lives (raw-equivalent bytes).  Zero-initialise at admission. */
typedef struct dkv_offload_state {
    uint64_t total;            /* KV bytes of the request */
    uint64_t gpu_raw;          /* raw on the GPU */
    uint64_t host_raw;         /* raw on the host */
    uint64_t host_lowrank;     /* represented on the host by its approximation (physical:
                                  lowrank_ratio of this) */
} dkv_offload_state;

/* What the step does, from the decoding model (decode.h), in KV bytes (all layers). */
typedef struct dkv_offload_step {
    uint32_t step;             /* step index within the request, 0-based */
    uint32_t n_steps;          /* the request's total steps (> step) */
    uint64_t total_bytes;      /* the request's KV after this step (never decreases) */
    uint64_t working_bytes;    /* current block's working set (<= total_bytes) */
    uint64_t read_bytes;       /* KV the step's attention reads (a tokens) */
    uint64_t write_bytes;      /* KV the step computes and writes (w tokens; for a Refresh
                                  that recomputes all keys, pass a tokens even if w is 0) */
} dkv_offload_step;

typedef struct dkv_offload_orders {
    uint8_t  phase;            /* 1, 2 or 3 (progressive); 0 for none/plain */
    bool     pinned;           /* copy at pinned or pageable rates */
    uint64_t h2d_bytes;        /* physical bytes to fetch before the step */
    uint64_t d2h_bytes;        /* physical bytes to copy to the host after the step */
    uint64_t compress_bytes;   /* raw bytes projected to low rank (read on the GPU) */
    double   compress_flops;   /* 2 * r FLOPs per element projected */
    uint64_t staging_bytes;    /* transient GPU bytes holding fetched KV during the step */
    uint64_t freed_bytes;      /* raw GPU bytes released once the d2h copy is done */
    uint64_t resident_bytes;   /* raw GPU bytes held after the step (== state.gpu_raw) */
    uint64_t offloaded_bytes;  /* raw-equivalent bytes on the host after the step */
} dkv_offload_orders;

/* Decides one step and updates *st.  m gives head_dim and kv_dtype (compress FLOPs).  Errors
 * (DKV_EINVAL / DKV_ESTATE) name the field: step >= n_steps, working > total, a shrinking total,
 * a state whose parts do not add up. */
dkv_status dkv_offload_decide(const dkv_offload_config *c, const dkv_model *m, const dkv_offload_step *s,
                              dkv_offload_state *st, dkv_offload_orders *out, dkv_err *err);

/* The phase (1..3) of step `step` of n_steps under c's thresholds (the mode is ignored). */
uint8_t dkv_offload_phase(const dkv_offload_config *c, uint32_t step, uint32_t n_steps);

/* Projection rank for head vectors of head_dim under the ratio: max(1, round(ratio * head_dim)). */
uint32_t dkv_offload_rank(const dkv_offload_config *c, uint32_t head_dim);

#endif
