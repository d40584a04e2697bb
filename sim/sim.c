/* sim.c - the roofline + PCIe cost model of one step plan (see sim.h). */
#include "sim/sim.h"

#include "cost/cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

dkv_sim_options dkv_sim_options_default(void)
{
    dkv_sim_options o = {.launch_overhead_s = -1.0, .gemm_eff = 1.0, .attn_eff = 1.0, .kernel_records = false};
    return o;
}

_Static_assert(DKV_KCLASS_N <= DKV_GPU_KCLASS_MAX, "dkv_gpu.kclass must cover every kernel class");

/* What the roofline needs per class: peak fraction, calibrated scale and launch cost. */
typedef struct rates {
    double peak, bw;
    double flops_eff[DKV_KCLASS_N], scale[DKV_KCLASS_N], launch[DKV_KCLASS_N];
} rates;

static void rates_init(const dkv_gpu *g, const dkv_sim_options *o, rates *r)
{
    r->peak = g->flops_bf16;
    r->bw = g->hbm_bw;
    const double ge = o->gemm_eff > 0 ? o->gemm_eff : 1.0, ae = o->attn_eff > 0 ? o->attn_eff : 1.0;
    /* per class: the preset's calibration (kclass) where given; an explicit launch overhead option wins */
    for (int c = 0; c < DKV_KCLASS_N; c++) {
        bool cal = (g->kclass_set >> c) & 1u;
        r->scale[c] = cal ? g->kclass[c].scale : 1.0;
        r->launch[c] = o->launch_overhead_s >= 0 ? o->launch_overhead_s : cal ? g->kclass[c].launch_s
                                                                                : g->launch_overhead_s;
        bool gemm = c == DKV_KCLASS_QKV || c == DKV_KCLASS_O || c == DKV_KCLASS_FFN || c == DKV_KCLASS_LM_HEAD ||
                    c == DKV_KCLASS_COMPRESS;
        r->flops_eff[c] = c == DKV_KCLASS_ATTN ? ae : gemm ? ge : 1.0;
    }
}

/* Roofline time of one class's work: slow_s = seconds of its segments (traffic that does not
 * stream), scale and launch from the preset's calibration. */
static double roofline_time(const dkv_cost_class *k, const rates *r, int c, double slow_s)
{
    if (k->launches == 0)
        return 0.0;
    double tf = k->flops / (r->peak * r->flops_eff[c]);
    double tb = k->bytes_fast / r->bw + slow_s;
    return r->scale[c] * (tf > tb ? tf : tb) + r->launch[c] * k->launches;
}

/* Seconds per layer of each class's segments: device runs at the bw_curve's efficiency for
 * their run length, zero-copy host reads at the pinned host-to-device rate. */
static void segment_times(const dkv_gpu *g, const dkv_cost_step *cs, double slow[DKV_KCLASS_N])
{
    for (int c = 0; c < DKV_KCLASS_N; c++)
        slow[c] = 0;
    for (uint32_t i = 0; i < cs->n_segs; i++) {
        const dkv_cost_seg *s = &cs->segs[i];
        if (s->via == DKV_COST_VIA_PCIE_H2D) {
            slow[s->kind] += s->bytes / g->pcie_h2d_pinned;
        } else {
            double eff = s->run_bytes > 0 ? dkv_gpu_bw_efficiency(g, s->run_bytes) : 1.0;
            slow[s->kind] += s->bytes / (g->hbm_bw * eff);
        }
    }
}

/* PCIe time of the plan's copies: pageable copies are synchronous in CUDA and so blocking;
 * pinned traffic in both directions at once shares the bidirectional total. */
static void pcie_times(const dkv_gpu *g, const dkv_step_plan *plan, double *t_block, double *t_async)
{
    double th_block = 0, td_block = 0, th_async = 0, td_async = 0, hb_async = 0, db_async = 0;
    for (uint32_t i = 0; i < plan->n_xfers; i++) {
        const dkv_xfer *x = &plan->xfers[i];
        double b = (double)x->pcie_bytes;
        if (x->kind == DKV_XFER_OFFLOAD || x->kind == DKV_XFER_COMPRESS) {
            double r = x->pinned ? g->pcie_d2h_pinned : g->pcie_d2h_pageable;
            if (x->blocking || !x->pinned)
                td_block += b / r;
            else
                td_async += b / r, db_async += b;
        } else if (x->kind == DKV_XFER_FETCH) {
            double r = x->pinned ? g->pcie_h2d_pinned : g->pcie_h2d_pageable;
            if (x->blocking || !x->pinned)
                th_block += b / r;
            else
                th_async += b / r, hb_async += b;
        }
    }
    double ta = th_async > td_async ? th_async : td_async;
    if (hb_async > 0 && db_async > 0 && g->pcie_bidir_pinned > 0) {
        double t_bi = (hb_async + db_async) / g->pcie_bidir_pinned;
        if (t_bi > ta)
            ta = t_bi;
    }
    *t_block = th_block + td_block;
    *t_async = ta;
}

static bool is_once(int c)
{
    return c == DKV_KCLASS_LM_HEAD || c == DKV_KCLASS_COMPRESS || c == DKV_KCLASS_REORDER;
}

/* Times per class: t_layer[c] for one layer of a layer class, t_once[c] for the once-per-step
 * parts (LM head, compress, reorder and the per-step elementwise kernels). */
static void class_times(const dkv_gpu *g, const rates *r, const dkv_cost_step *cs, double t_layer[DKV_KCLASS_N],
                        double t_once[DKV_KCLASS_N])
{
    double slow[DKV_KCLASS_N];
    segment_times(g, cs, slow);
    for (int c = 0; c < DKV_KCLASS_N; c++) {
        t_layer[c] = is_once(c) ? 0 : roofline_time(&cs->layer[c], r, c, slow[c]);
        t_once[c] = is_once(c) || c == DKV_KCLASS_ELEMENTWISE ? roofline_time(&cs->once[c], r, c, 0.0) : 0;
    }
}

static void emit_records(const dkv_cost_step *cs, uint64_t step_index, const double t_layer[DKV_KCLASS_N],
                         const double t_once[DKV_KCLASS_N], dkv_kernel_fn rec, void *user)
{
    for (int c = 0; c < DKV_KCLASS_N; c++) {
        dkv_kernel_record r;
        if (!dkv_cost_class_record(cs, (dkv_kernel_class)c, step_index, &r))
            continue;
        r.time_s = is_once(c) ? t_once[c] : cs->n_layers * t_layer[c];
        if (c == DKV_KCLASS_ELEMENTWISE)
            r.time_s += t_once[c];
        rec(user, &r);
    }
}

/* Costs plan into out with cs as the counting scratch (kept by the caller across steps). */
static dkv_status sim_cost(const dkv_model *m, const dkv_gpu *g, const dkv_sim_options *opts,
                           const dkv_step_plan *plan, dkv_cost_step *cs, dkv_step_cost *out, dkv_kernel_fn rec,
                           void *user, dkv_err *err)
{
    dkv_sim_options o = opts ? *opts : dkv_sim_options_default();
    memset(out, 0, sizeof *out);
    if (!m || !g || !plan)
        return dkv_err_set(err, DKV_EINVAL, "sim: model, gpu and plan are required");
    dkv_status st = dkv_cost_count(m, plan, cs, err);
    if (st != DKV_OK)
        return st;
    rates r;
    rates_init(g, &o, &r);
    double t_layer[DKV_KCLASS_N], t_once[DKV_KCLASS_N];
    class_times(g, &r, cs, t_layer, t_once);
    double compute = t_once[DKV_KCLASS_LM_HEAD] + t_once[DKV_KCLASS_COMPRESS] + t_once[DKV_KCLASS_REORDER] +
                     t_once[DKV_KCLASS_ELEMENTWISE];
    for (int c = 0; c < DKV_KCLASS_N; c++)
        if (!is_once(c))
            compute += cs->n_layers * t_layer[c];
    double t_block, t_async;
    pcie_times(g, plan, &t_block, &t_async);
    dkv_cost_totals tot;
    dkv_cost_step_totals(cs, &tot);
    out->pcie_h2d_bytes = cs->pcie_h2d_bytes;
    out->pcie_d2h_bytes = cs->pcie_d2h_bytes;
    out->compute_s = compute;
    out->pcie_s = t_block + t_async;
    out->time_s = t_block + (compute > t_async ? compute : t_async);
    out->stall_s = out->time_s - compute;
    out->flops = tot.flops;
    out->hbm_read_bytes = tot.hbm_read_bytes;
    out->hbm_write_bytes = tot.hbm_write_bytes;
    out->n_kernels = tot.launches;
    out->flops_util = compute > 0 ? tot.flops / (compute * r.peak) : 0;
    out->bw_util = compute > 0 ? (double)(out->hbm_read_bytes + out->hbm_write_bytes) / (compute * r.bw) : 0;
    if (rec)
        emit_records(cs, plan->step_index, t_layer, t_once, rec, user);
    return DKV_OK;
}

dkv_status dkv_sim_cost_plan(const dkv_model *m, const dkv_gpu *g, const dkv_sim_options *opts,
                             const dkv_step_plan *plan, dkv_step_cost *out, dkv_kernel_fn rec, void *user,
                             dkv_err *err)
{
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    dkv_status st = sim_cost(m, g, opts, plan, &cs, out, rec, user, err);
    dkv_cost_step_free(&cs);
    return st;
}

/* ------------------------------------------------------------------ the backend object */

typedef struct sim_ctx {
    dkv_sim_options opts;
    const dkv_model *model;
    const dkv_gpu *gpu;
    bool shared_weights;
    dkv_kernel_fn on_kernel;
    void *user;
    dkv_cost_step cs;   /* counting scratch, kept across steps */
} sim_ctx;

static dkv_status sim_begin(void *ctx, const dkv_backend_setup *s, dkv_err *err)
{
    sim_ctx *c = ctx;
    if (!s || !s->model || !s->gpu)
        return dkv_err_set(err, DKV_EINVAL, "sim: setup needs a model and a gpu");
    c->model = s->model;
    c->gpu = s->gpu;
    c->shared_weights = s->shared_weights;
    c->on_kernel = c->opts.kernel_records ? s->on_kernel : NULL;
    c->user = s->on_kernel_user;
    return DKV_OK;
}

static dkv_status sim_run_step(void *ctx, const dkv_step_plan *plan, dkv_step_cost *out, dkv_err *err)
{
    sim_ctx *c = ctx;
    if (!c->model)
        return dkv_err_set(err, DKV_ESTATE, "sim: run_step before begin");
    dkv_step_plan p = *plan;
    if (c->shared_weights)
        p.n_weight_streams = 1;
    return sim_cost(c->model, c->gpu, &c->opts, &p, &c->cs, out, c->on_kernel, c->user, err);
}

static void sim_end(void *ctx)
{
    sim_ctx *c = ctx;
    c->model = NULL;
    c->gpu = NULL;
}

static void sim_free(void *ctx)
{
    sim_ctx *c = ctx;
    if (c)
        dkv_cost_step_free(&c->cs);
    free(ctx);
}

static const dkv_backend_i sim_iface = {
    .name = "sim", .begin = sim_begin, .run_step = sim_run_step, .end = sim_end, .free = sim_free,
};

dkv_status dkv_sim_backend_new(const dkv_sim_options *opts, dkv_backend *out, dkv_err *err)
{
    sim_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return dkv_err_set(err, DKV_ENOMEM, "sim: out of host memory");
    c->opts = opts ? *opts : dkv_sim_options_default();
    dkv_cost_step_init(&c->cs);
    out->iface = &sim_iface;
    out->ctx = c;
    return DKV_OK;
}
