/* routing.h - short-request bypass: send a request to the block pool or to a plain path.
 *
 * The block pool costs something per request up front (block-table set-up, per-block acquire
 * and release: what the pool reports) and saves something per step (the plain path allocates
 * and frees the step's KV/activation tensors every step: cudaMalloc/cudaFree, or a caching
 * allocator).  For a request of n steps that acquires n_blocks blocks:
 *
 *     pool  = setup_s + n_blocks * block_s + n * pool_step_s
 *     plain = n * plain_step_s
 *     break-even steps  n* = (setup_s + n_blocks * block_s) / (plain_step_s - pool_step_s)
 *
 * (never, when the plain path is not dearer per step).  A request is routed to the plain path
 * when its expected KV lifetime, in generated tokens, is below threshold_tokens; with
 * threshold_tokens == 0 the threshold is the break-even itself: plain when n < n*.  Memory:
 * the pool rounds KV up to whole blocks (n_blocks * block_bytes), the plain path takes the
 * exact bytes plus what its allocator adds; the helper reports both.
 *
 * Pure computation.  Units: seconds, tokens, steps, bytes.
 */
#ifndef DKV_POLICY_ROUTING_H
#define DKV_POLICY_ROUTING_H

#include <stdbool.h>
#include <stdint.h>

#include "util/names.h"
#include "util/status.h"
#include "policy/policy_desc.h"

typedef enum dkv_route {
    DKV_ROUTE_POOL = 0,
    DKV_ROUTE_PLAIN
} dkv_route;

extern const dkv_names dkv_route_names;    /* "pool", "plain" (util/names.h) */
const char *dkv_route_name(dkv_route r);

typedef struct dkv_routing_config {
    bool     enabled;          /* false: everything goes to the pool.  Default false */
    uint32_t threshold_tokens; /* plain when lifetime_tokens < this; 0 = the break-even.  Default 0 */
} dkv_routing_config;

void       dkv_routing_config_default(dkv_routing_config *c);
dkv_status dkv_routing_config_validate(const dkv_routing_config *c, dkv_err *err);
/* The policy as data (policy_desc.h), registered in core/engine/engine_policy.c. */
extern const dkv_policy dkv_routing_policy;

/* What each path costs (reported by the pool and the plain allocator model). */
typedef struct dkv_routing_costs {
    double setup_s;            /* pool: once per request (>= 0) */
    double block_s;            /* pool: per block acquired, acquire + release (>= 0) */
    double pool_step_s;        /* pool: per step (block-table work) (>= 0) */
    double plain_step_s;       /* plain: per step (allocate + free the step's tensors) (>= 0) */
} dkv_routing_costs;

dkv_status dkv_routing_costs_validate(const dkv_routing_costs *k, dkv_err *err);

/* Break-even steps n* (INFINITY when the plain path is never dearer per step). */
double dkv_routing_breakeven_steps(const dkv_routing_costs *k, uint64_t n_blocks);

typedef struct dkv_route_request {
    uint64_t lifetime_tokens;  /* expected KV lifetime in generated tokens (G) */
    uint32_t steps;            /* expected steps */
    uint64_t kv_bytes;         /* peak KV bytes */
    uint64_t block_bytes;      /* pool block size, bytes (> 0) */
} dkv_route_request;

typedef struct dkv_route_decision {
    dkv_route route;
    uint64_t  n_blocks;        /* ceil(kv_bytes / block_bytes) */
    double    breakeven_steps; /* n* */
    double    pool_s;          /* cost on the pool path */
    double    plain_s;         /* cost on the plain path */
    uint64_t  pool_bytes;      /* n_blocks * block_bytes */
    uint64_t  plain_bytes;     /* kv_bytes */
} dkv_route_decision;

dkv_status dkv_routing_decide(const dkv_routing_config *c, const dkv_routing_costs *k, const dkv_route_request *r,
                              dkv_route_decision *out, dkv_err *err);

#endif
