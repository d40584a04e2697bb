/* routing.c - short-request bypass: pool vs plain path, and the break-even. */
#include "policy/routing.h"

#include <math.h>

static const char *const route_names[] = {"pool", "plain"};
const dkv_names dkv_route_names = DKV_NAMES("route", route_names);

const char *dkv_route_name(dkv_route r) { return dkv_names_at(&dkv_route_names, (int)r); }

void dkv_routing_config_default(dkv_routing_config *c)
{
    c->enabled = false;
    c->threshold_tokens = 0;
}

dkv_status dkv_routing_config_validate(const dkv_routing_config *c, dkv_err *err)
{
    (void)c;
    (void)err;
    return DKV_OK; /* every value of both fields is meaningful */
}

dkv_status dkv_routing_costs_validate(const dkv_routing_costs *k, dkv_err *err)
{
#define NONNEG(f) \
    if (!(k->f >= 0) || !isfinite(k->f)) \
        return dkv_err_set(err, DKV_ERANGE, "routing.costs." #f " = %g: must be finite and >= 0", k->f)
    NONNEG(setup_s);
    NONNEG(block_s);
    NONNEG(pool_step_s);
    NONNEG(plain_step_s);
#undef NONNEG
    return DKV_OK;
}

double dkv_routing_breakeven_steps(const dkv_routing_costs *k, uint64_t n_blocks)
{
    double saving = k->plain_step_s - k->pool_step_s;
    if (!(saving > 0))
        return INFINITY;
    return (k->setup_s + (double)n_blocks * k->block_s) / saving;
}

dkv_status dkv_routing_decide(const dkv_routing_config *c, const dkv_routing_costs *k, const dkv_route_request *r,
                              dkv_route_decision *out, dkv_err *err)
{
    dkv_status st = dkv_routing_config_validate(c, err);
    if (st == DKV_OK)
        st = dkv_routing_costs_validate(k, err);
    if (st != DKV_OK)
        return st;
    if (r->block_bytes == 0)
        return dkv_err_set(err, DKV_EINVAL, "routing: request block_bytes must be > 0");
    *out = (dkv_route_decision){0};
    out->n_blocks = (r->kv_bytes + r->block_bytes - 1) / r->block_bytes;
    out->breakeven_steps = dkv_routing_breakeven_steps(k, out->n_blocks);
    out->pool_s = k->setup_s + (double)out->n_blocks * k->block_s + (double)r->steps * k->pool_step_s;
    out->plain_s = (double)r->steps * k->plain_step_s;
    out->pool_bytes = out->n_blocks * r->block_bytes;
    out->plain_bytes = r->kv_bytes;
    out->route = DKV_ROUTE_POOL;
    if (!c->enabled)
        return DKV_OK;
    if (c->threshold_tokens > 0)
        out->route = r->lifetime_tokens < c->threshold_tokens ? DKV_ROUTE_PLAIN : DKV_ROUTE_POOL;
    else
        out->route = (double)r->steps < out->breakeven_steps ? DKV_ROUTE_PLAIN : DKV_ROUTE_POOL;
    return DKV_OK;
}

DKV_POLICY_DEFINE(dkv_routing_policy, "routing", dkv_routing, dkv_routing_config, NULL);
