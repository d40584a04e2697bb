/* engine_policy.c - the one table of the policies of dkv.simulate's `policies` (engine.h,
 * "dkv_engine_policy"): adding a policy is its file in core/policy (with a DKV_POLICY_DEFINE
 * descriptor), its config field in dkv_engine_config, and one line here
 * (docs/ARCHITECTURE.md, "Adding a ... policy"). */
#include "engine/engine_impl.h"

#include <stddef.h>

/* retention is checked only in the sparse cache mode, where it takes effect */
static bool sparse_mode(const dkv_engine_config *c) { return c->decode.cache == DKV_CACHE_SPARSE; }

const dkv_engine_policy dkv_engine_policies[] = {
    {&dkv_logit_policy, offsetof(dkv_engine_config, logit), NULL},
    {&dkv_layout_policy, offsetof(dkv_engine_config, layout), NULL},
    {&dkv_offload_policy, offsetof(dkv_engine_config, offload), NULL},
    {&dkv_lifecycle_policy, offsetof(dkv_engine_config, lifecycle), NULL},
    {&dkv_retention_policy, offsetof(dkv_engine_config, retention), sparse_mode},
    {&dkv_routing_policy, offsetof(dkv_engine_config, routing), NULL},
};
const size_t dkv_engine_n_policies = sizeof dkv_engine_policies / sizeof dkv_engine_policies[0];

void *dkv_engine_policy_config(dkv_engine_config *c, size_t i) { return (char *)c + dkv_engine_policies[i].offset; }
