/* engine_devmem.c - the device memory a CUDA backend would hold for this run, counted on the
 * plans the engine hands to any backend (core/model/devmem.h; docs/COST_MODEL.md "Device
 * memory"): its buffers besides the weights and the KV arena follow the backend's growth rules
 * step by step; the summary adds the weights, the whole arena and the fixed terms a profile's
 * memory section measured (CUDA context, cuBLAS/cuBLASLt handles, lazy modules). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_impl.h"

static uint32_t cdiv32(uint64_t a, uint64_t d) { return d ? (uint32_t)((a + d - 1) / d) : 0; }

void eng_devmem_begin(eng *e, const dkv_backend_setup *bs)
{
    const dkv_engine_config *c = &e->c;
    size_t n = dkv_workload_count(c->workload);
    dkv_devmem_cfg dc = {.block_len = c->decode.block_len, .logit_rows = DKV_DEVMEM_LOGIT_ROWS,
                         .attn_streams = DKV_DEVMEM_ATTN_STREAMS,
                         .arena_blocks = bs->pool.n_blocks + bs->pool.staging_blocks + 1};
    for (size_t i = 0; i < n; i++) {
        const dkv_request *q = dkv_workload_get(c->workload, i);
        uint32_t L = q->prompt_tokens + q->gen_tokens;
        dc.canvas_tokens += L;
        if (L > dc.max_L && L <= e->m->max_len)
            dc.max_L = L;
    }
    if (dc.max_L == 0)
        dc.max_L = dc.block_len ? dc.block_len : 1;
    dkv_devmem_init(&e->dm, e->m, &dc);
    e->dm_block_tokens = bs->pool.block_tokens;
    e->dm_block_bytes = bs->pool.block_bytes;
    e->dm_arena = (bs->pool.n_blocks + bs->pool.staging_blocks + 1) * bs->pool.block_bytes;
    free(e->dm_form);
    e->dm_form = calloc(n ? n : 1, sizeof *e->dm_form);   /* NULL: fetched forms not followed */
    if (bs->pool.lowrank_rank) {   /* the backend sets its compressor up at begin (cuda/arena.c) */
        dkv_devmem_compressor(&e->dm);
        e->dm_compressor = true;
    }
}

/* The request's item in the step, the tokens it needs and its chain, as cuda/backend_fwd.c sizes
 * them (n_tb blocks of need tokens; the chain's n_kv_blocks, at most n_tb); NULL when the order's
 * request has no item (the backend refuses such a plan). */
static const dkv_step_item *item_chain(const eng *e, const dkv_step_plan *p, uint32_t request, uint32_t *need,
                                       uint32_t *n_chain, uint32_t *n_tb)
{
    const dkv_step_item *it = dkv_plan_item(p, request);
    uint32_t bt = e->dm_block_tokens;
    if (!it || !bt)
        return NULL;
    *need = dkv_plan_item_tokens(it, dkv_workload_get(e->c.workload, it->request)->prompt_tokens, e->c.decode.block_len);
    *n_tb = cdiv32(*need, bt);
    *n_chain = it->n_kv_blocks < *n_tb ? it->n_kv_blocks : *n_tb;
    return it;
}

/* A COMPRESS order as cuda/arena.c's compress() sizes it: the gather, the compressor (already
 * counted at begin when the pool says the policy compresses), and the low-rank form it stores (when
 * not larger than the raw blocks), which a later fetch may read (core/model/devmem.h's form rule). */
static void compress(eng *e, const dkv_step_plan *p, const dkv_xfer *xf)
{
    uint32_t bt = e->dm_block_tokens, D = e->m->head_dim, batch = dkv_devmem_kv_vectors(e->m), need, n_chain, n_tb;
    if (!item_chain(e, p, xf->request, &need, &n_chain, &n_tb))
        return;
    /* the backend's rule (core/model/devmem.h), the held rows included */
    dkv_devmem_range g = dkv_devmem_compress_range(n_chain, dkv_plan_offload_bytes(p, xf->request), xf->device_bytes,
                                                   xf->pcie_bytes, e->dm_block_bytes, bt, e->dm.c.max_L, need, D);
    if (g.m_tok == 0)
        return;
    dkv_devmem_compressor(&e->dm);
    e->dm_compressor = true;
    dkv_devmem_gather(&e->dm, (uint64_t)batch * g.m_tok * D * 2);
    if (e->dm_form)
        dkv_devmem_lr_compressed(&e->dm_form[xf->request], &g, batch, D, e->dm_block_bytes);
}

void eng_devmem_step(eng *e, const dkv_step_plan *p)
{
    uint32_t T = 0, R = 0;
    bool writes = false;
    for (uint32_t i = 0; i < p->n_items; i++) {
        T += p->items[i].q_tokens, R += p->items[i].logit_rows;
        writes |= p->items[i].kv_write_tokens > 0;
    }
    if (p->n_items == 0)
        return;
    uint32_t need, n_chain, n_tb;
    for (uint32_t k = 0; k < p->n_xfers && e->dm_form; k++) {   /* fetches read a stored form before the step's rows */
        const dkv_xfer *xf = &p->xfers[k];
        if (xf->kind == DKV_XFER_FETCH && item_chain(e, p, xf->request, &need, &n_chain, &n_tb) &&
            dkv_devmem_lr_rebuilds(&e->dm_form[xf->request], n_chain, n_tb))
            dkv_devmem_lowrank_in(&e->dm, dkv_devmem_lr_bytes(&e->dm_form[xf->request], dkv_devmem_kv_vectors(e->m),
                                                              e->m->head_dim));
    }
    dkv_devmem_rows(&e->dm, T, R);
    if (writes && e->m->kv_dtype == DKV_DTYPE_FP8)
        dkv_devmem_fp8(&e->dm);
    uint64_t kvbpt = dkv_model_kv_bytes_per_token(e->m);   /* the reorder gathers the pool's bytes as stored */
    for (uint32_t k = 0; k < p->n_xfers; k++) {
        const dkv_xfer *xf = &p->xfers[k];
        if (xf->kind == DKV_XFER_REORDER && kvbpt && xf->device_bytes >= kvbpt)
            dkv_devmem_gather(&e->dm, xf->device_bytes / kvbpt * kvbpt);
        else if (xf->kind == DKV_XFER_COMPRESS)
            compress(e, p, xf);
    }
    for (uint32_t k = 0; k < p->n_xfers && e->dm_form; k++) {   /* after the step: raw offloads drop a form */
        const dkv_xfer *xf = &p->xfers[k];
        if (xf->kind == DKV_XFER_OFFLOAD && item_chain(e, p, xf->request, &need, &n_chain, &n_tb))
            dkv_devmem_lr_offload(&e->dm_form[xf->request], n_chain, xf->pcie_bytes, e->dm_block_bytes);
    }
}

void eng_devmem_summary(const eng *e, dkv_run_summary *s)
{
    const dkv_gpu *g = e->g;
    s->device_counted_bytes = e->dm.peak;
    s->device_arena_bytes = e->dm_arena;
    double fixed = 0;
    if (g->mem_measured)
        fixed = g->mem_context_bytes + g->mem_libraries_bytes + g->mem_first_launch_bytes +
                g->mem_blas_handle_bytes * (e->dm_compressor ? 2 : 1);
    s->device_fixed_bytes = fixed > 0 ? fixed : 0;
    s->device_mem_model = e->ni > 1 ? DKV_DEVMEM_MODEL_NONE
                          : g->mem_measured ? DKV_DEVMEM_MODEL_COMPLETE
                          : g->profile_name[0] ? DKV_DEVMEM_MODEL_NO_SECTION : DKV_DEVMEM_MODEL_NO_PROFILE;
    s->peak_device_bytes = e->ni > 1 ? 0
                                     : (uint64_t)llround(s->device_fixed_bytes) + s->peak_tag[DKV_MEM_TAG_WEIGHTS] +
                                           e->dm_arena + e->dm.peak;
}

const char *dkv_devmem_model_name(uint64_t m)
{
    static const char *const names[] = {"complete", "partial: the profile has no memory section (context, libraries "
                                        "and modules not counted)", "partial: no measured profile (context, libraries "
                                        "and modules not counted)", "none: several instances (not modelled)"};
    return m < sizeof names / sizeof names[0] ? names[m] : "?";
}
