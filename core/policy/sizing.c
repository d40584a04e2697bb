/* sizing.c - default engine sizing from dLLM-Serve's budget rules and the GPU preset. */
#include "policy/sizing.h"

#include <math.h>

#include "mem/mem.h"

void dkv_sizing_config_default(dkv_sizing_config *c)
{
    c->margin = 0.10;
    c->kv_frac = 0.7;
    c->block_tokens = 32;
    c->max_num_logits = 0;
    c->max_num_batched_tokens = 0;
    c->retention = -1.0;
}

dkv_status dkv_sizing_config_validate(const dkv_sizing_config *c, dkv_err *err)
{
    if (!(c->margin >= 0 && c->margin < 1))
        return dkv_err_set(err, DKV_ERANGE, "sizing.margin = %g: must be in [0, 1)", c->margin);
    if (!(c->kv_frac > 0 && c->kv_frac <= 1))
        return dkv_err_set(err, DKV_ERANGE, "sizing.kv_frac = %g: must be in (0, 1]", c->kv_frac);
    if (c->block_tokens == 0)
        return dkv_err_set(err, DKV_EINVAL, "sizing.block_tokens must be > 0");
    if (!(c->retention < 0 || (c->retention > 0 && c->retention <= 1)))
        return dkv_err_set(err, DKV_ERANGE, "sizing.retention = %g: must be in (0, 1] (or < 0 for the GPU preset's)",
                           c->retention);
    return DKV_OK;
}

dkv_status dkv_sizing_default(const dkv_sizing_config *c, const dkv_model *m, const dkv_gpu *g, dkv_sizing *out,
                              dkv_err *err)
{
    dkv_status st = dkv_sizing_config_validate(c, err);
    if (st != DKV_OK)
        return st;
    *out = (dkv_sizing){0};
    st = dkv_budget_compute(m, g, c->margin, c->kv_frac, &out->budget, err);
    if (st != DKV_OK)
        return st;
    out->block_bytes = dkv_block_bytes(0, c->block_tokens, dkv_model_kv_bytes_per_token(m));
    out->n_blocks = out->block_bytes ? (uint64_t)floor(out->budget.kv_bytes / (double)out->block_bytes) : 0;
    out->kv_pool_bytes = out->n_blocks * out->block_bytes;
    out->kv_tokens = out->n_blocks * c->block_tokens;
    out->max_num_logits = c->max_num_logits ? c->max_num_logits : g->max_num_logits ? g->max_num_logits : 1024;
    out->max_num_batched_tokens = c->max_num_batched_tokens   ? c->max_num_batched_tokens
                                  : g->max_num_batched_tokens ? g->max_num_batched_tokens
                                                              : 8192;
    out->retention = c->retention > 0 ? c->retention : g->retention > 0 ? g->retention : 0.5;
    dkv_logit_config lc;
    dkv_logit_config_default(&lc);
    lc.max_num_logits = out->max_num_logits;
    dkv_logit_plan lp;
    st = dkv_logit_plan_compute(&lc, out->max_num_logits, m->vocab, m->act_dtype, &lp, err);
    if (st != DKV_OK)
        return st;
    out->logit_peak_bytes = lp.peak_bytes;
    out->logits_fit = (double)lp.peak_bytes <= out->budget.act_bytes;
    out->max_logit_rows = dkv_logit_max_rows_for_budget(&lc, m->vocab, m->act_dtype, out->budget.act_bytes);
    return DKV_OK;
}
