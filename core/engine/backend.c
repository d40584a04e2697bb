/* backend.c - the backend vtable wrappers and their defaults. */
#include "engine/backend.h"

#include <string.h>

static const char *const kclass_names[DKV_KCLASS_N] = {
    "qkv", "attn", "o_proj", "ffn", "lm_head", "kv_store", "kv_gather", "reorder", "elementwise", "compress",
};
const dkv_names dkv_kernel_class_names = DKV_NAMES("kernel class", kclass_names);

const char *dkv_kernel_class_name(dkv_kernel_class k) { return dkv_names_at(&dkv_kernel_class_names, (int)k); }

dkv_status dkv_backend_begin(dkv_backend *b, const dkv_backend_setup *setup, dkv_err *err)
{
    if (!b->iface)
        return dkv_err_set(err, DKV_ESTATE, "backend: no interface");
    return b->iface->begin ? b->iface->begin(b->ctx, setup, err) : DKV_OK;
}

dkv_status dkv_backend_run_step(dkv_backend *b, const dkv_step_plan *plan, dkv_step_cost *out, dkv_err *err)
{
    memset(out, 0, sizeof *out);
    if (!b->iface)
        return dkv_err_set(err, DKV_ESTATE, "backend: no interface");
    return b->iface->run_step ? b->iface->run_step(b->ctx, plan, out, err) : DKV_OK;
}

void dkv_backend_end(dkv_backend *b)
{
    if (b && b->iface && b->iface->end)
        b->iface->end(b->ctx);
}

void dkv_backend_free(dkv_backend *b)
{
    if (!b)
        return;
    if (b->iface && b->iface->free)
        b->iface->free(b->ctx);
    b->iface = NULL;
    b->ctx = NULL;
}

const char *dkv_backend_name(const dkv_backend *b)
{
    return b && b->iface && b->iface->name ? b->iface->name : "none";
}

uint64_t dkv_plan_offload_bytes(const dkv_step_plan *plan, uint32_t request)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k < plan->n_xfers; k++)
        if (plan->xfers[k].kind == DKV_XFER_OFFLOAD && plan->xfers[k].request == request)
            n += plan->xfers[k].pcie_bytes;
    return n;
}

const dkv_step_item *dkv_plan_item(const dkv_step_plan *plan, uint32_t request)
{
    for (uint32_t i = 0; i < plan->n_items; i++)
        if (plan->items[i].request == request)
            return &plan->items[i];
    return NULL;
}

uint32_t dkv_plan_item_tokens(const dkv_step_item *it, uint32_t prompt_tokens, uint32_t block_len)
{
    uint32_t a = it->kv_tokens, w = it->kv_write_tokens;
    if (it->phase == DKV_STEP_REFRESH)
        return w;
    if (w == 0)
        return it->kv_cached_tokens;
    uint32_t s_b = prompt_tokens + it->block * block_len;
    return a > s_b + w ? a : s_b + w;
}
