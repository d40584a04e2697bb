/* gemm.cu - bf16 GEMMs y = x w^T (+ bias) (+ y), fp32 accumulation, two paths:
 *
 * - skinny (T <= 32 rows; only when asked for: DKV_GEMM_SKINNY, or dkv_cuda_gemm_swiglu without
 *   ff): a weight-streaming tensor-core kernel.  On the H200 (2026-11-29) it reaches 1.0-2.0
 *   TB/s against cuBLASLt's 2.4-3.8 TB/s at LLaDA-8B's T = 32 shapes (too few bytes in flight:
 *   warps stall on their weight loads; see docs/perf_notes.md), so AUTO does not take it.  A CTA owns 128 output features (8 warps x 16) and a range of K; each warp reads its
 *   16 weight rows straight from global memory into registers (16-byte loads, 8 in flight per
 *   row pair), the T x 256 slice of x comes through shared memory by cp.async (two stages), and
 *   mma.sync m16n8k16 multiplies with the weights as the A operand (16 features x 16 k) and x as
 *   B (16 k x 8 tokens).  Each thread's 16-byte weight load holds 8 consecutive k, which the
 *   fragment layout wants spread over two mmas: the same permutation of k is applied to x (each
 *   thread reads its 8 consecutive k of x too), and a dot product does not care about the order.
 *   K is split over up to 8 CTAs that form a thread-block cluster; they add their partial sums
 *   through distributed shared memory and apply the epilogue (bias, += y, bf16 or fp32 out).
 *   Optionally x is SiLU(gate) * up of a fused [gate | up] row, computed while staging (the
 *   SwiGLU of the FFN fused into the down projection).
 * - cuBLASLt (AUTO, dkv_cuda_gemm, dkv_cuda_gemm_f32): row-major y (T, N) is column-major y^T (N, T); w (N, K) row-major
 *   is column-major (K, N), so y^T = op_T(w_cm) * x_cm with m = N, n = T, k = K.  Plans
 *   (descriptors and an algorithm) are cached per shape in the context.  The algorithm is the
 *   heuristic's first: timing its 8 candidates per shape (tried on the H200, 2026-11-29) gained
 *   nothing measurable at T = 32, and two nvjet kernels it picked were flagged by compute-sanitizer
 *   racecheck (inside cuBLASLt).  After the warm-up (dkv_cuda_gemm_warm) a shape of T rows takes
 *   the algorithm the heuristic chose at its bucket, the least warm-up row count >= T
 *   (core/model/gemm_warm.h), when cublasLtMatmulAlgoCheck accepts it for T: no heuristic query and
 *   no kernel that the warm-up did not load (docs/COST_MODEL.md "Cold shapes"). */
#include <cooperative_groups.h>

#include "cuda/common.cuh"
#include "cuda/ctx_internal.h"
#include "cuda/fused_mma.cuh"
#include "model/gemm_warm.h"

namespace cg = cooperative_groups;

#define LT(call)                                                                                   \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                           \
            return dkv_err_set(err, DKV_EIO, "%s:%d: %s: cuBLAS status %d", __FILE__, __LINE__,    \
                               #call, (int)s_);                                                    \
    } while (0)

/* Destroys the descriptors a plan holds (any of them may be unset) and empties its slot. */
static void plan_destroy(dkv_gemm_plan *p)
{
    if (p->a) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b) cublasLtMatrixLayoutDestroy(p->b);
    if (p->c) cublasLtMatrixLayoutDestroy(p->c);
    if (p->op) cublasLtMatmulDescDestroy(p->op);
    memset(p, 0, sizeof *p);
}

void dkv_gemm_plans_free(dkv_cuda_ctx *ctx)
{
    for (uint32_t i = 0; i < DKV_GEMM_PLANS && ctx->n_plans > 0; i++)
        if (ctx->plans[i].used)
            plan_destroy(&ctx->plans[i]), ctx->n_plans--;
}

extern "C" uint32_t dkv_cuda_gemm_plans(const dkv_cuda_ctx *ctx) { return ctx ? ctx->n_plans : 0; }

static int plan_flags(const dkv_gemm_plan *p) { return p->f32_out | p->has_bias << 1 | p->accumulate << 2; }

static const dkv_gemm_warm_algo *find_warm(const dkv_cuda_ctx *ctx, uint32_t T, uint32_t K, uint32_t N, int flags);

/* The warm-up's algorithm of p's bucket (core/model/gemm_warm.h) into p->algo, when the warm-up ran
 * the bucket and cuBLASLt accepts the algorithm for p's own row count within the workspace. */
static bool bucket_algo(const dkv_cuda_ctx *ctx, dkv_gemm_plan *p)
{
    uint32_t Tb = dkv_gemm_warm_bucket(p->T);
    const dkv_gemm_warm_algo *w = Tb ? find_warm(ctx, Tb, p->K, p->N, plan_flags(p)) : NULL;
    if (!w)
        return false;
    cublasLtMatmulHeuristicResult_t chk;
    memset(&chk, 0, sizeof chk);
    if (cublasLtMatmulAlgoCheck(ctx->lt, p->op, p->a, p->b, p->c, p->c, &w->algo, &chk) != CUBLAS_STATUS_SUCCESS ||
        chk.workspaceSize > ctx->lt_ws_bytes)
        return false;
    p->algo = w->algo;
    return true;
}

static dkv_status make_plan(dkv_cuda_ctx *ctx, dkv_gemm_plan *p, dkv_err *err)
{
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (p->has_bias) {
        cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bt = CUDA_R_16BF;
        LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
        LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    }
    LT(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, p->K, p->N, p->K));
    LT(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, p->K, p->T, p->K));
    LT(cublasLtMatrixLayoutCreate(&p->c, p->f32_out ? CUDA_R_32F : CUDA_R_16BF, p->N, p->T, p->N));
    if (bucket_algo(ctx, p)) {
        ctx->n_bucket_plans++;
        return DKV_OK;
    }
    cublasLtMatmulPreference_t pref;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ctx->lt_ws_bytes,
                                         sizeof ctx->lt_ws_bytes);
    cublasLtMatmulHeuristicResult_t res[1];
    int n = 0;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(ctx->lt, p->op, p->a, p->b, p->c, p->c, pref, 1, res, &n);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS || n == 0)
        return dkv_err_set(err, DKV_EUNSUPPORTED, "dkv_cuda_gemm: cuBLASLt has no algorithm for T=%u K=%u N=%u "
                           "(status %d)", p->T, p->K, p->N, (int)s);
    p->algo = res[0].algo;
    return DKV_OK;
}

static uint32_t plan_slot(uint32_t T, uint32_t K, uint32_t N, int f32_out, int has_bias, int accumulate)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a over the key */
    uint32_t key[4] = {T, K, N, (uint32_t)(f32_out | has_bias << 1 | accumulate << 2)};
    for (int i = 0; i < 4; i++)
        h = (h ^ key[i]) * 1099511628211ull;
    return (uint32_t)(h ^ h >> 29) & (DKV_GEMM_PLANS - 1);
}

static dkv_status get_plan(dkv_cuda_ctx *ctx, uint32_t T, uint32_t K, uint32_t N, int f32_out, int has_bias,
                           int accumulate, dkv_gemm_plan **out, dkv_err *err)
{
    uint32_t i = plan_slot(T, K, N, f32_out, has_bias, accumulate);
    for (;; i = (i + 1) & (DKV_GEMM_PLANS - 1)) {   /* linear probing; the table is never full */
        dkv_gemm_plan *p = &ctx->plans[i];
        if (!p->used)
            break;
        if (p->T == T && p->K == K && p->N == N && p->f32_out == f32_out && p->has_bias == has_bias &&
            p->accumulate == accumulate) {
            *out = p;
            return DKV_OK;
        }
    }
    if (ctx->n_plans >= DKV_GEMM_PLANS_MAX) {   /* full: start over */
        dkv_gemm_plans_free(ctx);
        i = plan_slot(T, K, N, f32_out, has_bias, accumulate);
    }
    dkv_gemm_plan *p = &ctx->plans[i];
    memset(p, 0, sizeof *p);
    p->T = T, p->K = K, p->N = N, p->f32_out = f32_out, p->has_bias = has_bias, p->accumulate = accumulate;
    dkv_status st = make_plan(ctx, p, err);
    if (st != DKV_OK) {
        plan_destroy(p);
        return st;
    }
    p->used = 1;
    ctx->n_plans++;
    *out = p;
    return DKV_OK;
}

/* The launcher: one cublasLtMatmul on the context's stream, then the launch check. */
static dkv_status launch_gemm(dkv_cuda_ctx *ctx, void *y, int f32_out, const dkv_bf16 *x, const dkv_bf16 *w,
                              const dkv_bf16 *bias, uint32_t T, uint32_t K, uint32_t N, float beta, dkv_err *err)
{
    dkv_gemm_plan *p;
    dkv_status st = get_plan(ctx, T, K, N, f32_out, bias != NULL, beta != 0.0f, &p, err);
    if (st != DKV_OK)
        return st;
    if (bias)
        LT(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    float alpha = 1.0f;
    LT(cublasLtMatmul(ctx->lt, p->op, &alpha, w, p->a, x, p->b, &beta, y, p->c, y, p->c, &p->algo, ctx->lt_ws,
                      ctx->lt_ws_bytes, ctx->stream));
    return dkv_launch_check("cublasLtMatmul", err);
}

/* ------------------------------------------------------------------ skinny path (T <= 32) */

#define SG_WARPS 8
#define SG_THREADS (32 * SG_WARPS)
#define SG_FEAT (16 * SG_WARPS)   /* output features per CTA */
#define SG_SUB 128                /* k per weight sub-chunk: 4 loads of 16 bytes per row and thread */
#define SG_KC_MAX 1536            /* k of x staged per CTA (its whole K range) */
#define SG_PP 33                  /* fp32 partial row pitch */
#define SG_MAX_T 32
#define SG_MAX_SPLITS 8

struct sg_params {
    void *y;
    const dkv_bf16 *x, *w, *bias;
    uint32_t T, K, N, ldx, ldy;
    uint32_t n_split, kc;   /* K splits (the cluster), k per split (a multiple of SG_SUB) */
    uint32_t up_off;        /* SwiGLU: offset of up in a fused [gate | up] row; 0: plain x */
    int accumulate;
};

/* Shared memory of a CTA: x (32 rows of kc + 32 bf16: rows 2r and 2r + 1 land 64 bytes apart in
 * the banks), later the fp32 partials (128 x 33). */
static size_t sg_smem(uint32_t kc)
{
    size_t x = (size_t)SG_MAX_T * (kc + 32) * 2, part = (size_t)SG_FEAT * SG_PP * 4;
    return x > part ? x : part;
}

/* SiLU(gate) * up of 8 values, rounded to bf16 (as dkv_cuda_swiglu writes them). */
static __device__ __forceinline__ uint4 swiglu8(uint4 g, uint4 u)
{
    const dkv_bf16 *gv = reinterpret_cast<const dkv_bf16 *>(&g), *uv = reinterpret_cast<const dkv_bf16 *>(&u);
    uint4 r;
    dkv_bf16 *rv = reinterpret_cast<dkv_bf16 *>(&r);
#pragma unroll
    for (int e = 0; e < 8; e++) {
        float a = bf2f(gv[e]);
        rv[e] = f2bf(a / (1.0f + __expf(-a)) * bf2f(uv[e]));
    }
    return r;
}

/* grid (n_split, ceil(N / 128)), cluster (n_split, 1, 1), 256 threads.  CTA `rank` takes k in
 * [rank kc, (rank + 1) kc): it stages that slice of x once, then each warp streams its 16 weight
 * rows through registers, two sub-chunks of 128 k in flight, with no further barrier. */
template <bool F32OUT, bool SWIGLU>
static __global__ void __launch_bounds__(SG_THREADS, 2) skinny_gemm_kernel(sg_params p)
{
    extern __shared__ __align__(128) unsigned char smem[];
    dkv_bf16 *xs = (dkv_bf16 *)smem;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, c = lane & 3;
    cg::cluster_group cl = cg::this_cluster();
    const uint32_t rank = blockIdx.x, S = p.n_split, n0 = blockIdx.y * SG_FEAT, XP = p.kc + 32;
    const uint32_t k_lo = rank * p.kc, k_end = min(p.K, k_lo + p.kc);
    const uint32_t nsub = k_end > k_lo ? (k_end - k_lo + SG_SUB - 1) / SG_SUB : 0;
    const uint32_t rowA = n0 + warp * 16 + g, rowB = rowA + 8;
    const int ntok = (int)((p.T + 7) / 8);
    const dkv_bf16 *wA = p.w + (size_t)rowA * p.K, *wB = p.w + (size_t)rowB * p.K;
    const bool okA = rowA < p.N, okB = rowB < p.N;

    auto ldw = [&](uint4 (&wa)[4], uint4 (&wb)[4], uint32_t kb) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            uint32_t k = kb + 32 * j + 8 * c;
            wa[j] = okA && k < p.K ? ld_stream16(wA + k) : make_uint4(0, 0, 0, 0);
            wb[j] = okB && k < p.K ? ld_stream16(wB + k) : make_uint4(0, 0, 0, 0);
        }
    };
    float acc[4][4];
#pragma unroll
    for (int t = 0; t < 4; t++)
        acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
    auto mm = [&](const uint4 (&wa)[4], const uint4 (&wb)[4], uint32_t koff) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
#pragma unroll
            for (int t = 0; t < 4; t++) {
                if (t < ntok) {
                    uint4 xv = lds16(xs + (t * 8 + g) * XP + koff + 32 * j + 8 * c);
                    mma_bf16(acc[t], wa[j].x, wb[j].x, wa[j].y, wb[j].y, xv.x, xv.y);
                    mma_bf16(acc[t], wa[j].z, wb[j].z, wa[j].w, wb[j].w, xv.z, xv.w);
                }
            }
        }
    };

    uint4 a0[4], b0[4], a1[4], b1[4];
    if (nsub > 0)
        ldw(a0, b0, k_lo);
    if (nsub > 1)
        ldw(a1, b1, k_lo + SG_SUB);
    /* x slice: 32 rows x nsub * 128 k, zero past T and K */
    const uint32_t per_row = nsub * (SG_SUB / 8), pieces = SG_MAX_T * per_row;
    if (SWIGLU) {
#pragma unroll 4
        for (uint32_t i = tid; i < pieces; i += SG_THREADS) {
            uint32_t r = i / per_row, pc = i % per_row, k = k_lo + pc * 8;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (r < p.T && k < p.K) {
                const dkv_bf16 *src = p.x + (size_t)r * p.ldx + k;
                v = swiglu8(*reinterpret_cast<const uint4 *>(src), *reinterpret_cast<const uint4 *>(src + p.up_off));
            }
            *reinterpret_cast<uint4 *>(xs + r * XP + pc * 8) = v;
        }
    } else {
        for (uint32_t i = tid; i < pieces; i += SG_THREADS) {
            uint32_t r = i / per_row, pc = i % per_row, k = k_lo + pc * 8;
            bool ok = r < p.T && k < p.K;
            cp_async16(xs + r * XP + pc * 8, ok ? p.x + (size_t)r * p.ldx + k : p.x, ok ? 16 : 0);
        }
        cp_async_commit();
        cp_async_wait<0>();
    }
    __syncthreads();

    for (uint32_t i = 0; i < nsub; i += 2) {   /* sub-chunk i + 2 loads while i + 1 computes */
        mm(a0, b0, i * SG_SUB);
        if (i + 2 < nsub)
            ldw(a0, b0, k_lo + (i + 2) * SG_SUB);
        if (i + 1 < nsub) {
            mm(a1, b1, (i + 1) * SG_SUB);
            if (i + 3 < nsub)
                ldw(a1, b1, k_lo + (i + 3) * SG_SUB);
        }
    }
    __syncthreads();   /* x is no longer read: its space takes the partials */

    float *ps = (float *)smem;
    const int f0 = warp * 16 + g;
#pragma unroll
    for (int t = 0; t < 4; t++) {
        ps[f0 * SG_PP + t * 8 + 2 * c] = acc[t][0];
        ps[f0 * SG_PP + t * 8 + 2 * c + 1] = acc[t][1];
        ps[(f0 + 8) * SG_PP + t * 8 + 2 * c] = acc[t][2];
        ps[(f0 + 8) * SG_PP + t * 8 + 2 * c + 1] = acc[t][3];
    }
    cl.sync();
    /* CTA `rank` of the cluster finishes features [f_lo, f_hi) of the 128: sum over the splits in
     * rank order (deterministic), bias, += y, one rounding */
    const uint32_t f_lo = rank * SG_FEAT / S, f_hi = (rank + 1) * SG_FEAT / S, nf = f_hi - f_lo;
    for (uint32_t i = tid; i < nf * p.T; i += SG_THREADS) {
        uint32_t t = i / nf, f = f_lo + i % nf, n = n0 + f;
        if (n >= p.N)
            continue;
        float v = 0.0f;
        for (uint32_t sp = 0; sp < S; sp++)
            v += cl.map_shared_rank(ps, sp)[f * SG_PP + t];
        if (p.bias)
            v += bf2f(p.bias[n]);
        if (F32OUT) {
            ((float *)p.y)[(size_t)t * p.ldy + n] = v;
        } else {
            dkv_bf16 *y = (dkv_bf16 *)p.y + (size_t)t * p.ldy + n;
            if (p.accumulate)
                v += bf2f(*y);
            *y = f2bf(v);
        }
    }
    cl.sync();   /* keep this CTA's partials alive until the cluster has read them */
}

static int sm_count(void)
{
    static int n = 0;
    if (!n) {
        int dev = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0)
            n = 132;
    }
    return n;
}

/* K splits: at least enough that a CTA's slice of x fits (kc <= 1536), then the fewest waves
 * per unit of work with a small cost per CTA; at most 8 (a portable cluster). */
static uint32_t sg_pick_splits(uint32_t NB, uint32_t nsub, uint32_t s_min)
{
    uint32_t best = s_min;
    double best_cost = 1e30;
    for (uint32_t s = s_min; s <= SG_MAX_SPLITS && s <= nsub; s++) {
        uint32_t kc = (nsub + s - 1) / s * SG_SUB, per_sm = (uint32_t)((227u << 10) / sg_smem(kc));
        per_sm = per_sm > 2 ? 2 : per_sm < 1 ? 1 : per_sm;
        uint32_t slots = (uint32_t)sm_count() * per_sm;
        double waves = (double)((NB * s + slots - 1) / slots), cost = waves * (1.0 / s + 0.05);
        if (cost < best_cost - 1e-9)
            best_cost = cost, best = s;
    }
    return best;
}

template <bool F32OUT, bool SWIGLU>
static dkv_status launch_skinny(const sg_params &p0, uint32_t splits, cudaStream_t s, dkv_err *err)
{
    void (*kern)(sg_params) = skinny_gemm_kernel<F32OUT, SWIGLU>;
    static bool attr = false;
    if (!attr) {
        DKV_CU(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sg_smem(SG_KC_MAX)));
        attr = true;
    }
    sg_params p = p0;
    uint32_t NB = (p.N + SG_FEAT - 1) / SG_FEAT, nsub = (p.K + SG_SUB - 1) / SG_SUB;
    uint32_t s_min = (nsub * SG_SUB + SG_KC_MAX - 1) / SG_KC_MAX;
    p.n_split = splits ? splits : sg_pick_splits(NB, nsub, s_min);
    p.n_split = p.n_split < s_min ? s_min : p.n_split > nsub ? nsub : p.n_split;
    p.kc = (nsub + p.n_split - 1) / p.n_split * SG_SUB;
    p.n_split = (nsub * SG_SUB + p.kc - 1) / p.kc;   /* no empty trailing split */
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(p.n_split, NB, 1);
    cfg.blockDim = dim3(SG_THREADS);
    cfg.dynamicSmemBytes = sg_smem(p.kc);
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = p.n_split;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    DKV_CU(cudaLaunchKernelEx(&cfg, kern, p));
    return dkv_launch_check("skinny_gemm_kernel", err);
}

/* Whether the skinny kernel can take this call: few rows, K within 8 slices of x, 16-byte
 * aligned rows and pointers. */
static bool skinny_ok(uint32_t T, uint32_t K, const void *x, const void *w, const void *y)
{
    return T <= SG_MAX_T && K % 8 == 0 && K <= SG_MAX_SPLITS * SG_KC_MAX && (uintptr_t)x % 16 == 0 &&
           (uintptr_t)w % 16 == 0 && (uintptr_t)y % 4 == 0;
}

extern "C" dkv_status dkv_cuda_gemm_ex(dkv_cuda_ctx *ctx, dkv_bf16 *y, const dkv_bf16 *x, const dkv_bf16 *w,
                                       const dkv_bf16 *bias, uint32_t T, uint32_t K, uint32_t N, float beta,
                                       dkv_gemm_path path, uint32_t splits, dkv_err *err)
{
    const char *fn = "dkv_cuda_gemm";
    DKV_ARG(ctx && y && x && w, fn);
    DKV_ARG(K > 0 && N > 0 && K % 8 == 0 && N % 8 == 0, fn);
    DKV_ARG(beta == 0.0f || beta == 1.0f, fn);
    DKV_ARG(path == DKV_GEMM_AUTO || path == DKV_GEMM_CUBLASLT || path == DKV_GEMM_SKINNY, fn);
    DKV_ARG(splits <= SG_MAX_SPLITS, fn);
    if (T == 0)
        return DKV_OK;
    bool ok = skinny_ok(T, K, x, w, y) && (!bias || (uintptr_t)bias % 2 == 0);
    if (path == DKV_GEMM_SKINNY && !ok)
        return dkv_err_set(err, DKV_EINVAL, "%s: the skinny path needs T <= %d and 16-byte aligned rows (T=%u K=%u)",
                           fn, SG_MAX_T, T, K);
    if (path != DKV_GEMM_SKINNY)   /* AUTO: cuBLASLt (faster on the H200 at every LLaDA shape) */
        return launch_gemm(ctx, y, 0, x, w, bias, T, K, N, beta, err);
    sg_params p = {};
    p.y = y, p.x = x, p.w = w, p.bias = bias, p.T = T, p.K = K, p.N = N, p.ldx = K, p.ldy = N;
    p.accumulate = beta != 0.0f;
    return launch_skinny<false, false>(p, splits, ctx->stream, err);
}

extern "C" dkv_status dkv_cuda_gemm(dkv_cuda_ctx *ctx, dkv_bf16 *y, const dkv_bf16 *x, const dkv_bf16 *w,
                                    const dkv_bf16 *bias, uint32_t T, uint32_t K, uint32_t N, float beta, dkv_err *err)
{
    return dkv_cuda_gemm_ex(ctx, y, x, w, bias, T, K, N, beta, DKV_GEMM_AUTO, 0, err);
}

extern "C" dkv_status dkv_cuda_gemm_f32(dkv_cuda_ctx *ctx, float *y, const dkv_bf16 *x, const dkv_bf16 *w, uint32_t T,
                                        uint32_t K, uint32_t N, dkv_err *err)
{
    DKV_ARG(ctx && y && x && w, "dkv_cuda_gemm_f32");
    DKV_ARG(K > 0 && N > 0 && K % 8 == 0, "dkv_cuda_gemm_f32");
    if (T == 0)
        return DKV_OK;
    return launch_gemm(ctx, y, 1, x, w, NULL, T, K, N, 0.0f, err);
}

extern "C" dkv_status dkv_cuda_gemm_swiglu(dkv_cuda_ctx *ctx, dkv_bf16 *y, const dkv_bf16 *gu, const dkv_bf16 *w,
                                           uint32_t T, uint32_t F, uint32_t N, float beta, dkv_bf16 *ff,
                                           dkv_err *err)
{
    const char *fn = "dkv_cuda_gemm_swiglu";
    DKV_ARG(ctx && y && gu && w, fn);
    DKV_ARG(F > 0 && N > 0 && F % 8 == 0 && N % 8 == 0, fn);
    DKV_ARG(beta == 0.0f || beta == 1.0f, fn);
    if (T == 0)
        return DKV_OK;
    if (ff || !skinny_ok(T, F, gu, w, y)) {   /* SwiGLU into ff, then a cuBLASLt GEMM */
        DKV_ARG(ff, fn);
        dkv_status st = dkv_cuda_swiglu(ff, gu, gu + F, 2 * F, T, F, ctx->stream, err);
        return st != DKV_OK ? st : launch_gemm(ctx, y, 0, ff, w, NULL, T, F, N, beta, err);
    }
    sg_params p = {};
    p.y = y, p.x = gu, p.w = w, p.T = T, p.K = F, p.N = N, p.ldx = 2 * F, p.ldy = N, p.up_off = F;
    p.accumulate = beta != 0.0f;
    return launch_skinny<false, true>(p, 0, ctx->stream, err);
}

/* ------------------------------------------------------------------ warm-up (dkv_cuda_gemm_warm) */

extern "C" uint32_t dkv_cuda_gemm_bucket_plans(const dkv_cuda_ctx *ctx) { return ctx ? ctx->n_bucket_plans : 0; }

extern "C" uint32_t dkv_cuda_gemm_warm_algos(const dkv_cuda_ctx *ctx) { return ctx ? ctx->n_warm : 0; }

/* The algorithm the warm-up kept for (T, K, N, flags), or NULL. */
static const dkv_gemm_warm_algo *find_warm(const dkv_cuda_ctx *ctx, uint32_t T, uint32_t K, uint32_t N, int flags)
{
    for (uint32_t i = 0; i < ctx->n_warm; i++)
        if (ctx->warm[i].T == T && ctx->warm[i].K == K && ctx->warm[i].N == N && ctx->warm[i].flags == flags)
            return &ctx->warm[i];
    return NULL;
}

/* Keeps the algorithm of a plan the warm-up made at a warm-up row count (its heuristic's); false when out
 * of host memory. */
static bool keep_warm_algo(dkv_cuda_ctx *ctx, const dkv_gemm_plan *p)
{
    if (find_warm(ctx, p->T, p->K, p->N, plan_flags(p)))
        return true;
    if (ctx->n_warm == ctx->cap_warm) {
        uint32_t cap = ctx->cap_warm ? 2 * ctx->cap_warm : 1024;
        dkv_gemm_warm_algo *w = (dkv_gemm_warm_algo *)realloc(ctx->warm, cap * sizeof *w);
        if (!w)
            return false;
        ctx->warm = w, ctx->cap_warm = cap;
    }
    ctx->warm[ctx->n_warm++] = (dkv_gemm_warm_algo){p->T, p->K, p->N, plan_flags(p), p->algo};
    return true;
}

/* The warm-up's scratch for one call: x (T x K bf16, 256-aligned so that y starts aligned), then y. */
static size_t warm_x_bytes(const dkv_gemm_warm_shape *s, uint32_t T) { return ((size_t)T * s->K * 2 + 255) / 256 * 256; }

static size_t warm_bytes(const dkv_gemm_warm_shape *s, uint32_t T)
{
    return warm_x_bytes(s, T) + (size_t)T * s->N * (s->f32_out ? 4 : 2);
}

extern "C" dkv_status dkv_cuda_gemm_warm(dkv_cuda_ctx *ctx, const dkv_gemm_warm_shape *s, uint32_t n, size_t max_bytes,
                                         uint32_t *n_run, dkv_err *err)
{
    const char *fn = "dkv_cuda_gemm_warm";
    DKV_ARG(ctx && (s || n == 0) && n_run, fn);
    *n_run = 0;
    uint32_t rows[DKV_GEMM_WARM_N], nr = 0;
    size_t need = 0;
    for (uint32_t i = 0; i < n; i++) {
        DKV_ARG(s[i].w && s[i].K > 0 && s[i].N > 0 && s[i].K % 8 == 0 && (s[i].f32_out || s[i].N % 8 == 0), fn);
        DKV_ARG(s[i].beta == 0.0f || s[i].beta == 1.0f, fn);
        uint32_t m = dkv_gemm_warm_rows(s[i].max_T, rows, DKV_GEMM_WARM_N);
        for (uint32_t j = 0; j < m; j++)   /* the largest buffer a row count within max_bytes needs */
            if (warm_bytes(&s[i], rows[j]) <= max_bytes && warm_bytes(&s[i], rows[j]) > need)
                need = warm_bytes(&s[i], rows[j]);
    }
    if (need == 0)
        return DKV_OK;
    char *buf = NULL;
    DKV_CU(cudaMalloc(&buf, need));
    DKV_CU(cudaMemsetAsync(buf, 0x3c, need, ctx->stream));   /* finite bf16 values (1.2e-2), not zeros */
    dkv_status st = DKV_OK;
    cublasLtMatmulAlgo_t ran[256];   /* the algorithms run for the shape at hand (each once) */
    for (uint32_t i = 0; i < n && st == DKV_OK; i++) {
        uint32_t n_ran = 0;
        nr = dkv_gemm_warm_rows(s[i].max_T, rows, DKV_GEMM_WARM_N);
        for (uint32_t j = 0; j < nr && st == DKV_OK; j++) {
            uint32_t T = rows[j];
            if (warm_bytes(&s[i], T) > need)
                break;
            dkv_gemm_plan *p;   /* the heuristic's algorithm at T (or the one an earlier warm-up kept) */
            st = get_plan(ctx, T, s[i].K, s[i].N, s[i].f32_out, s[i].bias != NULL, s[i].beta != 0.0f, &p, err);
            if (st != DKV_OK)
                break;
            if (!keep_warm_algo(ctx, p)) {
                st = dkv_err_set(err, DKV_ENOMEM, "%s: out of host memory", fn);
                break;
            }
            bool seen = false;
            for (uint32_t k = 0; k < n_ran && !seen; k++)
                seen = memcmp(&ran[k], &p->algo, sizeof p->algo) == 0;
            if (seen)
                continue;
            if (n_ran < sizeof ran / sizeof ran[0])
                ran[n_ran++] = p->algo;
            const dkv_bf16 *x = (const dkv_bf16 *)buf;   /* the first row count of an algorithm runs it */
            void *y = buf + warm_x_bytes(&s[i], T);
            st = launch_gemm(ctx, y, s[i].f32_out, x, s[i].w, s[i].bias, T, s[i].K, s[i].N, s[i].beta, err);
            *n_run += st == DKV_OK;
        }
    }
    cudaError_t e = cudaStreamSynchronize(ctx->stream);
    cudaFree(buf);
    if (st == DKV_OK && e != cudaSuccess)
        st = dkv_err_set(err, DKV_EIO, "%s: %s", fn, cudaGetErrorString(e));
    dkv_gemm_plans_free(ctx);   /* the kernels stay loaded and their algorithms kept (ctx->warm): a run's
                                   first use of a shape plans it again with its bucket's algorithm */
    return st;
}
