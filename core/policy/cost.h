/* cost.h - dollars per token, and how many requests fit in memory.
 *
 *   $/Mtok = cost_per_hour * n_gpus / 3600 / tokens_per_s * 1e6
 *
 * Memory-to-concurrency (Flash-dLLM's "$/token from memory and concurrency"):
 *   concurrency N = min(floor(kv_budget / kv_per_request), max_seqs (0 = no cap))
 *   step time    t(N) = step_fixed_s + N * step_per_request_s   (weights streamed once per step,
 *                                                                 then each request's share)
 *   throughput   = N * tokens_per_step / t(N)        tokens/s
 *   $/Mtok       from the throughput above
 * So shrinking KV per request raises N, which amortises the fixed per-step cost.
 *
 * Pure computation.  Units: $, seconds, tokens, bytes.
 */
#ifndef DKV_POLICY_COST_H
#define DKV_POLICY_COST_H

#include <stdint.h>

#include "util/status.h"

/* $ per million tokens; INFINITY when tokens_per_s <= 0. */
double dkv_cost_per_mtok(double cost_per_hour, uint32_t n_gpus, double tokens_per_s);

typedef struct dkv_cost_config {
    double   cost_per_hour;       /* $ per GPU-hour (>= 0) */
    uint32_t n_gpus;              /* > 0.  Default 1 */
    double   kv_budget_bytes;     /* KV memory available (> 0) */
    double   kv_per_request_bytes;/* peak KV of one request (> 0) */
    uint32_t max_seqs;            /* concurrency cap, 0 = none */
    double   step_fixed_s;        /* per-step time independent of the batch (>= 0) */
    double   step_per_request_s;  /* per-step time each request adds (>= 0; both 0 is an error) */
    double   tokens_per_step;     /* tokens each request finalises per step (> 0).  Default 1 */
} dkv_cost_config;

void       dkv_cost_config_default(dkv_cost_config *c);
dkv_status dkv_cost_config_validate(const dkv_cost_config *c, dkv_err *err);

typedef struct dkv_cost_result {
    uint64_t concurrency;         /* N */
    double   step_s;              /* t(N) */
    double   tokens_per_s;
    double   cost_per_mtok;       /* $ per million tokens */
    double   memory_bound;        /* 1 when the KV budget (not max_seqs) limits N, else 0 */
} dkv_cost_result;

dkv_status dkv_cost_from_memory(const dkv_cost_config *c, dkv_cost_result *out, dkv_err *err);

#endif
