/* logit.c - logit chunking and its transient peak. */
#include "policy/logit.h"

void dkv_logit_config_default(dkv_logit_config *c)
{
    c->max_num_logits = 1024;
    c->upcast_bytes = 4;
    c->upcast_tensors = 2;
}

dkv_status dkv_logit_config_validate(const dkv_logit_config *c, dkv_err *err)
{
    uint32_t u = c->upcast_bytes;
    if (!(u == 0 || u == 2 || u == 4 || u == 8))
        return dkv_err_set(err, DKV_EINVAL, "logit.upcast_bytes = %u: must be 0, 2, 4 or 8", u);
    if (c->upcast_tensors > 4)
        return dkv_err_set(err, DKV_EINVAL, "logit.upcast_tensors = %u: must be in 0..4", c->upcast_tensors);
    if (c->upcast_tensors > 0 && u == 0)
        return dkv_err_set(err, DKV_EINVAL, "logit.upcast_bytes = 0 with logit.upcast_tensors = %u: give both or neither",
                           c->upcast_tensors);
    return DKV_OK;
}

static uint64_t per_row_peak(const dkv_logit_config *c, uint32_t vocab, dkv_dtype act)
{
    return (uint64_t)vocab * (dkv_dtype_bytes(act) + (uint64_t)c->upcast_bytes * c->upcast_tensors);
}

dkv_status dkv_logit_plan_compute(const dkv_logit_config *c, uint64_t rows, uint32_t vocab, dkv_dtype act_dtype,
                                  dkv_logit_plan *out, dkv_err *err)
{
    dkv_status st = dkv_logit_config_validate(c, err);
    if (st != DKV_OK)
        return st;
    if (vocab == 0)
        return dkv_err_set(err, DKV_EINVAL, "logit: vocab must be > 0");
    uint64_t ab = dkv_dtype_bytes(act_dtype);
    uint64_t row_temp = (uint64_t)vocab * c->upcast_bytes * c->upcast_tensors;
    *out = (dkv_logit_plan){0};
    out->rows = rows;
    if (rows == 0)
        return DKV_OK;
    uint64_t m = c->max_num_logits;
    out->chunk_rows = (m == 0 || rows < m) ? rows : m;
    out->n_chunks = (uint32_t)(m == 0 ? 1 : (rows + m - 1) / m);
    out->chunk_bytes = out->chunk_rows * vocab * ab;
    out->temp_bytes = out->chunk_rows * row_temp;
    out->peak_bytes = out->chunk_bytes + out->temp_bytes;
    out->unchunked_peak_bytes = rows * (vocab * ab + row_temp);
    out->write_bytes = rows * vocab * ab;
    return DKV_OK;
}

uint64_t dkv_logit_max_rows_for_budget(const dkv_logit_config *c, uint32_t vocab, dkv_dtype act_dtype,
                                       double budget_bytes)
{
    uint64_t row = per_row_peak(c, vocab, act_dtype);
    if (row == 0 || !(budget_bytes >= (double)row))
        return 0;
    return (uint64_t)(budget_bytes / (double)row);
}

DKV_POLICY_DEFINE(dkv_logit_policy, "logit", dkv_logit, dkv_logit_config, NULL);
