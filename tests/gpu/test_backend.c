/* test_backend.c - the CUDA backend driven by the engine (core/engine) on a small GQA model with
 * q/k/v biases, checked step by step against core/ref on the same (bf16-rounded) weights.
 *
 * Three requests of different canvases (132: Refresh attention through cuBLAS; 69 and 96: the
 * SIMT kernel) run batched in one forward per engine step, 2 blocks of 16 in 4 steps each, in
 * every cache mode: none, prefix (block logits and `all` logits), dual (t-major and layer-major
 * pool), sparse per-head and shared (rho 0.5).  The backend's on_item hook hands over, after
 * every step, the canvas each item computed on; the reference runs the same step of the same
 * request on that canvas (its own KV cache per request) and the test compares:
 *   - the token counts of the plan item with dkv_ref_step's (q, a, w: DESIGN.md's table);
 *   - the block's final-normed hidden rows (bf16 tolerance of a whole step, test_forward's);
 *   - the picked tokens (a different pick only where the reference's logits are within 0.05)
 *     and their confidence;
 *   - the unmask: exactly the ceil(masked / steps left) most confident masked positions took
 *     their argmax;
 *   - KV in the arena: after a Refresh of prefix / dual, the K and V rows of the first positions
 *     read from the device at block id * block_bytes of the plan's block ids equal the
 *     reference's cached rows; the arena offsets of a core/mem block pool's ids are id *
 *     block_bytes.
 * One dual run reads the weights from a safetensors file (LLaDA naming, bf16) written from the
 * reference weights, through core/io.  The arena and the activations are poisoned (0xFF, bf16
 * NaN) at begin.  A progressive-offload
 * run checks that the copies move the bytes the engine ordered, that the low-rank projection
 * reports a finite error, that begin set up and ran the compressor (its first call outside the
 * steps) with its buffers counted as allocated, and that the engine's model of the device memory
 * counts what the backend allocated on the same plans.  Prints "SKIP: ..." and exits 77 without a usable GPU. */
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "gpu_check.h"
#include "test_backend.h"

#include <cublas_v2.h>

#include "cuda/backend_internal.h"
#include "io/safetensors.h"
#include "mem/mem.h"
#include "ref/ref.h"

enum { NREQ = 3, G = 32, B = 16, S = 4, BT = 16, MAXL = 160 };
static const uint32_t PROMPTS[NREQ] = {100, 37, 64};

static dkv_model tiny(void)
{
    dkv_model m = {.name = "tiny-gqa", .n_layers = 2, .hidden = 256, .ffn = 512, .n_heads = 4, .n_kv_heads = 2,
                   .head_dim = 64, .vocab = 1000, .mask_id = 999, .max_len = 256, .rope_theta = 10000.0,
                   .qkv_bias = true};
    return m;
}

static dkv_status round_bf16(void *ctx, const char *name, float *data, uint32_t d0, uint32_t d1)
{
    (void)ctx, (void)name;
    for (size_t i = 0; i < (size_t)d0 * (d1 ? d1 : 1); i++)
        data[i] = h_bf2f(h_f2bf(data[i]));
    return DKV_OK;
}

typedef struct run {
    const char        *name;
    const dkv_model   *m;
    dkv_ref_weights   *rw;
    dkv_ref_kv        *kv[NREQ];
    dkv_cache_mode mode;
    bool               shared;
    double             rho;
    dkv_cuda_kv_pool   layout;   /* shapes and layout only (offsets) */
    dkv_backend       *be;
    /* gathered */
    float   *hid_got, *hid_ref, *conf_got, *conf_ref;
    size_t   n_hid, n_conf;
    uint32_t items, same, far, counts_bad, unmask_bad, ref_bad, offsets_bad, kv_rows, kv_checked;
    double   kv_max_abs;
    bool     kv_bad, pool_checked, pool_bad;
    uint32_t last[NREQ][MAXL];
} run;

/* A core/mem block pool with the engine's geometry: its offsets are id * block_bytes, and the
 * backend's arena puts block id there. */
static void check_pool_offsets(run *r, const dkv_cuda_item_report *rp)
{
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_BLOCKPOOL);
    uint64_t bb = dkv_cuda_backend_block_bytes(r->be);
    o.block_bytes = bb, o.chunk_blocks = 4, o.capacity_bytes = 64 * bb;
    dkv_mem *m = NULL;
    OK(dkv_mem_new(&o, &m, &err));
    char *base = dkv_cuda_backend_block_ptr(r->be, 0);
    for (int i = 0; i < 24; i++) {
        dkv_mem_id id;
        OK(dkv_mem_acquire(m, bb - (uint64_t)i, NULL, &id, &err));
        uint32_t blk, n;
        dkv_mem_info info;
        OK(dkv_mem_blocks(m, id, &blk, 1, &n, &err));
        OK(dkv_mem_info_get(m, id, &info, &err));
        if (info.offset != (uint64_t)blk * bb || (char *)dkv_cuda_backend_block_ptr(r->be, blk) != base + info.offset)
            r->pool_bad = true;
        if (i % 3 == 0)
            OK(dkv_mem_release(m, id, &err));
    }
    dkv_mem_free(m);
    for (uint32_t j = 0; j < rp->n_kv_blocks; j++)
        if (rp->kv_offsets[j] != (uint64_t)rp->kv_blocks[j] * bb)
            r->offsets_bad++;
    r->pool_checked = true;
}

/* K and V rows of the first positions, read from the device at the plan's block ids. */
static void check_kv_rows(run *r, const dkv_cuda_item_report *rp, uint32_t n_pos)
{
    const dkv_model *m = r->m;
    uint64_t bb = dkv_cuda_backend_block_bytes(r->be);
    uint16_t *blk = malloc(bb);
    uint32_t D = m->head_dim;
    for (uint32_t p = 0; p < n_pos; p++) {
        if (p / BT >= rp->n_kv_blocks) {
            r->kv_bad = true;
            break;
        }
        CK(cudaMemcpy(blk, dkv_cuda_backend_block_ptr(r->be, rp->kv_blocks[p / BT]), bb, cudaMemcpyDeviceToHost));
        for (uint32_t l = 0; l < m->n_layers; l++)
            for (uint32_t g = 0; g < m->n_kv_heads; g++) {
                const uint32_t *pos = dkv_ref_kv_positions(r->kv[rp->request], l, g);
                uint32_t cnt = dkv_ref_kv_count(r->kv[rp->request], l, g), i = 0;
                while (i < cnt && pos[i] != p)
                    i++;
                if (i == cnt) {
                    r->kv_bad = true;
                    continue;
                }
                for (uint32_t kv = 0; kv < 2; kv++) {
                    const float *ref = (kv ? dkv_ref_kv_v(r->kv[rp->request], l, g) : dkv_ref_kv_k(r->kv[rp->request], l, g)) +
                                       (size_t)i * D;
                    const uint16_t *got = blk + dkv_cuda_kv_offset(&r->layout, l, kv, g, p % BT);
                    for (uint32_t d = 0; d < D; d++) {
                        double e = fabs(h_bf2f(got[d]) - ref[d]);
                        if (isnan(h_bf2f(got[d])))
                            e = INFINITY;
                        r->kv_max_abs = e > r->kv_max_abs ? e : r->kv_max_abs;
                        if (!(e <= 3e-2 + 3e-2 * fabs(ref[d])))
                            r->kv_bad = true;
                    }
                }
            }
        r->kv_rows++;
    }
    free(blk);
    r->kv_checked++;
}

static void on_item(void *user, const dkv_cuda_item_report *rp)
{
    run *r = user;
    const dkv_model *m = r->m;
    uint32_t V = m->vocab, C = m->hidden, Bn = rp->block_len;
    r->items++;
    if (!r->pool_checked)
        check_pool_offsets(r, rp);
    dkv_ref_step_args a = {.mode = r->mode, .canvas_len = rp->canvas, .block_start = rp->block_start,
                           .block_len = Bn, .step = rp->step, .retention = r->rho, .shared_set = r->shared};
    float *rhid = malloc((size_t)Bn * C * 4), *rlog = malloc((size_t)Bn * V * 4), rconf[B];
    uint32_t ram[B];
    dkv_ref_step_out o = {.block_hidden = rhid, .block_logits = rlog, .argmax = ram, .conf = rconf};
    dkv_err e = {0};
    if (dkv_ref_step(r->rw, r->kv[rp->request], &a, rp->tokens_before, &o, &e) != DKV_OK) {
        printf("     ref step failed (request %u block %u step %u): %s\n", rp->request, rp->block, rp->step, e.msg);
        r->ref_bad++;
        free(rhid), free(rlog);
        return;
    }
    if (o.q_tokens != rp->q_tokens || o.kv_tokens != rp->kv_tokens || o.kv_write_tokens != rp->kv_write_tokens) {
        if (!r->counts_bad)
            printf("     counts: request %u block %u step %u: plan q/a/w %u/%u/%u, reference %u/%u/%u\n", rp->request,
                   rp->block, rp->step, rp->q_tokens, rp->kv_tokens, rp->kv_write_tokens, o.q_tokens, o.kv_tokens,
                   o.kv_write_tokens);
        r->counts_bad++;
    }
    for (size_t i = 0; i < (size_t)Bn * C; i++)
        r->hid_got[r->n_hid + i] = h_bf2f(rp->hidden[i]), r->hid_ref[r->n_hid + i] = rhid[i];
    r->n_hid += (size_t)Bn * C;
    for (uint32_t t = 0; t < Bn; t++) {
        r->conf_got[r->n_conf + t] = rp->conf[t], r->conf_ref[r->n_conf + t] = rconf[t];
        uint32_t g = rp->argmax[t];
        if (g == ram[t])
            r->same++;
        else if (!(g < V && rlog[(size_t)t * V + g] >= rlog[(size_t)t * V + ram[t]] - 0.05f))
            r->far++;
    }
    r->n_conf += Bn;
    /* the unmask rule on the device's own confidences */
    uint32_t masked = 0, *want = malloc(rp->canvas * 4);
    memcpy(want, rp->tokens_before, rp->canvas * 4);
    bool taken[B] = {0};
    for (uint32_t t = 0; t < Bn; t++)
        masked += rp->tokens_before[rp->block_start + t] == m->mask_id;
    uint32_t left = S - rp->step, n = (masked + left - 1) / left;
    for (uint32_t k = 0; k < n; k++) {
        int best = -1;
        for (uint32_t t = 0; t < Bn; t++)
            if (rp->tokens_before[rp->block_start + t] == m->mask_id && !taken[t] &&
                (best < 0 || rp->conf[t] > rp->conf[best]))
                best = (int)t;
        if (best < 0)
            break;
        taken[best] = true;
        want[rp->block_start + best] = rp->argmax[best];
    }
    if (memcmp(want, rp->tokens_after, rp->canvas * 4))
        r->unmask_bad++;
    memcpy(r->last[rp->request], rp->tokens_after, rp->canvas * 4);
    free(want);
    if (rp->phase == DKV_STEP_REFRESH && rp->kv_write_tokens &&
        (r->mode == DKV_CACHE_DUAL || r->mode == DKV_CACHE_PREFIX))
        check_kv_rows(r, rp, rp->kv_write_tokens < 2 * BT ? rp->kv_write_tokens : 2 * BT);
    free(rhid), free(rlog);
}

static const char *g_weight_file;   /* when set, run_mode loads the weights from it (core/io safetensors) */
static bool g_per_item;             /* when set, run_mode's backend runs attention per item (not batched) */
static bool g_sm_clock;             /* when set, run_mode's backend samples the SM clock (options.sm_clock) */

/* options.sm_clock: where NVML reads the clock, every step of 3 ms or more has its mean (sampled every
 * millisecond), every recorded mean is a plausible clock, and the sampler agrees with a direct read;
 * without NVML nothing is recorded, and a "skip: " line says the clock checks did not run (tests/run.sh
 * shows it under the PASS line). */
static void check_step_clocks(const dkv_engine_result *res)
{
    dkv_cuda_clock *c = dkv_cuda_clock_open(0);
    size_t n = 0, with = 0, long_without = 0, odd = 0;
    const dkv_step_record *st = dkv_engine_result_steps(res, &n);
    for (size_t i = 0; i < n; i++) {
        with += st[i].sm_mhz > 0;
        long_without += st[i].time_s >= 3e-3 && !(st[i].sm_mhz > 0);
        odd += st[i].sm_mhz != 0 && !(st[i].sm_mhz >= 100 && st[i].sm_mhz <= 5000);
    }
    char line[200];
    if (!c) {
        snprintf(line, sizeof line, "no NVML: %zu of %zu steps have a clock (0 expected)", with, n);
        check_true("  SM clock (options.sm_clock)", with == 0, line);
        printf("skip: SM clock checks (options.sm_clock: steps' clocks, sampler, direct read) did not run: NVML "
               "unavailable (dkv_cuda_clock_open: no libnvidia-ml.so.1, no nvmlInit or no handle for the device)\n");
        return;
    }
    double now = dkv_cuda_clock_mhz(c);
    dkv_err e = {0};
    bool started = dkv_cuda_clock_sample(c, 1e-3, &e) == DKV_OK;
    struct timespec a, b, gap = {0, 30000000};
    clock_gettime(CLOCK_MONOTONIC, &a);
    nanosleep(&gap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double mean = dkv_cuda_clock_mean(c, a.tv_sec + a.tv_nsec * 1e-9, b.tv_sec + b.tv_nsec * 1e-9);
    dkv_cuda_clock_close(c);
    snprintf(line, sizeof line, "%zu of %zu steps have a clock, %zu of 3 ms or more without, %zu implausible; "
             "sampler over 30 ms idle %.0f MHz, read directly %.0f", with, n, long_without, odd, mean, now);
    check_true("  SM clock (options.sm_clock)", started && with > 0 && long_without == 0 && odd == 0 &&
                                                    mean >= 100 && mean <= 5000 && now >= 100 && now <= 5000, line);
}

/* options.clock_probe (on with sm_clock): every step has the SMs' mean clock from their cycle counters, a plausible
 * clock, and over the steps of 3 ms or more its mean is between 25 % below and 5 % above NVML's where NVML reads
 * one (device call 79: the probe reads 8-13 % below NVML on average, docs/COST_MODEL.md "The clock that follows
 * the work"; a probe that counted nothing or counted twice would fall outside). */
static void check_probe_clocks(const dkv_engine_result *res)
{
    size_t n = 0, odd = 0, both = 0;
    double sp = 0, sn = 0;
    const dkv_step_record *st = dkv_engine_result_steps(res, &n);
    for (size_t i = 0; i < n; i++) {
        odd += !(st[i].sm_probe_mhz >= 100 && st[i].sm_probe_mhz <= 5000);
        if (st[i].time_s >= 3e-3 && st[i].sm_mhz > 0)
            sp += st[i].sm_probe_mhz, sn += st[i].sm_mhz, both++;
    }
    char line[200];
    snprintf(line, sizeof line, "%zu of %zu steps without a plausible probe clock; over %zu steps of 3 ms or more "
             "probe %.0f MHz, NVML %.0f", odd, n, both, both ? sp / both : 0, both ? sn / both : 0);
    check_true("  SM clock probe (options.clock_probe)", n > 0 && odd == 0 && (!both || (sp / sn > 0.75 && sp / sn < 1.05)),
               line);
    if (!both)
        printf("skip: SM clock probe vs NVML (options.clock_probe) not compared: no step of 3 ms or more has an NVML "
               "clock (NVML unavailable, or no step that long)\n");
}

static void run_mode(const char *name, dkv_cache_mode mode, dkv_cache_mode emode, bool shared, dkv_logit_mode lg,
                     dkv_layout layout, dkv_ref_weights *rw, const dkv_model *m, const dkv_gpu *g)
{
    printf("== %s\n", name);
    run r;
    memset(&r, 0, sizeof r);
    r.name = name, r.m = m, r.rw = rw, r.mode = mode, r.shared = shared, r.rho = 0.5;
    for (int i = 0; i < NREQ; i++)
        OK(dkv_ref_kv_new(m, MAXL, &r.kv[i], &err));
    size_t cap_items = NREQ * (G / B) * S * 2;
    r.hid_got = malloc(cap_items * B * m->hidden * 4), r.hid_ref = malloc(cap_items * B * m->hidden * 4);
    r.conf_got = malloc(cap_items * B * 4), r.conf_ref = malloc(cap_items * B * 4);
    dkv_workload *w = fixed_workload(NREQ, PROMPTS, NREQ, G, &err);
    if (!w) {
        printf("FAIL workload: %s\n", err.msg);
        exit(1);
    }
    dkv_engine_config c;
    dkv_engine_config_default(&c);
    c.model = m, c.gpu = g, c.workload = w;
    c.decode.cache = emode, c.decode.block_len = B, c.decode.steps_per_block = S, c.decode.logits = lg;
    c.retention.rho = 0.5, c.retention.set = shared ? DKV_RETAIN_SHARED : DKV_RETAIN_PER_HEAD;
    c.sizing.block_tokens = BT;
    uint64_t kvbpt = dkv_model_kv_bytes_per_token(m), cap = 64ull * BT * kvbpt;
    c.mem.capacity_bytes = cap, c.mem.chunk_blocks = 4;
    c.max_num_batched_tokens = 4096;
    c.logit.max_num_logits = 8;   /* the LM head in chunks of 8 rows */
    c.layout.layout = layout;
    dkv_cuda_backend_options o = backend_options_for(&c);
    o.poison = true, o.attn_streams = 2, o.on_item = on_item, o.on_item_user = &r;
    o.attn_per_item = g_per_item;
    o.sm_clock = g_sm_clock;
    o.clock_probe = g_sm_clock;
    c.weights = rw;
    dkv_ref_weights *loaded = NULL;
    if (g_weight_file) { /* the same weights, written as a LLaDA-named safetensors file and read back (core/io) */
        OK(dkv_st_load_weights(&g_weight_file, 1, m, 1e-5f, &loaded, &err));
        c.weights = loaded;
    }
    r.layout = (dkv_cuda_kv_pool){NULL, BT, m->n_layers, m->n_kv_heads, m->head_dim, o.layout, DKV_KV_ELEM_BF16, NULL};
    dkv_backend be;
    OK(dkv_cuda_backend_new(&o, &be, &err));
    r.be = &be;
    c.backend = &be;
    dkv_engine_result *res = NULL;
    OK(dkv_engine_run(&c, &res, &err));
    const dkv_run_summary *s = dkv_engine_result_summary(res);
    char line[256];
    snprintf(line, sizeof line, "%llu of %d requests done, %llu request-steps, %u items reported, %.2f per step",
             (unsigned long long)s->n_done, NREQ, (unsigned long long)s->request_steps, r.items, s->mean_batch);
    check_true("  engine run", s->n_done == NREQ && s->request_steps == r.items && r.items == NREQ * (G / B) * S &&
                                   s->mean_batch > 1.5, line);
    snprintf(line, sizeof line, "%u items differ from dkv_ref_step's q/a/w, %u reference failures", r.counts_bad,
             r.ref_bad);
    check_true("  token counts (DESIGN.md table)", !r.counts_bad && !r.ref_bad, line);
    check("  block hidden rows", r.hid_got, r.hid_ref, r.n_hid, 6e-2, 6e-2);
    snprintf(line, sizeof line, "%u/%zu tokens as the reference, %u not within 0.05 logit", r.same, r.n_conf, r.far);
    check_true("  argmax", r.far == 0, line);
    check("  confidence", r.conf_got, r.conf_ref, r.n_conf, 0.02, 0.05);
    snprintf(line, sizeof line, "%u of %u items differ from the rule", r.unmask_bad, r.items);
    check_true("  unmask (ceil(masked/steps left))", r.unmask_bad == 0, line);
    int left_masked = 0;
    for (int i = 0; i < NREQ; i++)
        for (uint32_t t = PROMPTS[i]; t < PROMPTS[i] + G; t++)
            left_masked += r.last[i][t] == m->mask_id;
    snprintf(line, sizeof line, "%d generated positions still masked", left_masked);
    check_true("  generation complete", left_masked == 0, line);
    snprintf(line, sizeof line, "blockpool offsets = id*block_bytes = arena offsets; %u plan offsets differ",
             r.offsets_bad);
    check_true("  arena offsets", r.pool_checked && !r.pool_bad && !r.offsets_bad, line);
    if (mode == DKV_CACHE_DUAL || mode == DKV_CACHE_PREFIX) {
        snprintf(line, sizeof line, "%u positions x layers x heads in %u Refresh steps, max abs %.3e (tol 3e-2+3e-2)",
                 r.kv_rows, r.kv_checked, r.kv_max_abs);
        check_true("  KV at the plan's block ids", r.kv_checked > 0 && !r.kv_bad, line);
    }
    if (g_sm_clock) {
        check_step_clocks(res);
        check_probe_clocks(res);
    }
    dkv_engine_result_free(res);
    dkv_backend_free(&be);
    dkv_ref_weights_free(loaded);
    dkv_workload_free(w);
    for (int i = 0; i < NREQ; i++)
        dkv_ref_kv_free(r.kv[i]);
    free(r.hid_got), free(r.hid_ref), free(r.conf_got), free(r.conf_ref);
}

/* Progressive offload: copies of the ordered bytes, the projection's error, a complete run. */
static void run_offload(dkv_ref_weights *rw, const dkv_model *m, const dkv_gpu *g)
{
    printf("== dual, progressive offload (t1 0.25, t2 0.5, low-rank 0.3)\n");
    dkv_workload *w = fixed_workload(NREQ, PROMPTS, NREQ, G, &err);
    dkv_engine_config c;
    dkv_engine_config_default(&c);
    c.model = m, c.gpu = g, c.workload = w;
    c.decode.cache = DKV_CACHE_DUAL, c.decode.block_len = B, c.decode.steps_per_block = S;
    c.sizing.block_tokens = BT;
    uint64_t kvbpt = dkv_model_kv_bytes_per_token(m), cap = 64ull * BT * kvbpt;
    c.mem.capacity_bytes = cap, c.mem.chunk_blocks = 4;
    c.max_num_batched_tokens = 4096;
    c.offload.mode = DKV_OFFLOAD_PROGRESSIVE, c.offload.t1 = 0.25, c.offload.t2 = 0.5, c.offload.lowrank_ratio = 0.3;
    dkv_cuda_backend_report rep;
    memset(&rep, 0, sizeof rep);
    c.weights = rw;
    dkv_cuda_backend_options o = backend_options_for(&c);
    o.poison = true, o.staging_bytes = 64ull * BT * kvbpt, o.host_bytes = NREQ * 16ull * BT * kvbpt;
    o.report = &rep;
    dkv_backend be;
    OK(dkv_cuda_backend_new(&o, &be, &err));
    c.backend = &be;
    dkv_engine_result *res = NULL;
    OK(dkv_engine_run(&c, &res, &err));
    const dkv_run_summary *s = dkv_engine_result_summary(res);
    char line[320];
    snprintf(line, sizeof line, "%llu done; engine: d2h %.0f h2d %.0f bytes; copied d2h %llu h2d %llu (low-rank forms "
             "%llu); ordered d2h %llu h2d %llu", (unsigned long long)s->n_done, s->pcie_d2h_bytes, s->pcie_h2d_bytes,
             (unsigned long long)rep.pcie_d2h_bytes, (unsigned long long)rep.pcie_h2d_bytes,
             (unsigned long long)rep.lowrank_h2d_bytes, (unsigned long long)rep.xfer_d2h_counted,
             (unsigned long long)rep.xfer_h2d_counted);
    /* h2d: fetches were ordered and copied, raw KV among them (not only low-rank forms), and the
     * engine's total (the sum of the steps' pcie_h2d_bytes, the backend's per-step count of the same
     * copies) equals the backend's; every device log of this run (e.g. datasets/hw/2026-12-04/
     * call115/tests.txt) prints engine h2d 879908 = copied h2d 879908 (low-rank forms 79344),
     * ordered h2d 841422 */
    check_true("  offload copies", s->n_done == NREQ && rep.pcie_d2h_bytes > 0 && rep.xfer_d2h_counted > 0 &&
                                       rep.xfer_h2d_counted > 0 && rep.pcie_h2d_bytes > rep.lowrank_h2d_bytes &&
                                       rep.pcie_h2d_bytes - rep.lowrank_h2d_bytes <= rep.xfer_h2d_counted &&
                                       (uint64_t)s->pcie_d2h_bytes == rep.pcie_d2h_bytes &&
                                       (uint64_t)s->pcie_h2d_bytes == rep.pcie_h2d_bytes, line);
    double me = rep.n_compress ? rep.compress_err_sum / rep.n_compress : NAN;
    snprintf(line, sizeof line, "%llu projections, mean relative error %.3f", (unsigned long long)rep.n_compress, me);
    check_true("  low-rank projections", rep.n_compress > 0 && me > 0 && me < 1, line);
    snprintf(line, sizeof line, "%zu samples, least free %.2f GiB", rep.n_series, rep.mem_free_min_bytes / 1073741824.0);
    check_true("  memory series", rep.n_series == s->n_steps && rep.mem_free_min_bytes > 0, line);
    /* the compressor set up and run at begin (warm_gemms, the default): its first call is outside the
     * steps, and the backend's count of its buffers (from begin) matches what it allocated */
    snprintf(line, sizeof line, "warm-up %.4f s; counted %llu, allocated %llu bytes (the engine's model of the same "
             "plans: %llu)", rep.compressor_warm_s, (unsigned long long)rep.devmem_counted_bytes,
             (unsigned long long)rep.devmem_allocated_bytes, (unsigned long long)s->device_counted_bytes);
    check_true("  compressor warmed at begin", o.warm_gemms && rep.compressor_warm_s > 0 &&
                                                   rep.devmem_counted_bytes == rep.devmem_allocated_bytes, line);
    /* the engine's model of the same plans (core/engine/engine_devmem.c, with core/model/devmem.h's
     * low-rank form rule) counts what the backend allocated: until session 36 it counted a form's
     * buffer at fetches the backend served raw (14,592 bytes more here) */
    snprintf(line, sizeof line, "engine %llu, backend %llu bytes", (unsigned long long)s->device_counted_bytes,
             (unsigned long long)rep.devmem_counted_bytes);
    check_true("  engine's count = backend's", s->device_counted_bytes == rep.devmem_counted_bytes, line);
    dkv_cuda_backend_report_clear(&rep);
    dkv_engine_result_free(res);
    dkv_backend_free(&be);
    dkv_workload_free(w);
}

/* The selection score through cuBLAS (backend_scores.cu) against dkv_ref_attention_scores. */
static void check_scores(uint32_t Tq, uint32_t Tk, uint32_t H, uint32_t Hkv, uint32_t D, dkv_rng *rng)
{
    uint32_t ld = (H + 2 * Hkv) * D;
    float *qk = rand_bf16_values((size_t)Tk * ld, 0.5f, 0.0f, rng), *q = malloc((size_t)Tq * H * D * 4),
          *k = malloc((size_t)Tk * Hkv * D * 4), *ref = malloc((size_t)Hkv * Tk * 4);
    for (uint32_t r = 0; r < Tq; r++)   /* queries: the first Tq rows' q part; keys: every row's k part */
        memcpy(q + (size_t)r * H * D, qk + (size_t)r * ld, (size_t)H * D * 4);
    for (uint32_t r = 0; r < Tk; r++)
        memcpy(k + (size_t)r * Hkv * D, qk + (size_t)r * ld + (size_t)H * D, (size_t)Hkv * D * 4);
    dkv_ref_attention_scores(ref, q, k, Tq, Tk, H, Hkv, D);
    dkv_bf16 *d = upload_bf16(qk, (size_t)Tk * ld);
    float *score = dev_alloc((size_t)Hkv * Tk * 4);
    size_t wsb = dkv_bk_scores_workspace_bytes(Tq, Tk, H);
    void *ws = dev_alloc(wsb);
    poison(score, (size_t)Hkv * Tk * 4);
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        printf("FAIL cublasCreate\n");
        exit(1);
    }
    OK(dkv_bk_scores(h, score, d, ld, Tq, d + (size_t)H * D, ld, Tk, H, Hkv, D, ws, wsb, 0, &err));
    float *got = download(score, (size_t)Hkv * Tk * 4);
    char name[96];
    snprintf(name, sizeof name, "scores %ux%u, %u/%u heads, D %u", Tq, Tk, H, Hkv, D);
    check(name, got, ref, (size_t)Hkv * Tk, 1e-5, 2e-3);
    cublasDestroy(h);
    cudaFree(d), cudaFree(score), cudaFree(ws);
    free(qk), free(q), free(k), free(ref), free(got);
}

/* What begin refuses in the engine's setup (engine/backend.h): no workload, no pool geometry. */
static void argument_errors(const dkv_model *m, const dkv_gpu *g)
{
    dkv_cuda_backend_options o = dkv_cuda_backend_options_default();
    dkv_backend be;
    dkv_err e = {0};
    OK(dkv_cuda_backend_new(&o, &be, &e));
    dkv_decode_cfg dc;
    dkv_decode_cfg_default(&dc);
    dkv_backend_setup s;
    memset(&s, 0, sizeof s);
    s.model = m, s.gpu = g, s.decode = &dc;
    dkv_status st = dkv_backend_begin(&be, &s, &e);
    check_true("no workload is EINVAL", st == DKV_EINVAL && strstr(e.msg, "workload"), e.msg);
    dkv_workload *w = fixed_workload(1, PROMPTS, 1, G, &err);
    s.workload = w;
    st = dkv_backend_begin(&be, &s, &e);
    check_true("no block size is EINVAL", st == DKV_EINVAL && strstr(e.msg, "block_tokens"), e.msg);
    uint64_t kvbpt = dkv_model_kv_bytes_per_token(m);
    s.pool = (dkv_backend_pool){.kind = DKV_MEM_BLOCKPOOL, .block_tokens = BT, .block_bytes = BT * kvbpt + 2,
                                .n_blocks = 8};
    st = dkv_backend_begin(&be, &s, &e);
    check_true("a block that is not whole tokens is EINVAL", st == DKV_EINVAL && strstr(e.msg, "whole number"), e.msg);
    dkv_backend_free(&be);
    dkv_workload_free(w);
}

int main(void)
{
    skip_without_gpu();
    dkv_rng rng;
    dkv_rng_seed(&rng, 20261129);
    dkv_model m = tiny();
    dkv_gpu g = h200();
    dkv_ref_weights *rw = NULL;
    OK(dkv_ref_weights_new(&m, 1e-5f, &rw, &err));
    dkv_ref_weights_randomize(rw, dkv_rng_u64(&rng));
    dkv_ref_weights_foreach(rw, round_bf16, NULL);
    argument_errors(&m, &g);
    check_scores(16, 150, 4, 2, 64, &rng);
    check_scores(32, 768, 8, 8, 128, &rng);
    g_sm_clock = true;   /* one run with the step clock sampled */
    run_mode("none", DKV_CACHE_NONE, DKV_CACHE_NONE, false, DKV_LOGITS_BLOCK, DKV_LAYOUT_TMAJOR, rw, &m, &g);
    g_sm_clock = false;
    run_mode("prefix", DKV_CACHE_PREFIX, DKV_CACHE_PREFIX, false, DKV_LOGITS_BLOCK, DKV_LAYOUT_TMAJOR, rw, &m, &g);
    run_mode("prefix, logits of all rows", DKV_CACHE_PREFIX, DKV_CACHE_PREFIX, false, DKV_LOGITS_ALL,
             DKV_LAYOUT_LAYER_MAJOR, rw, &m, &g);
    run_mode("dual, t-major pool", DKV_CACHE_DUAL, DKV_CACHE_DUAL, false, DKV_LOGITS_BLOCK, DKV_LAYOUT_TMAJOR, rw, &m,
             &g);
    run_mode("dual, layer-major pool", DKV_CACHE_DUAL, DKV_CACHE_DUAL, false, DKV_LOGITS_BLOCK,
             DKV_LAYOUT_LAYER_MAJOR, rw, &m, &g);
    char path[64];
    snprintf(path, sizeof path, "/tmp/dkv_test_backend_%d.safetensors", (int)getpid());
    OK(dkv_st_save_ref(rw, DKV_ST_NAMING_LLADA, DKV_ST_BF16, path, &err));
    g_weight_file = path;
    run_mode("dual, weights read from safetensors", DKV_CACHE_DUAL, DKV_CACHE_DUAL, false, DKV_LOGITS_BLOCK,
             DKV_LAYOUT_TMAJOR, rw, &m, &g);
    g_weight_file = NULL;
    remove(path);
    run_mode("sparse per head, rho 0.5", DKV_CACHE_SPARSE, DKV_CACHE_SPARSE, false, DKV_LOGITS_BLOCK,
             DKV_LAYOUT_TMAJOR, rw, &m, &g);
    run_mode("sparse shared set, rho 0.5", DKV_CACHE_SPARSE, DKV_CACHE_SPARSE, true, DKV_LOGITS_BLOCK,
             DKV_LAYOUT_LAYER_MAJOR, rw, &m, &g);
    g_per_item = true;   /* the per-item attention path (the default is the batched kernel) */
    run_mode("dual, per-item attention", DKV_CACHE_DUAL, DKV_CACHE_DUAL, false, DKV_LOGITS_BLOCK,
             DKV_LAYOUT_TMAJOR, rw, &m, &g);
    run_mode("sparse per head, per-item attention", DKV_CACHE_SPARSE, DKV_CACHE_SPARSE, false, DKV_LOGITS_BLOCK,
             DKV_LAYOUT_LAYER_MAJOR, rw, &m, &g);
    run_mode("prefix, per-item attention", DKV_CACHE_PREFIX, DKV_CACHE_PREFIX, false, DKV_LOGITS_BLOCK,
             DKV_LAYOUT_TMAJOR, rw, &m, &g);
    g_per_item = false;
    run_offload(rw, &m, &g);
    dkv_ref_weights_free(rw);
    printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
