/* test_backend_lossy.c - the lossy KV policies of the CUDA backend, applied for real: FP8 KV and
 * the low-rank reconstruction, as kernels against CPU references and on the trained tiny dLLM.
 *
 * Kernels (random bf16 KV at the tiny model's shapes: 6 layers, 2 KV heads, head_dim 64, blocks
 * of 32 tokens in a shuffled table, fixed seeds; the FP8 kernels are test_backend_fp8's):
 *   - low rank: cuda/lowrank.h's compression at rank head_dim (ratio 1), its Q and B staged as bf16
 *     (what goes to the host), dkv_cuda_lowrank_decompress into pool rows: equal to the original
 *     KV up to bf16 (rel-L2 <= 1e-2); at rank 16 the kernel equals the CPU product Q B of the same
 *     bf16 Q and B (atol 1e-3 + rtol 1e-2) and the error against the original is the reported one
 *     (within 1e-3 relative).
 * On the tiny model (cache dual, the prompts of datasets/workloads/tiny_prompts.jsonl, block 32,
 * 8 steps a block): the run with kv_dtype fp8 against the run with bf16: the final-normed hidden
 * rows of each request's first Reuse step (same canvas in both runs: step 0 is a Refresh, which
 * attends its own keys) must differ (rel-L2 > 1e-4: FP8 is applied) and stay close
 * (rel-L2 <= 0.1); token agreement of the final texts is reported.
 * Exit 0 PASS, 1 FAIL, 77 SKIP without a usable GPU. */
#include "gpu_check.h"
#include "tiny_model.h"

#include "cuda/lowrank.h"

enum { NL = 6, HKV = 2, D = 64, BT = 32, NBLK = 4, LKH = NL * 2 * HKV };

static dkv_cuda_kv_pool make_pool(dkv_bf16 *base)
{
    return (dkv_cuda_kv_pool){.base = base, .block_tokens = BT, .n_layers = NL, .n_kv_heads = HKV, .head_dim = D,
                              .layout = DKV_KV_TOKEN_MAJOR};
}

/* ------------------------------------------------------------------ low rank */

static void test_lowrank(cudaStream_t st, uint32_t rank, uint32_t m_tok)
{
    dkv_rng rng;
    dkv_rng_seed(&rng, 13 + rank);
    size_t be = (size_t)BT * LKH * D, n = NBLK * be, am = (size_t)LKH * m_tok * D;
    uint32_t table[3] = {1, 3, 0};
    float *A = rand_bf16_values(am, 1.0f, 0.0f, &rng);   /* [lkh][t][d] */
    dkv_bf16 *dA = upload_bf16(A, am);
    dkv_cuda_lowrank *lr = NULL;
    OK(dkv_cuda_lowrank_new(st, m_tok, D, DKV_LOWRANK_MAX_RANK, 256, &lr, &err));
    float *dQ = dev_alloc((size_t)LKH * m_tok * rank * 4), *dB = dev_alloc((size_t)LKH * rank * D * 4),
          *dE = dev_alloc(LKH * 4);
    dkv_bf16 *qb = dev_alloc(((size_t)LKH * m_tok * rank + (size_t)LKH * rank * D) * 2);
    OK(dkv_cuda_lowrank_compress(lr, dA, m_tok, D, LKH, rank, 1, 5, dQ, dB, dE, &err));
    OK(dkv_cuda_f32_to_bf16(qb, dQ, (size_t)LKH * m_tok * rank, st, &err));
    OK(dkv_cuda_f32_to_bf16(qb + (size_t)LKH * m_tok * rank, dB, (size_t)LKH * rank * D, st, &err));
    dkv_bf16 *dpool = dev_alloc(n * 2);
    poison(dpool, n * 2);
    dkv_cuda_kv_pool dp = make_pool(dpool), hp = make_pool(NULL);
    uint32_t *dtab = upload(table, sizeof table);
    OK(dkv_cuda_lowrank_decompress(&dp, dtab, qb, qb + (size_t)LKH * m_tok * rank, m_tok, rank, st, &err));
    CK(cudaStreamSynchronize(st));
    float *pool = download_bf16(dpool, n), *QB = download_bf16(qb, (size_t)LKH * (m_tok + D) * rank);
    float *E = download(dE, LKH * 4);
    float *got = malloc(am * sizeof *got), *prod = malloc(am * sizeof *prod);
    const float *Q = QB, *B = QB + (size_t)LKH * m_tok * rank;
    double esum = 0;
    for (uint32_t lkh = 0; lkh < LKH; lkh++) {
        uint32_t h = lkh % HKV, kv = (lkh / HKV) % 2, l = lkh / (2 * HKV);
        esum += E[lkh];
        for (uint32_t t = 0; t < m_tok; t++)
            for (uint32_t d = 0; d < D; d++) {
                size_t i = ((size_t)lkh * m_tok + t) * D + d;
                got[i] = pool[table[t / BT] * be + dkv_cuda_kv_offset(&hp, l, kv, h, t % BT) + d];
                double s = 0;
                for (uint32_t k = 0; k < rank; k++)
                    s += (double)Q[((size_t)lkh * m_tok + t) * rank + k] * B[((size_t)lkh * rank + k) * D + d];
                prod[i] = h_bf2f(h_f2bf((float)s));
            }
    }
    char name[80];
    snprintf(name, sizeof name, "lowrank r%u decompress vs CPU Q B", rank);
    check(name, got, prod, am, 1e-3, 1e-2);
    printf("lowrank r%u: compression's own relative error (mean over %d matrices) %.4f\n", rank, LKH, esum / LKH);
    snprintf(name, sizeof name, "lowrank r%u reconstruction vs KV", rank);
    if (rank == D)   /* ratio 1: the original up to bf16 */
        check(name, got, A, am, 0.05, 0.05);
    else {
        double num = 0, den = 0;
        for (size_t i = 0; i < am; i++)
            num += (got[i] - A[i]) * (double)(got[i] - A[i]), den += (double)A[i] * A[i];
        double l2 = sqrt(num / den), rep = esum / LKH;
        printf("lowrank r%u reconstruction vs KV: rel-L2 %.4f (random full-rank KV: the truncation's loss)\n", rank,
               l2);
        /* the reported error (the mean over matrices of the fp32 Q B's error) is the measured one
         * (all matrices together, of the bf16 Q B in the pool): within 1e-3 relative.  Every device
         * log of this test (fixed seed; e.g. datasets/hw/2026-12-04/call116, 2026-12-01/call33)
         * prints 0.6990 and 0.6991: at most 2e-4 apart (3e-4 relative) given the rounding to 4 digits */
        char line[120];
        snprintf(line, sizeof line, "reported %.6f, measured %.6f, |diff| / measured %.2e", rep, l2,
                 fabs(rep - l2) / l2);
        snprintf(name, sizeof name, "lowrank r%u reported error = reconstruction's (1e-3 rel)", rank);
        check_true(name, isfinite(rep) && isfinite(l2) && l2 > 0 && fabs(rep - l2) <= 1e-3 * l2, line);
    }
    if (rank == D) {
        double num = 0, den = 0;
        for (size_t i = 0; i < am; i++)
            num += (got[i] - A[i]) * (double)(got[i] - A[i]), den += (double)A[i] * A[i];
        check_true("lowrank ratio 1: rel-L2 <= 1e-2", sqrt(num / den) <= 1e-2, "");
    }
    dkv_cuda_lowrank_free(lr);
    cudaFree(dA), cudaFree(dQ), cudaFree(dB), cudaFree(dE), cudaFree(qb), cudaFree(dpool), cudaFree(dtab);
    free(A), free(pool), free(QB), free(E), free(got), free(prod);
}

/* ------------------------------------------------------------------ the tiny model, FP8 KV */

typedef struct capture {
    uint32_t n, C, max_L;
    float   *hid;        /* per request: hidden rows (32, C) of block 0, step 1 */
    uint32_t *final;     /* per request: the canvas after its last step */
    uint32_t *have;
} capture;

static void on_item(void *user, const dkv_cuda_item_report *r)
{
    capture *c = user;
    if (r->block == 0 && r->step == 1 && r->phase == DKV_STEP_REUSE) {
        for (size_t i = 0; i < (size_t)r->block_len * c->C; i++)
            c->hid[(size_t)r->request * 32 * c->C + i] = h_bf2f(r->hidden[i]);
        c->have[r->request] = 1;
    }
    memcpy(c->final + (size_t)r->request * c->max_L, r->tokens_after, r->canvas * sizeof(uint32_t));
}

/* offload: DKV_OFFLOAD_NONE, or progressive at lowrank_ratio ratio (t1 1/4, t2 1); rep: optional. */
static void run_tiny(dkv_model *m, dkv_ref_weights *w, capture *cap, dkv_offload_mode offload, double ratio,
                     dkv_cuda_backend_report *rep)
{
    dkv_gpu g = h200();
    dkv_tokenizer tok;
    dkv_workload *wl = tiny_prompts(m, 32, 0, &tok);
    cap->n = (uint32_t)dkv_workload_count(wl), cap->C = m->hidden, cap->max_L = 0;
    for (size_t i = 0; i < cap->n; i++) {
        const dkv_request *q = dkv_workload_get(wl, i);
        uint32_t L = q->prompt_tokens + q->gen_tokens;
        cap->max_L = L > cap->max_L ? L : cap->max_L;
    }
    cap->hid = calloc((size_t)cap->n * 32 * m->hidden, sizeof(float));
    cap->final = calloc((size_t)cap->n * cap->max_L, sizeof(uint32_t));
    cap->have = calloc(cap->n, sizeof(uint32_t));
    dkv_engine_config c;
    tiny_config(&c, m, &g, wl, DKV_CACHE_DUAL, 8);
    c.weights = w;
    c.offload.mode = offload;
    c.offload.lowrank_ratio = ratio;
    c.offload.t1 = 0.25, c.offload.t2 = 1.0;   /* the low-rank phase from a quarter of the steps on */
    dkv_cuda_backend_options o = backend_options_for(&c);
    o.on_item = on_item, o.on_item_user = cap, o.poison = true, o.report = rep;
    if (offload != DKV_OFFLOAD_NONE) {   /* as test_backend_run: a slot and staging for every canvas */
        uint64_t per = (uint64_t)(cap->max_L + 31) / 32 * 32 * dkv_model_kv_bytes_per_token(m);
        o.staging_bytes = cap->n * per, o.host_bytes = cap->n * per;
    }
    dkv_backend be;
    OK(dkv_cuda_backend_new(&o, &be, &err));
    c.backend = &be;
    dkv_engine_result *res = NULL;
    OK(dkv_engine_run(&c, &res, &err));
    const dkv_run_summary *s = dkv_engine_result_summary(res);
    char name[64];
    snprintf(name, sizeof name, "tiny dual kv %s offload %s %.2f: all finished", dkv_dtype_name(m->kv_dtype),
             dkv_offload_mode_name(offload), ratio);
    check_true(name, s->n_done == s->n_requests && s->n_done == cap->n, "");
    dkv_engine_result_free(res);
    dkv_backend_free(&be);
    dkv_workload_free(wl);
}

/* Generated tokens of two runs that are equal (*same of *tot). */
static void agreement(dkv_model *m, const capture *a, const capture *b, uint64_t *same, uint64_t *tot)
{
    dkv_tokenizer tok;
    dkv_workload *wl = tiny_prompts(m, 32, 0, &tok);
    *same = *tot = 0;
    for (uint32_t r = 0; r < a->n; r++) {
        const dkv_request *q = dkv_workload_get(wl, r);
        for (uint32_t t = q->prompt_tokens; t < q->prompt_tokens + q->gen_tokens; t++, (*tot)++)
            *same += a->final[(size_t)r * a->max_L + t] == b->final[(size_t)r * b->max_L + t];
    }
    dkv_workload_free(wl);
}

static void capture_free(capture *c)
{
    free(c->hid), free(c->final), free(c->have);
}

/* Progressive offload on the tiny model (dual cache): at ratio 1 the KV goes out and comes back
 * (raw, or as a low-rank form where that is not larger than the raw blocks: the device logs
 * since call 19 show 4 of the 6 compress orders stored as forms and 20 rebuilds, all tokens equal): the decode equals the run without
 * offload, and the run did compress and fetch (COMPRESS orders copied, bytes copied to the
 * device); at ratio 0.3 (rank 19 of 64) the low-rank form goes to the host and fetches rebuild
 * the KV from it. */
static void test_tiny_lowrank(void)
{
    dkv_model m = tiny_dllm();
    dkv_ref_weights *w = tiny_weights(&m);
    capture base = {0}, one = {0}, low = {0};
    dkv_cuda_backend_report r1, r3;
    memset(&r1, 0, sizeof r1), memset(&r3, 0, sizeof r3);
    run_tiny(&m, w, &base, DKV_OFFLOAD_NONE, 1, NULL);
    run_tiny(&m, w, &one, DKV_OFFLOAD_PROGRESSIVE, 1.0, &r1);
    run_tiny(&m, w, &low, DKV_OFFLOAD_PROGRESSIVE, 0.3, &r3);
    uint64_t s1, t1, s3, t3;
    agreement(&m, &base, &one, &s1, &t1);
    agreement(&m, &base, &low, &s3, &t3);
    printf("tiny dual, progressive offload ratio 1: %llu compress orders (%llu as low-rank forms), %llu rebuilds; "
           "tokens equal to no offload %.2f %% (%llu of %llu); copied d2h %llu h2d %llu bytes\n",
           (unsigned long long)r1.n_compress, (unsigned long long)r1.n_lowrank_stored,
           (unsigned long long)r1.n_lowrank_rebuilt, t1 ? 100.0 * s1 / t1 : 0.0, (unsigned long long)s1,
           (unsigned long long)t1, (unsigned long long)r1.pcie_d2h_bytes, (unsigned long long)r1.pcie_h2d_bytes);
    printf("tiny dual, progressive offload ratio 0.3: %llu compress orders (%llu as low-rank forms, mean relative "
           "error %.4f), %llu rebuilds; tokens equal to no offload %.2f %% (%llu of %llu; free-running)\n",
           (unsigned long long)r3.n_compress, (unsigned long long)r3.n_lowrank_stored,
           r3.n_compress ? r3.compress_err_sum / r3.n_compress : 0.0, (unsigned long long)r3.n_lowrank_rebuilt,
           t3 ? 100.0 * s3 / t3 : 0.0, (unsigned long long)s3, (unsigned long long)t3);
    check_true("offload ratio 1: decode == no offload, KV went out and came back",
               t1 > 0 && s1 == t1 && r1.n_compress > 0 && r1.pcie_h2d_bytes > 0, "");
    check_true("offload ratio 0.3: forms stored and rebuilt", r3.n_lowrank_stored > 0 && r3.n_lowrank_rebuilt > 0, "");
    dkv_cuda_backend_report_clear(&r1), dkv_cuda_backend_report_clear(&r3);
    capture_free(&base), capture_free(&one), capture_free(&low);
    dkv_ref_weights_free(w);
}

static void test_tiny_fp8(void)
{
    dkv_model m = tiny_dllm();
    dkv_ref_weights *w = tiny_weights(&m);
    capture a = {0}, b = {0};
    run_tiny(&m, w, &a, DKV_OFFLOAD_NONE, 1, NULL);
    m.kv_dtype = DKV_DTYPE_FP8;
    run_tiny(&m, w, &b, DKV_OFFLOAD_NONE, 1, NULL);
    double num = 0, den = 0;
    uint32_t have = 0;
    for (uint32_t r = 0; r < a.n; r++) {
        if (!a.have[r] || !b.have[r])
            continue;
        have++;
        for (size_t i = 0; i < (size_t)32 * a.C; i++) {
            double d = (double)b.hid[(size_t)r * 32 * a.C + i] - a.hid[(size_t)r * 32 * a.C + i];
            num += d * d, den += (double)a.hid[(size_t)r * 32 * a.C + i] * a.hid[(size_t)r * 32 * a.C + i];
        }
    }
    double l2 = den > 0 ? sqrt(num / den) : INFINITY;
    uint64_t same = 0, tot = 0;
    agreement(&m, &a, &b, &same, &tot);
    printf("tiny dual, FP8 vs bf16 KV: hidden rows of the first Reuse step rel-L2 %.4e (%u requests); generated "
           "tokens equal %.2f %% (%llu of %llu; free-running: a first difference cascades)\n", l2, have,
           tot ? 100.0 * same / tot : 0.0, (unsigned long long)same, (unsigned long long)tot);
    check_true("fp8 KV applied: first Reuse hidden differs", have == a.n && l2 > 1e-4, "");
    check_true("fp8 KV close: rel-L2 <= 0.1", have == a.n && l2 <= 0.1, "");
    capture_free(&a), capture_free(&b);
    dkv_ref_weights_free(w);
}

int main(void)
{
    skip_without_gpu();
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    test_lowrank(st, D, 80);
    test_lowrank(st, 16, 80);
    dkv_err e = {0};
    dkv_cuda_kv_pool p = make_pool((dkv_bf16 *)8);
    check_true("decompress: rank > head_dim is EINVAL",
               dkv_cuda_lowrank_decompress(&p, (const uint32_t *)8, (const dkv_bf16 *)8, (const dkv_bf16 *)8, 4, 65, st,
                                           &e) == DKV_EINVAL, e.msg);
    test_tiny_fp8();
    test_tiny_lowrank();
    cudaStreamDestroy(st);
    printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
