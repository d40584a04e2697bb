/* profile_gemm.c - `dkv profile`'s GEMM sections: the exact projections of the models given
 * (tables qkv, o, ffn), the LM head (lm_head: one chunk of dkv_cuda_lm_head_argmax, GEMM + argmax)
 * and a generic (m, n, k) grid (table gemm) so other models' shapes interpolate.  Every GEMM is
 * dkv_cuda_gemm, the cuBLASLt entry the backend calls, with the backend's beta (1 where the
 * backend fuses the residual: o and the FFN down projection). */
#include <string.h>

#include "cuda/profile_internal.h"

static const char *const mnk[] = {"m", "n", "k"};

dkv_status pr_gemm_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err)
{
    const gemm_arg *g = arg;
    const dkv_bf16 *x = pr_in(P, (size_t)g->T * g->K * 2, rep, 0), *w = pr_in(P, (size_t)g->N * g->K * 2, rep, 1);
    const dkv_bf16 *b = g->bias ? pr_in(P, (size_t)g->N * 2, rep, 2) : NULL;
    return dkv_cuda_gemm(P->ctx, (dkv_bf16 *)P->out, x, w, b, g->T, g->K, g->N, g->beta, err);
}

static double gemm_est(const gemm_arg *g)
{
    double T = g->T, K = g->K, N = g->N;
    return pr_est(2 * T * K * N, 2 * (T * K + K * N + T * N * (1 + g->beta)), 1);
}

static bool fits(const prof_ctx *P, const gemm_arg *g)
{
    return (size_t)g->T * g->N * 2 <= P->out_bytes && (size_t)g->N * g->K * 2 <= ((size_t)4 << 30) &&
           (size_t)g->T * g->K * 2 <= ((size_t)1 << 30);
}

static dkv_status one(prof_ctx *P, const char *table, const char *note, gemm_arg g, dkv_err *err)
{
    if (g.T < P->o->min_rows || !fits(P, &g) || !pr_want(P, gemm_est(&g)))
        return DKV_OK;
    dkv_prof_table *t = pr_table(P, table, mnk, 3, note);
    double f[3] = {g.T, g.N, g.K};
    return pr_case(P, pr_measure(P, t, f, 1, gemm_est(&g), pr_gemm_call, &g, err), err);
}

/* The class tables' rows: pr_rows, then (not --quick) 12,288, 16,384 and 24,576: a Refresh or mixed step of
 * several long prompts has more than 8,192 rows (the held-out mc:dual,long up to 20,395), where the
 * simulator used to extrapolate linearly from 8,192 (session 13, docs/COST_MODEL.md "Large steps"). */
static const uint32_t big_rows[] = {12288, 16384, 24576};

dkv_status pr_sec_gemm(prof_ctx *P, dkv_err *err)
{
    const uint32_t *rows;
    uint32_t nr = pr_rows(P, &rows), nb = P->o->quick ? 0 : (uint32_t)(sizeof big_rows / sizeof big_rows[0]);
    uint32_t step = P->o->gemm_step;
    if (step)   /* every multiple of step to 8,192 rows (the backend's warm-up range), nothing beyond */
        nr = 8192 / step, nb = 0;
    for (uint32_t mi = 0; mi < P->o->n_models; mi++) {
        const dkv_model *m = &P->o->models[mi];
        uint32_t C = m->hidden, QD = m->n_heads * m->head_dim, QKV = QD + 2 * m->n_kv_heads * m->head_dim, F = m->ffn;
        for (uint32_t i = 0; i < nr + nb; i++) {
            uint32_t T = step ? (i + 1) * step : i < nr ? rows[i] : big_rows[i - nr];
            PR_TRY(one(P, "qkv", "dkv_cuda_gemm (x w^T + bias), the fused q|k|v projection", (gemm_arg){T, C, QKV, 0, m->qkv_bias},
                       err));
            PR_TRY(one(P, "o", "dkv_cuda_gemm with beta 1 (the residual add fused)", (gemm_arg){T, QD, C, 1, false}, err));
            PR_TRY(one(P, "ffn", "dkv_cuda_gemm: the fused gate|up projection (beta 0) and the down projection (beta 1)",
                       (gemm_arg){T, C, 2 * F, 0, false}, err));
            PR_TRY(one(P, "ffn", NULL, (gemm_arg){T, F, C, 1, false}, err));
        }
    }
    return DKV_OK;
}

dkv_status pr_sec_gemm_grid(prof_ctx *P, dkv_err *err)
{
    /* n and k at every power of two and 1.5 times it (2026-12-02: the powers of two alone left Dream-7B's
     * n = 4608, k = 3584 between corners a factor 2 apart, where the time is not a power law) */
    static const uint32_t ns[] = {2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536},
                          ks[] = {2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};
    static const uint32_t nq[] = {2048, 16384}, kq[] = {2048, 8192};
    const uint32_t *rows;
    uint32_t nr = pr_rows(P, &rows), nb = P->o->quick ? 0 : (uint32_t)(sizeof big_rows / sizeof big_rows[0]);
    const uint32_t *N = P->o->quick ? nq : ns, *K = P->o->quick ? kq : ks;
    uint32_t nn = P->o->quick ? 2 : 11, nk = P->o->quick ? 2 : 9;
    /* the rows above 8,192 too (session 14): another model's large Refresh steps are looked up here, and
     * beyond the largest row the lookup extrapolates in proportion (2-9 % high for the class tables) */
    for (uint32_t a = 0; a < nn; a++)
        for (uint32_t b = 0; b < nk; b++)
            for (uint32_t i = 0; i < nr + nb; i++)
                PR_TRY(one(P, "gemm", "dkv_cuda_gemm (beta 0, no bias) over a generic grid: shapes of other models",
                           (gemm_arg){i < nr ? rows[i] : big_rows[i - nr], K[b], N[a], 0, false}, err));
    return DKV_OK;
}

/* ---- the LM head: one chunk (<= 1024 rows) of dkv_cuda_lm_head_argmax: the fp32-logit GEMM and the argmax */

static dkv_status lm_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err)
{
    const gemm_arg *g = arg;
    const dkv_bf16 *x = pr_in(P, (size_t)g->T * g->K * 2, rep, 0), *w = pr_in(P, (size_t)g->N * g->K * 2, rep, 1);
    char *tail = P->out + P->out_bytes - ((size_t)1 << 20);
    return dkv_cuda_lm_head_argmax(P->ctx, (uint32_t *)tail, (float *)(tail + (1 << 19)), x, w, g->T, g->K, g->N,
                                   1024, (float *)P->out, err);
}

dkv_status pr_sec_lm_head(prof_ctx *P, dkv_err *err)
{
    enum { NG = 4 };
    static const uint32_t gen[NG][2] = {{32768, 2048}, {65536, 4096}, {131072, 4096}, {131072, 8192}};
    const uint32_t *rows;
    uint32_t nr = pr_rows(P, &rows), n_nk = 0, nk[8][2];
    for (uint32_t mi = 0; mi < P->o->n_models && n_nk < 8 - NG; mi++)
        nk[n_nk][0] = P->o->models[mi].vocab, nk[n_nk++][1] = P->o->models[mi].hidden;
    for (uint32_t g = 0; !P->o->quick && g < NG; g++)
        nk[n_nk][0] = gen[g][0], nk[n_nk++][1] = gen[g][1];
    for (uint32_t j = 0; j < n_nk; j++)
        for (uint32_t i = 0; i < nr && rows[i] <= 1024; i++) {
            gemm_arg g = {rows[i], nk[j][1], nk[j][0], 0, false};
            double T = g.T, K = g.K, N = g.N, e = pr_est(2 * T * K * N, 2 * (T * K + K * N) + 8 * T * N, 2);
            if ((size_t)g.T * g.N * 4 + ((size_t)1 << 20) > P->out_bytes || !pr_want(P, e))
                continue;
            dkv_prof_table *t = pr_table(P, "lm_head", mnk, 3,
                                         "one chunk of dkv_cuda_lm_head_argmax: the fp32-logit GEMM, then the argmax "
                                         "(2 launches); a step runs ceil(rows / chunk) of them");
            double f[3] = {g.T, g.N, g.K};
            PR_TRY(pr_case(P, pr_measure(P, t, f, 2, e, lm_call, &g, err), err));
        }
    return DKV_OK;
}

/* ---- sustained runs (opts.sustain_s): the clock seconds of one shape's work settle at */

void pr_layer_gemms(const dkv_model *m, uint32_t T, gemm_arg g[4])
{
    uint32_t C = m->hidden, QD = m->n_heads * m->head_dim, QKV = QD + 2 * m->n_kv_heads * m->head_dim, F = m->ffn;
    g[0] = (gemm_arg){T, C, QKV, 0, m->qkv_bias}, g[1] = (gemm_arg){T, QD, C, 1, false};
    g[2] = (gemm_arg){T, C, 2 * F, 0, false}, g[3] = (gemm_arg){T, F, C, 1, false};
}

typedef struct layer_arg {
    gemm_arg g[4];
} layer_arg;

/* One layer's four GEMMs in the forward's order: q|k|v, o (beta 1), gate|up, down (beta 1). */
static dkv_status layer_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err)
{
    layer_arg *l = arg;
    for (int i = 0; i < 4; i++)
        PR_TRY(pr_gemm_call(P, &l->g[i], rep, err));
    return DKV_OK;
}

/* With opts.sustain_gaps_s (kind duty, since session 27): each model's forward as steps of its layer count of whole
 * layers against 1,024 keys at 256, 1,024, 2,048 and 4,096 rows (--quick: 1,024), once for each idle gap between
 * steps: the clock against the duty cycle (docs/COST_MODEL.md "The clock against the duty cycle"). */
static dkv_status sec_duty(prof_ctx *P, dkv_err *err)
{
    static const uint32_t full[] = {256, 1024, 2048, 4096}, quick[] = {1024};
    const uint32_t *rows = P->o->quick ? quick : full;
    uint32_t nr = P->o->quick ? 1 : (uint32_t)(sizeof full / sizeof full[0]);
    for (uint32_t mi = 0; mi < P->o->n_models; mi++)
        for (uint32_t i = 0; i < nr; i++)
            for (uint32_t g = 0; g < P->o->n_sustain_gaps; g++)
                PR_TRY(pr_case(P, pr_layer_sustain(P, mi, rows[i], 1024, P->o->sustain_gaps_s[g], err), err));
    return DKV_OK;
}

/* Each model's layer GEMMs at 64 to 16,384 rows (--quick: 512 and 4,096), then its attention as a dual Reuse step of
 * 256 query rows and a Refresh of 2,048 against 2,048 keys (--quick: the Reuse step), then its whole layer at the
 * same rows against 1,024 keys (since session 26): the clocks seconds of each settle at (docs/COST_MODEL.md "Settle
 * clocks measured").  With opts.sustain_gaps_s the duty runs instead (sec_duty). */
dkv_status pr_sec_sustained(prof_ctx *P, dkv_err *err)
{
    if (P->o->n_sustain_gaps)
        return sec_duty(P, err);
    static const uint32_t full[] = {64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}, quick[] = {512, 4096};
    const uint32_t *rows = P->o->quick ? quick : full;
    uint32_t nr = P->o->quick ? 2 : (uint32_t)(sizeof full / sizeof full[0]);
    for (uint32_t mi = 0; mi < P->o->n_models; mi++) {
        for (uint32_t i = 0; i < nr; i++) {
            uint32_t T = rows[i];
            layer_arg l;
            pr_layer_gemms(&P->o->models[mi], T, l.g);
            bool ok = true;
            for (int k = 0; k < 4; k++)
                ok &= fits(P, &l.g[k]);
            if (ok)
                PR_TRY(pr_case(P, pr_sustain(P, mi, DKV_PROF_SUSTAIN_GEMM, T, 0, 0, 0, layer_call, &l, err), err));
        }
        PR_TRY(pr_case(P, pr_attn_sustain(P, mi, 256, 2048, err), err));
        if (!P->o->quick)
            PR_TRY(pr_case(P, pr_attn_sustain(P, mi, 2048, 2048, err), err));
        for (uint32_t i = 0; i < nr; i++)   /* the whole layer (Reuse-like below 1,024 rows, Refresh-like from it) */
            PR_TRY(pr_case(P, pr_layer_sustain(P, mi, rows[i], 1024, -1, err), err));
    }
    return DKV_OK;
}
