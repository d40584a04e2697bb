/* ref_weights.c - the reference model's parameters: one allocation, seeded random fill, a walk. */
#include "ref/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/rng.h"

static size_t count_floats(const dkv_model *m)
{
    size_t C = m->hidden, F = m->ffn, V = m->vocab, QD = (size_t)m->n_heads * m->head_dim,
           KD = (size_t)m->n_kv_heads * m->head_dim;
    size_t layer = 2 * C + 2 * QD * C + 2 * KD * C + 3 * F * C + (m->qkv_bias ? QD + 2 * KD : 0);
    return V * C * (m->tied_embeddings ? 1 : 2) + m->n_layers * layer + C;
}

/* Points every tensor into w->mem, in the order of dkv_ref_weights_foreach. */
static void assign(dkv_ref_weights *w)
{
    const dkv_model *m = &w->m;
    size_t C = m->hidden, F = m->ffn, V = m->vocab, QD = (size_t)m->n_heads * m->head_dim,
           KD = (size_t)m->n_kv_heads * m->head_dim;
    float *p = w->mem;
#define TAKE(ptr, n) do { (ptr) = p; p += (n); } while (0)
    TAKE(w->wte, V * C);
    for (uint32_t l = 0; l < m->n_layers; l++) {
        dkv_ref_layer *L = &w->layers[l];
        TAKE(L->attn_norm, C);
        TAKE(L->wq, QD * C);
        TAKE(L->wk, KD * C);
        TAKE(L->wv, KD * C);
        if (m->qkv_bias) {
            TAKE(L->bq, QD);
            TAKE(L->bk, KD);
            TAKE(L->bv, KD);
        }
        TAKE(L->wo, C * QD);
        TAKE(L->ffn_norm, C);
        TAKE(L->w_gate, F * C);
        TAKE(L->w_up, F * C);
        TAKE(L->w_down, C * F);
    }
    TAKE(w->ln_f, C);
    if (m->tied_embeddings)
        w->lm_head = w->wte;
    else
        TAKE(w->lm_head, V * C);
#undef TAKE
}

dkv_status dkv_ref_weights_new(const dkv_model *m, float rms_eps, dkv_ref_weights **out, dkv_err *err)
{
    *out = NULL;
    dkv_status st = dkv_model_validate(m, err);
    if (st != DKV_OK)
        return st;
    if (m->head_dim > 1024)
        return dkv_err_set(err, DKV_EINVAL, "ref: head_dim %u > 1024 is not supported", m->head_dim);
    if (!(rms_eps > 0))
        return dkv_err_set(err, DKV_EINVAL, "ref: rms_eps must be > 0");
    dkv_ref_weights *w = calloc(1, sizeof *w);
    if (!w)
        return dkv_err_set(err, DKV_ENOMEM, "ref: cannot allocate weights struct");
    w->m = *m;
    w->rms_eps = rms_eps;
    w->n_floats = count_floats(m);
    w->layers = calloc(m->n_layers, sizeof *w->layers);
    w->mem = calloc(w->n_floats, sizeof(float));
    if (!w->layers || !w->mem) {
        size_t n = w->n_floats;
        dkv_ref_weights_free(w);
        return dkv_err_set(err, DKV_ENOMEM, "ref: cannot allocate %zu floats of weights for '%s'", n, m->name);
    }
    assign(w);
    *out = w;
    return DKV_OK;
}

void dkv_ref_weights_free(dkv_ref_weights *w)
{
    if (!w)
        return;
    free(w->mem);
    free(w->layers);
    free(w);
}

dkv_status dkv_ref_weights_foreach(dkv_ref_weights *w, dkv_ref_tensor_fn fn, void *ctx)
{
    const dkv_model *m = &w->m;
    uint32_t C = m->hidden, F = m->ffn, V = m->vocab, QD = m->n_heads * m->head_dim,
             KD = m->n_kv_heads * m->head_dim;
    dkv_status st;
    char name[64];
#define VISIT(nm, p, d0, d1) do { if ((st = fn(ctx, (nm), (p), (d0), (d1))) != DKV_OK) return st; } while (0)
#define LVISIT(field, d0, d1) do { snprintf(name, sizeof name, "layers.%u." #field, l); \
                                   VISIT(name, L->field, d0, d1); } while (0)
    VISIT("wte", w->wte, V, C);
    for (uint32_t l = 0; l < m->n_layers; l++) {
        dkv_ref_layer *L = &w->layers[l];
        LVISIT(attn_norm, C, 0);
        LVISIT(wq, QD, C);
        LVISIT(wk, KD, C);
        LVISIT(wv, KD, C);
        if (m->qkv_bias) {
            LVISIT(bq, QD, 0);
            LVISIT(bk, KD, 0);
            LVISIT(bv, KD, 0);
        }
        LVISIT(wo, C, QD);
        LVISIT(ffn_norm, C, 0);
        LVISIT(w_gate, F, C);
        LVISIT(w_up, F, C);
        LVISIT(w_down, C, F);
    }
    VISIT("ln_f", w->ln_f, C, 0);
    if (!m->tied_embeddings)
        VISIT("lm_head", w->lm_head, V, C);
#undef LVISIT
#undef VISIT
    return DKV_OK;
}

static dkv_status fill(void *ctx, const char *name, float *data, uint32_t d0, uint32_t d1)
{
    dkv_rng *r = ctx;
    size_t n = (size_t)d0 * (d1 ? d1 : 1);
    int is_norm = d1 == 0 && (strstr(name, "norm") != NULL || strcmp(name, "ln_f") == 0);
    int is_bias = d1 == 0 && !is_norm;
    double sd = d1 == 0 ? (is_bias ? 0.02 : 0.1) : (strcmp(name, "wte") == 0 ? 1.0 : 1.0 / sqrt((double)d1));
    for (size_t i = 0; i < n; i++)
        data[i] = (float)((is_norm ? 1.0 : 0.0) + sd * dkv_rng_normal(r));
    return DKV_OK;
}

void dkv_ref_weights_randomize(dkv_ref_weights *w, uint64_t seed)
{
    dkv_rng r;
    dkv_rng_seed(&r, seed);
    dkv_ref_weights_foreach(w, fill, &r);
}
