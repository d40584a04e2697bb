/* sim.c - the roofline + PCIe cost model of one step plan (see sim.h). */
#include "sim/sim_internal.h"

#include "cost/profile.h"
#include "model/gemm_warm.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

dkv_sim_options dkv_sim_options_default(void)
{
    dkv_sim_options o = {.launch_overhead_s = -1.0, .gemm_eff = 1.0, .attn_eff = 1.0, .kernel_records = false,
                         .copy_model = DKV_SIM_COPY_OVERLAP, .first_use = true, .warm_gemms = true,
                         .warm_compressor = true,
                         .kernel_scale = 1.0};
    return o;
}

/* Shapes already used (first-use costs): open addressing, keys never 0. */
struct dkv_sim_warm {
    pthread_mutex_t mu;
    uint64_t *seen;
    uint32_t  n_seen, cap_seen;
};

/* What the simulator keeps across the steps of a run. */
typedef struct sim_state {
    double        backlog_s;    /* copy-stream seconds still queued (stream copy model) */
    double        cmp_copy_s;   /* seconds until the last compressed result has left the device */
    dkv_sim_warm  own;          /* the run's shapes when no shared set is given */
    dkv_sim_warm *warm;         /* the set in use: &own or the options' shared one */
    sim_lr        lr;           /* the low-rank forms on the host (sim_lowrank.c) */
    double        hold_until_s; /* engine clock until which the GPU's clocks are held low (profile hold) */
    sim_clock     clk;          /* the recent steps' work, for the clock the next one runs at (profile clock) */
    dkv_cost_l2_memo *memo;     /* the L2 replays of the run's step shapes (cost.h; NULL: replay every step) */
    dkv_cost_l2_trace *l2;      /* with opts.l2_records: the step's replayed kernels (NULL until the first) */
} sim_state;

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

/* Seconds of one copy: the profile's copy tables for pinned copies where they cover the size
 * (contended: beside running compute), else the preset's rate. */
static double copy_time(const dkv_gpu *g, bool d2h, bool pinned, double bytes, bool contended)
{
    if (pinned && g->profile && bytes > 0) {
        double t = dkv_profile_copy(g->profile, d2h ? 1 : 0, bytes, contended);
        if (!isnan(t))
            return t;
    }
    double r = d2h ? (pinned ? g->pcie_d2h_pinned : g->pcie_d2h_pageable)
                   : (pinned ? g->pcie_h2d_pinned : g->pcie_h2d_pageable);
    return bytes / r;
}

/* PCIe time of the plan's copies, ideal overlap: pageable copies are synchronous in CUDA and so
 * blocking; pinned traffic in both directions at once shares the bidirectional total. */
static void pcie_times(const dkv_gpu *g, const dkv_step_plan *plan, double *t_block, double *t_async)
{
    double th_block = 0, td_block = 0, th_async = 0, td_async = 0, hb_async = 0, db_async = 0;
    for (uint32_t i = 0; i < plan->n_xfers; i++) {
        const dkv_xfer *x = &plan->xfers[i];
        double b = (double)x->pcie_bytes;
        bool block = x->blocking || !x->pinned;
        if (x->kind == DKV_XFER_OFFLOAD || x->kind == DKV_XFER_COMPRESS) {
            double t = copy_time(g, true, x->pinned, b, !block);
            if (block)
                td_block += t;
            else
                td_async += t, db_async += b;
        } else if (x->kind == DKV_XFER_FETCH) {
            double t = copy_time(g, false, x->pinned, b, !block);
            if (block)
                th_block += t;
            else
                th_async += t, hb_async += b;
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

/* Bytes a COMPRESS order moves in the CUDA backend (cuda/arena.c compress): the rank-r form of each
 * of the layers x 2 x kv_heads matrices (m tokens x head_dim), bf16 Q (m x r) then the basis B
 * (r x head_dim), r = llround(pcie / device x head_dim); the raw bytes when the form is not smaller. */
static double compress_copy_bytes(const dkv_model *m, const dkv_xfer *x)
{
    double D = m->head_dim, batch = 2.0 * m->n_layers * m->n_kv_heads;
    double raw = (double)x->device_bytes, kvbpt = batch * D * dkv_dtype_bytes(m->kv_dtype);
    if (raw <= 0 || kvbpt <= 0)
        return (double)x->pcie_bytes;
    double tok = ceil(raw / kvbpt), r = llround((double)x->pcie_bytes / raw * D);
    r = r < 1 ? 1 : r > 64 ? 64 : r;   /* DKV_LOWRANK_MAX_RANK */
    r = r > tok ? tok : r;
    double form = batch * (tok * r + r * D) * 2.0;
    return form < raw ? form : raw;
}

/* The copy stream as the CUDA backend runs it (cuda/arena.c): one in-order stream.  A step's
 * fetches are issued first and its kernels wait for them.  Each COMPRESS order is a kernel
 * sequence after the forward whose result is copied out as soon as it is done; the next order's
 * kernels wait until that copy has left (it reuses the staging buffer), so the step's
 * compressions and their copies alternate, and their waits are the compute stream's (the backend
 * times them inside the compress class).  Offloads are issued after the step's kernels and run
 * beside whatever follows, unless blocking (or pageable), when the step waits for them.
 * st->backlog_s: copy seconds still queued when the step starts (in), when the next one can
 * start (out: after this step and its host gap); st->cmp_copy_s likewise for the last
 * compressed result.  t_cmp: the step's compression kernel seconds (inside busy).  Returns the
 * compute stream's waits for compressed results. */
/* The decompress kernel of a rebuilt form: the profile's `decompress` table (rows = m x matrices,
 * head_dim, rank), else its HBM bytes at the preset's bandwidth and one launch (a lower bound:
 * docs/COST_MODEL.md "Low-rank forms on the copy stream"). */
static double rebuild_time(const dkv_model *m, const dkv_gpu *g, const sim_lr_x *x)
{
    if (g->profile) {
        double t = dkv_profile_decompress(g->profile, x->rebuild_rows, m->head_dim, x->rank);
        if (!isnan(t))
            return t;
    }
    return x->rebuild_bytes / g->hbm_bw + g->launch_overhead_s;
}

/* The step's fetches on the copy stream from q (the backlog); *t_copies: their copy seconds.  A
 * fetch that rebuilds a low-rank form (lx: sim_lowrank.c) copies the rest raw, then the form into
 * the one form buffer, once the previous rebuild (compute stream) has read it; its own rebuild
 * waits for that copy.  Returns when the kernels can start; *cp: when the copy stream is free. */
static double fetch_times(const dkv_model *m, const dkv_gpu *g, const dkv_step_plan *plan, const sim_lr_x *lx,
                          double q, double *cp, double *t_copies)
{
    double c = q, rb = 0, t = 0;   /* copy stream, the compute stream's last rebuild */
    for (uint32_t i = 0; i < plan->n_xfers; i++) {
        const dkv_xfer *x = &plan->xfers[i];
        if (x->kind != DKV_XFER_FETCH)
            continue;
        double raw = lx ? lx[i].raw : (double)x->pcie_bytes, tr = raw > 0 ? copy_time(g, false, x->pinned, raw, false) : 0;
        c += tr, t += tr;
        if (lx && lx[i].form > 0) {
            double tf = copy_time(g, false, x->pinned, lx[i].form, false);
            c = (c > rb ? c : rb) + tf, t += tf;
            rb = c + rebuild_time(m, g, &lx[i]);
        }
    }
    *cp = c, *t_copies = t;
    return c > rb ? c : rb;
}

static double stream_times(const dkv_model *m, const dkv_gpu *g, const dkv_step_plan *plan, const sim_lr_x *lx,
                           double busy, double t_cmp, double host_s, sim_state *st, dkv_step_cost *out)
{
    double cmp_dev = 0;
    bool any_in = false;
    for (uint32_t i = 0; i < plan->n_xfers; i++) {
        const dkv_xfer *x = &plan->xfers[i];
        if (x->kind == DKV_XFER_FETCH)
            any_in = true;
        else if (x->kind == DKV_XFER_COMPRESS)
            cmp_dev += (double)x->device_bytes;
    }
    double q = st && st->backlog_s > 0 ? st->backlog_s : 0, prev_cmp = st ? st->cmp_copy_s : 0;
    double cp = q, t_copies = 0;            /* when the copy stream is free */
    double start = any_in ? fetch_times(m, g, plan, lx, q, &cp, &t_copies) : 0;   /* the kernels wait for the fetches */
    double k = start + (busy - t_cmp), wait = 0, blk_end = 0;
    bool any_cmp = false, block = false;
    for (uint32_t i = 0; i < plan->n_xfers; i++) {   /* compressions in plan order, as the backend runs them */
        const dkv_xfer *x = &plan->xfers[i];
        if (x->kind != DKV_XFER_COMPRESS)
            continue;
        double ks = k > prev_cmp ? k : prev_cmp;
        wait += ks - k;
        k = ks + (cmp_dev > 0 ? t_cmp * (double)x->device_bytes / cmp_dev : 0);
        double cb = lx ? lx[i].raw : compress_copy_bytes(m, x);
        double c = cb > 0 ? copy_time(g, true, x->pinned, cb, false) : 0;
        cp = (cp > k ? cp : k) + c;
        prev_cmp = cp, t_copies += c, any_cmp = true;
        if (x->blocking || !x->pinned)
            block = true, blk_end = cp;
    }
    double cend = k;
    for (uint32_t i = 0; i < plan->n_xfers; i++) {   /* offloads after the kernels */
        const dkv_xfer *x = &plan->xfers[i];
        if (x->kind != DKV_XFER_OFFLOAD)
            continue;
        bool b = x->blocking || !x->pinned;
        double c = copy_time(g, true, x->pinned, lx ? lx[i].raw : (double)x->pcie_bytes, !b);
        cp = (cp > cend ? cp : cend) + c;
        t_copies += c;
        if (b)
            block = true, blk_end = cp;
    }
    double end = block && blk_end > cend ? blk_end : cend;
    out->pcie_s = t_copies;
    out->time_s = end;
    if (st) {
        double left = cp - end - host_s;
        st->backlog_s = left > 0 ? left : 0;
        st->cmp_copy_s = any_cmp || prev_cmp > 0 ? prev_cmp - end - host_s : 0;
    }
    return wait;
}

/* The step's PCIe bytes as the backend copies them (sim_lowrank.c) in place of the plan's. */
static void lr_bytes(const dkv_step_plan *plan, const sim_lr_x *lx, dkv_step_cost *out)
{
    double h2d = 0, d2h = 0;
    for (uint32_t i = 0; i < plan->n_xfers; i++) {
        uint8_t k = plan->xfers[i].kind;
        if (k == DKV_XFER_FETCH)
            h2d += lx[i].raw + lx[i].form;
        else if (k == DKV_XFER_COMPRESS || k == DKV_XFER_OFFLOAD)
            d2h += lx[i].raw;
    }
    out->pcie_h2d_bytes = (uint64_t)llround(h2d);
    out->pcie_d2h_bytes = (uint64_t)llround(d2h);
}

static bool is_once(int c)
{
    return c == DKV_KCLASS_LM_HEAD || c == DKV_KCLASS_COMPRESS || c == DKV_KCLASS_REORDER;
}

/* Times per class: t_layer[c] for one layer of a layer class, t_once[c] for the once-per-step
 * parts (LM head, compress, reorder and the per-step elementwise kernels): the profile's where it
 * covers the class, the roofline's otherwise (roof_layer[c], roof_once[c]: costed by the latter; the step's roofline
 * seconds are summed over those after the clock and the calibration scaled every class, roofline_of). */
static void class_times(const dkv_model *m, const dkv_gpu *g, const rates *r, const dkv_step_plan *plan,
                        const dkv_cost_step *cs, double t_layer[DKV_KCLASS_N], double t_once[DKV_KCLASS_N],
                        bool roof_layer[DKV_KCLASS_N], bool roof_once[DKV_KCLASS_N])
{
    double slow[DKV_KCLASS_N], p_layer[DKV_KCLASS_N], p_once[DKV_KCLASS_N];
    segment_times(g, cs, slow);
    sim_profile_times(m, g, plan, cs, p_layer, p_once);
    for (int c = 0; c < DKV_KCLASS_N; c++) {
        roof_layer[c] = roof_once[c] = false;
        t_layer[c] = is_once(c) ? 0 : roofline_time(&cs->layer[c], r, c, slow[c]);
        t_once[c] = is_once(c) || c == DKV_KCLASS_ELEMENTWISE ? roofline_time(&cs->once[c], r, c, 0.0) : 0;
        if (cs->layer[c].launches && !is_once(c)) {
            if (!isnan(p_layer[c]))
                t_layer[c] = p_layer[c];
            else
                roof_layer[c] = true;
        }
        if (cs->once[c].launches) {
            if (!isnan(p_once[c]))
                t_once[c] = p_once[c];
            else
                roof_once[c] = true;
        }
    }
}

/* The step's kernel seconds costed by the roofline: the classes class_times marked, at their final (scaled) times,
 * so that the summary's roofline_frac is a share of the kernel time (the unscaled sum ran past 1 under a
 * kernel_scale below 1). */
static double roofline_of(const dkv_cost_step *cs, const double t_layer[DKV_KCLASS_N],
                          const double t_once[DKV_KCLASS_N], const bool roof_layer[DKV_KCLASS_N],
                          const bool roof_once[DKV_KCLASS_N])
{
    double roof = 0;
    for (int c = 0; c < DKV_KCLASS_N; c++)
        roof += (roof_layer[c] ? cs->n_layers * t_layer[c] : 0) + (roof_once[c] ? t_once[c] : 0);
    return roof;
}

/* ---- first use of a shape (profile first_use), remembered per run or in a shared set */

static bool warm_insert_locked(dkv_sim_warm *w, uint64_t key)
{
    if (2 * (w->n_seen + 1) > w->cap_seen) {
        uint32_t cap = w->cap_seen ? 2 * w->cap_seen : 256;
        uint64_t *n = calloc(cap, sizeof *n);
        if (!n)
            return false;   /* out of memory: charge nothing more (a cost, not a correctness issue) */
        for (uint32_t i = 0; i < w->cap_seen; i++)
            if (w->seen[i]) {
                uint32_t h = (uint32_t)(w->seen[i] * 0x9E3779B97F4A7C15ull >> 40) & (cap - 1);
                while (n[h])
                    h = (h + 1) & (cap - 1);
                n[h] = w->seen[i];
            }
        free(w->seen);
        w->seen = n, w->cap_seen = cap;
    }
    key |= 1ull << 63;   /* never 0 */
    uint32_t h = (uint32_t)(key * 0x9E3779B97F4A7C15ull >> 40) & (w->cap_seen - 1);
    while (w->seen[h]) {
        if (w->seen[h] == key)
            return false;
        h = (h + 1) & (w->cap_seen - 1);
    }
    w->seen[h] = key;
    w->n_seen++;
    return true;
}

/* true when key was not in the set (a first use); it is in it afterwards */
static bool seen_insert(sim_state *st, uint64_t key)
{
    if (!st || !st->warm)
        return false;
    pthread_mutex_lock(&st->warm->mu);
    bool fresh = warm_insert_locked(st->warm, key);
    pthread_mutex_unlock(&st->warm->mu);
    return fresh;
}

dkv_status dkv_sim_warm_new(dkv_sim_warm **out, dkv_err *err)
{
    dkv_sim_warm *w = calloc(1, sizeof *w);
    if (!w)
        return dkv_err_set(err, DKV_ENOMEM, "sim: out of host memory");
    pthread_mutex_init(&w->mu, NULL);
    *out = w;
    return DKV_OK;
}

void dkv_sim_warm_free(dkv_sim_warm *w)
{
    if (!w)
        return;
    pthread_mutex_destroy(&w->mu);
    free(w->seen);
    free(w);
}

uint32_t dkv_sim_warm_count(dkv_sim_warm *w)
{
    if (!w)
        return 0;
    pthread_mutex_lock(&w->mu);
    uint32_t n = w->n_seen;
    pthread_mutex_unlock(&w->mu);
    return n;
}

/* A shape's key: class, a size (GEMM rows, attention mode) and the model's shape, so that a set
 * shared by runs of two models keeps their GEMMs apart. */
static uint64_t model_tag(const dkv_model *m)
{
    uint64_t h = 1469598103934665603ull;
    const uint64_t v[] = {m->hidden, m->ffn, m->n_heads, m->n_kv_heads, m->head_dim, m->vocab, m->n_layers};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        h = (h ^ v[i]) * 1099511628211ull;
    return h & 0xffffff;
}

static uint64_t shape_key(int c, uint64_t a, uint64_t tag) { return (uint64_t)c << 56 | (a & 0xffffffff) << 24 | tag; }

/* true when a GEMM of `rows` rows is a first use: a shape new to the run (or process), outside the
 * backend's GEMM warm-up when it warms (core/model/gemm_warm.h: such a shape takes its bucket's
 * algorithm, no plan to pay) */
static bool gemm_first(sim_state *st, const dkv_sim_options *o, int c, uint64_t rows, uint64_t tag)
{
    if (o->warm_gemms && rows <= DKV_GEMM_WARM_MAX_ROWS)
        return false;
    return seen_insert(st, shape_key(c, rows, tag));
}

/* Seconds of first uses this step: a new GEMM shape (class, rows) outside the warm-up's range, a
 * new attention mode, the first kernel of any other class; the low-rank compressor's first call
 * costs what the profile measured for it (first_compress_s: its module and workspace set-up), else
 * other_s, and nothing when the backend warmed it at begin (warm_gemms and warm_compressor). */
static double first_use(const dkv_model *m, const dkv_gpu *g, const dkv_sim_options *o, const dkv_step_plan *plan,
                        const dkv_cost_step *cs, sim_state *st)
{
    const dkv_profile_info *in = dkv_profile_get_info(g->profile);
    double t = 0, s = cs->weight_streams;
    uint64_t Q = (uint64_t)(cs->q_rows / s), tag = model_tag(m);
    if (plan->n_items) {
        t += in->first_gemm_s * (gemm_first(st, o, DKV_KCLASS_QKV, Q, tag) + gemm_first(st, o, DKV_KCLASS_O, Q, tag) +
                                 2 * gemm_first(st, o, DKV_KCLASS_FFN, Q, tag));
        for (uint32_t i = 0; i < plan->n_items; i++)
            t += in->first_attn_s * seen_insert(st, shape_key(DKV_KCLASS_ATTN, plan->items[i].attn, tag));
    }
    if (cs->logit_rows > 0) {
        double C = plan->max_logit_rows ? plan->max_logit_rows : cs->logit_rows;
        double rem = cs->logit_rows - floor(cs->logit_rows / C) * C;
        if (cs->logit_rows >= C)
            t += in->first_gemm_s * gemm_first(st, o, DKV_KCLASS_LM_HEAD, (uint64_t)C, tag);
        if (rem > 0)
            t += in->first_gemm_s * gemm_first(st, o, DKV_KCLASS_LM_HEAD, (uint64_t)rem, tag);
    }
    static const int other[] = {DKV_KCLASS_KV_STORE, DKV_KCLASS_KV_GATHER, DKV_KCLASS_ELEMENTWISE,
                                DKV_KCLASS_COMPRESS, DKV_KCLASS_REORDER};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        if (cs->layer[other[i]].launches || cs->once[other[i]].launches) {
            if (other[i] == DKV_KCLASS_COMPRESS && o->warm_gemms && o->warm_compressor)
                continue;   /* the backend ran its compressor at begin (cuda/arena.c bk_compressor_begin) */
            double fu = other[i] == DKV_KCLASS_COMPRESS && in->first_compress_s > 0 ? in->first_compress_s
                                                                                     : in->first_other_s;
            t += fu * seen_insert(st, shape_key(other[i], 0, tag));
        }
    return t;
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

/* The L2 replay's kernels of a step as kernel records (backend.h: l2_seq, l2_part). */
static void emit_l2_records(const dkv_cost_l2_trace *t, uint64_t step_index, dkv_kernel_fn rec, void *user)
{
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t part = i < t->n_start ? 0 : i < t->n_start + t->n_layer ? 1 : 2;
        dkv_kernel_record r = {.step_index = step_index, .kind = t->k[i].kind, .layer = UINT32_MAX, .n_launches = 1,
                               .read_bytes = (uint64_t)llround(t->k[i].rd), .write_bytes = (uint64_t)llround(t->k[i].wr),
                               .l2_seq = i + 1, .l2_part = part, .l2_dirty_bytes = (uint64_t)llround(t->k[i].dirty),
                               .l2_held_x = (uint64_t)llround(t->k[i].held_x),
                               .l2_held_qkv = (uint64_t)llround(t->k[i].held_qkv),
                               .l2_held_att = (uint64_t)llround(t->k[i].held_att)};
        rec(user, &r);
    }
}

/* Costs plan into out with cs as the counting scratch and st the run's state (both kept by the
 * caller across steps; st may be NULL: no first-use memory, no copy backlog). */
static dkv_status sim_cost(const dkv_model *m, const dkv_gpu *g, const dkv_sim_options *opts,
                           const dkv_step_plan *plan, dkv_cost_step *cs, sim_state *st, dkv_step_cost *out,
                           dkv_kernel_fn rec, void *user, dkv_err *err)
{
    dkv_sim_options o = opts ? *opts : dkv_sim_options_default();
    memset(out, 0, sizeof *out);
    if (!m || !g || !plan)
        return dkv_err_set(err, DKV_EINVAL, "sim: model, gpu and plan are required");
    dkv_cost_hw hw = dkv_cost_hw_of(g);
    hw.memo = st ? st->memo : NULL;
    dkv_cost_l2_trace *l2 = NULL;   /* the replay's kernels: the run's buffer, or this call's */
    if (rec && o.l2_records && g->l2_bytes > 0) {
        l2 = st && st->l2 ? st->l2 : malloc(sizeof *l2);
        if (!l2)
            return dkv_err_set(err, DKV_ENOMEM, "sim: no memory for the L2 replay's kernel records");
        if (st)
            st->l2 = l2;
        hw.trace = l2;
    }
    dkv_status rc = dkv_cost_count_hw(m, &hw, plan, cs, err);
    if (rc == DKV_OK && l2 && l2->dropped)
        rc = dkv_err_set(err, DKV_ERANGE, "sim: step %llu replays %u kernels in the L2, more than the %d its kernel "
                         "records hold (record.l2_kernels: a smaller batch)", (unsigned long long)plan->step_index,
                         l2->n + l2->dropped, DKV_COST_L2_TRACE_MAX);
    if (rc != DKV_OK) {
        if (l2 && !st)
            free(l2);
        return rc;
    }
    rates r;
    rates_init(g, &o, &r);
    double t_layer[DKV_KCLASS_N], t_once[DKV_KCLASS_N];
    bool roof_layer[DKV_KCLASS_N], roof_once[DKV_KCLASS_N];
    class_times(m, g, &r, plan, cs, t_layer, t_once, roof_layer, roof_once);
    const dkv_profile_info *in = g->profile ? dkv_profile_get_info(g->profile) : NULL;
    double settle_mhz = 0, run_mhz = 0;   /* the step's clock (profile clock block; needs the run's state) */
    if (st)
        sim_clock_apply(&st->clk, in, plan, cs, t_layer, t_once, &settle_mhz, &run_mhz);
    if (st && in && in->hold_slowdown > 0 && plan->start_s < st->hold_until_s)
        for (int c = 0; c < DKV_KCLASS_N; c++)   /* inside the clocks' hold after a heavy step */
            t_layer[c] *= 1 + in->hold_slowdown, t_once[c] *= 1 + in->hold_slowdown;
    if (o.kernel_scale > 0 && o.kernel_scale != 1)   /* the machine calibration (sim.h) */
        for (int c = 0; c < DKV_KCLASS_N; c++)
            t_layer[c] *= o.kernel_scale, t_once[c] *= o.kernel_scale;
    double compute = t_once[DKV_KCLASS_LM_HEAD] + t_once[DKV_KCLASS_COMPRESS] + t_once[DKV_KCLASS_REORDER] +
                     t_once[DKV_KCLASS_ELEMENTWISE];
    for (int c = 0; c < DKV_KCLASS_N; c++)
        if (!is_once(c))
            compute += cs->n_layers * t_layer[c];
    dkv_cost_totals tot;
    dkv_cost_step_totals(cs, &tot);
    double busy = compute;   /* the GPU's span: the kernels, or the host's enqueue when that is longer */
    if (g->profile) {
        if (o.first_use)
            compute += first_use(m, g, &o, plan, cs, st);
        double gemms = cs->n_layers * (cs->layer[DKV_KCLASS_QKV].launches + cs->layer[DKV_KCLASS_O].launches +
                                       cs->layer[DKV_KCLASS_FFN].launches) + cs->logit_chunks;
        double enqueue = in->host_per_launch_s * ((double)tot.launches - gemms) + in->host_per_gemm_launch_s * gemms;
        busy = compute > enqueue ? compute : enqueue;
        out->host_s = in->host_base_s + in->host_per_item_s * plan->n_items;
        out->handover_s = in->host_handover_s > in->host_resume_s ? in->host_handover_s - in->host_resume_s : 0;
    }
    out->roofline_s = roofline_of(cs, t_layer, t_once, roof_layer, roof_once);
    out->pcie_h2d_bytes = cs->pcie_h2d_bytes;
    out->pcie_d2h_bytes = cs->pcie_d2h_bytes;
    if (o.copy_model == DKV_SIM_COPY_STREAM) {
        const sim_lr_x *lx = NULL;   /* the bytes the backend copies, where its geometry is known */
        if (st && (rc = sim_lr_step(&st->lr, plan, &lx, err)) != DKV_OK)
            return rc;
        if (lx)
            lr_bytes(plan, lx, out);
        double wait = stream_times(m, g, plan, lx, busy, t_once[DKV_KCLASS_COMPRESS], out->host_s, st, out);
        compute += wait;   /* the backend's compute stream waits inside its compress class */
        t_once[DKV_KCLASS_COMPRESS] += wait;
    } else {
        double t_block, t_async;
        pcie_times(g, plan, &t_block, &t_async);
        out->pcie_s = t_block + t_async;
        out->time_s = t_block + (busy > t_async ? busy : t_async);
    }
    out->compute_s = compute;
    out->stall_s = out->time_s - compute;
    if (st && in && in->hold_slowdown > 0 && compute >= in->hold_after_s)
        st->hold_until_s = plan->start_s + out->time_s + in->hold_window_s;
    if (st)
        sim_clock_push(&st->clk, in, plan->start_s, out->time_s, settle_mhz);
    out->sm_mhz = run_mhz;
    out->flops = tot.flops;
    out->hbm_read_bytes = tot.hbm_read_bytes;
    out->hbm_write_bytes = tot.hbm_write_bytes;
    out->n_kernels = tot.launches;
    out->flops_util = compute > 0 ? tot.flops / (compute * r.peak) : 0;
    out->bw_util = compute > 0 ? (double)(out->hbm_read_bytes + out->hbm_write_bytes) / (compute * r.bw) : 0;
    if (rec && (o.kernel_records || !o.l2_records))
        emit_records(cs, plan->step_index, t_layer, t_once, rec, user);
    if (l2) {
        emit_l2_records(l2, plan->step_index, rec, user);
        if (!st)
            free(l2);
    }
    return DKV_OK;
}

dkv_status dkv_sim_cost_plan(const dkv_model *m, const dkv_gpu *g, const dkv_sim_options *opts,
                             const dkv_step_plan *plan, dkv_step_cost *out, dkv_kernel_fn rec, void *user,
                             dkv_err *err)
{
    dkv_cost_step cs;
    dkv_cost_step_init(&cs);
    dkv_status st = sim_cost(m, g, opts, plan, &cs, NULL, out, rec, user, err);
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
    sim_state st;       /* the run's copy backlog and shapes seen */
} sim_ctx;

static dkv_status sim_begin(void *ctx, const dkv_backend_setup *s, dkv_err *err)
{
    sim_ctx *c = ctx;
    if (!s || !s->model || !s->gpu)
        return dkv_err_set(err, DKV_EINVAL, "sim: setup needs a model and a gpu");
    c->model = s->model;
    c->gpu = s->gpu;
    c->shared_weights = s->instances.shared_weights;
    free(c->st.own.seen);
    c->st.own.seen = NULL, c->st.own.n_seen = c->st.own.cap_seen = 0;
    c->st.backlog_s = c->st.cmp_copy_s = 0;
    c->st.hold_until_s = -HUGE_VAL;
    c->st.clk.n = 0;
    dkv_cost_l2_memo_free(c->st.memo);   /* a fresh memo per run (out of memory: none, every step replayed) */
    c->st.memo = dkv_cost_l2_memo_new();
    dkv_status rc = sim_lr_begin(&c->st.lr, s, err);
    if (rc != DKV_OK)
        return rc;
    c->st.warm = c->opts.warm ? c->opts.warm : &c->st.own;
    c->on_kernel = c->opts.kernel_records || c->opts.l2_records ? s->on_kernel : NULL;
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
    return sim_cost(c->model, c->gpu, &c->opts, &p, &c->cs, &c->st, out, c->on_kernel, c->user, err);
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
    if (c) {
        dkv_cost_step_free(&c->cs);
        free(c->st.own.seen);
        sim_lr_free(&c->st.lr);
        dkv_cost_l2_memo_free(c->st.memo);
        free(c->st.l2);
        pthread_mutex_destroy(&c->st.own.mu);
    }
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
    pthread_mutex_init(&c->st.own.mu, NULL);
    dkv_cost_step_init(&c->cs);
    out->iface = &sim_iface;
    out->ctx = c;
    return DKV_OK;
}

static const char *const copy_model_names[] = {"overlap", "stream"};
const dkv_names dkv_sim_copy_model_names = DKV_NAMES("sim.copy_model", copy_model_names);
