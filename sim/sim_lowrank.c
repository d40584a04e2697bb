/* sim_lowrank.c - the low-rank forms of progressive offload as the CUDA backend moves them
 * (cuda/arena.c): what a COMPRESS order copies to the host, and what a later FETCH of the same
 * request copies back and rebuilds.  The engine's plan counts ratio x raw bytes for a form; the
 * backend stores the rank-r form itself (bf16 Q, m x r, and the basis B, r x head_dim, for each of
 * the 2 x layers x kv_heads matrices), which is larger for short ranges, and fetches it in place of
 * the plan's share, then rebuilds the KV from it on the compute stream.  The rules below are the
 * backend's: the item's geometry (cuda/backend_fwd.c plan_item: need_tokens, n_tb, n_chain), the
 * compressed range (compress), its invalidation by a raw offload (bk_xfers_after) and the rebuild
 * condition (bk_xfers_before).  docs/COST_MODEL.md "Low-rank forms on the copy stream". */
#include "sim/sim_internal.h"

#include "model/devmem.h"

#include <stdlib.h>
#include <string.h>

static uint32_t cdiv64(uint64_t a, uint64_t d) { return d ? (uint32_t)((a + d - 1) / d) : 0; }

void sim_lr_free(sim_lr *s)
{
    free(s->rq);
    free(s->prompt);
    free(s->x);
    memset(s, 0, sizeof *s);
}

dkv_status sim_lr_begin(sim_lr *s, const dkv_backend_setup *setup, dkv_err *err)
{
    sim_lr_free(s);
    const dkv_backend_pool *p = &setup->pool;
    /* only a block pool gives the items' blocks (the backend needs one to run offload) */
    if (p->kind != DKV_MEM_BLOCKPOOL || !p->block_tokens || !p->block_bytes || !setup->workload || !setup->decode)
        return DKV_OK;
    const dkv_model *m = setup->model;
    size_t n = dkv_workload_count(setup->workload);
    s->rq = calloc(n ? n : 1, sizeof *s->rq);
    s->prompt = calloc(n ? n : 1, sizeof *s->prompt);
    if (!s->rq || !s->prompt) {
        sim_lr_free(s);
        return dkv_err_set(err, DKV_ENOMEM, "sim: out of host memory (low-rank forms)");
    }
    uint32_t B = setup->decode->block_len;
    for (size_t i = 0; i < n; i++) {   /* cuda/backend.c: the longest canvas the model takes */
        const dkv_request *q = dkv_workload_get(setup->workload, i);
        uint32_t L = q->prompt_tokens + q->gen_tokens;
        s->prompt[i] = q->prompt_tokens;
        if (L > s->max_L && L <= m->max_len)
            s->max_L = L;
    }
    if (s->max_L == 0)
        s->max_L = B ? B : 1;
    s->n_req = n;
    s->B = B;
    s->bt = p->block_tokens;
    s->block_bytes = p->block_bytes;
    s->batch = 2 * m->n_layers * m->n_kv_heads;
    s->D = m->head_dim;
    s->kv_bytes = dkv_dtype_bytes(m->kv_dtype);
    s->on = true;
    return DKV_OK;
}

typedef struct geo {
    uint32_t need, n_tb, n_chain;
} geo;

/* The item's geometry as cuda/backend_fwd.c plan_item builds it (core/engine/backend.h). */
static bool item_geo(const sim_lr *s, const dkv_step_plan *plan, uint32_t request, geo *g)
{
    const dkv_step_item *it = dkv_plan_item(plan, request);
    if (!it)
        return false;
    g->need = dkv_plan_item_tokens(it, s->prompt[request], s->B);
    g->n_tb = cdiv64(g->need, s->bt);
    g->n_chain = it->n_kv_blocks < g->n_tb ? it->n_kv_blocks : g->n_tb;
    return true;
}

/* bk_xfers_before: the plan's bytes less the form's plan share raw, then the form, rebuilt. */
static void fetch(sim_lr *s, const dkv_step_plan *plan, const dkv_xfer *xf, sim_lr_x *x)
{
    geo g;
    x->raw = (double)xf->pcie_bytes;
    if (xf->request >= s->n_req || !item_geo(s, plan, xf->request, &g))
        return;
    const sim_lr_req *r = &s->rq[xf->request];
    if (!(r->valid && r->start >= g.n_chain && r->end <= g.n_tb))
        return;
    uint64_t rem = xf->pcie_bytes;
    rem -= rem < r->plan ? rem : r->plan;
    x->raw = (double)rem;
    x->form = (double)r->form;
    /* the decompress reads the form and writes the rows it stands for */
    x->rebuild_bytes = (double)r->form + (double)s->batch * r->m * s->D * s->kv_bytes;
    x->rebuild_rows = (double)s->batch * r->m;
    x->rank = r->r;
}

/* compress(): the range before the step's raw offload, its rows, rank and form; the form when it
 * is not larger than the raw blocks, else the raw blocks (no form kept). */
static void compress(sim_lr *s, const dkv_step_plan *plan, const dkv_xfer *xf, sim_lr_x *x)
{
    geo g;
    x->raw = 0;
    if (xf->request >= s->n_req || !item_geo(s, plan, xf->request, &g))
        return;
    dkv_devmem_range cr = dkv_devmem_compress_range(g.n_chain, dkv_plan_offload_bytes(plan, xf->request),
                                                    xf->device_bytes, xf->pcie_bytes, s->block_bytes, s->bt, s->max_L,
                                                    g.need, s->D);
    uint32_t start = cr.start, end = cr.end, m = cr.m_tok, rk = cr.rank;
    if (m == 0)
        return;   /* nothing held there: no kernels, no copy */
    uint64_t n = dkv_devmem_lowrank_form_bytes(s->batch, m, rk, s->D), raw = (uint64_t)(end - start) * s->block_bytes;
    sim_lr_req *r = &s->rq[xf->request];
    if (n <= raw) {
        *r = (sim_lr_req){.valid = true, .start = start, .end = end, .m = m, .r = rk, .plan = xf->pcie_bytes, .form = n};
        x->raw = (double)n;
    } else {
        r->valid = false;
        x->raw = (double)raw;
    }
}

/* bk_xfers_after: the request's last blocks raw; they replace an overlapping form. */
static void offload(sim_lr *s, const dkv_step_plan *plan, const dkv_xfer *xf, sim_lr_x *x)
{
    geo g;
    x->raw = (double)xf->pcie_bytes;
    if (xf->request >= s->n_req || !item_geo(s, plan, xf->request, &g))
        return;
    uint32_t nb = cdiv64(xf->pcie_bytes, s->block_bytes), start = g.n_chain > nb ? g.n_chain - nb : 0;
    sim_lr_req *r = &s->rq[xf->request];
    if (r->valid && start < r->end && g.n_chain > r->start)
        r->valid = false;
    uint64_t held = (uint64_t)(g.n_chain - start) * s->block_bytes;
    x->raw = (double)(xf->pcie_bytes < held ? xf->pcie_bytes : held);
}

dkv_status sim_lr_step(sim_lr *s, const dkv_step_plan *plan, const sim_lr_x **out, dkv_err *err)
{
    *out = NULL;
    if (!s->on || plan->n_xfers == 0)
        return DKV_OK;
    if (plan->n_xfers > s->cap_x) {
        sim_lr_x *nx = realloc(s->x, (size_t)plan->n_xfers * 2 * sizeof *nx);
        if (!nx)
            return dkv_err_set(err, DKV_ENOMEM, "sim: out of host memory (low-rank forms)");
        s->x = nx, s->cap_x = plan->n_xfers * 2;
    }
    memset(s->x, 0, (size_t)plan->n_xfers * sizeof *s->x);
    /* in the backend's order: fetches before the step, compressions inside it, offloads after */
    static const uint8_t order[3] = {DKV_XFER_FETCH, DKV_XFER_COMPRESS, DKV_XFER_OFFLOAD};
    for (int o = 0; o < 3; o++)
        for (uint32_t k = 0; k < plan->n_xfers; k++) {
            const dkv_xfer *xf = &plan->xfers[k];
            if (xf->kind != order[o])
                continue;
            if (o == 0)
                fetch(s, plan, xf, &s->x[k]);
            else if (o == 1)
                compress(s, plan, xf, &s->x[k]);
            else
                offload(s, plan, xf, &s->x[k]);
        }
    *out = s->x;
    return DKV_OK;
}
