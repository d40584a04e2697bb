/* policy.h - every dkv policy in one include.  Each policy is a small header with a config
 * struct (documented defaults, a _default and a _validate that names the field) and plain
 * decision functions over values; docs/POLICIES.md gives the formulas and the claims they test.
 *
 *   logit.h      logit chunking and its transient peak (dLLM-Serve)
 *   layout.h     KV layout run lengths, bandwidth efficiency, reorder cost (Flash-dLLM)
 *   offload.h    progressive offload and the plain CPU-offload baseline (Flash-dLLM)
 *   lifecycle.h  immediate vs deferred release (Flash-dLLM)
 *   retention.h  sparse retention, per-head vs shared, fixed or dynamic (dLLM-Serve)
 *   routing.h    short-request bypass of the block pool
 *   placement.h  quotas of several instances over one pool
 *   sizing.h     default engine sizing from dLLM-Serve's budget rules
 *   cost.h       $ per million tokens, memory-to-concurrency
 *
 * The policies of dkv.simulate's `policies` table also describe themselves as data
 * (policy_desc.h: DKV_POLICY_DEFINE; name, default, validate, Lua keys), and
 * core/engine/engine_policy.c's table registers them: docs/ARCHITECTURE.md, "Adding a ... policy".
 *
 * Pure computation: no I/O, no Lua, no HDF5, no CUDA.
 */
#ifndef DKV_POLICY_POLICY_H
#define DKV_POLICY_POLICY_H

#include "policy/cost.h"
#include "policy/layout.h"
#include "policy/lifecycle.h"
#include "policy/logit.h"
#include "policy/offload.h"
#include "policy/placement.h"
#include "policy/policy_desc.h"
#include "policy/retention.h"
#include "policy/routing.h"
#include "policy/sizing.h"

#endif
