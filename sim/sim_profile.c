/* sim_profile.c - class times of a step plan from a measured profile (docs/COST_MODEL.md,
 * "Timing from a profile").  A class the profile cannot cost (no table, a shape outside the
 * measured range) is left NAN and the caller keeps its roofline time. */
#include "sim/sim_internal.h"

#include <math.h>

#include "cost/profile.h"

/* A GEMM of m rows per weight stream (each stream runs its own GEMM over its share of rows). */
static double gemm(const dkv_profile *p, dkv_prof_tab cls, double streams, double m, double n, double k)
{
    return streams * dkv_profile_gemm(p, cls, m / streams, n, k);
}

/* The roofline of one attention call as dkv profile batches it (PROFILE_FORMAT.md): q < a, items of
 * 32 queries each reading a keys; q >= a, q / a items attending their own rows.  Only its ratio
 * between two head configurations is used. */
static double attn_roof(const dkv_gpu *g, double q, double a, double H, double Hk, double D)
{
    double items = q < a ? ceil(q / 32) : q / a;
    double tf = 4 * q * a * H * D / g->flops_bf16, tb = 2 * (2 * q * H * D + items * a * 2 * Hk * D) / g->hbm_bw;
    return tf > tb ? tf : tb;
}

/* One mode's attention; a head configuration the profile lacks (another model's) is the nearest
 * measured one scaled by the ratio of their rooflines. */
static double attn_mode(const dkv_profile *p, const dkv_model *m, const dkv_gpu *g, double q, double a, int md)
{
    double H = m->n_heads, Hk = m->n_kv_heads, D = m->head_dim;
    double t = dkv_profile_attn(p, q, a, H, Hk, D, md);
    if (!isnan(t))
        return t;
    double rh, rk;
    t = dkv_profile_attn_nearest(p, q, a, H, Hk, D, md, &rh, &rk);
    return isnan(t) ? t : t * attn_roof(g, q, a, H, Hk, D) / attn_roof(g, q, a, rh, rk, D);
}

/* Attention: one call over all items; a mode's items are looked up at their total rows and
 * their work-weighted mean keys (sum q a / sum q). */
static double attention(const dkv_profile *p, const dkv_model *m, const dkv_gpu *g, const dkv_step_plan *plan)
{
    double rows[3] = {0}, qa[3] = {0}, t = 0;
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const dkv_step_item *it = &plan->items[i];
        unsigned md = it->attn < 3 ? it->attn : 0;
        rows[md] += it->q_tokens;
        qa[md] += (double)it->q_tokens * it->kv_tokens;
    }
    for (int md = 0; md < 3; md++)
        if (rows[md] > 0)
            t += attn_mode(p, m, g, rows[md], qa[md] / rows[md], md);
    return t;
}

/* Sparse selections (one per selecting item) and zero-copy host reads (PCIe time of the
 * class's segments). */
static double gather(const dkv_profile *p, const dkv_model *m, const dkv_gpu *g, const dkv_step_plan *plan,
                     const dkv_cost_step *cs)
{
    double t = 0;
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const dkv_step_item *it = &plan->items[i];
        if (it->kv_write_tokens && it->kv_select_rows)
            t += dkv_profile_select(p, it->kv_select_rows, it->q_tokens, m->n_heads, m->n_kv_heads, m->head_dim);
    }
    for (uint32_t i = 0; i < cs->n_segs; i++)
        if (cs->segs[i].kind == DKV_KCLASS_KV_GATHER && cs->segs[i].via == DKV_COST_VIA_PCIE_H2D)
            t += cs->segs[i].bytes / g->pcie_h2d_pinned;
    return t;
}

static double ew(const dkv_profile *p, int kind, double rows, double cols)
{
    return dkv_profile_elementwise(p, kind, rows, cols);
}

/* The LM head: the final norm per item with logit rows, then the chunks (GEMM + argmax). */
static double lm_head(const dkv_profile *p, const dkv_model *m, const dkv_step_plan *plan, const dkv_cost_step *cs)
{
    double t = 0, R = cs->logit_rows, s = cs->weight_streams;
    for (uint32_t i = 0; i < plan->n_items; i++)
        if (plan->items[i].logit_rows)
            t += ew(p, DKV_PROF_EW_RMSNORM, plan->items[i].logit_rows, m->hidden);
    double C = plan->max_logit_rows ? plan->max_logit_rows : R;
    double full = floor(R / C), rem = R - full * C;
    if (full > 0)
        t += full * gemm(p, DKV_PT_LM_HEAD, s, s * C, m->vocab, m->hidden);
    if (rem > 0)
        t += gemm(p, DKV_PT_LM_HEAD, s, s * rem, m->vocab, m->hidden);
    return t;
}

/* Low-rank compression (COMPRESS orders; cuda/arena.c compress): the profile's rows are the rows of
 * all the projected matrices (tokens x layers x 2 x kv_heads) of head_dim columns at the backend's
 * rank, llround(pcie_bytes / device_bytes x head_dim). */
static double compress(const dkv_profile *p, const dkv_model *m, const dkv_step_plan *plan)
{
    double t = 0, D = m->head_dim, eb = dkv_dtype_bytes(m->kv_dtype);
    bool any = false;
    for (uint32_t i = 0; i < plan->n_xfers; i++) {
        const dkv_xfer *x = &plan->xfers[i];
        if (x->kind != DKV_XFER_COMPRESS || !x->device_bytes)
            continue;
        double ratio = (double)x->pcie_bytes / (double)x->device_bytes, r = llround(ratio * D);
        r = r < 1 ? 1 : r > 64 ? 64 : r;   /* DKV_LOWRANK_MAX_RANK */
        t += dkv_profile_compress(p, (double)x->device_bytes / (D * eb), D, r);
        any = true;
    }
    return any ? t : NAN;
}

void sim_profile_times(const dkv_model *m, const dkv_gpu *g, const dkv_step_plan *plan, const dkv_cost_step *cs,
                       double t_layer[DKV_KCLASS_N], double t_once[DKV_KCLASS_N])
{
    for (int c = 0; c < DKV_KCLASS_N; c++)
        t_layer[c] = t_once[c] = NAN;
    const dkv_profile *p = g->profile;
    if (!p || plan->n_items == 0)
        return;
    const double Q = cs->q_rows, s = cs->weight_streams, d = m->hidden, f = m->ffn;
    const double hq = (double)m->n_heads * m->head_dim, hkv = (double)m->n_kv_heads * m->head_dim;
    t_layer[DKV_KCLASS_QKV] = gemm(p, DKV_PT_QKV, s, Q, hq + 2 * hkv, d);
    t_layer[DKV_KCLASS_O] = gemm(p, DKV_PT_O, s, Q, d, hq);
    t_layer[DKV_KCLASS_FFN] = gemm(p, DKV_PT_FFN, s, Q, 2 * f, d) + gemm(p, DKV_PT_FFN, s, Q, d, f);
    t_layer[DKV_KCLASS_ATTN] = attention(p, m, g, plan);
    if (cs->any_store)
        t_layer[DKV_KCLASS_KV_STORE] = dkv_profile_kv_store(p, Q, m->n_heads, m->n_kv_heads, m->head_dim);
    if (cs->layer[DKV_KCLASS_KV_GATHER].launches)
        t_layer[DKV_KCLASS_KV_GATHER] = gather(p, m, g, plan, cs);
    double el = 2 * ew(p, DKV_PROF_EW_RMSNORM, Q, d) + ew(p, DKV_PROF_EW_SWIGLU, Q, f);
    if (!cs->any_store)
        el += ew(p, DKV_PROF_EW_ROPE, Q, hq + hkv);
    t_layer[DKV_KCLASS_ELEMENTWISE] = el;
    double once = ew(p, DKV_PROF_EW_BOOKKEEP, plan->n_items, 1) * (cs->logit_rows > 0 ? 2 : 1);
    for (uint32_t i = 0; i < plan->n_items; i++)
        once += ew(p, DKV_PROF_EW_EMBEDDING, plan->items[i].q_tokens, d);
    t_once[DKV_KCLASS_ELEMENTWISE] = once;
    if (cs->logit_rows > 0)
        t_once[DKV_KCLASS_LM_HEAD] = lm_head(p, m, plan, cs);
    if (cs->once[DKV_KCLASS_COMPRESS].launches)
        t_once[DKV_KCLASS_COMPRESS] = compress(p, m, plan);
}
