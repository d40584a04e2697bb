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

dkv_status dkv_follow_select(const dkv_follow *f, uint32_t request, uint64_t step, uint32_t layer, uint32_t n_sets,
                             uint32_t keep, uint32_t L, uint32_t block_start, uint32_t B, const uint32_t **pos,
                             dkv_err *err)
{
    *pos = NULL;
    if (!f || !f->has_sel)
        return DKV_OK;
    const dkv_follow_sel *r = NULL;
    for (uint32_t i = 0; i < f->n_sel && !r; i++)
        if (f->sel[i].step == step && f->sel[i].layer == layer)
            r = &f->sel[i];
    unsigned long long s = (unsigned long long)step;
    if (!r)
        return dkv_err_set(err, DKV_EINVAL, "follow: request %u, step %llu, layer %u: the trajectory records no "
                           "selection here (the schedules differ)", request, s, layer);
    if (r->n_sets != n_sets || r->keep != keep)
        return dkv_err_set(err, DKV_EINVAL, "follow: request %u, step %llu, layer %u: the trajectory keeps %u "
                           "set(s) of %u keys, this run %u of %u (the retention settings differ)", request, s, layer, r->n_sets,
                           r->keep, n_sets, keep);
    for (uint32_t h = 0; h < n_sets; h++)
        for (uint32_t i = 0; i < keep; i++) {
            uint32_t p = r->pos[(size_t)h * keep + i];
            if (p >= L || (p >= block_start && p < block_start + B) || (i && p <= r->pos[(size_t)h * keep + i - 1]))
                return dkv_err_set(err, DKV_EINVAL, "follow: request %u, step %llu, layer %u, set %u: recorded key "
                                   "position %u is outside the canvas [0, %u), inside the block [%u, %u) or not "
                                   "ascending", request, s, layer, h, p, L, block_start, block_start + B);
        }
    *pos = r->pos;
    return DKV_OK;
}

void dkv_select_boundary(const float *score, uint32_t n, uint32_t lo, uint32_t hi, uint32_t q0, const uint32_t *own,
                         const uint32_t *kept, uint32_t keep, uint8_t *differs, float *margin, float *mag)
{
    uint8_t d = 0;
    for (uint32_t i = 0; i < keep && !d; i++)
        d = own[i] + q0 != kept[i];
    float lo_kept = INFINITY, hi_drop = -INFINITY;
    uint32_t c = 0;   /* kept is ascending: walk it beside j */
    for (uint32_t j = 0; j < n; j++) {
        if (j >= lo && j < hi)
            continue;
        if (c < keep && kept[c] == q0 + j) {
            lo_kept = score[j] < lo_kept ? score[j] : lo_kept;
            c++;
        } else {
            hi_drop = score[j] > hi_drop ? score[j] : hi_drop;
        }
    }
    *differs = d;
    if (keep == 0 || hi_drop == -INFINITY) {
        *margin = INFINITY;
        *mag = 0.0f;
        return;
    }
    *margin = lo_kept - hi_drop;
    *mag = fabsf(lo_kept) > fabsf(hi_drop) ? fabsf(lo_kept) : fabsf(hi_drop);
}
