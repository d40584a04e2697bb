/* model.c - byte and FLOP arithmetic on model shapes and GPU descriptions. */
#include "model/model.h"

#include <math.h>
#include <string.h>

uint32_t dkv_dtype_bytes(dkv_dtype t)
{
    switch (t) {
    case DKV_DTYPE_BF16:
    case DKV_DTYPE_FP16: return 2;
    case DKV_DTYPE_FP32: return 4;
    case DKV_DTYPE_FP8: return 1;
    }
    return 0;
}

static const char *const dtype_names[] = {"bf16", "fp16", "fp32", "fp8"};
const dkv_names dkv_dtype_names = DKV_NAMES("dtype", dtype_names);

const char *dkv_dtype_name(dkv_dtype t) { return dkv_names_at(&dkv_dtype_names, (int)t); }

dkv_status dkv_model_validate(const dkv_model *m, dkv_err *err)
{
#define NONZERO(f) \
    if (m->f == 0) return dkv_err_set(err, DKV_EINVAL, "model '%s': field '" #f "' must be > 0", m->name)
    NONZERO(n_layers);
    NONZERO(hidden);
    NONZERO(ffn);
    NONZERO(n_heads);
    NONZERO(n_kv_heads);
    NONZERO(head_dim);
    NONZERO(vocab);
    NONZERO(max_len);
#undef NONZERO
    if (m->n_heads % m->n_kv_heads != 0)
        return dkv_err_set(err, DKV_EINVAL, "model '%s': n_heads (%u) is not a multiple of n_kv_heads (%u)",
                           m->name, m->n_heads, m->n_kv_heads);
    if (m->head_dim % 2 != 0)
        return dkv_err_set(err, DKV_EINVAL, "model '%s': head_dim (%u) must be even for RoPE", m->name,
                           m->head_dim);
    if (!(m->rope_theta > 0))
        return dkv_err_set(err, DKV_EINVAL, "model '%s': field 'rope_theta' must be > 0", m->name);
    if (m->mask_id >= m->vocab)
        return dkv_err_set(err, DKV_EINVAL, "model '%s': mask_id (%u) must be < vocab (%u)", m->name,
                           m->mask_id, m->vocab);
    return DKV_OK;
}

uint64_t dkv_model_layer_params(const dkv_model *m)
{
    uint64_t d = m->hidden, q = (uint64_t)m->n_heads * m->head_dim, kv = (uint64_t)m->n_kv_heads * m->head_dim;
    uint64_t attn = d * q + 2 * d * kv + q * d + (m->qkv_bias ? q + 2 * kv : 0);
    uint64_t ffn = 3 * d * (uint64_t)m->ffn;
    uint64_t norms = 2 * d;
    return attn + ffn + norms;
}

uint64_t dkv_model_params(const dkv_model *m)
{
    uint64_t emb = (uint64_t)m->vocab * m->hidden;
    return emb * (m->tied_embeddings ? 1 : 2) + (uint64_t)m->n_layers * dkv_model_layer_params(m) + m->hidden;
}

uint64_t dkv_model_weight_bytes(const dkv_model *m)
{
    return dkv_model_params(m) * dkv_dtype_bytes(m->weight_dtype);
}

uint64_t dkv_model_kv_bytes_per_token_layer(const dkv_model *m)
{
    return 2ULL * m->n_kv_heads * m->head_dim * dkv_dtype_bytes(m->kv_dtype);
}

uint64_t dkv_model_kv_bytes_per_token(const dkv_model *m)
{
    return dkv_model_kv_bytes_per_token_layer(m) * m->n_layers;
}

uint64_t dkv_model_logit_row_bytes(const dkv_model *m)
{
    return (uint64_t)m->vocab * dkv_dtype_bytes(m->act_dtype);
}

/* The FLOPs of each kernel class (2 FLOP per multiply-add).  core/cost counts a step plan with
 * these; the forward totals below are their sums, so there is one formula per class. */
double dkv_model_qkv_flops(const dkv_model *m, double q)
{
    const double d = m->hidden, hq = (double)m->n_heads * m->head_dim, hkv = (double)m->n_kv_heads * m->head_dim;
    return 2.0 * q * d * (hq + 2.0 * hkv);
}

double dkv_model_o_flops(const dkv_model *m, double q)
{
    const double d = m->hidden, hq = (double)m->n_heads * m->head_dim;
    return 2.0 * q * hq * d;
}

double dkv_model_ffn_flops(const dkv_model *m, double q)
{
    const double d = m->hidden, f = m->ffn;
    return 2.0 * q * d * 3.0 * f;
}

double dkv_model_attn_flops(const dkv_model *m, double q, double a)
{
    const double hq = (double)m->n_heads * m->head_dim;
    return 4.0 * q * a * hq;
}

double dkv_model_lm_head_flops(const dkv_model *m, double rows)
{
    const double d = m->hidden, V = m->vocab;
    return 2.0 * rows * d * V;
}

double dkv_model_layer_flops(const dkv_model *m, uint64_t q, uint64_t a)
{
    const double qd = (double)q;
    return dkv_model_qkv_flops(m, qd) + dkv_model_attn_flops(m, qd, (double)a) + dkv_model_o_flops(m, qd) +
           dkv_model_ffn_flops(m, qd);
}

double dkv_model_forward_flops(const dkv_model *m, uint64_t q, uint64_t a, uint64_t logit_rows)
{
    return m->n_layers * dkv_model_layer_flops(m, q, a) + dkv_model_lm_head_flops(m, (double)logit_rows);
}

dkv_status dkv_gpu_validate(const dkv_gpu *g, dkv_err *err)
{
#define POS(f) \
    if (!(g->f > 0)) return dkv_err_set(err, DKV_EINVAL, "gpu '%s': field '" #f "' must be > 0", g->name)
    POS(hbm_bytes);
    POS(hbm_bw);
    POS(flops_bf16);
    POS(pcie_h2d_pinned);
    POS(pcie_d2h_pinned);
    POS(pcie_h2d_pageable);
    POS(pcie_d2h_pageable);
#undef POS
    if (g->launch_overhead_s < 0)
        return dkv_err_set(err, DKV_EINVAL, "gpu '%s': field 'launch_overhead_s' must be >= 0", g->name);
    if (g->n_bw_curve > DKV_GPU_CURVE_MAX)
        return dkv_err_set(err, DKV_EINVAL, "gpu '%s': field 'bw_curve' has %u points (max %d)", g->name,
                           g->n_bw_curve, DKV_GPU_CURVE_MAX);
    for (uint32_t i = 0; i < g->n_bw_curve; i++) {
        const dkv_bw_point *p = &g->bw_curve[i];
        if (!(p->run_bytes > 0) || !(p->efficiency > 0 && p->efficiency <= 1.0))
            return dkv_err_set(err, DKV_EINVAL,
                               "gpu '%s': field 'bw_curve[%u]' needs run_bytes > 0 and 0 < efficiency <= 1",
                               g->name, i + 1);
        if (i > 0 && !(p->run_bytes > g->bw_curve[i - 1].run_bytes))
            return dkv_err_set(err, DKV_EINVAL, "gpu '%s': field 'bw_curve' must be sorted by run_bytes (point %u)",
                               g->name, i + 1);
    }
    for (uint32_t c = 0; c < DKV_GPU_KCLASS_MAX; c++) {
        if (!(g->kclass_set >> c & 1u))
            continue;
        if (!(g->kclass[c].scale > 0) || !(g->kclass[c].launch_s >= 0))
            return dkv_err_set(err, DKV_EINVAL, "gpu '%s': kernel class %u needs scale > 0 and launch_s >= 0 "
                               "(got %g, %g)", g->name, c, g->kclass[c].scale, g->kclass[c].launch_s);
    }
    if (g->kclass_set >> DKV_GPU_KCLASS_MAX)
        return dkv_err_set(err, DKV_EINVAL, "gpu '%s': kclass_set names classes beyond %d", g->name,
                           DKV_GPU_KCLASS_MAX);
    return DKV_OK;
}

double dkv_gpu_bw_efficiency(const dkv_gpu *g, double run_bytes)
{
    uint32_t n = g->n_bw_curve;
    if (n == 0)
        return 1.0;
    const dkv_bw_point *c = g->bw_curve;
    if (run_bytes <= c[0].run_bytes)
        return c[0].efficiency;
    if (run_bytes >= c[n - 1].run_bytes)
        return c[n - 1].efficiency;
    for (uint32_t i = 1; i < n; i++)
        if (run_bytes <= c[i].run_bytes) {
            double t = (log(run_bytes) - log(c[i - 1].run_bytes)) / (log(c[i].run_bytes) - log(c[i - 1].run_bytes));
            return c[i - 1].efficiency + t * (c[i].efficiency - c[i - 1].efficiency);
        }
    return c[n - 1].efficiency;
}

dkv_status dkv_budget_compute(const dkv_model *m, const dkv_gpu *g, double margin, double kv_frac,
                              dkv_budget *out, dkv_err *err)
{
    if (!(margin >= 0 && margin < 1))
        return dkv_err_set(err, DKV_ERANGE, "budget: margin %g must be in [0, 1)", margin);
    if (!(kv_frac > 0 && kv_frac <= 1))
        return dkv_err_set(err, DKV_ERANGE, "budget: kv_frac %g must be in (0, 1]", kv_frac);
    double w = (double)dkv_model_weight_bytes(m);
    double mg = margin * g->hbm_bytes;
    double usable = g->hbm_bytes - w - mg;
    if (usable <= 0)
        return dkv_err_set(err, DKV_ENOMEM,
                           "model '%s' (%.2f GiB of weights) does not fit gpu '%s' (%.2f GiB, %.0f%% margin)",
                           m->name, w / 1073741824.0, g->name, g->hbm_bytes / 1073741824.0, margin * 100);
    out->weight_bytes = w;
    out->margin_bytes = mg;
    out->usable_bytes = usable;
    out->kv_bytes = usable * kv_frac;
    out->act_bytes = usable - out->kv_bytes;
    return DKV_OK;
}
