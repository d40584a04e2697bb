/* safetensors_map.c - the LLaDA and Dream tensor names, and loading/saving ref weights. */
#include "io/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* canonical layer field -> LLaDA suffix, Dream suffix (after "...blocks.i." / "model.layers.i.") */
static const struct {
    const char *field, *llada, *dream;
} LAYER_NAMES[] = {
    {"attn_norm", "attn_norm.weight", "input_layernorm.weight"},
    {"wq", "q_proj.weight", "self_attn.q_proj.weight"},
    {"wk", "k_proj.weight", "self_attn.k_proj.weight"},
    {"wv", "v_proj.weight", "self_attn.v_proj.weight"},
    {"bq", "q_proj.bias", "self_attn.q_proj.bias"},
    {"bk", "k_proj.bias", "self_attn.k_proj.bias"},
    {"bv", "v_proj.bias", "self_attn.v_proj.bias"},
    {"wo", "attn_out.weight", "self_attn.o_proj.weight"},
    {"ffn_norm", "ff_norm.weight", "post_attention_layernorm.weight"},
    {"w_gate", "ff_proj.weight", "mlp.gate_proj.weight"},
    {"w_up", "up_proj.weight", "mlp.up_proj.weight"},
    {"w_down", "ff_out.weight", "mlp.down_proj.weight"},
};

static const struct {
    const char *canon, *llada, *dream;
} TOP_NAMES[] = {
    {"wte", "model.transformer.wte.weight", "model.embed_tokens.weight"},
    {"ln_f", "model.transformer.ln_f.weight", "model.norm.weight"},
    {"lm_head", "model.transformer.ff_out.weight", "lm_head.weight"},
};

dkv_status dkv_st_name(dkv_st_naming naming, const char *canonical, char *out, size_t out_len, dkv_err *err)
{
    int dream = naming == DKV_ST_NAMING_DREAM;
    for (size_t i = 0; i < sizeof TOP_NAMES / sizeof TOP_NAMES[0]; i++)
        if (strcmp(canonical, TOP_NAMES[i].canon) == 0) {
            snprintf(out, out_len, "%s", dream ? TOP_NAMES[i].dream : TOP_NAMES[i].llada);
            return DKV_OK;
        }
    unsigned layer;
    int used = 0;
    if (sscanf(canonical, "layers.%u.%n", &layer, &used) == 1 && used > 0)
        for (size_t i = 0; i < sizeof LAYER_NAMES / sizeof LAYER_NAMES[0]; i++)
            if (strcmp(canonical + used, LAYER_NAMES[i].field) == 0) {
                if (dream)
                    snprintf(out, out_len, "model.layers.%u.%s", layer, LAYER_NAMES[i].dream);
                else
                    snprintf(out, out_len, "model.transformer.blocks.%u.%s", layer, LAYER_NAMES[i].llada);
                return DKV_OK;
            }
    return dkv_err_set(err, DKV_ENOENT, "safetensors: no file name for tensor '%s'", canonical);
}

dkv_status dkv_st_detect_naming(dkv_st *const *files, uint32_t n_files, dkv_st_naming *out, dkv_err *err)
{
    for (uint32_t f = 0; f < n_files; f++) {
        if (dkv_st_find(files[f], TOP_NAMES[0].llada)) {
            *out = DKV_ST_NAMING_LLADA;
            return DKV_OK;
        }
        if (dkv_st_find(files[f], TOP_NAMES[0].dream)) {
            *out = DKV_ST_NAMING_DREAM;
            return DKV_OK;
        }
    }
    return dkv_err_set(err, DKV_ENOENT, "safetensors: neither '%s' (LLaDA) nor '%s' (Dream) is in the %u file(s)",
                       TOP_NAMES[0].llada, TOP_NAMES[0].dream, n_files);
}

typedef struct load_ctx {
    dkv_st *const *files;
    uint32_t       n_files;
    dkv_st_naming  naming;
    uint32_t       used;
    dkv_err       *err;
} load_ctx;

static dkv_status load_one(void *vctx, const char *canon, float *data, uint32_t d0, uint32_t d1)
{
    load_ctx *c = vctx;
    char name[160];
    dkv_status s = dkv_st_name(c->naming, canon, name, sizeof name, c->err);
    if (s != DKV_OK)
        return s;
    const dkv_st_tensor *t = NULL;
    const dkv_st *from = NULL;
    for (uint32_t f = 0; f < c->n_files; f++) {
        const dkv_st_tensor *x = dkv_st_find(c->files[f], name);
        if (x && t)
            return dkv_err_set(c->err, DKV_EFORMAT, "safetensors: tensor '%s' is in more than one file", name);
        if (x)
            t = x, from = c->files[f];
    }
    if (!t)
        return dkv_err_set(c->err, DKV_ENOENT, "safetensors: tensor '%s' (dkv '%s') is missing from the %u file(s)",
                           name, canon, c->n_files);
    uint32_t nd = d1 ? 2 : 1;
    if (t->ndim != nd || t->shape[0] != d0 || (d1 && t->shape[1] != d1)) {
        char want[48], got[96] = "";
        if (d1)
            snprintf(want, sizeof want, "[%u, %u]", d0, d1);
        else
            snprintf(want, sizeof want, "[%u]", d0);
        for (uint32_t i = 0, o = 0; i < t->ndim && o < sizeof got - 24; i++)
            o += (uint32_t)snprintf(got + o, sizeof got - o, "%s%llu", i ? ", " : "", (unsigned long long)t->shape[i]);
        return dkv_err_set(c->err, DKV_EFORMAT, "safetensors: tensor '%s': field 'shape': expected %s, got [%s]",
                           name, want, got);
    }
    c->used++;
    return dkv_st_read_f32(from, t, data, (uint64_t)d0 * (d1 ? d1 : 1), c->err);
}

dkv_status dkv_st_load_ref(dkv_st *const *files, uint32_t n_files, dkv_st_naming naming, dkv_ref_weights *w,
                           uint32_t *n_unused, dkv_err *err)
{
    load_ctx c = {files, n_files, naming, 0, err};
    dkv_status s = dkv_ref_weights_foreach(w, load_one, &c);
    if (s == DKV_OK && n_unused) {
        uint32_t total = 0;
        for (uint32_t f = 0; f < n_files; f++)
            total += dkv_st_count(files[f]);
        *n_unused = total - c.used;
    }
    return s;
}

typedef struct save_ctx {
    dkv_st_writer *w;
    dkv_st_naming  naming;
    dkv_st_dtype   dtype;
    dkv_err       *err;
} save_ctx;

static dkv_status save_one(void *vctx, const char *canon, float *data, uint32_t d0, uint32_t d1)
{
    save_ctx *c = vctx;
    char name[160];
    dkv_status s = dkv_st_name(c->naming, canon, name, sizeof name, c->err);
    if (s != DKV_OK)
        return s;
    uint64_t shape[2] = {d0, d1};
    return dkv_st_writer_add_f32(c->w, name, c->dtype, d1 ? 2 : 1, shape, data, c->err);
}

dkv_status dkv_st_save_ref(const dkv_ref_weights *w, dkv_st_naming naming, dkv_st_dtype dtype,
                           const char *path, dkv_err *err)
{
    save_ctx c = {NULL, naming, dtype, err};
    dkv_status s = dkv_st_writer_new(&c.w, err);
    if (s == DKV_OK)
        s = dkv_ref_weights_foreach((dkv_ref_weights *)w, save_one, &c);   /* the walk only reads */
    if (s == DKV_OK)
        s = dkv_st_writer_write(c.w, path, err);
    dkv_st_writer_free(c.w);
    return s;
}
