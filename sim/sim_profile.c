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

/* The kernel's key splits for a launch of `base` (heads x query tiles) clusters whose longest item
 * reads amax keys (cuda/attention.cu, dkv_cuda_attn_batch_plan): enough CTAs to fill the GPU (2 per
 * SM), at most a cluster's 8, at least 16 keys each. */
static double attn_splits(const dkv_gpu *g, double base, double amax)
{
    double target = 2.0 * g->n_sms, S = base >= target ? 1 : ceil(target / base);
    S = fmin(fmin(S, 8), ceil(amax / 16));
    return S < 1 ? 1 : S;
}

/* A Reuse launch by the kernel's launch geometry (docs/COST_MODEL.md "Attention of another head
 * configuration"): a launch of H x tiles clusters of S CTAs (S key splits) runs in W waves of the
 * clusters the GPU holds at once (the profile's attn_waves), and the same S (the same keys per CTA)
 * in the same W costs the same whatever the head count or the item count.  So the reference is the
 * measured Reuse launch (its rows below its keys) of n tiles of the measured configuration's rh heads
 * with the target's S and W, n nearest to the target's clusters; NAN when the profile has no wave
 * counts or no such n.  Used for a head configuration the profile lacks (rh the nearest measured) and
 * for a Reuse launch whose rows reach its keys, which no profile row can hold (rh = H; "Reuse launches
 * of many short items"). */
static double attn_waves(const dkv_profile *p, const dkv_gpu *g, const sim_attn_geo *x, double H, double rh,
                         double rk, double D, double a, int md)
{
    const dkv_profile_info *in = dkv_profile_get_info(p);
    if (!x || !in || g->n_sms == 0 || (D != 64 && D != 128) || x->tiles <= 0)
        return NAN;
    const double *cl = in->attn_clusters[D == 128][x->group];
    double S = attn_splits(g, H * x->tiles, x->amax);
    if (!(cl[(int)S - 1] > 0))
        return NAN;
    double W = ceil(H * x->tiles / cl[(int)S - 1]), best = INFINITY, bn = 0;
    for (double n = 1; n <= 4 * x->tiles + 64; n++) {
        double Sn = attn_splits(g, rh * n, x->amax);
        if (Sn != S || ceil(rh * n / cl[(int)Sn - 1]) != W || n * x->tile_rows >= a)
            continue;
        double d = fabs(rh * n - H * x->tiles);
        if (d < best)
            best = d, bn = n;
    }
    if (bn == 0)
        return NAN;
    return dkv_profile_attn(p, bn * x->tile_rows, a, rh, rk, D, md);
}

/* One mode's attention.  A Reuse launch (x given: the small group's items, prefix items, or any launch
 * whose rows are below its keys) whose rows reach its keys is costed by the launch geometry: the
 * profile's rows with q_rows >= kv_tokens are Refresh-like items, another kernel configuration.  A head
 * configuration the profile lacks (another model's) is the nearest measured one: for a Reuse launch by
 * the launch geometry, else scaled by the ratio of their rooflines. */
static double attn_mode(const dkv_profile *p, const dkv_model *m, const dkv_gpu *g, double q, double a, int md,
                        const sim_attn_geo *x)
{
    double H = m->n_heads, Hk = m->n_kv_heads, D = m->head_dim;
    bool reuse = x && (x->group == 0 || md == SIM_ATTN_MODE_PREFIX || q < a);
    double t = dkv_profile_attn(p, q, a, H, Hk, D, md);
    if (!isnan(t)) {
        double w = reuse && q >= a ? attn_waves(p, g, x, H, H, Hk, D, a, md) : NAN;
        return isnan(w) ? t : w;
    }
    double rh, rk;
    t = dkv_profile_attn_nearest(p, q, a, H, Hk, D, md, &rh, &rk);
    if (isnan(t))
        return t;
    double w = reuse ? attn_waves(p, g, x, H, rh, rk, D, a, md) : NAN;
    return isnan(w) ? t * attn_roof(g, q, a, H, Hk, D) / attn_roof(g, q, a, rh, rk, D) : w;
}

/* A single Reuse item of a keys (one query tile), c(a) below: the profile's row, or beyond its longest keys
 * affinely from its two longest (a fixed part and a part per key); NAN when it has neither. */
static double one_item(const dkv_profile *p, const dkv_model *m, const dkv_gpu *g, double tile, double a, int md,
                       const sim_attn_geo *one)
{
    double c = attn_mode(p, m, g, tile, a, md, one), e = a;
    for (int i = 0; i < 40 && isnan(c); i++)   /* the longest measured keys below a, within 1.25x */
        e /= 1.25, c = attn_mode(p, m, g, tile, e, md, one);
    if (isnan(c) || e == a)
        return c;
    double c2 = attn_mode(p, m, g, tile, e / 2, md, one);
    return isnan(c2) || c2 >= c ? c * a / e : c + (a - e) * (c - c2) / (e / 2);
}

/* Attention (cuda/attention.cu, dkv_cuda_attention_batch): the items of at most 32 queries (Reuse
 * blocks, group 0: CTAs of 32 query rows) and the larger ones (group 1: 64 rows) are two launches.
 * In a group every CTA takes one query tile of one head against one key split of its item; the
 * group's split count S fills the GPU (2 CTAs per SM, at most 8 splits, at least 16 keys each),
 * and 3 CTAs fit on an SM at once.  A group is looked up at its tile rows (the kernel computes whole
 * tiles: an item of 416 rows costs 7 tiles of 64, 448 rows; the profile's rows are whole tiles) and
 * its work-weighted mean keys ā (the profile's uniform batches).  Unequal items: the kernel ends with
 * its longest CTAs, so the time is the larger of the work (the uniform batch at ā) and the critical
 * path, the longest item's CTAs of a_max / S keys, which take as long as a launch of one item whose
 * own S1 splits give its CTAs those keys:
 *
 *     t = max(A(tile rows, ā), c(a_max · S1 / S)),   c(a) = A(tile, a) of one item (one_item)
 *
 * Uniform items (a_max = ā) give the profile's value exactly.  (Since session 34, docs/COST_MODEL.md
 * "Attention of unequal items": before, the uniform batch was stretched by c(a_max) / (W c(ā)); device calls
 * 111 and 112 measured the attention of a few unequal Reuse items per class nearer this form, 8.7 % against
 * 19.6 % mean |error| over call 112's steps of 2-8 items.) */
double sim_attn_group(const dkv_profile *p, const dkv_model *m, const dkv_gpu *g, const sim_attn_grp *x, int md,
                      bool big)
{
    if (x->rows <= 0)
        return 0;
    double abar = x->qa / x->rows, rows = x->tiles * (big ? 64 : 32);   /* tile rows */
    /* the larger group's items that read the pool (prefix Reuse) run as 64-row tiles with a cache:
     * the profile's mode 3 where it has it and they are most of the group's rows (one launch) */
    double tile = 32, t = NAN;
    sim_attn_geo geo = {.tiles = x->tiles, .amax = x->amax, .tile_rows = big ? 64 : 32, .group = big};
    if (big && md == DKV_ATTN_DENSE && x->cached * 2 > x->rows) {
        t = attn_mode(p, m, g, rows, abar, SIM_ATTN_MODE_PREFIX, &geo);
        if (!isnan(t))
            md = SIM_ATTN_MODE_PREFIX, tile = 64;
    }
    if (isnan(t))
        t = attn_mode(p, m, g, rows, abar, md, &geo);
    if (isnan(t) || x->amax <= abar * (1 + 1e-9) || g->n_sms == 0)
        return t;
    double H = m->n_heads, S = attn_splits(g, H * x->tiles, x->amax), S1 = attn_splits(g, H, x->amax);
    sim_attn_geo one = {.tiles = 1, .amax = x->amax, .tile_rows = tile, .group = big};
    double cmax = one_item(p, m, g, tile, x->amax * S1 / S, md, &one);
    return isnan(cmax) ? t : fmax(t, cmax);
}

static double attention(const dkv_profile *p, const dkv_model *m, const dkv_gpu *g, const dkv_step_plan *plan)
{
    sim_attn_grp grp[3][2] = {{{0}}};
    double t = 0;
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const dkv_step_item *it = &plan->items[i];
        if (it->q_tokens == 0)
            continue;
        unsigned md = it->attn < 3 ? it->attn : 0, big = it->q_tokens > SIM_ATTN_SMALL_Q;
        sim_attn_grp *x = &grp[md][big];
        x->rows += it->q_tokens;
        x->qa += (double)it->q_tokens * it->kv_tokens;
        x->amax = fmax(x->amax, it->kv_tokens);
        x->tiles += ceil((double)it->q_tokens / (big ? 64 : 32));
        if (it->kv_tokens > it->q_tokens)
            x->cached += it->q_tokens;
    }
    for (int md = 0; md < 3; md++)
        for (int b = 0; b < 2; b++)
            t += sim_attn_group(p, m, g, &grp[md][b], md, b == 1);
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
