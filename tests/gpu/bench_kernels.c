/* bench_kernels.c - the new kernels alone at LLaDA-8B shapes, for timing and for Nsight Compute:
 * the skinny GEMM (T = 32) on the four layer shapes and the LM head, the flash attention in its
 * dual Reuse (32 queries, 768 paged keys, both layouts) and Refresh (768 x 768) forms.  Each
 * weight is one layer's (it stays partly in the 60 MiB L2 between repetitions, so the per-layer
 * numbers of bench_reuse, over 32 layers' weights, are the ones to quote).
 *
 *   bench_kernels          medians of 15 after 3 warm-ups (CUDA events)
 *   bench_kernels --ncu    each kernel twice, no timing (run under ncu -k regex:"skinny|flash")
 * The skinny GEMM is the explicit DKV_GEMM_SKINNY path (dkv_cuda_gemm itself runs cuBLASLt).
 * Prints "SKIP: ..." and exits 77 without a GPU. */
#include "gpu_args.h"
#include "gpu_check.h"

static dkv_cuda_ctx *ctx;
static cudaStream_t st;
static int reps = 15, warm = 3;

#include "bench_time.h"

int main(int argc, char **argv)
{
    int ncu = gpu_args_flag(argc, argv, "bench_kernels", "--ncu", "for Nsight Compute: warm-up launches only, no timed repetitions");
    skip_without_gpu();
    if (ncu)
        reps = 0, warm = 2;
    OK(dkv_cuda_ctx_new(0, &ctx, &err));
    st = dkv_cuda_ctx_stream(ctx);
    enum { C = 4096, F = 12288, QKV = 12288, V = 126464, H = 32, D = 128, L = 768, BT = 256, NL = 32 };
    dkv_bf16 *w = dev_alloc((size_t)V * C * 2), *x = dev_alloc((size_t)L * 2 * F * 2), *y = dev_alloc((size_t)L * 2 * F * 2);
    float *logits = dev_alloc((size_t)32 * V * 4);
    OK(dkv_cuda_fill_random(w, (size_t)V * C, 1, 0.02f, 0, st, &err));
    OK(dkv_cuda_fill_random(x, (size_t)L * 2 * F, 2, 1, 0, st, &err));
    struct { const char *name; uint32_t K, N; } g[5] = {
        {"QKV", C, QKV}, {"O", C, C}, {"gate+up", C, 2 * F}, {"down", F, C}, {"LM head (fp32)", C, V}};
    for (int i = 0; i < 5; i++) {
        float us_s = 0, us_lt = 0;
        if (i < 4) {
            TIME_US(us_s, OK(dkv_cuda_gemm_ex(ctx, y, x, w, NULL, 32, g[i].K, g[i].N, 0, DKV_GEMM_SKINNY, 0, &err)));
            if (!ncu)
                TIME_US(us_lt, OK(dkv_cuda_gemm_ex(ctx, y, x, w, NULL, 32, g[i].K, g[i].N, 0, DKV_GEMM_CUBLASLT, 0, &err)));
        } else {   /* dkv_cuda_gemm_f32: cuBLASLt */
            TIME_US(us_lt, OK(dkv_cuda_gemm_f32(ctx, logits, x, w, 32, g[i].K, g[i].N, &err)));
        }
        double mb = 2.0 * g[i].K * g[i].N / 1e6;
        printf("gemm %-15s T=32 K=%-5u N=%-6u skinny %7.1f us (%5.0f GB/s)  cuBLASLt %7.1f us\n", g[i].name, g[i].K,
               g[i].N, us_s, us_s > 0 ? mb / us_s * 1e3 : 0.0, us_lt);
    }
    {
        float us;
        TIME_US(us, OK(dkv_cuda_gemm_swiglu(ctx, y, x, w, 32, F, C, 1.0f, NULL, &err)));
        printf("gemm_swiglu down T=32 K=%u N=%u: %.1f us\n", F, C, us);
    }
    /* attention: a pool of 3 blocks of 256 tokens, all 32 layers */
    for (int layout = 0; layout < 2; layout++) {
        dkv_cuda_kv_pool pool = {NULL, BT, NL, H, D, (dkv_kv_layout)layout, DKV_KV_ELEM_BF16, NULL};
        size_t pb = dkv_cuda_kv_block_bytes(&pool) * 3;
        pool.base = dev_alloc(pb);
        OK(dkv_cuda_fill_random(pool.base, pb / 2, 5, 1, 0, st, &err));
        uint32_t table[3] = {2, 0, 1}, *dt = upload(table, sizeof table);
        dkv_cuda_attn_args a = {.out = y, .q = x, .ldq = 3 * H * D, .ldo = H * D, .Tq = 32, .n_heads = H,
                                .n_kv_heads = H, .head_dim = D};
        a.cache.kind = DKV_KV_SRC_PAGED, a.cache.n_tokens = L, a.cache.pool = &pool, a.cache.block_table = dt;
        a.cache.layer = 7;
        float us;
        TIME_US(us, OK(dkv_cuda_attention(&a, st, &err)));
        printf("attention Reuse 32 q x 768 paged (%s): %.1f us (%.0f GB/s of KV)\n", layout ? "t-major" : "layer-major",
               us, 2.0 * 2 * H * D * L / us / 1e3);
        cudaFree(pool.base), cudaFree(dt);
    }
    {
        float us;
        TIME_US(us, OK(dkv_cuda_attention_dense(ctx, y, H * D, x, 3 * H * D, x + H * D, x + 2 * H * D, 3 * H * D, L, L,
                                                H, H, D, NULL, 0, &err)));
        printf("attention Refresh 768 x 768, 32 heads: %.1f us (%.0f TFLOP/s)\n", us, 4.0 * L * L * H * D / us / 1e6);
    }
    CK(cudaStreamSynchronize(st));
    cudaFree(w), cudaFree(x), cudaFree(y), cudaFree(logits);
    dkv_cuda_ctx_free(ctx);
    return 0;
}
