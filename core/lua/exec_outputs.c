/* exec_outputs.c - per-request generated tokens for dkv.execute{outputs = true}. */
#include "lua/exec_outputs.h"

#include "decode/follow.h"
#include "io/h5.h"
#include "workload/tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dkv_status grow(dkv_exec_outputs *o, uint32_t id, dkv_err *err)
{
    if (id < o->n)
        return DKV_OK;
    uint32_t n = o->n ? o->n : 16;
    while (n <= id)
        n *= 2;
    dkv_exec_output *r = realloc(o->req, (size_t)n * sizeof *r);
    if (!r)
        return dkv_err_set(err, DKV_ENOMEM, "dkv.execute outputs: out of host memory");
    memset(r + o->n, 0, (size_t)(n - o->n) * sizeof *r);
    o->req = r;
    o->n = n;
    return DKV_OK;
}

dkv_status dkv_exec_outputs_record(dkv_exec_outputs *o, uint64_t step_index, uint32_t request, uint32_t prompt,
                                   uint32_t canvas, uint32_t block_start, uint32_t block_len,
                                   const uint32_t *before, const uint32_t *after, const float *conf, dkv_err *err)
{
    if (canvas <= prompt || block_start < prompt || block_len == 0 || block_start + block_len > canvas)
        return dkv_err_set(err, DKV_EINVAL,
                           "dkv.execute outputs: request %u: block [%u, %u) is not inside the generated part [%u, %u)",
                           request, block_start, block_start + block_len, prompt, canvas);
    if (grow(o, request, err) != DKV_OK)
        return DKV_ENOMEM;
    dkv_exec_output *r = &o->req[request];
    uint32_t gen = canvas - prompt;
    if (!r->tokens) {
        r->id = request;
        r->gen = gen;
        r->tokens = malloc((size_t)gen * sizeof *r->tokens);
        r->conf = malloc((size_t)gen * sizeof *r->conf);
        r->step = malloc((size_t)gen * sizeof *r->step);
        r->prompt_tokens = malloc((size_t)(prompt ? prompt : 1) * sizeof *r->prompt_tokens);
        if (!r->tokens || !r->conf || !r->step || !r->prompt_tokens) {
            free(r->tokens), free(r->conf), free(r->step), free(r->prompt_tokens);
            memset(r, 0, sizeof *r);
            return dkv_err_set(err, DKV_ENOMEM, "dkv.execute outputs: out of host memory");
        }
        r->prompt = prompt;
        memcpy(r->prompt_tokens, before, (size_t)prompt * sizeof *before);
        for (uint32_t i = 0; i < gen; i++) {
            r->tokens[i] = UINT32_MAX;
            r->conf[i] = NAN;
            r->step[i] = UINT32_MAX;
        }
    } else if (r->gen != gen) {
        return dkv_err_set(err, DKV_ESTATE, "dkv.execute outputs: request %u: canvas changed (%u generated, was %u)",
                           request, gen, r->gen);
    }
    for (uint32_t j = 0; j < block_len; j++) {
        uint32_t p = block_start + j;
        if (before[p] != after[p]) {
            uint32_t g = p - prompt;
            r->tokens[g] = after[p];
            r->conf[g] = conf[j];
            r->step[g] = (uint32_t)step_index;
        }
    }
    return DKV_OK;
}

dkv_status dkv_exec_outputs_logits(dkv_exec_outputs *o, uint32_t request, uint32_t block_start, uint32_t block_len,
                                   const uint32_t *before, const uint32_t *after, const float *logits, uint32_t vocab,
                                   dkv_err *err)
{
    if (request >= o->n || !o->req[request].tokens)
        return dkv_err_set(err, DKV_ESTATE, "dkv.execute outputs: request %u: logits before any record", request);
    dkv_exec_output *r = &o->req[request];
    if (!r->argmax) {
        r->argmax = malloc((size_t)r->gen * sizeof *r->argmax);
        r->margin = malloc((size_t)r->gen * sizeof *r->margin);
        r->gap = malloc((size_t)r->gen * sizeof *r->gap);
        r->zmax = malloc((size_t)r->gen * sizeof *r->zmax);
        if (!r->argmax || !r->margin || !r->gap || !r->zmax) {
            free(r->argmax), free(r->margin), free(r->gap), free(r->zmax);
            r->argmax = NULL, r->margin = r->gap = r->zmax = NULL;
            return dkv_err_set(err, DKV_ENOMEM, "dkv.execute outputs: out of host memory");
        }
        for (uint32_t g = 0; g < r->gen; g++) {
            r->argmax[g] = UINT32_MAX;
            r->margin[g] = r->gap[g] = r->zmax[g] = NAN;
        }
    }
    for (uint32_t j = 0; j < block_len; j++) {
        uint32_t p = block_start + j;
        if (before[p] == after[p] || p < r->prompt || p - r->prompt >= r->gen)
            continue;
        uint32_t g = p - r->prompt, a;
        const float *z = logits + (size_t)j * vocab;
        dkv_logit_top2(z, vocab, &a, &r->margin[g], &r->zmax[g]);
        r->argmax[g] = a;
        r->gap[g] = after[p] < vocab ? z[a] - z[after[p]] : INFINITY;
    }
    return DKV_OK;
}

void dkv_exec_outputs_free(dkv_exec_outputs *o)
{
    if (!o)
        return;
    for (uint32_t i = 0; i < o->n; i++) {
        free(o->req[i].tokens);
        free(o->req[i].conf);
        free(o->req[i].step);
        free(o->req[i].prompt_tokens);
        free(o->req[i].argmax), free(o->req[i].margin), free(o->req[i].gap), free(o->req[i].zmax);
    }
    free(o->req);
    o->req = NULL;
    o->n = 0;
}

/* ------------------------------------------------------------------ saving */

typedef struct out_rec {
    uint32_t request, position, token, step, argmax;
    float    conf, margin, gap, zmax;
} out_rec;

typedef struct prompt_rec {
    uint32_t request, position, token;
} prompt_rec;

static const dkv_h5_field OUT_FIELDS[] = {
    {"request", DKV_H5_U32, offsetof(out_rec, request), "", "request id (workload order)"},
    {"position", DKV_H5_U32, offsetof(out_rec, position), "tokens", "generated position (0 = first after the prompt)"},
    {"token", DKV_H5_U32, offsetof(out_rec, token), "", "token id; 4294967295 = never unmasked"},
    {"conf", DKV_H5_F32, offsetof(out_rec, conf), "", "softmax probability when unmasked; NaN = never"},
    {"step", DKV_H5_U32, offsetof(out_rec, step), "", "engine step that unmasked it; 4294967295 = never"},
    {"argmax", DKV_H5_U32, offsetof(out_rec, argmax), "", "the backend's own argmax at that step; 4294967295 = "
     "not recorded"},
    {"margin", DKV_H5_F32, offsetof(out_rec, margin), "logits", "top-2 logit margin at that step; NaN = not recorded"},
    {"gap", DKV_H5_F32, offsetof(out_rec, gap), "logits", "z[argmax] - z[token] at that step (0: the argmax was "
     "committed); NaN = not recorded"},
    {"zmax", DKV_H5_F32, offsetof(out_rec, zmax), "logits", "max |z| of that row; NaN = not recorded"},
};

static const dkv_h5_field PROMPT_FIELDS[] = {
    {"request", DKV_H5_U32, offsetof(prompt_rec, request), "", "request id (workload order)"},
    {"position", DKV_H5_U32, offsetof(prompt_rec, position), "tokens", "prompt position"},
    {"token", DKV_H5_U32, offsetof(prompt_rec, token), "", "token id"},
};

/* Length of a valid UTF-8 sequence at s (n bytes left), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t k = s[0] < 0x80 ? 1 : (s[0] >> 5) == 6 ? 2 : (s[0] >> 4) == 14 ? 3 : (s[0] >> 3) == 30 ? 4 : 0;
    if (k == 0 || k > n || s[0] == 0 || s[0] == 0xC0 || s[0] == 0xC1 || s[0] > 0xF4)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((k == 3 && s[0] == 0xE0 && s[1] < 0xA0) || (k == 4 && s[0] == 0xF0 && s[1] < 0x90) ||
        (k == 4 && s[0] == 0xF4 && s[1] > 0x8F) || (k == 3 && s[0] == 0xED && s[1] > 0x9F))
        return 0;   /* overlong, above U+10FFFF, surrogates */
    return k;
}

/* The decoded text of ids as valid UTF-8 (malloc'd, NUL-terminated), or NULL when out of memory.
 * With none_as != 0, DKV_TOK_NONE (a position never unmasked) decodes as that id (the mask). */
static char *text_of(const dkv_tokenizer *tok, const uint32_t *ids, size_t n, uint32_t none_as)
{
    uint32_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = ids[i] == DKV_TOK_NONE && none_as ? none_as : ids[i];
    size_t len = dkv_tok_decode(tok, v, n, NULL, 0);
    char *raw = malloc(len + 1), *out = malloc(3 * len + 1);
    if (!raw || !out) {
        free(raw), free(out), free(v);
        return NULL;
    }
    dkv_tok_decode(tok, v, n, raw, len + 1);
    free(v);
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_len((const unsigned char *)raw + i, len - i);
        if (k) {
            memcpy(out + o, raw + i, k);
            o += k, i += k;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3, i++;
        }
    }
    out[o] = '\0';
    free(raw);
    return out;
}

static dkv_status save_text(dkv_h5_run *run, const dkv_exec_outputs *o, const dkv_tokenizer *tok, dkv_err *err)
{
    dkv_status st = dkv_h5_attr_str(run, "outputs_text", "tokenizer", dkv_tokenizer_name(tok->kind), err);
    for (uint32_t i = 0; st == DKV_OK && i < o->n; i++) {
        const dkv_exec_output *r = &o->req[i];
        if (!r->tokens)
            continue;
        for (int part = 0; st == DKV_OK && part < 2; part++) {
            char key[48];
            snprintf(key, sizeof key, "%s.%u", part ? "text" : "prompt", r->id);
            char *t = part ? text_of(tok, r->tokens, r->gen, tok->mask_id) : text_of(tok, r->prompt_tokens, r->prompt, 0);
            st = t ? dkv_h5_attr_str(run, "outputs_text", key, t, err)
                   : dkv_err_set(err, DKV_ENOMEM, "outputs: out of host memory for request %u's text", r->id);
            free(t);
        }
    }
    return st;
}

dkv_status dkv_exec_outputs_save(dkv_h5_run *run, const dkv_exec_outputs *o, const dkv_tokenizer *tok, dkv_err *err)
{
    size_t n_out = 0, n_prompt = 0;
    for (uint32_t i = 0; i < o->n; i++)
        if (o->req[i].tokens)
            n_out += o->req[i].gen, n_prompt += o->req[i].prompt;
    if (n_out == 0)
        return DKV_OK;
    out_rec *a = malloc(n_out * sizeof *a);
    prompt_rec *b = malloc((n_prompt ? n_prompt : 1) * sizeof *b);
    dkv_status st = a && b ? DKV_OK : dkv_err_set(err, DKV_ENOMEM, "outputs: out of host memory");
    size_t ka = 0, kb = 0;
    for (uint32_t i = 0; st == DKV_OK && i < o->n; i++) {
        const dkv_exec_output *r = &o->req[i];
        if (!r->tokens)
            continue;
        for (uint32_t g = 0; g < r->gen; g++)
            a[ka++] = (out_rec){r->id, g, r->tokens[g], r->step[g], r->argmax ? r->argmax[g] : UINT32_MAX, r->conf[g],
                                r->margin ? r->margin[g] : NAN, r->gap ? r->gap[g] : NAN, r->zmax ? r->zmax[g] : NAN};
        for (uint32_t p = 0; p < r->prompt; p++)
            b[kb++] = (prompt_rec){r->id, p, r->prompt_tokens[p]};
    }
    dkv_h5_table *t = NULL;
    if (st == DKV_OK)
        st = dkv_h5_table_create(run, "outputs", sizeof *a, OUT_FIELDS, sizeof OUT_FIELDS / sizeof OUT_FIELDS[0], &t, err);
    if (st == DKV_OK)
        st = dkv_h5_table_append(t, a, n_out, err);
    dkv_h5_table_close(t);
    t = NULL;
    if (st == DKV_OK && n_prompt)
        st = dkv_h5_table_create(run, "prompts", sizeof *b, PROMPT_FIELDS, sizeof PROMPT_FIELDS / sizeof PROMPT_FIELDS[0],
                                 &t, err);
    if (st == DKV_OK && n_prompt)
        st = dkv_h5_table_append(t, b, n_prompt, err);
    dkv_h5_table_close(t);
    free(a), free(b);
    if (st == DKV_OK && tok && tok->kind != DKV_TOKENIZER_NONE)
        st = save_text(run, o, tok, err);
    return st;
}
