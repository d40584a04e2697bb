/* cost.c - $ per million tokens and the memory-to-concurrency model. */
#include "policy/cost.h"

#include <math.h>

double dkv_cost_per_mtok(double cost_per_hour, uint32_t n_gpus, double tokens_per_s)
{
    if (!(tokens_per_s > 0))
        return INFINITY;
    return cost_per_hour * (double)n_gpus / 3600.0 / tokens_per_s * 1e6;
}

void dkv_cost_config_default(dkv_cost_config *c)
{
    *c = (dkv_cost_config){0};
    c->n_gpus = 1;
    c->tokens_per_step = 1.0;
}

dkv_status dkv_cost_config_validate(const dkv_cost_config *c, dkv_err *err)
{
#define CHECK(cond, f) \
    if (!(cond) || !isfinite(c->f)) return dkv_err_set(err, DKV_ERANGE, "cost." #f " = %g: must be " #cond, (double)c->f)
    CHECK(c->cost_per_hour >= 0, cost_per_hour);
    CHECK(c->kv_budget_bytes > 0, kv_budget_bytes);
    CHECK(c->kv_per_request_bytes > 0, kv_per_request_bytes);
    CHECK(c->step_fixed_s >= 0, step_fixed_s);
    CHECK(c->step_per_request_s >= 0, step_per_request_s);
    CHECK(c->tokens_per_step > 0, tokens_per_step);
#undef CHECK
    if (c->n_gpus == 0)
        return dkv_err_set(err, DKV_ERANGE, "cost.n_gpus = 0: must be > 0");
    if (c->step_fixed_s == 0 && c->step_per_request_s == 0)
        return dkv_err_set(err, DKV_EINVAL, "cost.step_fixed_s and cost.step_per_request_s are both 0: a step takes time");
    return DKV_OK;
}

dkv_status dkv_cost_from_memory(const dkv_cost_config *c, dkv_cost_result *out, dkv_err *err)
{
    dkv_status st = dkv_cost_config_validate(c, err);
    if (st != DKV_OK)
        return st;
    *out = (dkv_cost_result){0};
    double fit = floor(c->kv_budget_bytes / c->kv_per_request_bytes + 1e-9);
    uint64_t n = fit > 0 ? (uint64_t)fit : 0;
    out->memory_bound = 1.0;
    if (c->max_seqs > 0 && n > c->max_seqs) {
        n = c->max_seqs;
        out->memory_bound = 0.0;
    }
    out->concurrency = n;
    out->step_s = c->step_fixed_s + (double)n * c->step_per_request_s;
    out->tokens_per_s = n > 0 ? (double)n * c->tokens_per_step / out->step_s : 0.0;
    out->cost_per_mtok = dkv_cost_per_mtok(c->cost_per_hour, c->n_gpus, out->tokens_per_s);
    return DKV_OK;
}
