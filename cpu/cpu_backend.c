/* cpu_backend.c - the CPU backend's vtable: set-up (weights, canvases, the pool mapping,
 * scratch), one step (items from the plan, host-tier transfers, the forward, the unmask, the
 * cost) and tear-down.  backend.h documents the behaviour. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "cpu/cpu_internal.h"
#include "util/rng.h"

void openblas_set_num_threads(int n);   /* OpenBLAS (its cblas.h may be another BLAS's) */

double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

dkv_cpu_backend_options dkv_cpu_backend_options_default(void)
{
    dkv_cpu_backend_options o;
    memset(&o, 0, sizeof o);
    o.seed = 1;
    o.rms_eps = 1e-5f;
    return o;
}

void dkv_cpu_backend_report_clear(dkv_cpu_backend_report *r)
{
    if (!r)
        return;
    free(r->score);
    free(r->entropy);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ set-up and tear-down */

static void teardown(cpu_backend *b)
{
    if (b->pool)
        munmap(b->pool, b->map_bytes);
    b->pool = NULL;
    free(b->scale);
    free(b->touched);
    b->scale = NULL, b->touched = NULL;
    for (size_t i = 0; b->rq && i < b->n_rq; i++) {
        free(b->rq[i].canvas);
        free(b->rq[i].host);
        free(b->rq[i].host_scale);
        free(b->rq[i].host_ok);
    }
    free(b->rq);
    b->rq = NULL;
    float **f[] = {&b->x, &b->h, &b->q, &b->k, &b->v, &b->att, &b->t, &b->gate, &b->up, &b->gk, &b->gv,
                   &b->sc, &b->qg, &b->score, &b->hid, &b->logits, &b->row, &b->conf, &b->selm};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        free(*f[i]);
        *f[i] = NULL;
    }
    free(b->cand), free(b->sel), free(b->pos), free(b->argmax), free(b->selk), free(b->selo), free(b->seld);
    b->cand = b->sel = b->pos = b->argmax = b->selk = b->selo = NULL;
    b->seld = NULL;
    dkv_ref_weights_free(b->w);
    b->w = NULL;
    b->begun = false;
}

static dkv_status setup_requests(cpu_backend *b, dkv_err *err)
{
    const dkv_model *m = &b->m;
    uint32_t B = b->dec.block_len;
    b->n_rq = dkv_workload_count(b->wl);
    if (b->o.targets && b->o.n_targets != b->n_rq)
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: %zu targets for a workload of %zu requests", b->o.n_targets,
                           b->n_rq);
    if (b->o.follow && b->o.n_follow != b->n_rq)
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: %zu follow trajectories for a workload of %zu requests",
                           b->o.n_follow, b->n_rq);
    if (b->o.follow && b->o.targets)
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: follow and targets both decide the committed tokens: give one");
    b->rq = calloc(b->n_rq ? b->n_rq : 1, sizeof *b->rq);
    if (!b->rq)
        return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory");
    dkv_rng rng;
    for (size_t i = 0; i < b->n_rq; i++) {
        const dkv_request *q = dkv_workload_get(b->wl, i);
        cpu_req *r = &b->rq[i];
        r->P = q->prompt_tokens, r->G = q->gen_tokens, r->L = r->P + r->G;
        r->n_blocks = B ? r->G / B : 0;
        r->cur_block = UINT32_MAX;
        if (r->L > m->max_len)
            return dkv_err_set(err, DKV_EINVAL, "cpu backend: request %zu: canvas %u > the model's max_len %u", i, r->L,
                               m->max_len);
        if (r->L > b->max_L)
            b->max_L = r->L;
        r->canvas = malloc((r->L ? r->L : 1) * sizeof *r->canvas);
        if (!r->canvas)
            return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory for canvases");
        dkv_rng_seed(&rng, b->o.seed * 1000003u + i);   /* as cuda/backend.c: same canvases */
        for (uint32_t t = 0; t < r->L; t++) {
            uint32_t v = (uint32_t)dkv_rng_below(&rng, m->vocab - 1);
            r->canvas[t] = t >= r->P ? b->mask_id : q->tokens ? q->tokens[t] : (v >= b->mask_id ? v + 1 : v);
        }
    }
    if (b->o.targets) {
        b->rep.score = calloc(b->n_rq ? b->n_rq : 1, sizeof *b->rep.score);
        if (!b->rep.score)
            return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory");
        b->rep.n_score = (uint32_t)b->n_rq;
    }
    return DKV_OK;
}

static dkv_status setup_scratch(cpu_backend *b, dkv_err *err)
{
    const dkv_model *m = &b->m;
    size_t L = b->max_L ? b->max_L : 1, C = m->hidden, F = m->ffn, D = m->head_dim, QD = (size_t)m->n_heads * D,
           KD = (size_t)m->n_kv_heads * D, B = b->dec.block_len, V = m->vocab;
    size_t qg = (size_t)B * QD * sizeof(float) > 2 * L * sizeof(void *) ? B * QD : 2 * L * sizeof(void *) / 4 + 1;
    struct { float **p; size_t n; } fs[] = {
        {&b->x, L * C}, {&b->h, L * C}, {&b->t, L * C}, {&b->q, L * QD}, {&b->att, L * QD}, {&b->k, L * KD},
        {&b->v, L * KD}, {&b->gate, L * F}, {&b->up, L * F}, {&b->gk, 2 * L * D}, {&b->gv, 2 * L * D},
        {&b->sc, 2 * L * L}, {&b->qg, qg}, {&b->score, m->n_kv_heads * L}, {&b->hid, B * C}, {&b->logits, B * V},
        {&b->row, L}, {&b->conf, B}, {&b->selm, 2 * (size_t)m->n_kv_heads}};
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
        if (!(*fs[i].p = malloc(fs[i].n * sizeof(float))))
            return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory for activations (%zu rows)", L);
    b->cand = malloc(L * 4), b->sel = malloc(L * 4), b->pos = malloc(L * 4), b->argmax = malloc(B * 4);
    b->selk = malloc(m->n_kv_heads * L * 4), b->selo = malloc(L * 4), b->seld = malloc(m->n_kv_heads);
    if (!b->cand || !b->sel || !b->pos || !b->argmax || !b->selk || !b->selo || !b->seld)
        return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory for activations");
    return DKV_OK;
}

static dkv_status setup_pool(cpu_backend *b, const dkv_backend_setup *s, dkv_err *err)
{
    const dkv_model *m = &b->m;
    b->kv_dtype = m->kv_dtype;
    b->eb = dkv_dtype_bytes(m->kv_dtype);
    b->tok_bytes = (uint64_t)m->n_layers * 2 * m->n_kv_heads * m->head_dim * b->eb;
    b->bt = s->pool.block_tokens;
    b->block_bytes = s->pool.block_bytes;
    if ((uint64_t)b->bt * b->tok_bytes != b->block_bytes)
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: a pool block of %llu bytes is not %u tokens of %llu bytes "
                           "(cfg.mem.block_bytes must be block_tokens x KV bytes per token)",
                           (unsigned long long)b->block_bytes, b->bt, (unsigned long long)b->tok_bytes);
    b->n_pool = s->pool.n_blocks;
    b->n_staging = s->pool.staging_blocks;
    uint64_t blocks = b->n_pool + b->n_staging;
    b->map_bytes = blocks * b->block_bytes;
    if (b->map_bytes > (1ull << 40))
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: a pool of %llu bytes (%llu blocks) is more than 1 TiB of "
                           "address space: set cfg.mem.capacity_bytes", (unsigned long long)b->map_bytes,
                           (unsigned long long)blocks);
    void *p = mmap(NULL, b->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return dkv_err_set(err, DKV_ENOMEM, "cpu backend: cannot map a pool of %llu bytes",
                           (unsigned long long)b->map_bytes);
    b->pool = p;
    b->rep.pool_bytes = b->map_bytes;
    b->n_scale = m->n_layers * 2 * m->n_kv_heads;
    b->touched = calloc(b->n_pool ? b->n_pool : 1, 1);
    if (!b->touched)
        return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory");
    if (b->kv_dtype == DKV_DTYPE_FP8 && !(b->scale = calloc(blocks * b->n_scale, sizeof(float))))
        return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory for FP8 scales of %llu blocks",
                           (unsigned long long)blocks);
    return DKV_OK;
}

static dkv_status cpu_begin(void *ctx, const dkv_backend_setup *s, dkv_err *err)
{
    cpu_backend *b = ctx;
    if (b->begun)
        return dkv_err_set(err, DKV_ESTATE, "cpu backend: begin twice");
    if (!s || !s->model || !s->gpu || !s->workload || !s->decode)
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: setup needs a model, a gpu, a workload and a decode "
                           "configuration");
    if (s->pool.kind != DKV_MEM_BLOCKPOOL || s->pool.block_tokens == 0 || s->pool.n_blocks == 0)
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: the KV lives in the engine's block pool: cfg.mem.kind must "
                           "be 'blockpool'");
    if (s->instances.n > 1)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "cpu backend: cfg.instances.n = %u: the CPU backend runs one "
                           "instance", s->instances.n);
    b->m = *s->model, b->g = *s->gpu, b->wl = s->workload, b->dec = *s->decode;
    b->dec.rho_fn = NULL, b->dec.rho_ctx = NULL;   /* the plan carries each step's counts */
    const dkv_model *m = &b->m;
    if (m->mask_id >= m->vocab || m->head_dim == 0 || m->head_dim > 512 || m->n_heads % m->n_kv_heads)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "cpu backend: model '%s': mask_id %u, vocab %u, head_dim %u (<= 512)",
                           m->name, m->mask_id, m->vocab, m->head_dim);
    if (b->dec.block_len == 0)
        return dkv_err_set(err, DKV_EINVAL, "cpu backend: setup.decode.block_len must be > 0");
    b->mask_id = m->mask_id;
    b->on_kernel = s->on_kernel, b->on_kernel_user = s->on_kernel_user;
    b->on_entropy = s->on_entropy, b->on_entropy_user = s->on_entropy_user;
    dkv_cpu_backend_report_clear(&b->rep);
    openblas_set_num_threads(1);
    b->begun = true;
    dkv_status st = dkv_ref_weights_new(m, b->o.rms_eps > 0 ? b->o.rms_eps : 1e-5f, &b->w, err);
    if (st == DKV_OK) {
        if (s->weights) {
            if (s->weights->n_floats != b->w->n_floats)
                st = dkv_err_set(err, DKV_EINVAL, "cpu backend: the loaded weights (%zu floats) do not match model "
                                 "'%s' (%zu)", s->weights->n_floats, m->name, b->w->n_floats);
            else {
                memcpy(b->w->mem, s->weights->mem, b->w->n_floats * sizeof(float));
                b->w->rms_eps = s->weights->rms_eps;
            }
        } else {
            dkv_ref_weights_randomize(b->w, b->o.seed);
        }
    }
    if (st == DKV_OK)
        st = setup_requests(b, err);
    if (st == DKV_OK)
        st = setup_pool(b, s, err);
    if (st == DKV_OK)
        st = setup_scratch(b, err);
    if (st != DKV_OK)
        teardown(b);
    return st;
}

static void cpu_end(void *ctx)
{
    cpu_backend *b = ctx;
    if (!b->begun)
        return;
    if (b->o.report) {
        dkv_cpu_backend_report_clear(b->o.report);
        *b->o.report = b->rep;   /* the scores and entropies move to the caller */
        b->rep.score = NULL;
        b->rep.entropy = NULL;
    }
    teardown(b);
}

static void cpu_free(void *ctx)
{
    cpu_backend *b = ctx;
    if (!b)
        return;
    teardown(b);
    free(b->rep.score);
    free(b->rep.entropy);
    free(b);
}

dkv_status cpu_run_step(void *ctx, const dkv_step_plan *plan, dkv_step_cost *out, dkv_err *err);

static const dkv_backend_i cpu_iface = {
    .name = "cpu", .begin = cpu_begin, .run_step = cpu_run_step, .end = cpu_end, .free = cpu_free,
};

dkv_status dkv_cpu_backend_new(const dkv_cpu_backend_options *o, dkv_backend *out, dkv_err *err)
{
    out->iface = NULL;
    out->ctx = NULL;
    cpu_backend *b = calloc(1, sizeof *b);
    if (!b)
        return dkv_err_set(err, DKV_ENOMEM, "cpu backend: out of memory");
    b->o = o ? *o : dkv_cpu_backend_options_default();
    out->iface = &cpu_iface;
    out->ctx = b;
    return DKV_OK;
}
