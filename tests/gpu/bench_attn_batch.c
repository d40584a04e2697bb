/* bench_attn_batch.c - the batched attention (dkv_cuda_attention_batch) of dual-Reuse steps, timed as
 * `dkv profile` times its attention rows and in the setting of a real step, to tell apart what the
 * profile's rows do not see (docs/COST_MODEL.md, "Attention of batched Reuse steps against the
 * instrumented runs"):
 *
 *   grid       n items of 32 queries, each reading K cached keys from the pool, n = 1..16, 20, 24, 32,
 *              under four pool settings: the profile's (cuda/profile_attn.c: 4 layers per block, a 6 GiB
 *              pool, block ids scattered as (i * 7919 + 13) mod blocks) and the engine's (the model's 32
 *              layers per block, so a token's rows of one layer are 32x further apart, and each item's
 *              blocks consecutive), and the two crossed.  Each case as dkv profile measures a row: the
 *              median of R calls each between two events after an L2 flush (flushed_us), the same without
 *              the flush (warm_us), R calls back to back between one pair of events (stream_us, per call).
 *   unequal    n items alternating K and 1.5 K keys (the engine's pool setting), the same three columns.
 *   transient  per-call times of one shape (8 items x 2,816 keys, engine's pool) interleaved with a
 *              Reuse-size FFN GEMM, after 2 s idle and after ~0.6 s of large GEMMs (a long Refresh step):
 *              whether the GPU's state after heavy work slows the next steps' attention.
 *
 *   bench_attn_batch [--quick]      one line per case ("grid ...", "unequal ...", "transient ...");
 *                                   scripts/attn_bench.sh post turns them into tables
 *
 * LLaDA-8B heads (32 / 32 x 128), bf16 pool filled with random values.  Prints "SKIP: ..." and exits
 * 77 without a GPU.  Expected wall time on an H200: ~1 minute (--quick: ~15 s). */
#include <time.h>

#include "gpu_args.h"
#include "gpu_check.h"

#include "cuda/profile_internal.h"

#define H 32
#define D 128
#define BT 32
#define FLUSH_BYTES ((size_t)256 << 20)

static dkv_cuda_ctx *ctx;
static cudaStream_t st;
static int R = 15;
static char *pool_mem, *flush_mem, *aux;
static size_t pool_bytes;
static dkv_bf16 *qbuf, *obuf;

typedef struct setting {
    const char *name;
    uint32_t layers;
    size_t span;      /* bytes of the pool the block ids range over */
    bool scatter;     /* the profile's scattered ids, else consecutive per item */
} setting;

typedef struct bcase {
    dkv_cuda_attn_batch b;
    dkv_cuda_kv_pool pool;
    const void *meta;
    const uint32_t *table;
    uint32_t layers, rep;
} bcase;

static int cmp_f(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* n items of keys[i] cached keys each into c (block table and metadata uploaded into aux). */
static void build(bcase *c, const setting *s, uint32_t n, const uint32_t *keys)
{
    memset(c, 0, sizeof *c);
    c->pool = (dkv_cuda_kv_pool){.base = pool_mem, .block_tokens = BT, .n_layers = s->layers, .n_kv_heads = H,
                                 .head_dim = D, .layout = DKV_KV_TOKEN_MAJOR};
    uint32_t nb = (uint32_t)(s->span / dkv_cuda_kv_block_bytes(&c->pool)), tot = 0;
    dkv_cuda_attn_item *it = calloc(n, sizeof *it);
    for (uint32_t i = 0; i < n; i++) {
        it[i] = (dkv_cuda_attn_item){.q_row = i * 32, .n_q = 32, .own_row = i * 32, .n_own = 0, .n_cache = keys[i],
                                     .table_off = tot};
        tot += (keys[i] + BT - 1) / BT;
    }
    uint32_t *t = malloc((size_t)tot * 4 + 4);
    for (uint32_t j = 0; j < tot; j++)
        t[j] = (uint32_t)(s->scatter ? ((uint64_t)j * 7919u + 13u) % nb : j % nb);
    CK(cudaMemcpy(aux, t, (size_t)tot * 4, cudaMemcpyHostToDevice));
    free(t);
    size_t off = ((size_t)tot * 4 + 255) / 256 * 256;
    OK(dkv_cuda_attn_batch_plan(&c->b, it, n, H, D, NULL, 0, &err));
    void *host = aligned_alloc(64, (c->b.bytes + 63) / 64 * 64);
    OK(dkv_cuda_attn_batch_plan(&c->b, it, n, H, D, host, c->b.bytes, &err));
    CK(cudaMemcpy(aux + off, host, c->b.bytes, cudaMemcpyHostToDevice));
    free(host);
    free(it);
    c->table = (const uint32_t *)aux, c->meta = aux + off, c->layers = s->layers;
}

static void call(bcase *c)
{
    uint32_t QD = H * D, QKV = 3 * QD;
    dkv_cuda_attn_batch_args x = {.out = obuf, .q = qbuf, .ldq = QKV, .ldo = QD, .n_heads = H, .n_kv_heads = H,
                                  .head_dim = D, .k_own = qbuf + QD, .v_own = qbuf + 2 * QD, .ld_own = QKV,
                                  .pool = &c->pool, .block_table = c->table, .layer = c->rep++ % c->layers,
                                  .batch = &c->b, .meta = c->meta};
    OK(dkv_cuda_attention_batch(&x, st, &err));
}

/* flushed / warm medians (us) and the back-to-back time per call, as cuda/profile.c's pr_measure. */
static void measure(bcase *c, double *flushed, double *warm, double *stream)
{
    static cudaEvent_t ev[130];
    static bool made;
    if (!made) {
        for (int i = 0; i < 130; i++)
            CK(cudaEventCreate(&ev[i]));
        made = true;
    }
    for (int i = 0; i < 3; i++)
        call(c);
    float t[64];
    for (int pass = 0; pass < 2; pass++) {
        OK(dkv_prof_spin(st, 30e-6 * R + 1e-3, &err));
        for (int r = 0; r < R; r++) {
            if (pass == 0)
                OK(dkv_cuda_l2_flush(st, flush_mem, FLUSH_BYTES, flush_mem + FLUSH_BYTES, &err));
            CK(cudaEventRecord(ev[2 * r], st));
            call(c);
            CK(cudaEventRecord(ev[2 * r + 1], st));
        }
        CK(cudaStreamSynchronize(st));
        for (int r = 0; r < R; r++)
            CK(cudaEventElapsedTime(&t[r], ev[2 * r], ev[2 * r + 1]));
        qsort(t, R, sizeof *t, cmp_f);
        *(pass == 0 ? flushed : warm) = 1e3 * t[R / 2];
    }
    OK(dkv_prof_spin(st, 30e-6 * R + 1e-3, &err));
    CK(cudaEventRecord(ev[0], st));
    for (int r = 0; r < R; r++)
        call(c);
    CK(cudaEventRecord(ev[1], st));
    CK(cudaStreamSynchronize(st));
    float ms;
    CK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
    *stream = 1e3 * ms / R;
}

static void grid(const setting *S, int nS, bool quick)
{
    static const uint32_t ns_full[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 24, 32},
                          ns_quick[] = {4, 7, 8}, ks_full[] = {416, 1056, 2048, 2816, 4096}, ks_quick[] = {2048};
    const uint32_t *ns = quick ? ns_quick : ns_full, *ks = quick ? ks_quick : ks_full;
    int nn = quick ? 3 : 19, nk = quick ? 1 : 5;
    uint32_t keys[64];
    for (int s = 0; s < nS; s++)
        for (int i = 0; i < nn; i++)
            for (int j = 0; j < nk; j++) {
                for (uint32_t k = 0; k < ns[i]; k++)
                    keys[k] = ks[j];
                bcase c;
                build(&c, &S[s], ns[i], keys);
                double f, w, b;
                measure(&c, &f, &w, &b);
                printf("grid setting=%s layers=%u scatter=%d items=%u keys=%u splits=%u ctas=%u flushed_us=%.3f "
                       "warm_us=%.3f stream_us=%.3f\n", S[s].name, S[s].layers, S[s].scatter, ns[i], ks[j],
                       c.b.n_splits[0], c.b.n_splits[0] * c.b.n_tiles[0] * H, f, w, b);
                fflush(stdout);
            }
}

static void unequal(const setting *s)
{
    static const uint32_t ns[] = {4, 6, 7, 8, 12};
    uint32_t keys[16];
    for (int i = 0; i < 5; i++) {
        double mean = 0;
        uint32_t mx = 0;
        for (uint32_t k = 0; k < ns[i]; k++) {
            keys[k] = k % 2 ? 3072 : 2048;
            mean += keys[k] / (double)ns[i];
            mx = keys[k] > mx ? keys[k] : mx;
        }
        bcase c;
        build(&c, s, ns[i], keys);
        double f, w, b;
        measure(&c, &f, &w, &b);
        printf("unequal setting=%s items=%u keys_mean=%.1f keys_max=%u flushed_us=%.3f warm_us=%.3f stream_us=%.3f\n",
               s->name, ns[i], mean, mx, f, w, b);
        fflush(stdout);
    }
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Per-call attention times over ~0.2 s of Reuse-like steps (attention + an FFN-size GEMM of 256 rows),
 * after 2 s idle (kind=idle) or right after ~0.6 s of 8192-row GEMMs (kind=burst). */
static void transient(const setting *s)
{
    uint32_t keys[8];
    for (int k = 0; k < 8; k++)
        keys[k] = 2816;
    bcase c;
    build(&c, s, 8, keys);
    const uint32_t M = 8192, Kd = 4096, N = 12288, steps = 1000;
    dkv_bf16 *x = dev_alloc((size_t)M * Kd * 2), *w = dev_alloc((size_t)N * Kd * 2), *y = dev_alloc((size_t)M * N * 2);
    OK(dkv_cuda_fill_random(x, (size_t)M * Kd, 3, 1, 0, st, &err));
    OK(dkv_cuda_fill_random(w, (size_t)N * Kd, 4, 0.02f, 0, st, &err));
    cudaEvent_t *ev = malloc(sizeof *ev * (2 * steps + 1));
    for (uint32_t i = 0; i < 2 * steps + 1; i++)
        CK(cudaEventCreate(&ev[i]));
    for (int kind = 0; kind < 2; kind++) {
        CK(cudaStreamSynchronize(st));
        struct timespec idle = {2, 0};
        nanosleep(&idle, NULL);
        if (kind == 1) {   /* ~0.6 s of large GEMMs */
            double a = now();
            int g = 0;
            while (now() - a < 0.6) {
                OK(dkv_cuda_gemm(ctx, y, x, w, NULL, M, Kd, N, 0, &err));
                if (++g % 8 == 0)
                    CK(cudaStreamSynchronize(st));
            }
        }
        CK(cudaEventRecord(ev[2 * steps], st));
        for (uint32_t i = 0; i < steps; i++) {
            CK(cudaEventRecord(ev[2 * i], st));
            call(&c);
            CK(cudaEventRecord(ev[2 * i + 1], st));
            OK(dkv_cuda_gemm(ctx, y, x, w, NULL, 256, Kd, N, 0, &err));
            if (i % 16 == 15)
                CK(cudaStreamSynchronize(st));
        }
        CK(cudaStreamSynchronize(st));
        for (uint32_t i = 0; i < steps; i++) {
            float ms, at;
            CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
            CK(cudaEventElapsedTime(&at, ev[2 * steps], ev[2 * i]));
            printf("transient kind=%s call=%u t_ms=%.3f attn_us=%.3f\n", kind ? "burst" : "idle", i, at, 1e3 * ms);
        }
        fflush(stdout);
    }
    for (uint32_t i = 0; i < 2 * steps + 1; i++)
        cudaEventDestroy(ev[i]);
    free(ev);
    cudaFree(x), cudaFree(w), cudaFree(y);
}

int main(int argc, char **argv)
{
    bool quick = gpu_args_flag(argc, argv, "bench_attn_batch", "--quick", "fewer repetitions");
    skip_without_gpu();
    if (quick)
        R = 7;
    OK(dkv_cuda_ctx_new(0, &ctx, &err));
    st = dkv_cuda_ctx_stream(ctx);
    size_t fr, total;
    CK(cudaMemGetInfo(&fr, &total));
    /* the engine's setting: up to 32 items x 4,096 keys x 512 KiB per token (32 layers) = 64 GiB */
    pool_bytes = (size_t)66 << 30;
    if (pool_bytes > fr - ((size_t)12 << 30))
        pool_bytes = (fr - ((size_t)12 << 30)) & ~(((size_t)1 << 30) - 1);
    printf("device: %.1f GiB free; pool %.1f GiB\n", fr / 1073741824.0, pool_bytes / 1073741824.0);
    pool_mem = dev_alloc(pool_bytes);
    flush_mem = dev_alloc(FLUSH_BYTES + 256);
    aux = dev_alloc((size_t)64 << 20);
    qbuf = dev_alloc((size_t)32 * 64 * 3 * H * D * 2);
    obuf = dev_alloc((size_t)32 * 64 * H * D * 2);
    OK(dkv_cuda_fill_random((dkv_bf16 *)pool_mem, pool_bytes / 2, 11, 0.5f, 0, st, &err));
    OK(dkv_cuda_fill_random((dkv_bf16 *)flush_mem, FLUSH_BYTES / 2, 17, 0.5f, 0, st, &err));
    OK(dkv_cuda_fill_random(qbuf, (size_t)32 * 64 * 3 * H * D, 13, 1, 0, st, &err));
    CK(cudaStreamSynchronize(st));
    const setting S[4] = {{"profile", 4, (size_t)6 << 30, true},
                          {"engine", 32, pool_bytes, false},
                          {"layers32_scatter", 32, pool_bytes, true},
                          {"layers4_contig", 4, (size_t)6 << 30, false}};
    double a = now();
    grid(S, quick ? 2 : 4, quick);
    unequal(&S[1]);
    transient(&S[1]);
    printf("done in %.1f s\n", now() - a);
    cudaFree(pool_mem), cudaFree(flush_mem), cudaFree(aux), cudaFree(qbuf), cudaFree(obuf);
    dkv_cuda_ctx_free(ctx);
    return 0;
}
