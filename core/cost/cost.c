/* cost.c - FLOPs, HBM bytes and launches of a step plan per kernel class (see cost.h). */
#include "cost/cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(DKV_KCLASS_N <= 16, "uint8_t kind and the per-class arrays");

void dkv_cost_step_init(dkv_cost_step *cs)
{
    memset(cs, 0, sizeof *cs);
}

void dkv_cost_step_free(dkv_cost_step *cs)
{
    if (!cs)
        return;
    free(cs->segs);
    cs->segs = NULL;
    cs->n_segs = cs->cap_segs = 0;
}

static dkv_status push_seg(dkv_cost_step *cs, int kind, int via, double bytes, double run_bytes, dkv_err *err)
{
    if (cs->n_segs == cs->cap_segs) {
        uint32_t cap = cs->cap_segs ? 2 * cs->cap_segs : 64;
        dkv_cost_seg *n = realloc(cs->segs, (size_t)cap * sizeof *n);
        if (!n)
            return dkv_err_set(err, DKV_ENOMEM, "cost: out of host memory (%u segments)", cap);
        cs->segs = n;
        cs->cap_segs = cap;
    }
    cs->segs[cs->n_segs++] = (dkv_cost_seg){.kind = (uint8_t)kind, .via = (uint8_t)via, .bytes = bytes,
                                            .run_bytes = run_bytes};
    return DKV_OK;
}

/* One item's attention, sparse selection, KV store and zero-copy reads (per layer).  *Wb gathers
 * the bytes the fused RoPE + store writes into the cache. */
static dkv_status count_item(const dkv_model *m, const dkv_step_item *it, dkv_cost_step *cs, double *Wb,
                             dkv_err *err)
{
    const double hq = (double)m->n_heads * m->head_dim, hkv = (double)m->n_kv_heads * m->head_dim;
    const double ab = dkv_dtype_bytes(m->act_dtype);
    double q = it->q_tokens, a = it->kv_tokens;
    double kb = it->kv_dtype_bytes ? it->kv_dtype_bytes : dkv_dtype_bytes(m->kv_dtype);
    double kv_tok = 2.0 * hkv * kb; /* K + V of one token, one layer */
    double run = it->kv_run_bytes;
    dkv_cost_class *at = &cs->layer[DKV_KCLASS_ATTN];
    at->flops += dkv_model_attn_flops(m, q, a);
    double cached = it->kv_cached_tokens, fresh = a - cached;
    at->bytes_fast += (2.0 * q * hq * ab) + fresh * kv_tok;
    dkv_status st = push_seg(cs, DKV_KCLASS_ATTN, DKV_COST_VIA_HBM, cached * kv_tok, run, err);
    at->rd += q * hq * ab + a * kv_tok;
    at->wr += q * hq * ab;
    if (st == DKV_OK && it->kv_write_tokens && it->kv_select_rows) {
        /* sparse selection (cuda/backend_fwd.c layer_select): a scores GEMM of the block's rows
         * against the q keys into fp32 [H, rows, q], row statistics and column sums over it, a
         * top-k per KV head, and the pack of the kept tokens' K/V into the pool: 5 launches */
        dkv_cost_class *ga = &cs->layer[DKV_KCLASS_KV_GATHER];
        double rows = it->kv_select_rows, keep = it->kv_write_tokens, H = m->n_heads, Hk = m->n_kv_heads;
        double sc_b = H * rows * q * 4.0, col_b = Hk * q * 4.0;
        ga->flops += 2.0 * rows * q * hq;
        double rd = (rows * hq + q * hkv) * ab + 2.0 * sc_b + col_b + keep * 2.0 * hkv * ab;
        double wr = sc_b + col_b + Hk * keep * 4.0;
        ga->bytes_fast += rd + wr;
        st = push_seg(cs, DKV_KCLASS_KV_GATHER, DKV_COST_VIA_HBM, keep * kv_tok, run, err); /* scattered into the pool */
        ga->rd += rd;
        ga->wr += wr + keep * kv_tok;
        ga->launches += 5;
    } else if (st == DKV_OK && it->kv_write_tokens) {
        /* stored rows scatter into the cache layout; the kernel (RoPE + store) runs over every row
         * of the step (count_layer) */
        cs->any_store = true;
        *Wb += it->kv_write_tokens * kv_tok;
        st = push_seg(cs, DKV_KCLASS_KV_STORE, DKV_COST_VIA_HBM, it->kv_write_tokens * kv_tok, run, err);
    }
    if (st == DKV_OK && it->kv_host_bytes > 0) {
        /* zero-copy reads of host-resident KV go over PCIe */
        dkv_cost_class *ga = &cs->layer[DKV_KCLASS_KV_GATHER];
        st = push_seg(cs, DKV_KCLASS_KV_GATHER, DKV_COST_VIA_PCIE_H2D, it->kv_host_bytes / cs->n_layers, 0, err);
        if (ga->launches == 0)
            ga->launches = 1;
        cs->pcie_h2d_bytes += (uint64_t)it->kv_host_bytes;
    }
    return st;
}

/* The kernels every item shares in a layer: the fused RoPE + store, the GEMMs, the elementwise
 * kernels.  Q: rows of the step, Wb: KV bytes stored. */
static void count_layer(const dkv_model *m, double Q, double Wb, double streams, dkv_cost_step *cs)
{
    const double d = m->hidden, f = m->ffn;
    const double hq = (double)m->n_heads * m->head_dim, hkv = (double)m->n_kv_heads * m->head_dim;
    const double wb = dkv_dtype_bytes(m->weight_dtype), ab = dkv_dtype_bytes(m->act_dtype);
    cs->layer[DKV_KCLASS_ATTN].launches = 1;
    if (cs->any_store) {   /* fused RoPE + store over all Q rows: q rotated in place, K/V stored */
        dkv_cost_class *st = &cs->layer[DKV_KCLASS_KV_STORE];
        st->launches = 1;
        st->rd = Q * (hq + 2.0 * hkv) * ab;
        st->wr = Q * hq * ab + Wb;
        st->bytes_fast += st->rd + Q * hq * ab;
    }
    /* GEMMs: weights streamed once per stream, activations in and out */
    dkv_cost_class *qkv = &cs->layer[DKV_KCLASS_QKV];
    qkv->flops = dkv_model_qkv_flops(m, Q);
    qkv->rd = streams * d * (hq + 2.0 * hkv) * wb + Q * d * ab;
    qkv->wr = Q * (hq + 2.0 * hkv) * ab;
    qkv->bytes_fast = qkv->rd + qkv->wr;
    qkv->launches = 1;
    dkv_cost_class *op = &cs->layer[DKV_KCLASS_O];
    op->flops = dkv_model_o_flops(m, Q);
    op->rd = streams * hq * d * wb + Q * hq * ab + Q * d * ab;   /* + the residual (beta = 1) */
    op->wr = Q * d * ab;
    op->bytes_fast = op->rd + op->wr;
    op->launches = 1;
    dkv_cost_class *ff = &cs->layer[DKV_KCLASS_FFN];
    ff->flops = dkv_model_ffn_flops(m, Q);
    ff->rd = streams * 3.0 * d * f * wb + Q * d * ab + Q * f * ab + Q * d * ab;   /* + down's residual */
    ff->wr = 2.0 * Q * f * ab + Q * d * ab;
    ff->bytes_fast = ff->rd + ff->wr;
    ff->launches = 2;
    /* attention and FFN RMSNorm, SiLU(gate) * up, and RoPE when no row is stored (else it is fused
     * into the store); residual adds are the GEMMs' */
    dkv_cost_class *el = &cs->layer[DKV_KCLASS_ELEMENTWISE];
    el->rd = (2.0 * Q * d + 2.0 * Q * f) * ab + 2.0 * d * wb;
    el->wr = (2.0 * Q * d + Q * f) * ab;
    el->launches = 3;
    if (!cs->any_store) {
        el->rd += Q * (hq + hkv) * ab;
        el->wr += Q * (hq + hkv) * ab;
        el->launches++;
    }
    el->bytes_fast = el->rd + el->wr;
    el->flops = 10.0 * Q * d;
}

/* Once per step: reset + one embedding gather per item (+ the unmask after the LM head), the
 * final norm per item with logit rows, then the LM head in chunks. */
static void count_once(const dkv_model *m, const dkv_step_plan *plan, dkv_cost_step *cs)
{
    const double d = m->hidden, V = m->vocab;
    const double wb = dkv_dtype_bytes(m->weight_dtype), ab = dkv_dtype_bytes(m->act_dtype);
    const double Q = cs->q_rows, R = cs->logit_rows;
    dkv_cost_class *els = &cs->once[DKV_KCLASS_ELEMENTWISE], *head = &cs->once[DKV_KCLASS_LM_HEAD];
    els->rd = Q * d * wb;
    els->wr = Q * d * ab;
    els->launches = 1 + plan->n_items + (R > 0);
    els->bytes_fast = els->rd + els->wr;
    if (R > 0) {
        head->rd += R * d * ab;
        head->wr += R * d * ab;
        head->launches = (uint32_t)cs->logit_items;
        double C = plan->max_logit_rows ? plan->max_logit_rows : R;
        double chunks = ceil(R / C);
        cs->logit_chunks = chunks;
        head->flops += dkv_model_lm_head_flops(m, R);
        /* the logits are fp32 (cuda/lm_head.cu: the GEMM writes a chunk of fp32 rows, the argmax
         * kernel reads them back), whatever the activation dtype */
        head->rd += chunks * cs->weight_streams * V * d * wb + R * d * ab + R * V * DKV_COST_LOGIT_BYTES;
        head->wr += R * V * DKV_COST_LOGIT_BYTES + R * 8.0;   /* + argmax index and confidence */
        head->bytes_fast = head->rd + head->wr;
        head->launches += (uint32_t)(2 * chunks);
    }
}

/* Transfer orders: on-device parts are kernels, PCIe parts only bytes here (sim/ times them). */
static dkv_status count_xfers(const dkv_step_plan *plan, dkv_cost_step *cs, dkv_err *err)
{
    dkv_cost_class *cmp = &cs->once[DKV_KCLASS_COMPRESS], *reo = &cs->once[DKV_KCLASS_REORDER];
    for (uint32_t i = 0; i < plan->n_xfers; i++) {
        const dkv_xfer *x = &plan->xfers[i];
        double b = (double)x->pcie_bytes;
        switch (x->kind) {
        case DKV_XFER_REORDER:
            reo->rd += x->device_bytes;
            reo->wr += x->device_bytes;
            reo->bytes_fast += 2.0 * x->device_bytes;
            reo->launches++;
            break;
        case DKV_XFER_COMPRESS:
            cmp->flops += x->flops;
            cmp->rd += x->device_bytes;
            cmp->wr += b; /* compressed result staged before the copy */
            cmp->bytes_fast += x->device_bytes + b;
            cmp->launches += 16;   /* cuda/arena.c compress: gather, projection, two bf16 conversions (4 + 12) */
            cs->pcie_d2h_bytes += x->pcie_bytes;   /* the result goes device -> host */
            break;
        case DKV_XFER_OFFLOAD:
            cs->pcie_d2h_bytes += x->pcie_bytes;
            break;
        case DKV_XFER_FETCH:
            cs->pcie_h2d_bytes += x->pcie_bytes;
            cs->fetch_bytes += x->pcie_bytes;
            break;
        default:
            return dkv_err_set(err, DKV_EINVAL, "cost: xfer %u has unknown kind %u", i, x->kind);
        }
    }
    return DKV_OK;
}

dkv_status dkv_cost_count(const dkv_model *m, const dkv_step_plan *plan, dkv_cost_step *cs, dkv_err *err)
{
    dkv_cost_seg *segs = cs->segs;
    uint32_t cap = cs->cap_segs;
    memset(cs, 0, sizeof *cs);
    cs->segs = segs;
    cs->cap_segs = cap;
    if (!m || !plan)
        return dkv_err_set(err, DKV_EINVAL, "cost: model and plan are required");
    cs->n_layers = m->n_layers;
    cs->weight_streams = plan->n_weight_streams > 1 ? plan->n_weight_streams : 1;
    double Wb = 0;   /* KV bytes stored */
    for (uint32_t i = 0; i < plan->n_items; i++) {
        const dkv_step_item *it = &plan->items[i];
        if (it->kv_cached_tokens > it->kv_tokens)
            return dkv_err_set(err, DKV_EINVAL, "cost: item %u (request %u): kv_cached_tokens %u > kv_tokens %u", i,
                               it->request, it->kv_cached_tokens, it->kv_tokens);
        cs->q_rows += it->q_tokens;
        cs->logit_rows += it->logit_rows;
        cs->logit_items += it->logit_rows > 0;
        dkv_status st = count_item(m, it, cs, &Wb, err);
        if (st != DKV_OK)
            return st;
    }
    if (plan->n_items > 0) {
        count_layer(m, cs->q_rows, Wb, cs->weight_streams, cs);
        count_once(m, plan, cs);
    }
    return count_xfers(plan, cs, err);
}

dkv_status dkv_cost_count_hw(const dkv_model *m, const dkv_cost_hw *hw, const dkv_step_plan *plan,
                             dkv_cost_step *cs, dkv_err *err)
{
    dkv_status st = dkv_cost_count(m, plan, cs, err);
    if (st == DKV_OK)
        dkv_cost_l2_bytes(m, plan, hw, cs);
    return st;
}

static bool is_once(int c)
{
    return c == DKV_KCLASS_LM_HEAD || c == DKV_KCLASS_COMPRESS || c == DKV_KCLASS_REORDER;
}

bool dkv_cost_class_record(const dkv_cost_step *cs, dkv_kernel_class c, uint64_t step_index, dkv_kernel_record *out)
{
    const dkv_cost_class *kc = is_once(c) ? &cs->once[c] : &cs->layer[c];
    double mult = is_once(c) ? 1.0 : cs->n_layers;
    if (kc->launches == 0)
        return false;
    *out = (dkv_kernel_record){.step_index = step_index, .kind = c, .layer = UINT32_MAX,
                               .n_launches = (uint32_t)(mult * kc->launches), .time_s = 0, .flops = mult * kc->flops,
                               .read_bytes = (uint64_t)(mult * kc->rd), .write_bytes = (uint64_t)(mult * kc->wr)};
    if (c == DKV_KCLASS_ELEMENTWISE) {   /* the per-step ones too */
        const dkv_cost_class *els = &cs->once[DKV_KCLASS_ELEMENTWISE];
        out->n_launches += els->launches;
        out->flops += els->flops;
        out->read_bytes += (uint64_t)els->rd;
        out->write_bytes += (uint64_t)els->wr;
    }
    return true;
}

void dkv_cost_step_totals(const dkv_cost_step *cs, dkv_cost_totals *out)
{
    const dkv_cost_class *head = &cs->once[DKV_KCLASS_LM_HEAD], *cmp = &cs->once[DKV_KCLASS_COMPRESS],
                         *reo = &cs->once[DKV_KCLASS_REORDER], *els = &cs->once[DKV_KCLASS_ELEMENTWISE];
    const double L = cs->n_layers;
    uint32_t launches = head->launches + cmp->launches + reo->launches + els->launches;
    double flops = head->flops + cmp->flops + els->flops, rd = head->rd + cmp->rd + reo->rd + els->rd;
    double wr = head->wr + cmp->wr + reo->wr + els->wr;
    for (int c = 0; c < DKV_KCLASS_N; c++) {
        if (is_once(c))
            continue;
        launches += (uint32_t)(L * cs->layer[c].launches);
        flops += L * cs->layer[c].flops;
        rd += L * cs->layer[c].rd;
        wr += L * cs->layer[c].wr;
    }
    out->flops = flops;
    out->launches = launches;
    /* the HBM side of the copies: an offload reads HBM, a fetch writes it */
    out->hbm_read_bytes = cs->pcie_d2h_bytes + (uint64_t)llround(rd);
    out->hbm_write_bytes = cs->fetch_bytes + (uint64_t)llround(wr);
}
