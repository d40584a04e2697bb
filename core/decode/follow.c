/* follow.c - trajectory replay (follow.h). */
#include "decode/follow.h"

#include <math.h>

dkv_status dkv_follow_apply(const dkv_follow *f, uint32_t request, uint64_t step_index, uint32_t P, uint32_t gen,
                            uint32_t block_start, uint32_t B, uint32_t *tok, uint32_t mask_id, uint32_t vocab,
                            uint32_t expect, uint32_t *n_out, dkv_err *err)
{
    *n_out = 0;
    if (!f || !f->tokens || !f->steps || f->gen != gen)
        return dkv_err_set(err, DKV_EINVAL, "follow: request %u: the trajectory has %u generated positions, the run %u",
                           request, f && f->tokens && f->steps ? f->gen : 0, gen);
    uint32_t n = 0;
    for (uint32_t g = 0; g < gen; g++) {   /* checked first: on an error tok is left unchanged */
        if (f->steps[g] != step_index)
            continue;
        uint32_t p = P + g;
        if (p < block_start || p >= block_start + B)
            return dkv_err_set(err, DKV_EINVAL, "follow: request %u, step %llu: recorded position %u lies outside the "
                               "block [%u, %u) this run computes (the schedules differ)", request,
                               (unsigned long long)step_index, p, block_start, block_start + B);
        if (tok[p - block_start] != mask_id)
            return dkv_err_set(err, DKV_EINVAL, "follow: request %u, step %llu: recorded position %u is not masked "
                               "(committed twice?)", request, (unsigned long long)step_index, p);
        if (f->tokens[g] >= vocab)
            return dkv_err_set(err, DKV_EINVAL, "follow: request %u, step %llu: recorded token %u at position %u is not "
                               "below vocab %u", request, (unsigned long long)step_index, f->tokens[g], p, vocab);
        n++;
    }
    if (n != expect)
        return dkv_err_set(err, DKV_EINVAL, "follow: request %u, step %llu: the trajectory commits %u positions, this "
                           "run's unmask rule %u (the schedules differ)", request, (unsigned long long)step_index, n,
                           expect);
    for (uint32_t g = 0; g < gen; g++)
        if (f->steps[g] == step_index)
            tok[P + g - block_start] = f->tokens[g];
    *n_out = n;
    return DKV_OK;
}

void dkv_logit_top2(const float *z, uint32_t V, uint32_t *argmax, float *margin, float *absmax)
{
    uint32_t a = 0;
    float mx = fabsf(z[0]);
    for (uint32_t v = 1; v < V; v++) {
        if (z[v] > z[a])
            a = v;
        mx = fabsf(z[v]) > mx ? fabsf(z[v]) : mx;
    }
    float second = -INFINITY;
    for (uint32_t v = 0; v < V; v++)
        if (v != a && z[v] > second)
            second = z[v];
    if (argmax)
        *argmax = a;
    if (margin)
        *margin = V > 1 ? z[a] - second : 0.0f;
    if (absmax)
        *absmax = mx;
}
