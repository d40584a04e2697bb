/* sim.c - the roofline + PCIe cost model of one step plan (see sim.h). */
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

dkv_sim_options dkv_sim_options_default(void)
{
    dkv_sim_options o = {.launch_overhead_s = -1.0, .gemm_eff = 1.0, .attn_eff = 1.0, .kernel_records = false};
    return o;
}

/* Accumulated work of one kernel class (per layer or per step). */
typedef struct kclass {
    double flops, flops_eff;  /* flops_eff: fraction of peak */
    double bytes_fast;        /* bytes at full bandwidth (read + write) */
    double bytes_slow_time;   /* seconds of bandwidth-efficiency-weighted traffic (bytes / (bw*eff)) */
    double rd, wr;            /* HBM bytes read / written */
    uint32_t launches;
} kclass;

_Static_assert(DKV_KCLASS_N <= DKV_GPU_KCLASS_MAX, "dkv_gpu.kclass must cover every kernel class");

/* scale: the class's calibrated time over its roofline time (gpu preset kclass; 1 otherwise) */
static double kclass_time(const kclass *k, double peak, double bw, double launch, double scale)
{
    if (k->launches == 0)
        return 0.0;
    double tf = k->flops / (peak * k->flops_eff);
    double tb = k->bytes_fast / bw + k->bytes_slow_time;
    return scale * (tf > tb ? tf : tb) + launch * k->launches;
}

static double eff_for_run(const dkv_gpu *g, double run_bytes)
{
    return run_bytes > 0 ? dkv_gpu_bw_efficiency(g, run_bytes) : 1.0;
}

dkv_status dkv_sim_cost_plan(const dkv_model *m, const dkv_gpu *g, const dkv_sim_options *opts,
                             const dkv_step_plan *plan, dkv_step_cost *out, dkv_kernel_fn rec, void *user,
                             dkv_err *err)
{
    dkv_sim_options o = opts ? *opts : dkv_sim_options_default();
    memset(out, 0, sizeof *out);
    if (!m || !g || !plan)
        return dkv_err_set(err, DKV_EINVAL, "sim: model, gpu and plan are required");
    const double peak = g->flops_bf16, bw = g->hbm_bw;
    /* per class: the preset's calibration (kclass) where given; an explicit launch overhead option wins */
    double lc[DKV_KCLASS_N], sc[DKV_KCLASS_N];
    for (int c = 0; c < DKV_KCLASS_N; c++) {
        bool cal = (g->kclass_set >> c) & 1u;
        sc[c] = cal ? g->kclass[c].scale : 1.0;
        lc[c] = o.launch_overhead_s >= 0 ? o.launch_overhead_s : cal ? g->kclass[c].launch_s : g->launch_overhead_s;
    }
    const double ge = o.gemm_eff > 0 ? o.gemm_eff : 1.0, ae = o.attn_eff > 0 ? o.attn_eff : 1.0;
    const double d = m->hidden, f = m->ffn, V = m->vocab;
    const double hq = (double)m->n_heads * m->head_dim, hkv = (double)m->n_kv_heads * m->head_dim;
    const double wb = dkv_dtype_bytes(m->weight_dtype), ab = dkv_dtype_bytes(m->act_dtype);
    const double L = m->n_layers;
    const double streams = plan->n_weight_streams > 1 ? plan->n_weight_streams : 1;

    kclass k[DKV_KCLASS_N];
    memset(k, 0, sizeof k);
    double Q = 0, R = 0, Wb = 0, n_logit_items = 0;   /* Wb: KV bytes stored */
    bool any_store = false;
    /* attention and KV store are per item (different lengths and layouts) */
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const dkv_step_item *it = &plan->items[i];
        if (it->kv_cached_tokens > it->kv_tokens)
            return dkv_err_set(err, DKV_EINVAL, "sim: item %u (request %u): kv_cached_tokens %u > kv_tokens %u", i,
                               it->request, it->kv_cached_tokens, it->kv_tokens);
        double q = it->q_tokens, a = it->kv_tokens;
        double kb = it->kv_dtype_bytes ? it->kv_dtype_bytes : dkv_dtype_bytes(m->kv_dtype);
        double kv_tok = 2.0 * hkv * kb; /* K + V of one token, one layer */
        double eff = eff_for_run(g, it->kv_run_bytes);
        Q += q;
        R += it->logit_rows;
        n_logit_items += it->logit_rows > 0;
        kclass *at = &k[DKV_KCLASS_ATTN];
        at->flops += 4.0 * q * a * hq;
        double cached = it->kv_cached_tokens, fresh = a - cached;
        at->bytes_fast += (2.0 * q * hq * ab) + fresh * kv_tok;
        at->bytes_slow_time += cached * kv_tok / (bw * eff);
        at->rd += q * hq * ab + a * kv_tok;
        at->wr += q * hq * ab;
        if (it->kv_write_tokens && it->kv_select_rows) {
            /* sparse selection (cuda/backend_fwd.c layer_select): a scores GEMM of the block's rows
             * against the q keys into fp32 [H, rows, q], row statistics and column sums over it, a
             * top-k per KV head, and the pack of the kept tokens' K/V into the pool: 5 launches */
            kclass *ga = &k[DKV_KCLASS_KV_GATHER];
            double rows = it->kv_select_rows, keep = it->kv_write_tokens, H = m->n_heads, Hk = m->n_kv_heads;
            double sc_b = H * rows * q * 4.0, col_b = Hk * q * 4.0;
            ga->flops += 2.0 * rows * q * hq;
            double rd = (rows * hq + q * hkv) * ab + 2.0 * sc_b + col_b + keep * 2.0 * hkv * ab;
            double wr = sc_b + col_b + Hk * keep * 4.0;
            ga->bytes_fast += rd + wr;
            ga->bytes_slow_time += keep * kv_tok / (bw * eff); /* scattered into the pool */
            ga->rd += rd;
            ga->wr += wr + keep * kv_tok;
            ga->launches += 5;
        } else if (it->kv_write_tokens) {
            /* stored rows scatter into the cache layout; the kernel (RoPE + store) runs over every
             * row of the step, below */
            any_store = true;
            Wb += it->kv_write_tokens * kv_tok;
            k[DKV_KCLASS_KV_STORE].bytes_slow_time += it->kv_write_tokens * kv_tok / (bw * eff);
        }
        if (it->kv_host_bytes > 0) {
            /* zero-copy reads of host-resident KV go over PCIe at the pinned h2d rate */
            kclass *ga = &k[DKV_KCLASS_KV_GATHER];
            ga->bytes_slow_time += it->kv_host_bytes / L / g->pcie_h2d_pinned;
            if (ga->launches == 0)
                ga->launches = 1;
            out->pcie_h2d_bytes += (uint64_t)it->kv_host_bytes;
        }
    }
    if (plan->n_items > 0) {
        k[DKV_KCLASS_ATTN].launches = 1;
        k[DKV_KCLASS_ATTN].flops_eff = ae;
        k[DKV_KCLASS_KV_STORE].flops_eff = 1.0;
        if (any_store) {   /* fused RoPE + store over all Q rows: q rotated in place, K/V stored */
            kclass *st = &k[DKV_KCLASS_KV_STORE];
            st->launches = 1;
            st->rd = Q * (hq + 2.0 * hkv) * ab;
            st->wr = Q * hq * ab + Wb;
            st->bytes_fast += st->rd + Q * hq * ab;
        }
        k[DKV_KCLASS_KV_GATHER].flops_eff = 1.0;

        /* GEMMs: weights streamed once per stream, activations in and out */
        kclass *qkv = &k[DKV_KCLASS_QKV];
        qkv->flops = 2.0 * Q * d * (hq + 2.0 * hkv);
        qkv->rd = streams * d * (hq + 2.0 * hkv) * wb + Q * d * ab;
        qkv->wr = Q * (hq + 2.0 * hkv) * ab;
        qkv->bytes_fast = qkv->rd + qkv->wr;
        qkv->launches = 1;
        kclass *op = &k[DKV_KCLASS_O];
        op->flops = 2.0 * Q * hq * d;
        op->rd = streams * hq * d * wb + Q * hq * ab + Q * d * ab;   /* + the residual (beta = 1) */
        op->wr = Q * d * ab;
        op->bytes_fast = op->rd + op->wr;
        op->launches = 1;
        kclass *ff = &k[DKV_KCLASS_FFN];
        ff->flops = 2.0 * Q * d * 3.0 * f;
        ff->rd = streams * 3.0 * d * f * wb + Q * d * ab + Q * f * ab + Q * d * ab;   /* + down's residual */
        ff->wr = 2.0 * Q * f * ab + Q * d * ab;
        ff->bytes_fast = ff->rd + ff->wr;
        ff->launches = 2;
        qkv->flops_eff = op->flops_eff = ff->flops_eff = ge;
        /* per layer (cuda/backend_fwd.c): attention and FFN RMSNorm, SiLU(gate) * up, and RoPE
         * when no row is stored (else it is fused into the store); residual adds are the GEMMs' */
        kclass *el = &k[DKV_KCLASS_ELEMENTWISE];
        el->rd = (2.0 * Q * d + 2.0 * Q * f) * ab + 2.0 * d * wb;
        el->wr = (2.0 * Q * d + Q * f) * ab;
        el->launches = 3;
        if (!any_store) {
            el->rd += Q * (hq + hkv) * ab;
            el->wr += Q * (hq + hkv) * ab;
            el->launches++;
        }
        el->bytes_fast = el->rd + el->wr;
        el->flops = 10.0 * Q * d;
        el->flops_eff = 1.0;
    }

    /* layer kernels cost the same in every layer */
    double t_layer[DKV_KCLASS_N] = {0};
    for (int c = 0; c < DKV_KCLASS_N; c++)
        if (c != DKV_KCLASS_LM_HEAD && c != DKV_KCLASS_COMPRESS && c != DKV_KCLASS_REORDER)
            t_layer[c] = kclass_time(&k[c], peak, bw, lc[c], sc[c]);

    /* once per step: reset + one embedding gather per item (+ the unmask after the LM head:
     * elementwise), the final norm per item with logit rows, then the LM head in chunks */
    kclass head = {0}, els = {.flops_eff = 1.0};
    double t_head = 0, t_els = 0;
    if (plan->n_items > 0) {
        els.rd = Q * d * wb;
        els.wr = Q * d * ab;
        els.launches = 1 + plan->n_items + (R > 0);
        els.bytes_fast = els.rd + els.wr;
        t_els = kclass_time(&els, peak, bw, lc[DKV_KCLASS_ELEMENTWISE], sc[DKV_KCLASS_ELEMENTWISE]);
        head.flops_eff = ge;
        if (R > 0) {
            head.rd += R * d * ab;
            head.wr += R * d * ab;
            head.launches = (uint32_t)n_logit_items;
            double C = plan->max_logit_rows ? plan->max_logit_rows : R;
            double chunks = ceil(R / C);
            head.flops += 2.0 * R * d * V;
            head.rd += chunks * streams * V * d * wb + R * d * ab + R * V * ab; /* + sampling reads logits */
            head.wr += R * V * ab + R * 8.0;
            head.bytes_fast = head.rd + head.wr;
            head.launches += (uint32_t)(2 * chunks);
        }
        t_head = kclass_time(&head, peak, bw, lc[DKV_KCLASS_LM_HEAD], sc[DKV_KCLASS_LM_HEAD]);
    }

    /* transfer orders: on-device parts are kernels, PCIe parts go to the copy engines */
    kclass cmp = {.flops_eff = ge}, reo = {.flops_eff = 1.0};
    double th_block = 0, td_block = 0, th_async = 0, td_async = 0, hb_async = 0, db_async = 0;
    for (uint32_t i = 0; i < plan->n_xfers; i++) {
        const dkv_xfer *x = &plan->xfers[i];
        double b = (double)x->pcie_bytes;
        switch (x->kind) {
        case DKV_XFER_REORDER:
            reo.rd += x->device_bytes;
            reo.wr += x->device_bytes;
            reo.bytes_fast += 2.0 * x->device_bytes;
            reo.launches++;
            continue;
        case DKV_XFER_COMPRESS:
            cmp.flops += x->flops;
            cmp.rd += x->device_bytes;
            cmp.wr += b; /* compressed result staged before the copy */
            cmp.bytes_fast += x->device_bytes + b;
            cmp.launches++;
            /* the result goes device -> host */
            __attribute__((fallthrough));
        case DKV_XFER_OFFLOAD: {
            double r = x->pinned ? g->pcie_d2h_pinned : g->pcie_d2h_pageable;
            out->pcie_d2h_bytes += x->pcie_bytes;
            out->hbm_read_bytes += x->pcie_bytes;
            if (x->blocking || !x->pinned)
                td_block += b / r;
            else
                td_async += b / r, db_async += b;
            break;
        }
        case DKV_XFER_FETCH: {
            double r = x->pinned ? g->pcie_h2d_pinned : g->pcie_h2d_pageable;
            out->pcie_h2d_bytes += x->pcie_bytes;
            out->hbm_write_bytes += x->pcie_bytes;
            if (x->blocking || !x->pinned)
                th_block += b / r;
            else
                th_async += b / r, hb_async += b;
            break;
        }
        default:
            return dkv_err_set(err, DKV_EINVAL, "sim: xfer %u has unknown kind %u", i, x->kind);
        }
    }
    double t_cmp = kclass_time(&cmp, peak, bw, lc[DKV_KCLASS_COMPRESS], sc[DKV_KCLASS_COMPRESS]);
    double t_reo = kclass_time(&reo, peak, bw, lc[DKV_KCLASS_REORDER], sc[DKV_KCLASS_REORDER]);

    /* totals */
    double compute = t_head + t_cmp + t_reo + t_els;
    uint32_t launches = head.launches + cmp.launches + reo.launches + els.launches;
    double flops = head.flops + cmp.flops + els.flops, rd = head.rd + cmp.rd + reo.rd + els.rd;
    double wr = head.wr + cmp.wr + reo.wr + els.wr;
    for (int c = 0; c < DKV_KCLASS_N; c++) {
        if (c == DKV_KCLASS_LM_HEAD || c == DKV_KCLASS_COMPRESS || c == DKV_KCLASS_REORDER)
            continue;
        compute += L * t_layer[c];
        launches += (uint32_t)(L * k[c].launches);
        flops += L * k[c].flops;
        rd += L * k[c].rd;
        wr += L * k[c].wr;
    }
    /* pinned traffic in both directions at once shares the bidirectional total */
    double t_async = th_async > td_async ? th_async : td_async;
    if (hb_async > 0 && db_async > 0 && g->pcie_bidir_pinned > 0) {
        double t_bi = (hb_async + db_async) / g->pcie_bidir_pinned;
        if (t_bi > t_async)
            t_async = t_bi;
    }
    double t_block = th_block + td_block;
    out->compute_s = compute;
    out->pcie_s = t_block + t_async;
    out->time_s = t_block + (compute > t_async ? compute : t_async);
    out->stall_s = out->time_s - compute;
    out->flops = flops;
    out->hbm_read_bytes += (uint64_t)llround(rd);
    out->hbm_write_bytes += (uint64_t)llround(wr);
    out->n_kernels = launches;
    out->flops_util = compute > 0 ? flops / (compute * peak) : 0;
    out->bw_util = compute > 0 ? (double)(out->hbm_read_bytes + out->hbm_write_bytes) / (compute * bw) : 0;

    if (rec) {
        for (int c = 0; c < DKV_KCLASS_N; c++) {
            const kclass *kc = c == DKV_KCLASS_LM_HEAD ? &head : c == DKV_KCLASS_COMPRESS ? &cmp
                             : c == DKV_KCLASS_REORDER ? &reo : &k[c];
            double mult = (c == DKV_KCLASS_LM_HEAD || c == DKV_KCLASS_COMPRESS || c == DKV_KCLASS_REORDER) ? 1.0 : L;
            if (kc->launches == 0)
                continue;
            double t = c == DKV_KCLASS_LM_HEAD ? t_head : c == DKV_KCLASS_COMPRESS ? t_cmp
                     : c == DKV_KCLASS_REORDER ? t_reo : L * t_layer[c];
            dkv_kernel_record r = {.step_index = plan->step_index, .kind = (dkv_kernel_class)c,
                                   .layer = UINT32_MAX, .n_launches = (uint32_t)(mult * kc->launches),
                                   .time_s = t, .flops = mult * kc->flops,
                                   .read_bytes = (uint64_t)(mult * kc->rd), .write_bytes = (uint64_t)(mult * kc->wr)};
            if (c == DKV_KCLASS_ELEMENTWISE) {   /* the per-step ones too */
                r.n_launches += els.launches;
                r.time_s += t_els;
                r.flops += els.flops;
                r.read_bytes += (uint64_t)els.rd;
                r.write_bytes += (uint64_t)els.wr;
            }
            rec(user, &r);
        }
    }
    return DKV_OK;
}

/* ------------------------------------------------------------------ the backend object */

typedef struct sim_ctx {
    dkv_sim_options opts;
    const dkv_model *model;
    const dkv_gpu *gpu;
    bool shared_weights;
    dkv_kernel_fn on_kernel;
    void *user;
} sim_ctx;

static dkv_status sim_begin(void *ctx, const dkv_backend_setup *s, dkv_err *err)
{
    sim_ctx *c = ctx;
    if (!s || !s->model || !s->gpu)
        return dkv_err_set(err, DKV_EINVAL, "sim: setup needs a model and a gpu");
    c->model = s->model;
    c->gpu = s->gpu;
    c->shared_weights = s->instances.shared_weights;
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
    return dkv_sim_cost_plan(c->model, c->gpu, &c->opts, &p, out, c->on_kernel, c->user, err);
}

static void sim_end(void *ctx)
{
    sim_ctx *c = ctx;
    c->model = NULL;
    c->gpu = NULL;
}

static void sim_free(void *ctx) { free(ctx); }

static const dkv_backend_i sim_iface = {
    .name = "sim", .begin = sim_begin, .run_step = sim_run_step, .end = sim_end, .free = sim_free,
};

dkv_status dkv_sim_backend_new(const dkv_sim_options *opts, dkv_backend *out, dkv_err *err)
{
    sim_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return dkv_err_set(err, DKV_ENOMEM, "sim: out of host memory");
    c->opts = opts ? *opts : dkv_sim_options_default();
    out->iface = &sim_iface;
    out->ctx = c;
    return DKV_OK;
}
