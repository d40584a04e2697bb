/* bench_reuse.c - microbenchmarks of the Reuse-step pieces and whole steps at LLaDA-8B shapes
 * (random bf16 weights), against ceilings measured in the same run: device copy bandwidth
 * (cudaMemcpy D2D, read + write) and a large cuBLAS GEMM.  CUDA events, warm-up, median.
 * GEMMs at T = 32 on both paths (cuBLASLt, the skinny kernel with each split count); whole
 * steps through dkv_cuda_step (forward.c) and, for dual Reuse, the fused composition of
 * bench_fused.h (RoPE + KV store in one launch, SwiGLU inside the down GEMM), checked against
 * dkv_cuda_step's output and timed plain and as a CUDA graph.
 *
 *   bench_reuse [--quick]     (--quick: fewer repetitions)
 *
 * Workload of issue 5: batch 1, prompt 512, generation 256 (L = 768), block 32, dual cache.
 * Prints "SKIP: ..." and exits 77 without a GPU. */
#include "gpu_args.h"
#include "gpu_check.h"

#include "ref/ref.h"

#include "bench_fused.h"
#include "bench_time.h"

static dkv_cuda_ctx *ctx;
static cudaStream_t st;
static int reps = 15;

static int warm = 3;   /* bench_time.h: untimed calls before the timed ones */

/* Median of reps timings (ms) of body, after 3 warm-ups; events on the compute stream. */
#define TIME_MS(out, ...)                 \
    do {                                  \
        float us_;                        \
        TIME_US(us_, __VA_ARGS__);        \
        (out) = us_ * 1e-3f;              \
    } while (0)

static dkv_model llada8b(void)
{
    dkv_model m = {.name = "LLaDA-8B", .n_layers = 32, .hidden = 4096, .ffn = 12288, .n_heads = 32,
                   .n_kv_heads = 32, .head_dim = 128, .vocab = 126464, .mask_id = 126336, .max_len = 4096,
                   .rope_theta = 500000.0};
    return m;
}

static double copy_bw(void)
{
    size_t n = (size_t)2 << 30;
    void *a = dev_alloc(n), *b = dev_alloc(n);
    CK(cudaMemset(a, 1, n));
    float ms;
    TIME_MS(ms, CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, st)));
    cudaFree(a), cudaFree(b);
    double bw = 2.0 * n / (ms * 1e-3);
    printf("copy D2D 2 GiB: %.3f ms -> %.0f GB/s (read + write)\n", ms, bw / 1e9);
    return bw;
}

static double gemm_peak(void)
{
    uint32_t n = 8192;
    dkv_bf16 *a = dev_alloc((size_t)n * n * 2), *b = dev_alloc((size_t)n * n * 2), *c = dev_alloc((size_t)n * n * 2);
    OK(dkv_cuda_fill_random(a, (size_t)n * n, 1, 1, 0, st, &err));
    OK(dkv_cuda_fill_random(b, (size_t)n * n, 2, 1, 0, st, &err));
    float ms;
    TIME_MS(ms, OK(dkv_cuda_gemm(ctx, c, a, b, NULL, n, n, n, 0.0f, &err)));
    double f = 2.0 * n * n * n / (ms * 1e-3);
    printf("cuBLASLt bf16 GEMM 8192^3 (random data): %.3f ms -> %.0f TFLOP/s\n", ms, f / 1e12);
    cudaFree(a), cudaFree(b), cudaFree(c);
    return f;
}

/* The four GEMMs of a layer at T rows, each over the 32 layers' own weights (no L2 reuse), on
 * one path (splits: the skinny kernel's K splits, 0 = its own choice). */
static double time_gemm(const dkv_cuda_weights *w, int which, uint32_t T, uint32_t K, uint32_t N, dkv_gemm_path path,
                        uint32_t splits, dkv_bf16 *x, dkv_bf16 *y)
{
    const dkv_model *m = &w->m;
    float ms;
    TIME_MS(ms, for (uint32_t l = 0; l < m->n_layers; l++) {
        const dkv_cuda_layer *L = &w->layers[l];
        const dkv_bf16 *wt = which == 0 ? L->wqkv : which == 1 ? L->wo : which == 2 ? L->wgu : L->wdown;
        OK(dkv_cuda_gemm_ex(ctx, y, x, wt, NULL, T, K, N, 0.0f, path, splits, &err));
    });
    return ms / m->n_layers;
}

static void bench_gemms(const dkv_cuda_weights *w, uint32_t T, double bw, double peak, double *sum_ms, int sweep)
{
    const dkv_model *m = &w->m;
    uint32_t C = m->hidden, F = m->ffn, QD = m->n_heads * m->head_dim, QKV = QD + 2 * m->n_kv_heads * m->head_dim;
    dkv_bf16 *x = dev_alloc((size_t)T * 2 * F * 2), *y = dev_alloc((size_t)T * 2 * F * 2);
    OK(dkv_cuda_fill_random(x, (size_t)T * 2 * F, 3, 1, 0, st, &err));
    struct { const char *name; uint32_t K, N; } g[4] = {{"QKV", C, QKV}, {"O", QD, C}, {"gate+up", C, 2 * F}, {"down", F, C}};
    *sum_ms = 0;
    for (int i = 0; i < 4; i++) {
        double bytes = 2.0 * g[i].K * g[i].N, floor_ms = bytes / bw * 1e3, flop = 2.0 * T * g[i].K * g[i].N;
        double per = time_gemm(w, i, T, g[i].K, g[i].N, DKV_GEMM_AUTO, 0, x, y);
        printf("  gemm %-8s T=%-4u K=%-5u N=%-5u %8.1f us  weights %6.1f MB at %5.0f GB/s  floor %6.1f us "
               "(x%.2f)  %5.0f TFLOP/s (x%.2f of peak)\n", g[i].name, T, g[i].K, g[i].N, per * 1e3, bytes / 1e6,
               bytes / (per * 1e-3) / 1e9, floor_ms * 1e3, per / floor_ms, flop / (per * 1e-3) / 1e12,
               (flop / peak * 1e3) / per);
        if (sweep) {   /* the same GEMM on cuBLASLt and on the skinny kernel with each split count */
            double lt = time_gemm(w, i, T, g[i].K, g[i].N, DKV_GEMM_CUBLASLT, 0, x, y);
            printf("      cuBLASLt %.1f us (x%.2f) | skinny splits:", lt * 1e3, lt / floor_ms);
            for (uint32_t sp = 1; sp <= 8; sp++)
                printf(" %u:%.1f", sp, time_gemm(w, i, T, g[i].K, g[i].N, DKV_GEMM_SKINNY, sp, x, y) * 1e3);
            printf(" us\n");
        }
        *sum_ms += per * m->n_layers;
    }
    cudaFree(x), cudaFree(y);
}

static void bench_attention(const dkv_model *m, dkv_kv_layout layout, uint32_t Tq, uint32_t n_cache,
                            dkv_kv_src_kind kind, uint32_t n_own, double bw)
{
    uint32_t H = m->n_heads, Hkv = m->n_kv_heads, D = m->head_dim, QKV = (H + 2 * Hkv) * D, bt = 256;
    uint32_t nb = (n_cache + bt - 1) / bt + 1;
    dkv_cuda_kv_pool pool = {NULL, bt, m->n_layers, Hkv, D, layout, DKV_KV_ELEM_BF16, NULL};
    size_t pool_bytes = dkv_cuda_kv_block_bytes(&pool) * nb;
    uint32_t rows = Tq > n_own ? Tq : n_own, table[64];
    for (uint32_t i = 0; i < nb; i++)
        table[i] = nb - 1 - i;
    pool.base = dev_alloc(kind == DKV_KV_SRC_PAGED ? pool_bytes : 16);
    if (kind == DKV_KV_SRC_PAGED)
        OK(dkv_cuda_fill_random(pool.base, pool_bytes / 2, 5, 1, 0, st, &err));
    uint32_t *dt = upload(table, nb * 4);
    dkv_bf16 *qkv = dev_alloc((size_t)rows * QKV * 2), *out = dev_alloc((size_t)Tq * H * D * 2);
    OK(dkv_cuda_fill_random(qkv, (size_t)rows * QKV, 6, 1, 0, st, &err));
    dkv_bf16 *kp = NULL, *vp = NULL;
    if (kind == DKV_KV_SRC_PACKED) {   /* one layer's packed rows per layer, as a real cache holds */
        kp = dev_alloc((size_t)m->n_layers * Hkv * n_cache * D * 2);
        vp = dev_alloc((size_t)m->n_layers * Hkv * n_cache * D * 2);
        OK(dkv_cuda_fill_random(kp, (size_t)m->n_layers * Hkv * n_cache * D, 7, 1, 0, st, &err));
        OK(dkv_cuda_fill_random(vp, (size_t)m->n_layers * Hkv * n_cache * D, 8, 1, 0, st, &err));
    }
    dkv_cuda_attn_args a = {.out = out, .q = qkv, .ldq = QKV, .ldo = H * D, .Tq = Tq, .n_heads = H, .n_kv_heads = Hkv,
                            .head_dim = D, .k_own = qkv + H * D, .v_own = qkv + (H + Hkv) * D, .ld_own = QKV,
                            .n_own = n_own};
    a.cache.kind = kind, a.cache.n_tokens = n_cache, a.cache.pool = &pool, a.cache.block_table = dt;
    float ms;
    TIME_MS(ms, for (uint32_t l = 0; l < m->n_layers; l++) {
        a.cache.layer = l;
        if (kind == DKV_KV_SRC_PACKED)
            a.cache.k_packed = kp + (size_t)l * Hkv * n_cache * D, a.cache.v_packed = vp + (size_t)l * Hkv * n_cache * D;
        OK(dkv_cuda_attention(&a, st, &err));
    });
    double per = ms / m->n_layers, kv_bytes = 2.0 * 2 * Hkv * D * (n_cache + n_own);
    double flop = 4.0 * Tq * H * D * (n_cache + n_own);
    printf("  attention %-7s Tq=%-4u cache %-4u %-6s own %-4u %8.1f us/layer  KV %5.1f MB at %5.0f GB/s (x%.2f of "
           "floor)  %5.1f TFLOP/s\n", kind == DKV_KV_SRC_PAGED ? (layout ? "t-major" : "lay-maj") : "", Tq, n_cache,
           kind == DKV_KV_SRC_PAGED ? "paged" : kind == DKV_KV_SRC_PACKED ? "packed" : "-", n_own, per * 1e3,
           kv_bytes / 1e6, kv_bytes / (per * 1e-3) / 1e9, per / (kv_bytes / bw * 1e3), flop / (per * 1e-3) / 1e12);
    cudaFree(pool.base), cudaFree(dt), cudaFree(qkv), cudaFree(out), cudaFree(kp), cudaFree(vp);
}

int main(int argc, char **argv)
{
    bool quick = gpu_args_flag(argc, argv, "bench_reuse", "--quick", "fewer repetitions");
    skip_without_gpu();
    if (quick)
        reps = 5;
    OK(dkv_cuda_ctx_new(0, &ctx, &err));
    st = dkv_cuda_ctx_stream(ctx);
    size_t free0, total;
    CK(cudaMemGetInfo(&free0, &total));
    printf("memory: %.1f GiB free of %.1f GiB at start\n", free0 / 1073741824.0, total / 1073741824.0);
    double bw = copy_bw(), peak = gemm_peak();

    dkv_model m = llada8b();
    dkv_cuda_weights *w;
    OK(dkv_cuda_weights_new(&m, 1e-5f, &w, &err));
    OK(dkv_cuda_weights_randomize(w, 42, st, &err));
    CK(cudaStreamSynchronize(st));
    double floor_ms = w->bytes / bw * 1e3;
    printf("LLaDA-8B weights: %.2f GB (%.2f GiB); weight-streaming floor %.2f ms at the measured %.0f GB/s\n",
           w->bytes / 1e9, w->bytes / 1073741824.0, floor_ms, bw / 1e9);

    printf("GEMMs of one layer, timed over all 32 layers' weights:\n");
    double g32, g768;
    bench_gemms(w, 32, bw, peak, &g32, 1);
    printf("  sum of the 4 GEMMs x 32 layers at T=32: %.2f ms (weights without embeddings/LM head)\n", g32);
    bench_gemms(w, 768, bw, peak, &g768, 0);
    printf("  sum at T=768: %.2f ms\n", g768);
    float lm_ms;
    {
        float *logits = dev_alloc((size_t)32 * m.vocab * 4);
        uint32_t *am = dev_alloc(32 * 4);
        float *cf = dev_alloc(32 * 4);
        dkv_bf16 *x = dev_alloc((size_t)32 * m.hidden * 2);
        OK(dkv_cuda_fill_random(x, (size_t)32 * m.hidden, 9, 1, 0, st, &err));
        TIME_MS(lm_ms, OK(dkv_cuda_lm_head_argmax(ctx, am, cf, x, w->lm_head, 32, m.hidden, m.vocab, 32, logits, &err)));
        double bytes = 2.0 * m.vocab * m.hidden;
        printf("  LM head 32 rows + argmax/conf: %.1f us, %.0f MB at %.0f GB/s (x%.2f of floor)\n", lm_ms * 1e3,
               bytes / 1e6, bytes / (lm_ms * 1e-3) / 1e9, lm_ms / (bytes / bw * 1e3));
        cudaFree(logits), cudaFree(am), cudaFree(cf), cudaFree(x);
    }

    printf("attention, timed over 32 layers:\n");
    bench_attention(&m, DKV_KV_LAYER_MAJOR, 32, 768, DKV_KV_SRC_PAGED, 0, bw);
    bench_attention(&m, DKV_KV_TOKEN_MAJOR, 32, 768, DKV_KV_SRC_PAGED, 0, bw);
    bench_attention(&m, DKV_KV_LAYER_MAJOR, 32, 368, DKV_KV_SRC_PACKED, 32, bw);
    bench_attention(&m, DKV_KV_LAYER_MAJOR, 768, 0, DKV_KV_SRC_NONE, 768, bw);

    /* whole steps through dkv_cuda_step: batch 1, P 512, G 256, block 32 at s = 512 */
    enum { LL = 768, SB = 512, BB = 32, BTK = 256 };
    size_t f1;
    CK(cudaMemGetInfo(&f1, &total));
    dkv_cuda_kv_pool pool = {NULL, BTK, m.n_layers, m.n_kv_heads, m.head_dim, DKV_KV_LAYER_MAJOR, DKV_KV_ELEM_BF16, NULL};
    pool.base = dev_alloc(dkv_cuda_kv_block_bytes(&pool) * (LL / BTK));
    dkv_cuda_scratch *scr;
    OK(dkv_cuda_scratch_new(&m, LL, BB, &scr, &err));
    uint32_t tok[LL], pos[LL], table[LL / BTK] = {2, 0, 1};
    dkv_rng r;
    dkv_rng_seed(&r, 5);
    for (int i = 0; i < LL; i++)
        pos[i] = i, tok[i] = i >= SB ? m.mask_id : (uint32_t)dkv_rng_below(&r, m.vocab);
    dkv_cuda_seq seq = {.tokens = upload(tok, sizeof tok), .pos = upload(pos, sizeof pos),
                        .block_table = upload(table, sizeof table)};
    dkv_bf16 *kp[32], *vp[32];
    uint32_t keep = (LL - BB) / 2;
    for (int l = 0; l < 32; l++) {
        kp[l] = dev_alloc((size_t)m.n_kv_heads * keep * m.head_dim * 2);
        vp[l] = dev_alloc((size_t)m.n_kv_heads * keep * m.head_dim * 2);
    }
    seq.k_packed = kp, seq.v_packed = vp, seq.packed_cap = keep;
    uint32_t *am = dev_alloc(BB * 4);
    float *cf = dev_alloc(BB * 4);
    size_t f2;
    CK(cudaStreamSynchronize(st));
    CK(cudaMemGetInfo(&f2, &total));
    double dual_over = dkv_cuda_kv_block_bytes(&pool) * (LL / BTK) + dkv_cuda_scratch_bytes(scr) + (32u << 20);
    printf("dual-cache device memory over the weights: pool %.0f MiB + scratch %.0f MiB + cuBLASLt workspace 32 MiB "
           "= %.2f GiB (cudaMemGetInfo delta %.2f GiB, incl. sparse buffers %.0f MiB)\n",
           dkv_cuda_kv_block_bytes(&pool) * (LL / BTK) / 1048576.0, dkv_cuda_scratch_bytes(scr) / 1048576.0,
           dual_over / 1073741824.0, (f1 - f2) / 1073741824.0, 2.0 * 32 * m.n_kv_heads * keep * m.head_dim * 2 / 1048576.0);

    dkv_ref_step_args a = {.mode = DKV_CACHE_DUAL, .canvas_len = LL, .block_start = SB, .block_len = BB,
                           .logit_chunk = BB};
    float refresh_ms, reuse_ms, graph_ms;
    a.step = 0;
    TIME_MS(refresh_ms, OK(dkv_cuda_step(ctx, w, &pool, &seq, scr, &a, am, cf, NULL, &err)));
    a.step = 1;
    TIME_MS(reuse_ms, OK(dkv_cuda_step(ctx, w, &pool, &seq, scr, &a, am, cf, NULL, &err)));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    OK(dkv_cuda_step(ctx, w, &pool, &seq, scr, &a, am, cf, NULL, &err));
    CK(cudaStreamEndCapture(st, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    TIME_MS(graph_ms, CK(cudaGraphLaunch(exec, st)));
    /* the fused composition of a dual Reuse step (bench_fused.h), checked against dkv_cuda_step */
    dkv_bf16 *hid_ref = dev_alloc((size_t)BB * m.hidden * 2), *hid_fused = dev_alloc((size_t)BB * m.hidden * 2);
    uint32_t *am2 = dev_alloc(BB * 4);
    float *cf2 = dev_alloc(BB * 4), fused_ms, fused_graph_ms;
    fused_bufs fb;
    fused_bufs_new(&fb, &m, LL, BB);
    OK(dkv_cuda_step(ctx, w, &pool, &seq, scr, &a, am, cf, hid_ref, &err));
    poison(hid_fused, (size_t)BB * m.hidden * 2);
    OK(fused_dual_reuse(ctx, w, &pool, &seq, &fb, &a, am2, cf2, hid_fused, &err));
    CK(cudaStreamSynchronize(st));
    {
        float *h1 = download_bf16(hid_ref, (size_t)BB * m.hidden), *h2 = download_bf16(hid_fused, (size_t)BB * m.hidden);
        uint32_t *a1 = download(am, BB * 4), *a2 = download(am2, BB * 4);
        double num = 0, den = 0;
        int same = 0, nan = 0;
        for (size_t i = 0; i < (size_t)BB * m.hidden; i++) {
            nan += isnan(h2[i]);
            num += (double)(h1[i] - h2[i]) * (h1[i] - h2[i]), den += (double)h1[i] * h1[i];
        }
        for (int i = 0; i < BB; i++)
            same += a1[i] == a2[i];
        printf("fused dual Reuse vs dkv_cuda_step: block hidden rel-L2 %.2e (%d NaN), %d/%d same picks -> %s\n",
               sqrt(num / den), nan, same, BB, nan == 0 && sqrt(num / den) < 2e-2 && same >= BB - 2 ? "PASS" : "FAIL");
        free(h1), free(h2), free(a1), free(a2);
    }
    TIME_MS(fused_ms, OK(fused_dual_reuse(ctx, w, &pool, &seq, &fb, &a, am2, cf2, NULL, &err)));
    cudaGraph_t graph2;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    OK(fused_dual_reuse(ctx, w, &pool, &seq, &fb, &a, am2, cf2, NULL, &err));
    CK(cudaStreamEndCapture(st, &graph2));
    cudaGraphExec_t exec2;
    CK(cudaGraphInstantiate(&exec2, graph2, 0));
    TIME_MS(fused_graph_ms, CK(cudaGraphLaunch(exec2, st)));
    printf("fused dual Reuse step:           %7.2f ms   (CUDA graph replay %.2f ms)  floor %.2f ms (x%.2f / x%.2f)\n",
           fused_ms, fused_graph_ms, floor_ms, fused_ms / floor_ms, fused_graph_ms / floor_ms);
    cudaGraphExecDestroy(exec2);
    cudaGraphDestroy(graph2);
    /* the fused Refresh composition, checked against dkv_cuda_step's Refresh */
    float fref_ms, fref_graph_ms;
    a.step = 0;
    OK(dkv_cuda_step(ctx, w, &pool, &seq, scr, &a, am, cf, hid_ref, &err));
    poison(hid_fused, (size_t)BB * m.hidden * 2);
    OK(fused_dual_refresh(ctx, w, &pool, &seq, &fb, &a, am2, cf2, hid_fused, &err));
    CK(cudaStreamSynchronize(st));
    {
        float *h1 = download_bf16(hid_ref, (size_t)BB * m.hidden), *h2 = download_bf16(hid_fused, (size_t)BB * m.hidden);
        uint32_t *a1 = download(am, BB * 4), *a2 = download(am2, BB * 4);
        double num = 0, den = 0;
        int same = 0, nan = 0;
        for (size_t i = 0; i < (size_t)BB * m.hidden; i++) {
            nan += isnan(h2[i]);
            num += (double)(h1[i] - h2[i]) * (h1[i] - h2[i]), den += (double)h1[i] * h1[i];
        }
        for (int i = 0; i < BB; i++)
            same += a1[i] == a2[i];
        printf("fused dual Refresh vs dkv_cuda_step: block hidden rel-L2 %.2e (%d NaN), %d/%d same picks -> %s\n",
               sqrt(num / den), nan, same, BB, nan == 0 && sqrt(num / den) < 2e-2 && same >= BB - 2 ? "PASS" : "FAIL");
        free(h1), free(h2), free(a1), free(a2);
    }
    TIME_MS(fref_ms, OK(fused_dual_refresh(ctx, w, &pool, &seq, &fb, &a, am2, cf2, NULL, &err)));
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    OK(fused_dual_refresh(ctx, w, &pool, &seq, &fb, &a, am2, cf2, NULL, &err));
    CK(cudaStreamEndCapture(st, &graph2));
    CK(cudaGraphInstantiate(&exec2, graph2, 0));
    TIME_MS(fref_graph_ms, CK(cudaGraphLaunch(exec2, st)));
    cudaGraphExecDestroy(exec2);
    cudaGraphDestroy(graph2);
    a.step = 1;
    fused_bufs_free(&fb);
    cudaFree(hid_ref), cudaFree(hid_fused), cudaFree(am2), cudaFree(cf2);

    double fl_refresh = dkv_model_forward_flops(&m, LL, LL, BB);
    printf("fused dual Refresh step:         %7.2f ms   (CUDA graph replay %.2f ms)  FLOP floor %.2f ms (x%.2f / x%.2f)\n",
           fref_ms, fref_graph_ms, fl_refresh / peak * 1e3, fref_ms / (fl_refresh / peak * 1e3),
           fref_graph_ms / (fl_refresh / peak * 1e3));
    printf("dual Refresh step (768 tokens):  %7.2f ms   FLOP floor %.2f ms at the measured GEMM peak (x%.2f)\n",
           refresh_ms, fl_refresh / peak * 1e3, refresh_ms / (fl_refresh / peak * 1e3));
    printf("dual Reuse step (32 q, 768 kv):  %7.2f ms   (CUDA graph replay %.2f ms)  floor %.2f ms (x%.2f / x%.2f)\n",
           reuse_ms, graph_ms, floor_ms, reuse_ms / floor_ms, graph_ms / floor_ms);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    float refresh_graph_ms;
    a.step = 0;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    OK(dkv_cuda_step(ctx, w, &pool, &seq, scr, &a, am, cf, NULL, &err));
    CK(cudaStreamEndCapture(st, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    TIME_MS(refresh_graph_ms, CK(cudaGraphLaunch(exec, st)));
    printf("dual Refresh step as a CUDA graph: %.2f ms (x%.2f)\n", refresh_graph_ms,
           refresh_graph_ms / (fl_refresh / peak * 1e3));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    a.step = 1;

    dkv_ref_step_args sp = {.mode = DKV_CACHE_SPARSE, .canvas_len = LL, .block_start = SB, .block_len = BB,
                            .retention = 0.5, .logit_chunk = BB};
    float sel_ms, sp_ms, pre_ms;
    sp.step = 1;
    TIME_MS(sel_ms, OK(dkv_cuda_step(ctx, w, &pool, &seq, scr, &sp, am, cf, NULL, &err)));
    sp.step = 2;
    TIME_MS(sp_ms, OK(dkv_cuda_step(ctx, w, &pool, &seq, scr, &sp, am, cf, NULL, &err)));
    dkv_ref_step_args pr = {.mode = DKV_CACHE_PREFIX, .canvas_len = LL, .block_start = SB, .block_len = BB,
                            .step = 1, .logit_chunk = BB};
    TIME_MS(pre_ms, OK(dkv_cuda_step(ctx, w, &pool, &seq, scr, &pr, am, cf, NULL, &err)));
    printf("sparse selecting step (768, rho 0.5, per head): %.2f ms; sparse Reuse (368 + 32 kv): %.2f ms; "
           "prefix Reuse (256 q, 768 kv): %.2f ms\n", sel_ms, sp_ms, pre_ms);

    /* layout reorder of the pool (3 blocks of 256 tokens, 384 MiB) and offload of one block */
    dkv_cuda_kv_pool tm = pool;
    tm.layout = DKV_KV_TOKEN_MAJOR;
    tm.base = dev_alloc(dkv_cuda_kv_block_bytes(&pool) * 3);
    uint32_t ids[3] = {0, 1, 2}, *dids = upload(ids, sizeof ids);
    float ro_ms;
    TIME_MS(ro_ms, OK(dkv_cuda_kv_reorder(&tm, &pool, dids, 3, st, &err)));
    double rb = 2.0 * dkv_cuda_kv_block_bytes(&pool) * 3;
    printf("kv_reorder layer-major -> t-major, 3 blocks (%.0f MiB): %.3f ms, %.0f GB/s (read + write)\n",
           rb / 2 / 1048576.0, ro_ms, rb / (ro_ms * 1e-3) / 1e9);
    void *host;
    size_t blk = dkv_cuda_kv_block_bytes(&pool);
    OK(dkv_cuda_host_alloc(&host, blk, &err));
    cudaEvent_t done;
    CK(cudaEventCreate(&done));
    float off_ms, overlap_ms;
    TIME_MS(off_ms, OK(dkv_cuda_offload(ctx, host, pool.base, blk, NULL, done, &err));
            CK(cudaStreamWaitEvent(st, done, 0)));
    TIME_MS(overlap_ms, OK(dkv_cuda_offload(ctx, host, pool.base, blk, NULL, done, &err));
            OK(dkv_cuda_step(ctx, w, &pool, &seq, scr, &a, am, cf, NULL, &err)); CK(cudaStreamWaitEvent(st, done, 0)));
    printf("offload of one 256-token block (%.0f MiB) D2H on the copy stream: %.2f ms (%.1f GB/s); a Reuse step with "
           "that offload running beside it: %.2f ms (alone %.2f ms)\n", blk / 1048576.0, off_ms,
           blk / (off_ms * 1e-3) / 1e9, overlap_ms, reuse_ms);

    printf("\nSUMMARY  copy %.0f GB/s | GEMM %.0f TFLOP/s | weight floor %.2f ms | FLOP floor (768) %.2f ms\n"
           "SUMMARY  dual Reuse dkv_cuda_step %.2f ms (graph %.2f, x%.2f) | fused %.2f ms (graph %.2f, x%.2f) | "
           "target x1.25 = %.2f ms\n"
           "SUMMARY  dual Refresh %.2f ms (graph %.2f), x%.2f of the FLOP floor | fused %.2f ms (graph %.2f, x%.2f) | "
           "target x1.4 = %.2f ms\n"
           "SUMMARY  device memory over the weights (dual) %.2f GiB | target 1.0 GiB\n", bw / 1e9, peak / 1e12,
           floor_ms, fl_refresh / peak * 1e3, reuse_ms, graph_ms, graph_ms / floor_ms, fused_ms, fused_graph_ms,
           fused_graph_ms / floor_ms, 1.25 * floor_ms, refresh_ms, refresh_graph_ms,
           refresh_ms / (fl_refresh / peak * 1e3), fref_ms, fref_graph_ms, fref_graph_ms / (fl_refresh / peak * 1e3),
           1.4 * fl_refresh / peak * 1e3, dual_over / 1073741824.0);
    cudaEventDestroy(done);
    dkv_cuda_host_free(host);
    for (int l = 0; l < 32; l++)
        cudaFree(kp[l]), cudaFree(vp[l]);
    cudaFree(tm.base), cudaFree(dids), cudaFree(pool.base), cudaFree(am), cudaFree(cf);
    cudaFree((void *)seq.tokens), cudaFree((void *)seq.pos), cudaFree((void *)seq.block_table);
    dkv_cuda_scratch_free(scr);
    dkv_cuda_weights_free(w);
    dkv_cuda_ctx_free(ctx);
    return 0;
}
