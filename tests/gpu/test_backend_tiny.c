/* test_backend_tiny.c - the CUDA backend on the project's trained tiny dLLM (datasets/models/
 * tiny-dllm: 6 layers, hidden 384, 6 heads x 64, 2 KV heads, FFN 768, vocab 264) against core/ref,
 * the golden model, on the prompts of datasets/workloads/tiny_prompts.jsonl (weights and prompts
 * loaded as dkv.execute loads them: tiny_model.h).
 *
 *   test_backend_tiny                 none, dual, sparse-head, sparse-shared (rho 0.5)
 *   test_backend_tiny none dual ...   those named, also prefix, sparse-head-1 (rho 1),
 *                                     sparse-shared-1, sparse-measured (retention from the
 *                                     attention entropy the GPU measures; all: every one)
 *
 * The engine runs the CUDA backend (block 32, 8 steps per block: 4 tokens a step, 32 generated
 * tokens a prompt).  After every step the on_item hook hands over the canvas the step computed
 * on; core/ref runs the same step (dkv_ref_step, same cache mode, same rho and token set, its own
 * KV cache per request) on that same canvas (teacher forcing: a difference cannot cascade), and
 * the step is compared position by position:
 *   - token agreement: CUDA's LM-head argmax against ref's at every masked row of the block; a
 *     different token is a tie when ref's logits of the two tokens are within TIE_REL x max |z|
 *     of ref's row (docs/CPU.md "CPU against CUDA": 4 bf16 unit roundoffs 2^-8 of the logit
 *     scale, twice the largest logit error measured for bf16 activations through the 6 layers);
 *     criterion, stated before the number: (same + ties) / rows >= 99 % and no other difference.
 *     The strict figure (same / rows) is printed beside it;
 *   - the positions unmasked: CUDA's against the n most confident by ref's softmax (ties to the
 *     lower position); a different pick is allowed only where ref's confidences of the two
 *     positions are within TIE_CONF;
 *   - accuracy: the GPU's final-normed block rows against ref's (rel-L2 <= HID_TOL per step), and
 *     the logits they give against ref's (max and mean |difference| printed: the scale of the tie tolerance).
 * Sparse configurations also replay the GPU's selections (docs/CPU.md "Selection replay"): a
 * second core/ref cache per request keeps, at the selecting step, the key sets the GPU kept
 * (options.on_select; dkv_ref_step_args.keep_pos) instead of ref's own top-k, and ref reports per
 * set whether its own top-k differs and its boundary margin by its fp32 scores.  A selection
 * difference is a tie when -margin <= SEL_REL x mag; the token criterion above is then applied
 * to ref's logits under the GPU's selections, its own-selection figures printed beside it, and
 * every selection difference must be a tie.
 * When every pick and token agrees, ref's own free-running decode would be this one, step for
 * step, so the final texts agree too.  For the sparse cache this is the check that retention is
 * applied on the GPU as ref applies it (per-head or shared top-k of ceil(rho (L - B)) keys).
 * Prints each request's generated text for the no-cache run.
 * Exit 0 PASS, 1 FAIL, 77 SKIP without a usable GPU. */
#include "gpu_check.h"
#include "tiny_model.h"

#define TIE_REL   (4.0 / 256.0)  /* 4 u_bf16 (u = 2^-8) x max |z| of the row: ~0.2-0.3 logits here */
#define TIE_CONF  0.02
#define N_PROMPTS 4     /* the first 4 prompts: core/ref's steps on the host CPU dominate the time */
#define HID_TOL   0.05  /* rel-L2 of a step's block hidden rows (final-normed) against ref's */
#define SEL_REL   (48.0 / 256.0) /* selection tie: -margin <= 48 u_bf16 x mag (docs/CPU.md "Selection replay") */

/* Token comparison of the GPU's argmax against one set of ref logits. */
typedef struct tokcmp {
    uint64_t rows, same, ties, bad;
    double   max_tie, max_bad;
} tokcmp;

typedef struct tf {
    const dkv_ref_weights *w;
    dkv_cache_mode mode;
    double   rho;
    bool     shared, measured;
    uint32_t n_sel, k_lo_bad, k_min, k_max; /* measured: selecting steps, k outside the rho bounds */
    dkv_ref_kv **kv;                 /* per request */
    float  *logits, *hidden, *glog; /* ref (32, V), ref (32, C), the GPU's hidden through lm_head (32, V) */
    double  max_hid_l2, max_logit_err, sum_logit_err;
    uint64_t n_logit;
    uint64_t rows, same, tie_tokens, bad_tokens;
    uint64_t picks, pick_same, tie_picks, bad_picks;
    double  max_tie_gap, max_bad_gap;
    uint32_t steps, count_mismatch;
    uint32_t *final;                 /* per request: canvas after its last step (n_req x max_L) */
    uint32_t *final_len, max_L;
    int     fail;
    /* selection replay (sparse): ref caches that keep the GPU's sets, the GPU's sets of each
       request's last selecting step (n_layers x sets x k) and their k per request (the CUDA
       backend reports every item's selections of a batched step before any item's on_item, so
       k cannot be one value for the step), ref logits under them */
    dkv_ref_kv **kvf;
    uint32_t *gsel, *gsel_keep, gsel_sets;
    uint64_t *gsel_step;
    size_t    gsel_stride;
    float    *flog;
    tokcmp    rep;
    uint64_t  sel_sets, sel_differ, sel_ties, sel_bad;
    double    sel_max_rel;
} tf;

/* Lowest index of the largest value of x (n). */
static uint32_t argmax_of(const float *x, uint32_t n)
{
    uint32_t a = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[a])
            a = i;
    return a;
}

static double softmax_top(const float *x, uint32_t n, uint32_t a)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += exp((double)x[i] - x[a]);
    return 1.0 / s;
}

/* on_select: the GPU's kept sets of one selecting layer, kept per request for its ref replay
 * (every layer of a request's selecting step must keep the same k in the same number of sets). */
static void on_select(void *user, const dkv_select_report *r)
{
    tf *t = user;
    size_t nk = (size_t)r->n_sets * r->keep;
    if (nk * t->w->m.n_layers > t->gsel_stride) {
        fprintf(stderr, "selection of %zu positions a layer exceeds the buffer\n", nk);
        t->fail = 1;
        return;
    }
    bool same_step = t->gsel_step[r->request] == r->step_index;
    if (r->layer > 0 && (!same_step || t->gsel_keep[r->request] != r->keep || t->gsel_sets != r->n_sets)) {
        fprintf(stderr, "request %u step %llu layer %u: %u sets of %u keys, layer 0 kept %u sets of %u (step %llu)\n",
                r->request, (unsigned long long)r->step_index, r->layer, r->n_sets, r->keep, t->gsel_sets,
                t->gsel_keep[r->request], (unsigned long long)t->gsel_step[r->request]);
        t->fail = 1;
        return;
    }
    memcpy(t->gsel + r->request * t->gsel_stride + r->layer * nk, r->kept, nk * sizeof(uint32_t));
    t->gsel_step[r->request] = r->step_index, t->gsel_keep[r->request] = r->keep, t->gsel_sets = r->n_sets;
}

/* The GPU's argmax at the block's masked rows against ref logits lg (B, V) (ties: TIE_REL). */
static void count_tokens(tokcmp *c, const dkv_cuda_item_report *r, const float *lg0, uint32_t V, uint32_t mask)
{
    for (uint32_t i = 0; i < r->block_len; i++) {
        if (r->tokens_before[r->block_start + i] != mask)
            continue;
        const float *lg = lg0 + (size_t)i * V;
        uint32_t a = argmax_of(lg, V), g = r->argmax[i];
        c->rows++;
        if (g == a) {
            c->same++;
            continue;
        }
        double gap = g < V ? (double)lg[a] - lg[g] : INFINITY, zmax = 0;
        for (uint32_t v = 0; v < V; v++)
            zmax = fabs(lg[v]) > zmax ? fabs(lg[v]) : zmax;
        if (gap <= TIE_REL * zmax) {
            c->ties++;
            c->max_tie = gap > c->max_tie ? gap : c->max_tie;
        } else {
            c->bad++;
            c->max_bad = gap > c->max_bad ? gap : c->max_bad;
            printf("  token differs under the GPU's selections: request %u step %llu position %u: cuda %u, ref %u "
                   "(logit gap %.3f, tolerance %.3f)\n", r->request, (unsigned long long)r->step_index,
                   r->block_start + i, g, a, gap, TIE_REL * zmax);
        }
    }
}

/* Sparse: ref's step on its second cache, keeping the GPU's sets at the selecting step. */
static void replay_step(tf *t, const dkv_cuda_item_report *r, dkv_ref_step_args sa)
{
    const dkv_model *m = &t->w->m;
    uint8_t d[64];
    float mg[64], mag[64];
    dkv_ref_step_out out = {.block_logits = t->flog};
    dkv_err e = {0};
    if (r->step == 1 && r->canvas > r->block_len) {
        size_t n = (size_t)m->n_layers * t->gsel_sets;
        uint32_t sets = sa.shared_set ? 1u : m->n_kv_heads;
        if (t->gsel_step[r->request] != r->step_index || n > 64 || sets != t->gsel_sets) {
            fprintf(stderr, "request %u step %llu: no GPU selection recorded at the selecting step\n", r->request,
                    (unsigned long long)r->step_index);
            t->fail = 1;
            return;
        }
        uint32_t kref = (uint32_t)ceil(sa.retention * (r->canvas - r->block_len) - 1e-9);   /* ref's k */
        if (t->gsel_keep[r->request] != kref) {
            fprintf(stderr, "request %u: the GPU kept %u keys a set, ref keeps %u\n", r->request,
                    t->gsel_keep[r->request], kref);
            t->fail = 1;
            return;
        }
        sa.keep_pos = t->gsel + r->request * t->gsel_stride;
        out.sel_differs = d, out.sel_margin = mg, out.sel_mag = mag;
    }
    if (dkv_ref_step(t->w, t->kvf[r->request], &sa, r->tokens_before, &out, &e) != DKV_OK) {
        fprintf(stderr, "ref replay step (request %u, step %u): %s\n", r->request, r->step, e.msg);
        t->fail = 1;
        return;
    }
    for (size_t i = 0; sa.keep_pos && i < (size_t)m->n_layers * t->gsel_sets; i++) {
        t->sel_sets++;
        if (!d[i])
            continue;
        double rel = mag[i] > 0 ? -mg[i] / mag[i] : 0;
        t->sel_differ++;
        t->sel_max_rel = rel > t->sel_max_rel ? rel : t->sel_max_rel;
        if (rel <= SEL_REL) {
            t->sel_ties++;
        } else {
            t->sel_bad++;
            printf("  selection differs: request %u step %llu layer %zu set %zu: ref's -margin %.4g > %.4g x mag "
                   "%.4g\n",
                   r->request, (unsigned long long)r->step_index, i / t->gsel_sets, i % t->gsel_sets, -mg[i], SEL_REL,
                   mag[i]);
        }
    }
    count_tokens(&t->rep, r, t->flog, m->vocab, m->mask_id);
}

static void compare_step(tf *t, const dkv_cuda_item_report *r)
{
    const dkv_model *m = &t->w->m;
    const uint32_t V = m->vocab, B = r->block_len, s0 = r->block_start, mask = m->mask_id;
    dkv_err e = {0};
    dkv_ref_step_args sa = {.mode = t->mode, .canvas_len = r->canvas, .block_start = s0, .block_len = B,
                           .step = r->step, .retention = t->rho, .shared_set = t->shared};
    if (t->measured && r->step == 1 && r->canvas > B) {
        /* retention from the entropy the GPU measured at step 0: ref keeps the same k = the plan's
         * (rho = k / (L - B) gives ceil(rho (L - B)) = k); k must lie in [rho_min, rho_max] */
        uint32_t k = r->kv_write_tokens, n = r->canvas - B;
        sa.retention = (double)k / n;
        t->n_sel++;
        t->k_min = k < t->k_min ? k : t->k_min, t->k_max = k > t->k_max ? k : t->k_max;
        if (k < (uint32_t)ceil(0.1 * n - 1e-9) || k > (uint32_t)ceil(0.9 * n - 1e-9))
            t->k_lo_bad++;
    }
    if (t->kvf)
        replay_step(t, r, sa);
    dkv_ref_step_out out = {.block_logits = t->logits, .block_hidden = t->hidden};
    if (dkv_ref_step(t->w, t->kv[r->request], &sa, r->tokens_before, &out, &e) != DKV_OK) {
        fprintf(stderr, "ref step (request %u, block %u, step %u): %s\n", r->request, r->block, r->step, e.msg);
        t->fail = 1;
        return;
    }
    if (out.q_tokens != r->q_tokens || out.kv_tokens != r->kv_tokens || out.kv_write_tokens != r->kv_write_tokens) {
        fprintf(stderr, "request %u block %u step %u: ref counts q %u a %u w %u, the plan's q %u a %u w %u\n",
                r->request, r->block, r->step, out.q_tokens, out.kv_tokens, out.kv_write_tokens, r->q_tokens,
                r->kv_tokens, r->kv_write_tokens);
        t->count_mismatch++;
    }
    /* accuracy: the GPU's final-normed block rows against ref's, and the logits they give */
    const uint32_t C = m->hidden;
    double num = 0, den = 0;
    for (size_t i = 0; i < (size_t)B * C; i++) {
        float gv = h_bf2f(r->hidden[i]);
        num += (gv - t->hidden[i]) * (double)(gv - t->hidden[i]), den += (double)t->hidden[i] * t->hidden[i];
        t->hidden[i] = gv;
    }
    double l2 = den > 0 ? sqrt(num / den) : INFINITY;
    t->max_hid_l2 = l2 > t->max_hid_l2 ? l2 : t->max_hid_l2;
    dkv_ref_matmul(t->glog, t->hidden, t->w->lm_head, NULL, B, C, V);
    for (uint32_t i = 0; i < B; i++) {
        if (r->tokens_before[s0 + i] != mask)
            continue;
        for (uint32_t v = 0; v < V; v++) {
            double d = fabs((double)t->glog[(size_t)i * V + v] - t->logits[(size_t)i * V + v]);
            t->max_logit_err = d > t->max_logit_err ? d : t->max_logit_err;
            t->sum_logit_err += d, t->n_logit++;
        }
    }
    double ref_conf[64];
    uint32_t n_unmask = 0;
    for (uint32_t i = 0; i < B; i++) {
        ref_conf[i] = -1;
        if (r->tokens_before[s0 + i] != mask)
            continue;
        const float *lg = t->logits + (size_t)i * V;
        uint32_t a = argmax_of(lg, V), g = r->argmax[i];
        ref_conf[i] = softmax_top(lg, V, a);
        t->rows++;
        if (g == a)
            t->same++;
        else {
            double gap = g < V ? (double)lg[a] - lg[g] : INFINITY, zmax = 0;
            for (uint32_t v = 0; v < V; v++)
                zmax = fabs(lg[v]) > zmax ? fabs(lg[v]) : zmax;
            if (gap <= TIE_REL * zmax) {
                t->tie_tokens++;
                t->max_tie_gap = gap > t->max_tie_gap ? gap : t->max_tie_gap;
            } else {
                t->bad_tokens++;
                t->max_bad_gap = gap > t->max_bad_gap ? gap : t->max_bad_gap;
                printf("  token differs: request %u step %llu (block step %u, %s) position %u: cuda %u, ref %u (logit gap "
                       "%.3f, tolerance %.3f)\n", r->request, (unsigned long long)r->step_index, r->step,
                       r->phase == DKV_STEP_REUSE ? "Reuse" : "Refresh", s0 + i, g, a, gap, TIE_REL * zmax);
            }
        }
        if (r->tokens_after[s0 + i] != mask)
            n_unmask++;
    }
    /* ref's picks: the n_unmask most confident masked rows, ties to the lower position */
    bool ref_pick[64] = {false};
    for (uint32_t k = 0; k < n_unmask; k++) {
        int best = -1;
        for (uint32_t i = 0; i < B; i++)
            if (ref_conf[i] >= 0 && !ref_pick[i] && (best < 0 || ref_conf[i] > ref_conf[best]))
                best = (int)i;
        ref_pick[best] = true;
    }
    double kth = 2;
    for (uint32_t i = 0; i < B; i++)
        if (ref_pick[i] && ref_conf[i] < kth)
            kth = ref_conf[i];
    for (uint32_t i = 0; i < B; i++) {
        bool cuda_pick = r->tokens_before[s0 + i] == mask && r->tokens_after[s0 + i] != mask;
        if (!cuda_pick)
            continue;
        t->picks++;
        if (ref_pick[i])
            t->pick_same++;
        else if (kth - ref_conf[i] <= TIE_CONF)
            t->tie_picks++;
        else {
            t->bad_picks++;
            printf("  pick differs: request %u step %llu position %u: ref confidence %.4f below ref's n-th %.4f\n",
                   r->request, (unsigned long long)r->step_index, s0 + i, ref_conf[i], kth);
        }
    }
    t->steps++;
    memcpy(t->final + (size_t)r->request * t->max_L, r->tokens_after, r->canvas * sizeof(uint32_t));
    t->final_len[r->request] = r->canvas;
}

static void on_item(void *user, const dkv_cuda_item_report *r)
{
    tf *t = user;
    if (!t->fail)
        compare_step(t, r);
}

typedef struct tconf {
    const char *name;
    bool by_default;
    dkv_cache_mode cache;
    dkv_cache_mode mode;
    double rho;
    bool shared;
    bool measured;   /* retention mode entropy, measured = true (rho in [0.1, 0.9]) */
} tconf;

static const tconf CONFS[] = {
    {"none", true, DKV_CACHE_NONE, DKV_CACHE_NONE, 1, false, false},
    {"dual", true, DKV_CACHE_DUAL, DKV_CACHE_DUAL, 1, false, false},
    {"prefix", false, DKV_CACHE_PREFIX, DKV_CACHE_PREFIX, 1, false, false},
    {"sparse-head", true, DKV_CACHE_SPARSE, DKV_CACHE_SPARSE, 0.5, false, false},
    {"sparse-shared", true, DKV_CACHE_SPARSE, DKV_CACHE_SPARSE, 0.5, true, false},
    {"sparse-head-1", false, DKV_CACHE_SPARSE, DKV_CACHE_SPARSE, 1, false, false},
    {"sparse-shared-1", false, DKV_CACHE_SPARSE, DKV_CACHE_SPARSE, 1, true, false},
    {"sparse-measured", false, DKV_CACHE_SPARSE, DKV_CACHE_SPARSE, 0.5, false, true},
};

/* One engine run of configuration k on the CUDA backend, compared step by step with core/ref. */
static void run_conf(const tconf *k, dkv_model *m, dkv_ref_weights *w, bool print_text)
{
    dkv_gpu g = h200();
    dkv_tokenizer tok;
    dkv_workload *wl = tiny_prompts(m, 32, N_PROMPTS, &tok);
    size_t n = dkv_workload_count(wl);
    uint32_t max_L = 0;
    for (size_t i = 0; i < n; i++) {
        const dkv_request *q = dkv_workload_get(wl, i);
        max_L = q->prompt_tokens + q->gen_tokens > max_L ? q->prompt_tokens + q->gen_tokens : max_L;
    }
    tf t = {.w = w, .max_L = max_L, .mode = k->mode, .rho = k->rho, .shared = k->shared, .measured = k->measured,
            .k_min = UINT32_MAX};
    t.logits = malloc((size_t)32 * m->vocab * sizeof(float));
    t.glog = malloc((size_t)32 * m->vocab * sizeof(float));
    t.hidden = malloc((size_t)32 * m->hidden * sizeof(float));
    t.final = calloc(n * max_L, sizeof(uint32_t));
    t.final_len = calloc(n, sizeof(uint32_t));
    t.kv = calloc(n, sizeof *t.kv);
    for (size_t i = 0; i < n && k->mode != DKV_CACHE_NONE; i++)
        OK(dkv_ref_kv_new(m, max_L, &t.kv[i], &err));
    bool sparse = k->mode == DKV_CACHE_SPARSE;
    if (sparse) {   /* selection replay */
        t.kvf = calloc(n, sizeof *t.kvf);
        for (size_t i = 0; i < n; i++)
            OK(dkv_ref_kv_new(m, max_L, &t.kvf[i], &err));
        t.gsel_stride = (size_t)m->n_layers * m->n_kv_heads * max_L;
        t.gsel = calloc(n * t.gsel_stride, sizeof(uint32_t));
        t.gsel_step = malloc(n * sizeof(uint64_t));
        t.gsel_keep = calloc(n, sizeof(uint32_t));
        memset(t.gsel_step, 0xff, n * sizeof(uint64_t));
        t.flog = malloc((size_t)32 * m->vocab * sizeof(float));
    }

    dkv_engine_config c;
    tiny_config(&c, m, &g, wl, k->cache, 8);
    c.weights = w;
    c.retention.rho = k->rho;
    c.retention.set = k->shared ? DKV_RETAIN_SHARED : DKV_RETAIN_PER_HEAD;
    if (k->measured) {   /* rho of each block from the attention entropy the GPU measures */
        c.retention.mode = DKV_RHO_ENTROPY;
        c.retention.measured = true;
        c.retention.rho_min = 0.1, c.retention.rho_max = 0.9;
    }
    dkv_cuda_backend_options o = backend_options_for(&c);
    o.on_item = on_item, o.on_item_user = &t, o.poison = true;
    if (sparse)
        o.on_select = on_select, o.on_select_user = &t;
    dkv_backend be;
    OK(dkv_cuda_backend_new(&o, &be, &err));
    c.backend = &be;
    dkv_engine_result *res = NULL;
    OK(dkv_engine_run(&c, &res, &err));
    const dkv_run_summary *s = dkv_engine_result_summary(res);

    printf("== %s: cache %s, rho %.2f, %s set; %zu prompts (%s), 32 generated tokens each, block 32, 8 steps a "
           "block\n", k->name, dkv_cache_mode_name(k->cache), k->rho, k->shared ? "shared" : "per-head", n,
           TINY_PROMPTS);
    char text[1024];
    for (size_t i = 0; i < n && print_text; i++) {
        const dkv_request *q = dkv_workload_get(wl, i);
        const uint32_t *f = t.final + i * max_L;
        dkv_tok_decode(&tok, f, q->prompt_tokens, text, sizeof text);
        printf("  [%zu] %s|", i, text);
        dkv_tok_decode(&tok, f + q->prompt_tokens, q->gen_tokens, text, sizeof text);
        printf("%s\n", text);
    }
    double agree = t.rows ? (double)t.same / t.rows : 0, tagree = t.rows ? (double)(t.same + t.tie_tokens) / t.rows : 0,
           pagree = t.picks ? (double)t.pick_same / t.picks : 0;
    printf("%s: steps compared %u; criterion: (same + ties) / rows >= 99 %% and 0 other differences; tie-aware "
           "agreement %.2f %% (strict %.2f %%: %llu of %llu masked rows the same; %llu ties within %.4f x max |z|, "
           "largest tie gap %.4f; %llu other differences, largest gap %.4f)\n", k->name, t.steps, 100 * tagree,
           100 * agree, (unsigned long long)t.same, (unsigned long long)t.rows, (unsigned long long)t.tie_tokens,
           TIE_REL, t.max_tie_gap, (unsigned long long)t.bad_tokens, t.max_bad_gap);
    printf("%s: picks agreement %.2f %% (%llu of %llu unmasked positions; %llu ties within confidence %.3f; %llu "
           "other differences)\n", k->name, 100 * pagree, (unsigned long long)t.pick_same,
           (unsigned long long)t.picks, (unsigned long long)t.tie_picks, TIE_CONF, (unsigned long long)t.bad_picks);
    printf("%s: block hidden rows vs ref: worst step rel-L2 %.2e (tolerance %.2f); logits from them vs ref's: max "
           "abs %.4f, mean abs %.5f\n", k->name, t.max_hid_l2, HID_TOL, t.max_logit_err,
           t.n_logit ? t.sum_logit_err / t.n_logit : 0.0);
    char name[96];
#define CHECK(what, cond)                                          \
    do {                                                           \
        snprintf(name, sizeof name, "%s: %s", k->name, what);      \
        check_true(name, cond, "");                                \
    } while (0)
    CHECK("every request finished", s->n_done == s->n_requests && s->n_done == n);
    if (k->measured) {
        printf("%s: %u selecting steps, kept k from %u to %u rows per head (rho from the measured entropy)\n", k->name,
               t.n_sel, t.k_min, t.k_max);
        CHECK("measured entropy gave every block's k, within [rho_min, rho_max]", t.n_sel == n && t.k_lo_bad == 0);
    }
    CHECK("every step compared", !t.fail && t.steps == n * 8);
    CHECK("plan's token counts == ref's", t.count_mismatch == 0);
    CHECK("block hidden rows within tolerance", t.steps > 0 && t.max_hid_l2 <= HID_TOL);
    if (sparse) {   /* the token criterion under the GPU's selections; the figures above beside it */
        double ragree = t.rep.rows ? (double)(t.rep.same + t.rep.ties) / t.rep.rows : 0;
        printf("%s: selection replay (ref keeps the GPU's sets): criterion as above and every selection difference "
               "a tie (-margin <= %.4f x mag); tie-aware agreement %.2f %% (strict %llu of %llu the same; %llu ties, "
               "largest gap %.4f; %llu other differences, largest gap %.4f); selections %llu, ref's own top-k "
               "differs in %llu: %llu ties, %llu beyond (largest -margin/mag %.4f)\n", k->name, SEL_REL,
               100 * ragree, (unsigned long long)t.rep.same, (unsigned long long)t.rep.rows,
               (unsigned long long)t.rep.ties, t.rep.max_tie, (unsigned long long)t.rep.bad, t.rep.max_bad,
               (unsigned long long)t.sel_sets, (unsigned long long)t.sel_differ, (unsigned long long)t.sel_ties,
               (unsigned long long)t.sel_bad, t.sel_max_rel);
        CHECK("selection replay: tie-aware token agreement >= 99 %", t.rep.rows == t.rows && ragree >= 0.99);
        CHECK("selection replay: tokens differ only at ties", t.rep.bad == 0);
        CHECK("selection replay: every selection difference a tie", t.sel_sets == n * m->n_layers * t.gsel_sets &&
                                                                    t.sel_bad == 0);
    } else {
        CHECK("tie-aware token agreement >= 99 %", t.rows > 0 && tagree >= 0.99);
        CHECK("tokens differ only at ties", t.bad_tokens == 0);
    }
    CHECK("picks differ only at ties", t.picks > 0 && t.bad_picks == 0);
#undef CHECK
    dkv_engine_result_free(res);
    dkv_backend_free(&be);
    dkv_workload_free(wl);
    for (size_t i = 0; i < n; i++) {
        dkv_ref_kv_free(t.kv[i]);
        if (t.kvf)
            dkv_ref_kv_free(t.kvf[i]);
    }
    free(t.kvf), free(t.gsel), free(t.gsel_step), free(t.gsel_keep), free(t.flog);
    free(t.kv), free(t.logits), free(t.glog), free(t.hidden), free(t.final), free(t.final_len);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        bool known = !strcmp(argv[i], "all");
        for (size_t k = 0; k < sizeof CONFS / sizeof *CONFS; k++)
            known |= !strcmp(argv[i], CONFS[k].name);
        if (!known) {
            fprintf(stderr, "test_backend_tiny: unknown configuration '%s' (none, dual, prefix, sparse-head, "
                            "sparse-shared, sparse-head-1, sparse-shared-1, sparse-measured, all)\n", argv[i]);
            return 2;
        }
    }
    skip_without_gpu();
    dkv_model m = tiny_dllm();
    dkv_ref_weights *w = tiny_weights(&m);
    for (size_t k = 0; k < sizeof CONFS / sizeof *CONFS; k++) {
        bool want = argc == 1 && CONFS[k].by_default;
        for (int i = 1; i < argc; i++)
            want |= !strcmp(argv[i], CONFS[k].name) || !strcmp(argv[i], "all");
        if (want)
            run_conf(&CONFS[k], &m, w, k == 0);
    }
    dkv_ref_weights_free(w);
    printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
