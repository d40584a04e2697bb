/* exec_outputs.c - per-request generated tokens for dkv.execute{outputs = true}. */
#include "lua/exec_outputs.h"

#include <math.h>
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
        if (!r->tokens || !r->conf || !r->step) {
            free(r->tokens), free(r->conf), free(r->step);
            memset(r, 0, sizeof *r);
            return dkv_err_set(err, DKV_ENOMEM, "dkv.execute outputs: out of host memory");
        }
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

void dkv_exec_outputs_free(dkv_exec_outputs *o)
{
    if (!o)
        return;
    for (uint32_t i = 0; i < o->n; i++) {
        free(o->req[i].tokens);
        free(o->req[i].conf);
        free(o->req[i].step);
    }
    free(o->req);
    o->req = NULL;
    o->n = 0;
}
