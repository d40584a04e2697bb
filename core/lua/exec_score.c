/* exec_score.c - opts.targets read, dev.score pushed (exec_score.h). */
#include "lua/exec_score.h"

#include <stdlib.h>

#include "workload/tokenizer.h"

dkv_status dkv_exec_targets_read(dkv_exec_targets *t, const char *path, const dkv_model *m, const dkv_workload *w,
                                 dkv_err *err)
{
    dkv_tokenizer tok;
    dkv_tokenizer_kind k = DKV_TOKENIZER_NONE;
    if (m->tokenizer[0] && dkv_tokenizer_parse(m->tokenizer, &k, err) != DKV_OK)
        return DKV_EINVAL;
    if (dkv_tokenizer_init(&tok, k, m->vocab, m->mask_id, err) != DKV_OK)
        return DKV_EINVAL;
    dkv_prompts_cfg c = {.tok = &tok, .vocab = m->vocab, .gen = 1, .interval_s = 0};
    dkv_status st = dkv_workload_prompts(path, &c, NULL, &t->tw, err);
    if (st != DKV_OK) {
        dkv_err_prefix(err, "opts.targets");
        return st;
    }
    size_t n = dkv_workload_count(w), nt = dkv_workload_count(t->tw);
    if (nt != n)
        return dkv_err_set(err, DKV_EINVAL, "opts.targets: %s has %zu lines for %zu requests", path, nt, n);
    t->ptr = calloc(n ? n : 1, sizeof *t->ptr);
    if (!t->ptr)
        return dkv_err_set(err, DKV_ENOMEM, "opts.targets: out of memory");
    for (size_t i = 0; i < n; i++) {
        const dkv_request *q = dkv_workload_get(w, i), *r = dkv_workload_get(t->tw, i);
        if (r->prompt_tokens < q->gen_tokens)
            return dkv_err_set(err, DKV_EINVAL, "opts.targets: %s:%zu: %u target tokens for request %zu, which "
                               "generates %u", path, i + 1, r->prompt_tokens, i, q->gen_tokens);
        t->ptr[i] = r->tokens;
    }
    t->n = n;
    return DKV_OK;
}

void dkv_exec_targets_free(dkv_exec_targets *t)
{
    if (!t)
        return;
    dkv_workload_free(t->tw);
    free(t->ptr);
    t->tw = NULL, t->ptr = NULL, t->n = 0;
}

static void push_one(lua_State *L, const dkv_score *s)
{
    lua_pushinteger(L, (lua_Integer)s->n);
    lua_setfield(L, -2, "n");
    lua_pushnumber(L, dkv_score_accuracy(s));
    lua_setfield(L, -2, "accuracy");
    lua_pushnumber(L, dkv_score_bits_per_byte(s));
    lua_setfield(L, -2, "bits_per_byte");
}

void dkv_exec_push_score(lua_State *L, const dkv_score *s, uint32_t n_req)
{
    dkv_score tot = dkv_score_total(s, n_req);
    lua_createtable(L, 0, 4);
    lua_createtable(L, (int)n_req, 0);
    for (uint32_t i = 0; i < n_req; i++) {
        lua_createtable(L, 0, 3);
        push_one(L, &s[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "per_request");
    push_one(L, &tot);
}
