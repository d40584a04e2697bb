/* cpu_fwd.c - one item's forward on the CPU: core/ref's architecture (ref.h) with the GEMMs and
 * the attention products through cblas_sgemm (OpenBLAS), KV read from and written to the pool
 * (cpu_pool.c).  core/ref's plain loops stay the golden model; tests/unit/test_cpu_backend.c
 * checks this forward against them. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "cpu/cpu_internal.h"

/* options.bf16_activations: rounds n values to bf16 in place, where the CUDA backend stores a bf16
 * tensor (an emulation of its precision; the tie protocol's tests use it). */
static void act(const cpu_backend *b, float *p, size_t n)
{
    if (!b->o.bf16_activations)
        return;
    for (size_t i = 0; i < n; i++)
        p[i] = dkv_cpu_bf16_decode(dkv_cpu_bf16_encode(p[i]));
}

/* out (T, OC) = in (T, C) w^T; w (OC, C) */
static void gemm_wt(float *out, const float *in, const float *w, const float *bias, uint32_t T, uint32_t C,
                    uint32_t OC)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, (int)OC, (int)C, 1.0f, in, (int)C, w, (int)C, 0.0f,
                out, (int)OC);
    if (bias)
        for (uint32_t t = 0; t < T; t++)
            for (uint32_t o = 0; o < OC; o++)
                out[(size_t)t * OC + o] += bias[o];
}

/* Attention of the G query heads of one KV group: q rows (nq, stride ldq) at column offset of the
 * group, keys/values (na, D), output into att (same layout as q).  Rows [m_lo, m_hi) add their
 * normalised entropy -sum p ln p / ln(na) per head to b->ent_sum / ent_n (setup.on_entropy). */
static void attend_group(cpu_backend *b, const float *q, size_t ldq, float *att, const float *gk, const float *gv,
                         uint32_t nq, uint32_t na, uint32_t G, uint32_t m_lo, uint32_t m_hi)
{
    uint32_t D = b->m.head_dim;
    float scale = 1.0f / sqrtf((float)D), *S = b->sc;
    for (uint32_t hh = 0; hh < G; hh++) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)na, (int)D, scale, q + (size_t)hh * D,
                    (int)ldq, gk, (int)D, 0.0f, S, (int)na);
        for (uint32_t i = 0; i < nq; i++) {
            float *r = S + (size_t)i * na, mx = -INFINITY;
            for (uint32_t j = 0; j < na; j++)
                mx = r[j] > mx ? r[j] : mx;
            if (i >= b->lam_lo && i < b->lam_hi)   /* a selecting item's block rows */
                b->lam = mx > b->lam ? mx : b->lam;
            double sum = 0;
            for (uint32_t j = 0; j < na; j++) {
                r[j] = expf(r[j] - mx);
                sum += r[j];
            }
            float inv = (float)(1.0 / sum);
            for (uint32_t j = 0; j < na; j++)
                r[j] *= inv;
            if (i >= m_lo && i < m_hi && na > 1) {
                double h = 0;
                for (uint32_t j = 0; j < na; j++)
                    h -= r[j] > 0 ? (double)r[j] * log((double)r[j]) : 0.0;
                b->ent_sum += h / log((double)na);
                b->ent_n++;
            }
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nq, (int)D, (int)na, 1.0f, S, (int)na, gv, (int)D,
                    0.0f, att + (size_t)hh * D, (int)ldq);
    }
}

/* SELECT (sparse, the selecting Refresh, q0 = 0): keys outside the block scored by the block's
 * queries (b->score, (Hkv, L)), the top keep per head (or one shared set) stored in slots 0..;
 * with a trajectory that carries selections the recorded sets are kept instead (decode/follow.h),
 * and on_select sees, per set, whether this backend's own top-k differs and its boundary margin. */
static dkv_status select_store(cpu_backend *b, const cpu_item *x, uint32_t l, dkv_err *err)
{
    uint32_t D = b->m.head_dim, Hkv = b->m.n_kv_heads, L = x->nq, nc = 0, K = x->keep;
    uint32_t n_sets = x->shared_set ? 1 : Hkv, lo = x->s_b - x->q0, hi = lo + x->B;
    size_t KD = (size_t)Hkv * D;
    for (uint32_t j = 0; j < L; j++)
        if (j < lo || j >= hi)
            b->cand[nc++] = j;
    if (x->shared_set)
        for (uint32_t g = 1; g < Hkv; g++)
            for (uint32_t j = 0; j < L; j++)
                b->score[j] += b->score[(size_t)g * L + j];
    const uint32_t *rec = NULL;
    if (b->o.follow)
        CPU_TRY(dkv_follow_select(&b->o.follow[x->req], x->req, b->step_index, l, n_sets, K, b->rq[x->req].L, x->s_b,
                                  x->B, &rec, err));
    float *cs = b->row;
    for (uint32_t s = 0; s < n_sets; s++) {
        const float *sc = b->score + (size_t)s * L;
        for (uint32_t c = 0; c < nc; c++)
            cs[c] = sc[b->cand[c]];
        dkv_ref_topk(b->sel, cs, nc, K);
        uint32_t *kept = b->selk + (size_t)s * K;
        for (uint32_t i = 0; i < K; i++) {
            b->selo[i] = b->cand[b->sel[i]];
            kept[i] = rec ? rec[(size_t)s * K + i] : x->q0 + b->selo[i];
        }
        dkv_select_boundary(sc, L, lo, hi, x->q0, b->selo, kept, K, &b->seld[s], &b->selm[s], &b->selm[Hkv + s]);
    }
    const float **rk = (const float **)b->qg, **rv = rk + K;   /* row pointers (scratch) */
    for (uint32_t g = 0; g < Hkv; g++) {
        const uint32_t *kept = b->selk + (x->shared_set ? 0 : (size_t)g * K);
        for (uint32_t i = 0; i < K; i++) {
            uint32_t j = kept[i] - x->q0;
            rk[i] = b->k + j * KD + (size_t)g * D;
            rv[i] = b->v + j * KD + (size_t)g * D;
        }
        cpu_store(b, x->tab, l, 0, g, 0, K, K, rk);   /* the packed set replaces the slots */
        cpu_store(b, x->tab, l, 1, g, 0, K, K, rv);
    }
    if (b->o.on_select) {
        dkv_select_report r = {.step_index = b->step_index, .request = x->req, .layer = l, .n_sets = n_sets, .keep = K,
                               .followed = rec != NULL, .kept = b->selk, .differs = b->seld, .margin = b->selm,
                               .mag = b->selm + Hkv, .lam = b->lam};
        b->o.on_select(b->o.on_select_user, &r);
    }
    return DKV_OK;
}

/* STORE of the item's own rows whose positions are in [w_lo, w_lo + w_n), slot = position. */
static void store_own(cpu_backend *b, const cpu_item *x, uint32_t l)
{
    uint32_t D = b->m.head_dim, Hkv = b->m.n_kv_heads;
    size_t KD = (size_t)Hkv * D;
    uint32_t lo = x->w_lo > x->q0 ? x->w_lo : x->q0, hi = x->w_lo + x->w_n < x->q0 + x->nq ? x->w_lo + x->w_n
                                                                                            : x->q0 + x->nq;
    if (hi <= lo)
        return;
    uint32_t valid = x->need_tokens > hi ? x->need_tokens : hi;   /* as cuda/backend_fwd.c's fp8_layer */
    const float **rk = (const float **)b->qg, **rv = rk + (hi - lo);
    for (uint32_t g = 0; g < Hkv; g++) {
        for (uint32_t p = lo; p < hi; p++) {
            rk[p - lo] = b->k + (p - x->q0) * KD + (size_t)g * D;
            rv[p - lo] = b->v + (p - x->q0) * KD + (size_t)g * D;
        }
        cpu_store(b, x->tab, l, 0, g, lo, hi - lo, valid, rk);
        cpu_store(b, x->tab, l, 1, g, lo, hi - lo, valid, rv);
    }
}

static dkv_status attention_layer(cpu_backend *b, const cpu_item *x, uint32_t l, dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, G = H / Hkv, nq = x->nq;
    size_t QD = (size_t)H * D, KD = (size_t)Hkv * D;
    if (x->inplace)
        store_own(b, x, l);
    b->lam = -INFINITY, b->lam_lo = x->s_b - x->q0, b->lam_hi = x->write == CW_SELECT ? b->lam_lo + x->B : 0;
    for (uint32_t g = 0; g < Hkv; g++) {
        uint32_t na = 0;
        if (x->n_cache) {
            cpu_load(b, x->tab, l, 0, g, x->n_cache, b->gk);
            cpu_load(b, x->tab, l, 1, g, x->n_cache, b->gv);
            na = x->n_cache;
        }
        for (uint32_t i = 0; i < x->n_own; i++, na++) {
            memcpy(b->gk + (size_t)na * D, b->k + i * KD + (size_t)g * D, D * sizeof(float));
            memcpy(b->gv + (size_t)na * D, b->v + i * KD + (size_t)g * D, D * sizeof(float));
        }
        uint32_t m_lo = x->measure ? x->s_b - x->q0 : 0, m_hi = x->measure ? m_lo + x->B : 0;
        attend_group(b, b->q + (size_t)g * G * D, QD, b->att + (size_t)g * G * D, b->gk, b->gv, nq, na, G, m_lo, m_hi);
        if (x->write == CW_SELECT) {   /* block queries of this group, contiguous (B, G*D) */
            for (uint32_t i = 0; i < x->B; i++)
                memcpy(b->qg + (size_t)i * G * D, b->q + (size_t)(x->s_b - x->q0 + i) * QD + (size_t)g * G * D,
                       (size_t)G * D * sizeof(float));
            dkv_ref_attention_scores(b->score + (size_t)g * nq, b->qg, b->gk, x->B, na, G, 1, D);
        }
    }
    if (x->write == CW_SELECT)
        return select_store(b, x, l, err);
    if (x->write == CW_STORE && !x->inplace)
        store_own(b, x, l);
    return DKV_OK;
}

/* The block's rows: final norm, logits (B, V), argmax and softmax confidence. */
static void lm_head(cpu_backend *b, const cpu_item *x)
{
    const dkv_model *m = &b->m;
    uint32_t C = m->hidden, V = m->vocab, B = x->B;
    const float *blk = b->x + (size_t)(x->s_b - x->q0) * C;
    dkv_ref_rmsnorm(b->hid, blk, b->w->ln_f, B, C, b->w->rms_eps);
    act(b, b->hid, (size_t)B * C);
    gemm_wt(b->logits, b->hid, b->w->lm_head, NULL, B, C, V);
    for (uint32_t i = 0; i < B; i++)   /* the scoring's row statistics (decode/score.h): one definition */
        dkv_score_row(b->logits + (size_t)i * V, V, &b->argmax[i], &b->conf[i], NULL);
}

dkv_status cpu_forward(cpu_backend *b, const cpu_item *x, dkv_err *err)
{
    const dkv_model *m = &b->m;
    const dkv_ref_weights *w = b->w;
    uint32_t C = m->hidden, F = m->ffn, D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, nq = x->nq;
    const cpu_req *r = &b->rq[x->req];
    for (uint32_t i = 0; i < nq; i++) {
        b->pos[i] = x->q0 + i;
        if (r->canvas[x->q0 + i] >= m->vocab)
            return dkv_err_set(err, DKV_EINVAL, "cpu backend: request %u: token %u at position %u is not below vocab %u",
                               x->req, r->canvas[x->q0 + i], x->q0 + i, m->vocab);
    }
    dkv_ref_embedding(b->x, r->canvas + x->q0, w->wte, nq, C);
    act(b, b->x, (size_t)nq * C);
    for (uint32_t l = 0; l < m->n_layers; l++) {
        const dkv_ref_layer *Ly = &w->layers[l];
        dkv_ref_rmsnorm(b->h, b->x, Ly->attn_norm, nq, C, w->rms_eps);
        act(b, b->h, (size_t)nq * C);
        gemm_wt(b->q, b->h, Ly->wq, Ly->bq, nq, C, H * D);
        gemm_wt(b->k, b->h, Ly->wk, Ly->bk, nq, C, Hkv * D);
        gemm_wt(b->v, b->h, Ly->wv, Ly->bv, nq, C, Hkv * D);
        act(b, b->q, (size_t)nq * H * D), act(b, b->k, (size_t)nq * Hkv * D), act(b, b->v, (size_t)nq * Hkv * D);
        dkv_ref_rope(b->q, b->pos, nq, H, D, m->rope_theta);
        dkv_ref_rope(b->k, b->pos, nq, Hkv, D, m->rope_theta);
        act(b, b->q, (size_t)nq * H * D), act(b, b->k, (size_t)nq * Hkv * D);
        CPU_TRY(attention_layer(b, x, l, err));
        act(b, b->att, (size_t)nq * H * D);
        gemm_wt(b->t, b->att, Ly->wo, NULL, nq, H * D, C);
        dkv_ref_residual(b->x, b->t, (size_t)nq * C);
        act(b, b->x, (size_t)nq * C);
        dkv_ref_rmsnorm(b->h, b->x, Ly->ffn_norm, nq, C, w->rms_eps);
        act(b, b->h, (size_t)nq * C);
        gemm_wt(b->gate, b->h, Ly->w_gate, NULL, nq, C, F);
        gemm_wt(b->up, b->h, Ly->w_up, NULL, nq, C, F);
        act(b, b->gate, (size_t)nq * F), act(b, b->up, (size_t)nq * F);
        dkv_ref_swiglu(b->gate, b->gate, b->up, nq, F);
        act(b, b->gate, (size_t)nq * F);
        gemm_wt(b->t, b->gate, Ly->w_down, NULL, nq, F, C);
        dkv_ref_residual(b->x, b->t, (size_t)nq * C);
        act(b, b->x, (size_t)nq * C);
    }
    lm_head(b, x);
    return DKV_OK;
}
