/* layout.c - contiguous runs of KV reads under two layouts, and the reorder cost. */
#include "policy/layout.h"

#include <string.h>

static const char *const layout_names[] = {"tmajor", "layer_major"};
static const char *const reorder_names[] = {"per_step", "per_block"};
const dkv_names dkv_layout_names = DKV_NAMES("layout.layout", layout_names);
const dkv_names dkv_reorder_names = DKV_NAMES("layout.reorder", reorder_names);

const char *dkv_layout_name(dkv_layout l) { return dkv_names_at(&dkv_layout_names, (int)l); }

void dkv_layout_config_default(dkv_layout_config *c)
{
    c->layout = DKV_LAYOUT_TMAJOR;
    c->reorder = DKV_REORDER_PER_STEP;
}

dkv_status dkv_layout_config_validate(const dkv_layout_config *c, dkv_err *err)
{
    if (c->layout != DKV_LAYOUT_TMAJOR && c->layout != DKV_LAYOUT_LAYER_MAJOR)
        return dkv_err_set(err, DKV_EINVAL, "layout.layout = %d: not a layout", (int)c->layout);
    if (c->reorder != DKV_REORDER_PER_STEP && c->reorder != DKV_REORDER_PER_BLOCK)
        return dkv_err_set(err, DKV_EINVAL, "layout.reorder = %d: expected per_step or per_block", (int)c->reorder);
    return DKV_OK;
}

static double bw_time(const dkv_gpu *g, double bytes, double eff)
{
    return bytes > 0 ? bytes / (g->hbm_bw * eff) : 0.0;
}

static dkv_status check_block(uint32_t block_tokens, dkv_err *err)
{
    return block_tokens ? DKV_OK : dkv_err_set(err, DKV_EINVAL, "layout: block_tokens must be > 0");
}

dkv_status dkv_layout_read_cost(const dkv_layout_config *c, const dkv_model *m, const dkv_gpu *g,
                                uint32_t block_tokens, uint64_t tokens, dkv_layout_read *out, dkv_err *err)
{
    dkv_status st = dkv_layout_config_validate(c, err);
    if (st == DKV_OK)
        st = check_block(block_tokens, err);
    if (st != DKV_OK)
        return st;
    *out = (dkv_layout_read){.efficiency = 1.0};
    if (tokens == 0)
        return DKV_OK;
    uint64_t streams = 2ULL * m->n_layers * m->n_kv_heads; /* (layer, head, K|V) */
    out->bytes = tokens * dkv_model_kv_bytes_per_token(m);
    if (c->layout == DKV_LAYOUT_TMAJOR)
        out->n_runs = streams * tokens;
    else
        out->n_runs = streams * ((tokens + block_tokens - 1) / block_tokens);
    out->run_bytes = (double)out->bytes / (double)out->n_runs;
    out->efficiency = dkv_gpu_bw_efficiency(g, out->run_bytes);
    out->time_s = bw_time(g, (double)out->bytes, out->efficiency);
    return DKV_OK;
}

dkv_status dkv_layout_reorder(const dkv_layout_config *c, const dkv_model *m, const dkv_gpu *g,
                              uint32_t block_tokens, uint64_t tokens, dkv_layout_reorder_cost *out, dkv_err *err)
{
    dkv_status st = dkv_layout_config_validate(c, err);
    if (st == DKV_OK)
        st = check_block(block_tokens, err);
    if (st != DKV_OK)
        return st;
    *out = (dkv_layout_reorder_cost){0};
    if (c->layout == DKV_LAYOUT_TMAJOR || tokens == 0)
        return DKV_OK;
    uint64_t bytes = tokens * dkv_model_kv_bytes_per_token(m);
    uint64_t run_tokens = tokens < block_tokens ? tokens : block_tokens;
    double run = (double)run_tokens * m->head_dim * dkv_dtype_bytes(m->kv_dtype);
    out->read_bytes = bytes;
    out->write_bytes = bytes;
    out->time_s = bw_time(g, 2.0 * (double)bytes, dkv_gpu_bw_efficiency(g, run));
    return DKV_OK;
}

/* Lua keys (policies.layout), parsed by core/lua from this list */
static const dkv_policy_key layout_keys[] = {
    {.name = "layout", .type = DKV_POLICY_KEY_ENUM, .offset = offsetof(dkv_layout_config, layout),
     .names = &dkv_layout_names},
    {.name = "reorder", .type = DKV_POLICY_KEY_ENUM, .offset = offsetof(dkv_layout_config, reorder),
     .names = &dkv_reorder_names},
    {0},
};
_Static_assert(sizeof(dkv_layout) == sizeof(int) && sizeof(dkv_reorder) == sizeof(int), "int-sized enums");

DKV_POLICY_DEFINE(dkv_layout_policy, "layout", dkv_layout, dkv_layout_config, layout_keys);
