/* ref_internal.h - the reference KV cache's body, shared by ref_kv.c and ref_step.c (not public). */
#ifndef DKV_REF_INTERNAL_H
#define DKV_REF_INTERNAL_H

#include "ref/ref.h"

struct dkv_ref_kv {
    uint32_t  n_layers, n_kv_heads, head_dim, cap;
    uint32_t *count;   /* (n_layers, n_kv_heads) rows held */
    uint32_t *pos;     /* (n_layers, n_kv_heads, cap) canvas position of each row */
    float    *k, *v;   /* (n_layers, n_kv_heads, cap, head_dim) */
};

static inline size_t dkv_ref_kv_slot(const dkv_ref_kv *kv, uint32_t layer, uint32_t head)
{
    return (size_t)layer * kv->n_kv_heads + head;
}

#endif
