/* tokenizer.c - the byte tokenizer (see tokenizer.h). */
#include "workload/tokenizer.h"

#include <string.h>

static const char *const NAMES[] = {"none", "byte"};

const dkv_names dkv_tokenizer_names = DKV_NAMES("tokenizer", NAMES);

const char *dkv_tokenizer_name(dkv_tokenizer_kind k) { return dkv_names_at(&dkv_tokenizer_names, (int)k); }

dkv_status dkv_tokenizer_parse(const char *name, dkv_tokenizer_kind *out, dkv_err *err)
{
    int v = 0;
    DKV_TRY(dkv_names_parse(&dkv_tokenizer_names, name, &v, err));
    *out = (dkv_tokenizer_kind)v;
    return DKV_OK;
}

dkv_status dkv_tokenizer_init(dkv_tokenizer *t, dkv_tokenizer_kind kind, uint32_t vocab, uint32_t mask_id,
                              dkv_err *err)
{
    if (kind == DKV_TOKENIZER_BYTE && (vocab < DKV_TOK_BYTE_END + 1 || mask_id != DKV_TOK_BYTE_MASK))
        return dkv_err_set(err, DKV_EINVAL,
                           "tokenizer 'byte' needs vocab >= %u and mask_id %u (the model has vocab %u, mask_id %u)",
                           DKV_TOK_BYTE_END + 1, DKV_TOK_BYTE_MASK, vocab, mask_id);
    if (kind != DKV_TOKENIZER_BYTE && kind != DKV_TOKENIZER_NONE)
        return dkv_err_set(err, DKV_EINVAL, "tokenizer: unknown kind %d", (int)kind);
    t->kind = kind;
    t->vocab = vocab;
    t->mask_id = mask_id;
    t->end_id = kind == DKV_TOKENIZER_BYTE ? DKV_TOK_BYTE_END : UINT32_MAX;
    return DKV_OK;
}

dkv_status dkv_tok_encode(const dkv_tokenizer *t, const char *text, size_t len, uint32_t *ids, size_t cap,
                          size_t *n, dkv_err *err)
{
    *n = 0;
    if (t->kind != DKV_TOKENIZER_BYTE)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "tokenizer '%s' cannot encode text: give token ids instead",
                           dkv_tokenizer_name(t->kind));
    if (len > cap)
        return dkv_err_set(err, DKV_ERANGE, "tokenizer: %zu bytes of text do not fit in %zu tokens", len, cap);
    for (size_t i = 0; i < len; i++)
        ids[i] = (uint8_t)text[i];
    *n = len;
    return DKV_OK;
}

/* Appends k bytes at *o (counting past cap like snprintf). */
static void put(char *out, size_t cap, size_t *o, const char *s, size_t k)
{
    for (size_t i = 0; i < k; i++, ++*o)
        if (*o + 1 < cap)
            out[*o] = s[i];
}

size_t dkv_tok_decode(const dkv_tokenizer *t, const uint32_t *ids, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    if (t->kind == DKV_TOKENIZER_BYTE)
        for (size_t i = 0; i < n && ids[i] != t->end_id; i++) {
            if (ids[i] < 256) {
                char c = (char)(uint8_t)ids[i];
                put(out, cap, &o, &c, 1);
            } else if (ids[i] == t->mask_id) {
                put(out, cap, &o, "_", 1);
            } else {
                put(out, cap, &o, "\xEF\xBF\xBD", 3);
            }
        }
    if (cap > 0)
        out[o < cap ? o : cap - 1] = '\0';
    return o;
}
