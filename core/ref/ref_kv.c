/* ref_kv.c - the reference KV cache: per layer and KV head, rows of K and V tagged by position. */
#include "ref/ref_internal.h"

#include <stdlib.h>
#include <string.h>

dkv_status dkv_ref_kv_new(const dkv_model *m, uint32_t cap_tokens, dkv_ref_kv **out, dkv_err *err)
{
    *out = NULL;
    if (cap_tokens == 0 || m->n_layers == 0 || m->n_kv_heads == 0 || m->head_dim == 0)
        return dkv_err_set(err, DKV_EINVAL, "ref kv: capacity and model dimensions must be > 0");
    dkv_ref_kv *kv = calloc(1, sizeof *kv);
    if (!kv)
        return dkv_err_set(err, DKV_ENOMEM, "ref kv: cannot allocate");
    kv->n_layers = m->n_layers;
    kv->n_kv_heads = m->n_kv_heads;
    kv->head_dim = m->head_dim;
    kv->cap = cap_tokens;
    size_t slots = (size_t)m->n_layers * m->n_kv_heads;
    kv->count = calloc(slots, sizeof *kv->count);
    kv->pos = calloc(slots * cap_tokens, sizeof *kv->pos);
    kv->k = calloc(slots * cap_tokens * m->head_dim, sizeof(float));
    kv->v = calloc(slots * cap_tokens * m->head_dim, sizeof(float));
    if (!kv->count || !kv->pos || !kv->k || !kv->v) {
        dkv_ref_kv_free(kv);
        return dkv_err_set(err, DKV_ENOMEM, "ref kv: cannot allocate %u tokens x %zu heads", cap_tokens, slots);
    }
    *out = kv;
    return DKV_OK;
}

void dkv_ref_kv_free(dkv_ref_kv *kv)
{
    if (!kv)
        return;
    free(kv->count);
    free(kv->pos);
    free(kv->k);
    free(kv->v);
    free(kv);
}

void dkv_ref_kv_clear(dkv_ref_kv *kv)
{
    if (kv)
        memset(kv->count, 0, (size_t)kv->n_layers * kv->n_kv_heads * sizeof *kv->count);
}

uint32_t dkv_ref_kv_count(const dkv_ref_kv *kv, uint32_t layer, uint32_t kv_head)
{
    return kv->count[dkv_ref_kv_slot(kv, layer, kv_head)];
}

const uint32_t *dkv_ref_kv_positions(const dkv_ref_kv *kv, uint32_t layer, uint32_t kv_head)
{
    return kv->pos + dkv_ref_kv_slot(kv, layer, kv_head) * kv->cap;
}

const float *dkv_ref_kv_k(const dkv_ref_kv *kv, uint32_t layer, uint32_t kv_head)
{
    return kv->k + dkv_ref_kv_slot(kv, layer, kv_head) * kv->cap * kv->head_dim;
}

const float *dkv_ref_kv_v(const dkv_ref_kv *kv, uint32_t layer, uint32_t kv_head)
{
    return kv->v + dkv_ref_kv_slot(kv, layer, kv_head) * kv->cap * kv->head_dim;
}
