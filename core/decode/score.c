/* score.c - teacher-forced held-out scoring from a block's logit rows (score.h). */
#include "decode/score.h"

#include <math.h>

void dkv_score_row(const float *z, uint32_t V, uint32_t *argmax, float *conf, float *lse0)
{
    uint32_t am = 0;
    for (uint32_t v = 1; v < V; v++)
        if (z[v] > z[am])
            am = v;
    double sum = 0;
    for (uint32_t v = 0; v < V; v++)
        sum += exp((double)z[v] - z[am]);
    if (argmax)
        *argmax = am;
    if (conf)
        *conf = (float)(1.0 / sum);
    if (lse0)
        *lse0 = (float)log(sum);
}

dkv_status dkv_score_block(const float *logits, const float *conf, uint32_t B, uint32_t V, uint32_t *tok,
                           const uint32_t *target, uint32_t mask_id, uint32_t n_unmask, dkv_score *acc, uint32_t *n_done,
                           dkv_err *err)
{
    if (n_done)
        *n_done = 0;
    for (uint32_t n = 0; n < n_unmask; n++) {
        uint32_t pick = UINT32_MAX;
        float best = 0;
        for (uint32_t i = 0; i < B; i++) {
            if (tok[i] != mask_id)
                continue;
            float c;
            if (conf)
                c = conf[i];
            else
                dkv_score_row(logits + (size_t)i * V, V, NULL, &c, NULL);
            if (pick == UINT32_MAX || c > best)
                pick = i, best = c;
        }
        if (pick == UINT32_MAX)
            break;
        uint32_t t = target[pick], am;
        if (t >= V || t == mask_id)
            return dkv_err_set(err, DKV_EINVAL, "scoring: target token %u at block position %u is %s", t, pick,
                               t >= V ? "not below the vocabulary" : "the mask token");
        const float *z = logits + (size_t)pick * V;
        float lse0;
        dkv_score_row(z, V, &am, NULL, &lse0);
        double nll = ((double)lse0 - ((double)z[t] - z[am])) / log(2.0);
        if (!isfinite(nll))   /* a NaN/inf logit row: never a silent NaN bits per byte */
            return dkv_err_set(err, DKV_ERANGE, "scoring: the logit row of block position %u is not finite (-log2 p "
                               "of target %u = %g; logit[target] %g, logit[argmax %u] %g): the KV or the forward "
                               "produced NaN/inf", pick, t, nll, (double)z[t], am, (double)z[am]);
        acc->n++;
        acc->correct += am == t;
        acc->nll_bits += nll;
        tok[pick] = t;
        if (n_done)
            (*n_done)++;
    }
    return DKV_OK;
}

void dkv_score_add(dkv_score *acc, const dkv_score *s)
{
    if (!s)
        return;
    acc->n += s->n;
    acc->correct += s->correct;
    acc->nll_bits += s->nll_bits;
}

dkv_score dkv_score_total(const dkv_score *s, size_t n)
{
    dkv_score t = {0};
    for (size_t i = 0; i < n; i++)
        dkv_score_add(&t, &s[i]);
    return t;
}

double dkv_score_bits_per_byte(const dkv_score *s)
{
    return s->n ? s->nll_bits / s->n : NAN;
}

double dkv_score_accuracy(const dkv_score *s)
{
    return s->n ? (double)s->correct / s->n : NAN;
}
