/* cpu_step.c - one step of the CPU backend: each item resolved from the plan (the rules of
 * cuda/backend_fwd.c's plan_item), its block table (pool blocks, then staging blocks filled from
 * the host tier), the forward, the unmask (or teacher forcing), the host-tier transfers
 * (offload raw, compress to low rank and keep the reconstruction) and the step's cost. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu_internal.h"
#include "cost/cost.h"
#include "model/devmem.h"

static uint32_t cdiv(uint64_t a, uint64_t d) { return (uint32_t)((a + d - 1) / d); }

static dkv_status plan_item(cpu_backend *b, const dkv_step_item *it, uint32_t i, cpu_item *x, dkv_err *err)
{
    if (it->request >= b->n_rq)
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: item %u: request %u is not in the workload (%zu requests)", i,
                           it->request, b->n_rq);
    const cpu_req *r = &b->rq[it->request];
    uint32_t B = b->dec.block_len, L = r->L, a = it->kv_tokens, w = it->kv_write_tokens, cached = it->kv_cached_tokens;
    if (it->block >= r->n_blocks)
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: item %u: request %u has %u blocks, the plan runs block %u", i,
                           it->request, r->n_blocks, it->block);
    memset(x, 0, sizeof *x);
    x->req = it->request, x->s_b = r->P + it->block * B, x->B = B, x->nq = it->q_tokens;
    x->refresh = it->phase == DKV_STEP_REFRESH;
    x->R = it->logit_rows;
    x->measure = b->on_entropy && b->dec.cache == DKV_CACHE_SPARSE && it->step == 0 && x->refresh;
    if (x->refresh) {
        if (x->nq != L || a != L)
            return dkv_err_set(err, DKV_EINVAL, "cpu backend: item %u (request %u): a Refresh computes and attends the "
                               "canvas (q = a = L = %u), the plan has q = %u, a = %u", i, it->request, L, x->nq, a);
        x->n_own = L;
        if (w > 0 && b->dec.cache == DKV_CACHE_SPARSE) {
            if (w > L - B)
                return dkv_err_set(err, DKV_EINVAL, "cpu backend: item %u: sparse selection keeps %u of %u tokens "
                                   "outside the block", i, w, L - B);
            x->write = CW_SELECT, x->keep = w, x->need_tokens = w, x->shared_set = b->dec.shared_set;
        } else if (w > 0) {
            if (w > L)
                return dkv_err_set(err, DKV_EINVAL, "cpu backend: item %u: writes %u > canvas %u", i, w, L);
            x->write = CW_STORE, x->w_lo = 0, x->w_n = w, x->need_tokens = w;
        }
    } else {
        x->q0 = x->s_b;
        if (x->q0 + x->nq > L || cached > a || a > L + x->nq)
            return dkv_err_set(err, DKV_EINVAL, "cpu backend: item %u (request %u): Reuse rows [%u, %u) and cached %u "
                               "of %u keys do not fit a canvas of %u", i, it->request, x->q0, x->q0 + x->nq, cached, a, L);
        if (w > 0) {   /* dual: the block's KV in place first, then every key from the pool */
            if (w > x->nq || a > L)
                return dkv_err_set(err, DKV_EINVAL, "cpu backend: item %u: in-place write of %u rows with %u computed "
                                   "and %u attended", i, w, x->nq, a);
            x->write = CW_STORE, x->w_lo = x->s_b, x->w_n = w, x->inplace = true;
            x->n_cache = a, x->need_tokens = a > x->s_b + w ? a : x->s_b + w;
        } else {       /* prefix: cached prefix + own rows; sparse: retained slots + own block */
            if (a - cached != x->nq)
                return dkv_err_set(err, DKV_EINVAL, "cpu backend: item %u (request %u): attends %u computed keys but "
                                   "computes %u rows", i, it->request, a - cached, x->nq);
            x->n_cache = cached, x->n_own = x->nq, x->need_tokens = cached;
        }
    }
    if (x->s_b < x->q0 || x->s_b + B > x->q0 + x->nq)
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: item %u: the block [%u, %u) is not among the computed rows", i,
                           x->s_b, x->s_b + B);
    return DKV_OK;
}

static dkv_status host_slot(cpu_backend *b, cpu_req *r, uint32_t nblk, dkv_err *err)
{
    if (r->host && r->host_blocks >= nblk)
        return DKV_OK;
    uint32_t n = cdiv(r->L, b->bt) > nblk ? cdiv(r->L, b->bt) : nblk;
    uint8_t *h = realloc(r->host, (size_t)n * b->block_bytes), *ok = h ? realloc(r->host_ok, n) : NULL;
    if (h)
        r->host = h;
    if (ok)
        r->host_ok = ok;
    float *sc = ok && b->scale ? realloc(r->host_scale, (size_t)n * b->n_scale * sizeof(float)) : NULL;
    if (sc)
        r->host_scale = sc;
    if (!h || !ok || (b->scale && !sc))
        return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory for a host slot of %u blocks", n);
    memset(r->host_ok + r->host_blocks, 0, n - r->host_blocks);
    r->host_blocks = n;
    return DKV_OK;
}

/* The item's table: its pool blocks, then staging blocks for positions it no longer holds,
 * filled from the host slot (raw or the low-rank reconstruction). */
static dkv_status build_table(cpu_backend *b, const dkv_step_item *it, uint32_t i, cpu_item *x, dkv_err *err)
{
    x->n_tb = cdiv(x->need_tokens, b->bt);
    x->n_chain = it->n_kv_blocks < x->n_tb ? it->n_kv_blocks : x->n_tb;
    if (x->n_tb == 0)
        return DKV_OK;
    x->tab = malloc(x->n_tb * sizeof *x->tab);
    if (!x->tab)
        return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory");
    if (x->n_chain && !it->kv_blocks)
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: item %u holds %u pool blocks but the plan gives no block ids",
                           i, it->n_kv_blocks);
    for (uint32_t j = 0; j < x->n_chain; j++) {
        if (it->kv_blocks[j] >= b->n_pool)
            return dkv_err_set(err, DKV_EINVAL, "cpu backend: item %u (request %u): pool block %u is outside the pool "
                               "(%llu blocks)", i, x->req, it->kv_blocks[j], (unsigned long long)b->n_pool);
        x->tab[j] = it->kv_blocks[j];
    }
    if (x->n_tb > x->n_chain) {
        uint32_t need = x->n_tb - x->n_chain;
        if (b->staging_used + need > b->n_staging)
            return dkv_err_set(err, DKV_ENOMEM, "cpu backend: item %u (request %u) needs %u staging blocks for KV it "
                               "does not hold; %llu of %llu are left (setup.pool.staging_blocks)", i, x->req, need,
                               (unsigned long long)(b->n_staging - b->staging_used), (unsigned long long)b->n_staging);
        cpu_req *r = &b->rq[x->req];
        CPU_TRY(host_slot(b, r, x->n_tb, err));
        for (uint32_t j = x->n_chain; j < x->n_tb; j++) {
            uint32_t id = (uint32_t)(b->n_pool + b->staging_used++);
            x->tab[j] = id;
            if (!r->host_ok[j])
                b->rep.fetch_unwritten_blocks++;
            cpu_block_in(b, id, r->host + (size_t)j * b->block_bytes,
                         r->host_scale ? r->host_scale + (size_t)j * b->n_scale : NULL);
        }
        b->rep.n_fetch++;
    }
    return DKV_OK;
}

/* After the forward: staging blocks the item wrote go back to its host copy. */
static void write_back(cpu_backend *b, const cpu_item *x)
{
    if (x->write == CW_NONE || x->n_tb <= x->n_chain)
        return;
    cpu_req *r = &b->rq[x->req];
    uint32_t lo = x->write == CW_SELECT ? 0 : x->w_lo, hi = x->write == CW_SELECT ? x->keep : x->w_lo + x->w_n;
    for (uint32_t j = x->n_chain; j < x->n_tb; j++)
        if ((uint64_t)(j + 1) * b->bt > lo && (uint64_t)j * b->bt < hi) {
            cpu_block_out(b, x->tab[j], r->host + (size_t)j * b->block_bytes,
                          r->host_scale ? r->host_scale + (size_t)j * b->n_scale : NULL);
            r->host_ok[j] = 1;
        }
}

/* COMPRESS: the blocks before those offloaded raw, every (layer, k|v, head) matrix of their tokens to the
 * order's rank, where the CUDA backend would store the low-rank form: the range, its rows and rank, and the form
 * or raw choice are core/model/devmem.h's rule, as cuda/arena.c's compress (no compressor capacity here, so no
 * cap on the rows).  The reconstruction goes to the host slot (what a fetch later reads); where the form would be
 * larger than the raw blocks (ratio near 1, short FP8 ranges) the blocks go raw, exact, as on the CUDA backend. */
static dkv_status compress(cpu_backend *b, const dkv_step_plan *plan, const dkv_xfer *xf, const cpu_item *x,
                           dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t D = m->head_dim, bt = b->bt;
    dkv_devmem_range g = dkv_devmem_compress_range(x->n_chain, dkv_plan_offload_bytes(plan, x->req), xf->device_bytes,
                                                   xf->pcie_bytes, b->block_bytes, bt, UINT32_MAX, x->need_tokens, D);
    if (g.m_tok == 0)
        return DKV_OK;
    uint32_t start = g.start, end = g.end, n = g.m_tok, r = g.rank;
    cpu_req *q = &b->rq[x->req];
    CPU_TRY(host_slot(b, q, end, err));
    /* one Omega for every matrix of the order, seeded options seed + the count of orders before (raw ones too):
     * cuda/arena.c's compress() draws the same (cuda/lowrank.h) before it chooses the form or the raw blocks */
    uint64_t seed = b->o.seed + b->lr_orders++;
    dkv_devmem_lr_form form = {0};
    dkv_status st = DKV_OK;
    if (dkv_devmem_lr_compressed(&form, &g, dkv_devmem_kv_vectors(m), D, b->block_bytes)) {
        float *A = malloc((size_t)n * D * sizeof *A);
        const float **rows = malloc((size_t)n * sizeof *rows);
        if (!A || !rows) {
            free(A), free(rows);
            return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory for compression");
        }
        uint32_t live = x->need_tokens > start * bt + n ? x->need_tokens - start * bt : n;   /* rows after stay live */
        for (uint32_t l = 0; l < m->n_layers && st == DKV_OK; l++)
            for (uint32_t kv = 0; kv < 2 && st == DKV_OK; kv++)
                for (uint32_t h = 0; h < m->n_kv_heads && st == DKV_OK; h++) {
                    double e = 0;
                    cpu_load(b, x->tab + start, l, kv, h, n, A);
                    st = dkv_cpu_lowrank(A, A, n, D, r, 1, seed, &e, err);
                    for (uint32_t t = 0; t < n; t++)
                        rows[t] = A + (size_t)t * D;
                    if (st == DKV_OK)   /* re-stored (quantized) in place, then copied out below */
                        cpu_store(b, x->tab + start, l, kv, h, 0, n, live, rows);
                    b->rep.compress_rel_err_sum += e;
                    b->rep.compress_matrices++;
                }
        free(A), free(rows);
        b->rep.n_lowrank_stored++;
    }
    for (uint32_t j = start; j < end && st == DKV_OK; j++) {
        cpu_block_out(b, x->tab[j], q->host + (size_t)j * b->block_bytes,
                      q->host_scale ? q->host_scale + (size_t)j * b->n_scale : NULL);
        q->host_ok[j] = 1;
    }
    b->rep.n_compress++;
    return st;
}

/* OFFLOAD: the request's last pcie_bytes of blocks, raw, to its host slot. */
static dkv_status offload(cpu_backend *b, const dkv_xfer *xf, const cpu_item *x, dkv_err *err)
{
    uint32_t nb = cdiv(xf->pcie_bytes, b->block_bytes), start = x->n_chain > nb ? x->n_chain - nb : 0;
    cpu_req *q = &b->rq[x->req];
    CPU_TRY(host_slot(b, q, x->n_chain, err));
    for (uint32_t j = start; j < x->n_chain; j++) {
        cpu_block_out(b, x->tab[j], q->host + (size_t)j * b->block_bytes,
                      q->host_scale ? q->host_scale + (size_t)j * b->n_scale : NULL);
        q->host_ok[j] = 1;
    }
    b->rep.n_offload++;
    return DKV_OK;
}

static const cpu_item *item_of(const cpu_item *xs, uint32_t n, uint32_t req)
{
    for (uint32_t i = 0; i < n; i++)
        if (xs[i].req == req)
            return &xs[i];
    return NULL;
}

static dkv_status xfers(cpu_backend *b, const dkv_step_plan *plan, const cpu_item *xs, dkv_err *err)
{
    for (int pass = 0; pass < 2; pass++)   /* compress first: it reads the blocks before the offloaded ones */
        for (uint32_t k = 0; k < plan->n_xfers; k++) {
            const dkv_xfer *xf = &plan->xfers[k];
            if ((pass == 0) != (xf->kind == DKV_XFER_COMPRESS) || (pass == 1 && xf->kind != DKV_XFER_OFFLOAD))
                continue;
            const cpu_item *x = item_of(xs, plan->n_items, xf->request);
            if (!x)
                return dkv_err_set(err, DKV_EINVAL, "cpu backend: transfer order %u for request %u, which has no item in "
                                   "the step", k, xf->request);
            CPU_TRY(xf->kind == DKV_XFER_COMPRESS ? compress(b, plan, xf, x, err) : offload(b, xf, x, err));
        }
    return DKV_OK;
}

/* The unmask rule of cuda/backend.h: the ceil(masked / steps left) most confident masked positions
 * of the block (ties to the lower position) take their argmax, or, with targets, their target
 * (teacher forcing), each scored once at that step; with follow, the positions the trajectory
 * recorded at this step take the recorded tokens (decode/follow.h). */
static dkv_status unmask(cpu_backend *b, const dkv_step_plan *plan, const dkv_step_item *it, const cpu_item *x,
                         dkv_err *err)
{
    cpu_req *r = &b->rq[x->req];
    if (it->step == 0 || r->cur_block != it->block) {
        r->cur_block = it->block;
        r->masked = x->B;
    }
    uint32_t S = it->steps_in_block, left = it->step < S ? S - it->step : 1, nu = (r->masked + left - 1) / left;
    nu = nu > r->masked ? r->masked : nu;
    uint32_t *tok = r->canvas + x->s_b;
    if (b->o.follow) {
        uint32_t n;
        CPU_TRY(dkv_follow_apply(&b->o.follow[x->req], x->req, plan->step_index, r->P, r->G, x->s_b, x->B, tok,
                                 b->mask_id, b->m.vocab, nu, &n, err));
        r->masked -= n;
        return DKV_OK;
    }
    if (b->o.targets) {   /* teacher forcing: decode/score.h, the definition the CUDA backend shares */
        uint32_t n;
        dkv_status st = dkv_score_block(b->logits, b->conf, x->B, b->m.vocab, tok,
                                        b->o.targets[x->req] + (x->s_b - r->P), b->mask_id, nu,
                                        &b->rep.score[x->req], &n, err);
        if (st != DKV_OK) {
            dkv_err_prefix(err, "cpu backend: request %u", x->req);
            return st;
        }
        r->masked -= n;
        return DKV_OK;
    }
    for (uint32_t n = 0; n < nu; n++) {
        uint32_t pick = UINT32_MAX;
        for (uint32_t i = 0; i < x->B; i++)
            if (tok[i] == b->mask_id && (pick == UINT32_MAX || b->conf[i] > b->conf[pick]))
                pick = i;
        if (pick == UINT32_MAX)
            break;
        tok[pick] = b->argmax[pick];
        r->masked--;
    }
    return DKV_OK;
}

/* A sparse block's first step measured its attention entropy: kept in the report and handed to
 * the engine (setup.on_entropy: the retention policy's rho of the block's selecting step). */
static dkv_status record_entropy(cpu_backend *b, const dkv_step_item *it, double e, dkv_err *err)
{
    dkv_cpu_entropy *n = realloc(b->rep.entropy, (b->rep.n_entropy + 1) * sizeof *n);
    if (!n)
        return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory");
    b->rep.entropy = n;
    n[b->rep.n_entropy++] = (dkv_cpu_entropy){.request = it->request, .block = it->block, .entropy = e};
    b->on_entropy(b->on_entropy_user, it->request, it->block, e);
    return DKV_OK;
}

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void cost(cpu_backend *b, const dkv_step_plan *plan, double wall, dkv_step_cost *out)
{
    dkv_cost_step cs;
    dkv_err e = {0};
    memset(out, 0, sizeof *out);
    dkv_cost_step_init(&cs);
    if (dkv_cost_count(&b->m, plan, &cs, &e) == DKV_OK) {   /* the cost model's counts of the plan */
        dkv_cost_totals t;
        dkv_cost_step_totals(&cs, &t);
        out->flops = t.flops;
        out->hbm_read_bytes = t.hbm_read_bytes, out->hbm_write_bytes = t.hbm_write_bytes;
        out->pcie_h2d_bytes = cs.pcie_h2d_bytes, out->pcie_d2h_bytes = cs.pcie_d2h_bytes;
        out->n_kernels = t.launches;
    }
    dkv_cost_step_free(&cs);
    out->time_s = out->compute_s = wall;   /* CPU wall clock of the step: CPU time, not GPU time */
    b->rep.cpu_time_s += wall;
}

dkv_status cpu_run_step(void *ctx, const dkv_step_plan *plan, dkv_step_cost *out, dkv_err *err)
{
    cpu_backend *b = ctx;
    if (!b->begun)
        return dkv_err_set(err, DKV_ESTATE, "cpu backend: run_step before begin");
    double t0 = cpu_now(), c0 = thread_cpu();
    memset(out, 0, sizeof *out);
    if (plan->n_items == 0)
        return plan->n_xfers ? dkv_err_set(err, DKV_EINVAL, "cpu backend: transfer orders in a step without items")
                             : DKV_OK;
    cpu_item *xs = calloc(plan->n_items, sizeof *xs);
    uint32_t *before = NULL;
    if (!xs)
        return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory");
    dkv_status st = DKV_OK;
    b->staging_used = 0;
    b->step_index = plan->step_index;
    for (uint32_t i = 0; i < plan->n_items && st == DKV_OK; i++)
        if ((st = plan_item(b, &plan->items[i], i, &xs[i], err)) == DKV_OK)
            st = build_table(b, &plan->items[i], i, &xs[i], err);
    for (uint32_t i = 0; i < plan->n_items && st == DKV_OK; i++) {
        const dkv_step_item *it = &plan->items[i];
        cpu_item *x = &xs[i];
        cpu_req *r = &b->rq[x->req];
        if (it->step == 0)   /* a block starts fully masked */
            for (uint32_t t = 0; t < x->B; t++)
                r->canvas[x->s_b + t] = b->mask_id;
        if (b->o.on_item && x->R) {
            free(before);
            if (!(before = malloc(r->L * sizeof *before))) {
                st = dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory");
                break;
            }
            memcpy(before, r->canvas, r->L * sizeof *before);
        }
        b->ent_sum = 0, b->ent_n = 0;
        if ((st = cpu_forward(b, x, err)) != DKV_OK)
            break;
        if (x->measure && b->ent_n && (st = record_entropy(b, it, b->ent_sum / (double)b->ent_n, err)) != DKV_OK)
            break;
        for (uint32_t k = b->rep.n_entropy; x->write == CW_SELECT && k-- > 0;)
            if (b->rep.entropy[k].request == it->request && b->rep.entropy[k].block == it->block) {
                b->rep.entropy[k].keep = x->keep;
                break;
            }
        write_back(b, x);
        if (!x->R)
            continue;
        if ((st = unmask(b, plan, it, x, err)) != DKV_OK)
            break;
        if (b->o.on_item) {
            dkv_cpu_item_report rp = {.step_index = plan->step_index, .item = i, .request = it->request,
                                      .block = it->block, .step = it->step, .phase = it->phase, .prompt = r->P,
                                      .canvas = r->L, .block_start = x->s_b, .block_len = x->B,
                                      .tokens_before = before, .tokens_after = r->canvas, .argmax = b->argmax,
                                      .conf = b->conf, .logits = b->logits, .vocab = b->m.vocab};
            b->o.on_item(b->o.on_item_user, &rp);
        }
    }
    if (st == DKV_OK)
        st = xfers(b, plan, xs, err);
    for (uint32_t i = 0; i < plan->n_items; i++)
        free(xs[i].tab);
    free(xs);
    free(before);
    if (st != DKV_OK)
        return st;
    b->rep.steps++;
    b->rep.items += plan->n_items;
    cost(b, plan, cpu_now() - t0, out);
    b->rep.thread_cpu_s += thread_cpu() - c0;
    return DKV_OK;
}
