/* ref_step.c - the reference forward over a range of canvas rows, and one step per cache mode.
 *
 * Everything goes through forward_rows(): it computes the rows [q0, q0 + nq) of the canvas,
 * lets them attend to (optionally) what the cache holds plus their own keys, and (optionally)
 * writes KV to the cache.  A full forward is forward_rows over [0, L) with no cache. */
#include "ref/ref_internal.h"

#include "decode/follow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum kv_write {
    KW_NONE = 0,
    KW_APPEND,   /* own rows with positions in [w_lo, w_hi) are appended to every head */
    KW_INPLACE,  /* own rows overwrite the cached rows of the same positions (must exist) */
    KW_SELECT    /* score keys outside the block by the block's queries; keep the top k */
} kv_write;

typedef struct fwd_spec {
    uint32_t q0, nq;          /* rows computed: positions [q0, q0 + nq) */
    bool     read_cache;      /* attend cached rows as well as own rows */
    kv_write write;
    uint32_t w_lo, w_hi;      /* KW_APPEND range */
    uint32_t blk0, blk_len;   /* KW_SELECT: the block (its queries score, its keys are excluded) */
    uint32_t sel_k;           /* KW_SELECT: rows kept per head */
    bool     shared;          /* KW_SELECT: one set for all heads of a layer */
    const dkv_ref_step_args *a;   /* KW_SELECT: keep_pos (selection replay) */
    dkv_ref_step_out *out;        /* KW_SELECT: sel_differs, sel_margin, sel_mag */
} fwd_spec;

typedef struct scratch {
    float *x, *h, *q, *k, *v, *att, *t, *gate, *up;   /* activations */
    float *qg, *og, *gk, *gv;                         /* one KV group, gathered */
    float *score;                                     /* (n_kv_heads, nq) for KW_SELECT */
    uint32_t *pos, *cand, *sel;
} scratch;

static void scratch_free(scratch *s)
{
    float **f[] = {&s->x, &s->h, &s->q, &s->k, &s->v, &s->att, &s->t, &s->gate, &s->up,
                   &s->qg, &s->og, &s->gk, &s->gv, &s->score};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        free(*f[i]);
    free(s->pos);
    free(s->cand);
    free(s->sel);
}

static int scratch_alloc(scratch *s, const dkv_model *m, uint32_t nq, uint32_t max_keys)
{
    size_t C = m->hidden, D = m->head_dim, QD = (size_t)m->n_heads * D, KD = (size_t)m->n_kv_heads * D,
           G = m->n_heads / m->n_kv_heads;
    memset(s, 0, sizeof *s);
    s->x = malloc(nq * C * sizeof(float));
    s->h = malloc(nq * C * sizeof(float));
    s->t = malloc(nq * C * sizeof(float));
    s->q = malloc(nq * QD * sizeof(float));
    s->att = malloc(nq * QD * sizeof(float));
    s->k = malloc(nq * KD * sizeof(float));
    s->v = malloc(nq * KD * sizeof(float));
    s->gate = malloc(nq * (size_t)m->ffn * sizeof(float));
    s->up = malloc(nq * (size_t)m->ffn * sizeof(float));
    s->qg = malloc(nq * G * D * sizeof(float));
    s->og = malloc(nq * G * D * sizeof(float));
    s->gk = malloc((size_t)max_keys * D * sizeof(float));
    s->gv = malloc((size_t)max_keys * D * sizeof(float));
    s->score = malloc((size_t)m->n_kv_heads * nq * sizeof(float));
    s->pos = malloc(nq * sizeof(uint32_t));
    s->cand = malloc(nq * sizeof(uint32_t));
    s->sel = malloc(2 * (size_t)nq * sizeof(uint32_t));   /* top-k indices | own kept rows */
    return s->x && s->h && s->t && s->q && s->att && s->k && s->v && s->gate && s->up && s->qg &&
           s->og && s->gk && s->gv && s->score && s->pos && s->cand && s->sel;
}

static int64_t find_pos(const dkv_ref_kv *kv, size_t slot, uint32_t p)
{
    const uint32_t *pos = kv->pos + slot * kv->cap;
    for (uint32_t i = 0; i < kv->count[slot]; i++)
        if (pos[i] == p)
            return i;
    return -1;
}

static void put_row(dkv_ref_kv *kv, size_t slot, uint32_t row, uint32_t p, const float *k, const float *v)
{
    size_t D = kv->head_dim, base = (slot * kv->cap + row) * D;
    kv->pos[slot * kv->cap + row] = p;
    memcpy(kv->k + base, k, D * sizeof(float));
    memcpy(kv->v + base, v, D * sizeof(float));
}

/* KW_SELECT for one layer: scores are in s->score (n_kv_heads, nq) over own keys (q0 = 0).  With
 * a->keep_pos the recorded sets are kept instead of the own top-k (selection replay), and each
 * set's own boundary goes to out->sel_* (decode/follow.h's dkv_select_boundary). */
static void select_rows(const dkv_model *m, dkv_ref_kv *kv, uint32_t layer, const fwd_spec *sp, scratch *s)
{
    uint32_t D = m->head_dim, Hkv = m->n_kv_heads, nq = sp->nq, nc = 0, K = sp->sel_k;
    uint32_t n_sets = sp->shared ? 1 : Hkv, lo = sp->blk0 - sp->q0, hi = lo + sp->blk_len, *own = s->sel + nq;
    size_t KD = (size_t)Hkv * D;
    const uint32_t *rec = sp->a && sp->a->keep_pos ? sp->a->keep_pos + (size_t)layer * n_sets * K : NULL;
    dkv_ref_step_out *o = sp->out && sp->out->sel_differs && rec ? sp->out : NULL;
    for (uint32_t j = 0; j < nq; j++)   /* candidates: own keys outside the block */
        if (j < lo || j >= hi)
            s->cand[nc++] = j;
    if (sp->shared)
        for (uint32_t g = 1; g < Hkv; g++)
            for (uint32_t j = 0; j < nq; j++)
                s->score[j] += s->score[(size_t)g * nq + j];
    float *cs = s->og;   /* compacted candidate scores; og is free between groups */
    for (uint32_t g = 0; g < Hkv; g++) {
        uint32_t set = sp->shared ? 0 : g;
        const float *sc = s->score + (size_t)set * nq;
        if (g == 0 || !sp->shared) {
            for (uint32_t c = 0; c < nc; c++)
                cs[c] = sc[s->cand[c]];
            dkv_ref_topk(s->sel, cs, nc, K);
            for (uint32_t i = 0; i < K; i++)
                own[i] = s->cand[s->sel[i]];
            if (o) {
                size_t r = (size_t)layer * n_sets + set;
                dkv_select_boundary(sc, nq, lo, hi, sp->q0, own, rec + (size_t)set * K, K, &o->sel_differs[r],
                                    &o->sel_margin[r], &o->sel_mag[r]);
            }
        }
        size_t slot = dkv_ref_kv_slot(kv, layer, g);
        for (uint32_t i = 0; i < K; i++) {
            uint32_t j = rec ? rec[(size_t)set * K + i] - sp->q0 : own[i];
            put_row(kv, slot, i, sp->q0 + j, s->k + j * KD + (size_t)g * D, s->v + j * KD + (size_t)g * D);
        }
        kv->count[slot] = K;
    }
}

/* Attention of one layer, KV group by KV group, writing s->att and the cache as specified. */
static dkv_status attend_layer(const dkv_model *m, dkv_ref_kv *kv, uint32_t layer, const fwd_spec *sp,
                               scratch *s, dkv_err *err)
{
    uint32_t D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, G = H / Hkv, nq = sp->nq;
    size_t QD = (size_t)H * D, KD = (size_t)Hkv * D, GD = (size_t)G * D;
    for (uint32_t g = 0; g < Hkv; g++) {
        size_t slot = kv ? dkv_ref_kv_slot(kv, layer, g) : 0;
        if (sp->write == KW_INPLACE)
            for (uint32_t i = 0; i < nq; i++) {
                int64_t r = find_pos(kv, slot, sp->q0 + i);
                if (r < 0)
                    return dkv_err_set(err, DKV_ESTATE, "ref step: layer %u head %u: position %u is not "
                                       "in the cache for an in-place write", layer, g, sp->q0 + i);
                put_row(kv, slot, (uint32_t)r, sp->q0 + i, s->k + i * KD + (size_t)g * D,
                        s->v + i * KD + (size_t)g * D);
            }
        uint32_t na = 0;
        if (sp->read_cache) {
            uint32_t n = kv->count[slot];
            memcpy(s->gk, kv->k + slot * kv->cap * D, (size_t)n * D * sizeof(float));
            memcpy(s->gv, kv->v + slot * kv->cap * D, (size_t)n * D * sizeof(float));
            na = n;
        }
        for (uint32_t i = 0; i < nq; i++) {
            if (sp->read_cache && find_pos(kv, slot, sp->q0 + i) >= 0)
                continue;   /* own row already in the cache (dual: written in place above) */
            memcpy(s->gk + (size_t)na * D, s->k + i * KD + (size_t)g * D, D * sizeof(float));
            memcpy(s->gv + (size_t)na * D, s->v + i * KD + (size_t)g * D, D * sizeof(float));
            na++;
        }
        for (uint32_t i = 0; i < nq; i++)
            memcpy(s->qg + i * GD, s->q + i * QD + g * GD, GD * sizeof(float));
        dkv_ref_attention(s->og, s->qg, s->gk, s->gv, nq, na, G, 1, D);
        for (uint32_t i = 0; i < nq; i++)
            memcpy(s->att + i * QD + g * GD, s->og + i * GD, GD * sizeof(float));
        if (sp->write == KW_SELECT)   /* own keys only (q0 = 0, no cache read): index = position */
            dkv_ref_attention_scores(s->score + (size_t)g * nq, s->qg + (size_t)(sp->blk0 - sp->q0) * GD, s->gk,
                                     sp->blk_len, na, G, 1, D);
    }
    if (sp->write == KW_SELECT)
        select_rows(m, kv, layer, sp, s);
    if (sp->write == KW_APPEND)
        for (uint32_t g = 0; g < Hkv; g++) {
            size_t slot = dkv_ref_kv_slot(kv, layer, g);
            for (uint32_t i = 0; i < nq; i++) {
                uint32_t p = sp->q0 + i;
                if (p < sp->w_lo || p >= sp->w_hi)
                    continue;
                if (kv->count[slot] >= kv->cap)
                    return dkv_err_set(err, DKV_ENOMEM, "ref step: KV cache full (%u tokens)", kv->cap);
                put_row(kv, slot, kv->count[slot]++, p, s->k + i * KD + (size_t)g * D,
                        s->v + i * KD + (size_t)g * D);
            }
        }
    return DKV_OK;
}

static dkv_status forward_rows(const dkv_ref_weights *w, dkv_ref_kv *kv, const uint32_t *tokens,
                               const fwd_spec *sp, float *hidden, dkv_err *err)
{
    const dkv_model *m = &w->m;
    uint32_t C = m->hidden, F = m->ffn, D = m->head_dim, H = m->n_heads, Hkv = m->n_kv_heads, nq = sp->nq;
    uint32_t max_keys = nq + (sp->read_cache ? kv->cap : 0);
    scratch s;
    if (!scratch_alloc(&s, m, nq, max_keys)) {
        scratch_free(&s);
        return dkv_err_set(err, DKV_ENOMEM, "ref forward: cannot allocate activations for %u rows", nq);
    }
    for (uint32_t i = 0; i < nq; i++)
        s.pos[i] = sp->q0 + i;
    dkv_status st = DKV_OK;
    dkv_ref_embedding(s.x, tokens + sp->q0, w->wte, nq, C);
    for (uint32_t l = 0; l < m->n_layers && st == DKV_OK; l++) {
        const dkv_ref_layer *L = &w->layers[l];
        dkv_ref_rmsnorm(s.h, s.x, L->attn_norm, nq, C, w->rms_eps);
        dkv_ref_matmul(s.q, s.h, L->wq, L->bq, nq, C, H * D);
        dkv_ref_matmul(s.k, s.h, L->wk, L->bk, nq, C, Hkv * D);
        dkv_ref_matmul(s.v, s.h, L->wv, L->bv, nq, C, Hkv * D);
        dkv_ref_rope(s.q, s.pos, nq, H, D, m->rope_theta);
        dkv_ref_rope(s.k, s.pos, nq, Hkv, D, m->rope_theta);
        if ((st = attend_layer(m, kv, l, sp, &s, err)) != DKV_OK)
            break;
        dkv_ref_matmul(s.t, s.att, L->wo, NULL, nq, H * D, C);
        dkv_ref_residual(s.x, s.t, (size_t)nq * C);
        dkv_ref_rmsnorm(s.h, s.x, L->ffn_norm, nq, C, w->rms_eps);
        dkv_ref_matmul(s.gate, s.h, L->w_gate, NULL, nq, C, F);
        dkv_ref_matmul(s.up, s.h, L->w_up, NULL, nq, C, F);
        dkv_ref_swiglu(s.gate, s.gate, s.up, nq, F);
        dkv_ref_matmul(s.t, s.gate, L->w_down, NULL, nq, F, C);
        dkv_ref_residual(s.x, s.t, (size_t)nq * C);
    }
    if (st == DKV_OK)
        dkv_ref_rmsnorm(hidden, s.x, w->ln_f, nq, C, w->rms_eps);
    scratch_free(&s);
    return st;
}

static dkv_status check_tokens(const dkv_model *m, const uint32_t *tokens, uint32_t L, dkv_err *err)
{
    for (uint32_t i = 0; i < L; i++)
        if (tokens[i] >= m->vocab)
            return dkv_err_set(err, DKV_EINVAL, "ref: token %u at position %u is not below vocab %u",
                               tokens[i], i, m->vocab);
    return DKV_OK;
}

dkv_status dkv_ref_forward(const dkv_ref_weights *w, const uint32_t *tokens, uint32_t L, float *hidden,
                           dkv_err *err)
{
    if (L == 0)
        return dkv_err_set(err, DKV_EINVAL, "ref forward: empty canvas");
    dkv_status st = check_tokens(&w->m, tokens, L, err);
    if (st != DKV_OK)
        return st;
    fwd_spec sp = {.q0 = 0, .nq = L};
    return forward_rows(w, NULL, tokens, &sp, hidden, err);
}

static uint32_t sparse_k(const dkv_ref_step_args *a)
{
    double n = (double)(a->canvas_len - a->block_len);
    uint32_t k = (uint32_t)ceil(a->retention * n - 1e-9);
    return k > a->canvas_len - a->block_len ? a->canvas_len - a->block_len : k;
}

/* Every head of every layer holds exactly n rows (what the previous steps should have left). */
static dkv_status expect_rows(const dkv_ref_kv *kv, uint32_t n, const char *why, dkv_err *err)
{
    for (uint32_t l = 0; l < kv->n_layers; l++)
        for (uint32_t g = 0; g < kv->n_kv_heads; g++)
            if (kv->count[dkv_ref_kv_slot(kv, l, g)] != n)
                return dkv_err_set(err, DKV_ESTATE, "ref step: %s: layer %u head %u holds %u KV rows, "
                                   "expected %u (run the block's first step(s) first)", why, l, g,
                                   kv->count[dkv_ref_kv_slot(kv, l, g)], n);
    return DKV_OK;
}

static dkv_status check_args(const dkv_ref_weights *w, const dkv_ref_kv *kv, const dkv_ref_step_args *a,
                             dkv_err *err)
{
    uint32_t L = a->canvas_len;
    if (L == 0 || a->block_len == 0 || a->block_start > L || a->block_len > L - a->block_start)
        return dkv_err_set(err, DKV_EINVAL, "ref step: block [%u, %u + %u) is not inside a canvas of %u",
                           a->block_start, a->block_start, a->block_len, L);
    if (a->mode > DKV_CACHE_SPARSE)
        return dkv_err_set(err, DKV_EINVAL, "ref step: unknown cache mode %d", (int)a->mode);
    if (a->mode != DKV_CACHE_NONE) {
        if (!kv)
            return dkv_err_set(err, DKV_EINVAL, "ref step: mode %s needs a KV cache", dkv_cache_mode_name(a->mode));
        if (kv->cap < L || kv->n_layers != w->m.n_layers || kv->n_kv_heads != w->m.n_kv_heads ||
            kv->head_dim != w->m.head_dim)
            return dkv_err_set(err, DKV_EINVAL, "ref step: KV cache (%u tokens, %u layers, %u heads, dim %u) "
                               "does not fit canvas %u of model '%s'", kv->cap, kv->n_layers, kv->n_kv_heads,
                               kv->head_dim, L, w->m.name);
    }
    if (a->mode == DKV_CACHE_SPARSE && !(a->retention > 0 && a->retention <= 1))
        return dkv_err_set(err, DKV_ERANGE, "ref step: retention %g is not in (0, 1]", a->retention);
    return DKV_OK;
}

/* a->keep_pos (optional): every recorded position on the canvas, outside the block, ascending
 * within its set. */
static dkv_status check_keep_pos(const dkv_model *m, const dkv_ref_step_args *a, uint32_t K, dkv_err *err)
{
    if (!a->keep_pos)
        return DKV_OK;
    size_t sets = (size_t)m->n_layers * (a->shared_set ? 1 : m->n_kv_heads);
    for (size_t r = 0; r < sets; r++)
        for (uint32_t i = 0; i < K; i++) {
            uint32_t p = a->keep_pos[r * K + i];
            if (p >= a->canvas_len || (p >= a->block_start && p < a->block_start + a->block_len) ||
                (i && p <= a->keep_pos[r * K + i - 1]))
                return dkv_err_set(err, DKV_EINVAL, "ref step: keep_pos set %zu: position %u is off the canvas [0, "
                                   "%u), in the block or not ascending", r, p, a->canvas_len);
        }
    return DKV_OK;
}

dkv_status dkv_ref_step(const dkv_ref_weights *w, dkv_ref_kv *kv, const dkv_ref_step_args *a,
                        const uint32_t *tokens, dkv_ref_step_out *out, dkv_err *err)
{
    dkv_status st = check_args(w, kv, a, err);
    if (st == DKV_OK)
        st = check_tokens(&w->m, tokens, a->canvas_len, err);
    if (st != DKV_OK)
        return st;
    uint32_t L = a->canvas_len, s = a->block_start, B = a->block_len;
    fwd_spec sp = {.q0 = 0, .nq = L};
    bool reuse = a->step > (a->mode == DKV_CACHE_SPARSE ? 1u : 0u) && a->mode != DKV_CACHE_NONE;
    uint32_t kept = 0;
    out->phase = reuse ? DKV_REF_PHASE_REUSE : DKV_REF_PHASE_REFRESH;
    out->q_tokens = L;
    out->kv_tokens = L;
    out->kv_write_tokens = 0;
    switch (a->mode) {
    case DKV_CACHE_NONE:
        break;
    case DKV_CACHE_PREFIX:
        if (!reuse) {
            dkv_ref_kv_clear(kv);
            sp.write = KW_APPEND, sp.w_lo = 0, sp.w_hi = s;
            out->kv_write_tokens = s;
        } else {
            if ((st = expect_rows(kv, s, "prefix Reuse", err)) != DKV_OK)
                return st;
            sp.q0 = s, sp.nq = L - s, sp.read_cache = true;
            out->q_tokens = L - s;
        }
        break;
    case DKV_CACHE_DUAL:
        if (!reuse) {
            dkv_ref_kv_clear(kv);
            sp.write = KW_APPEND, sp.w_lo = 0, sp.w_hi = L;
            out->kv_write_tokens = L;
        } else {
            if ((st = expect_rows(kv, L, "dual Reuse", err)) != DKV_OK)
                return st;
            sp.q0 = s, sp.nq = B, sp.read_cache = true, sp.write = KW_INPLACE;
            out->q_tokens = B;
            out->kv_write_tokens = B;
        }
        break;
    case DKV_CACHE_SPARSE:
        kept = sparse_k(a);
        if (a->step == 0) {
            dkv_ref_kv_clear(kv);
        } else if (a->step == 1) {
            dkv_ref_kv_clear(kv);
            sp.write = KW_SELECT, sp.blk0 = s, sp.blk_len = B, sp.sel_k = kept, sp.shared = a->shared_set;
            sp.a = a, sp.out = out;
            out->kv_write_tokens = kept;
            if ((st = check_keep_pos(&w->m, a, kept, err)) != DKV_OK)
                return st;
        } else {
            if ((st = expect_rows(kv, kept, "sparse Reuse", err)) != DKV_OK)
                return st;
            sp.q0 = s, sp.nq = B, sp.read_cache = true;
            out->q_tokens = B;
            out->kv_tokens = kept + B;
        }
        break;
    }
    float *hidden = malloc((size_t)sp.nq * w->m.hidden * sizeof(float));
    if (!hidden)
        return dkv_err_set(err, DKV_ENOMEM, "ref step: cannot allocate %u hidden rows", sp.nq);
    st = forward_rows(w, kv, tokens, &sp, hidden, err);
    const float *blk = hidden + (size_t)(s - sp.q0) * w->m.hidden;   /* the block's B rows */
    if (st == DKV_OK && out->block_hidden)
        memcpy(out->block_hidden, blk, (size_t)B * w->m.hidden * sizeof(float));
    if (st == DKV_OK && out->block_logits)
        dkv_ref_matmul(out->block_logits, blk, w->lm_head, NULL, B, w->m.hidden, w->m.vocab);
    if (st == DKV_OK && (out->argmax || out->conf))
        st = dkv_ref_lm_head_argmax(out->argmax, out->conf, blk, w->lm_head, B, w->m.hidden, w->m.vocab,
                                    a->logit_chunk, err);
    free(hidden);
    return st;
}
