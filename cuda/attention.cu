/* attention.cu - bidirectional attention over a cached segment (paged pool or packed per-head
 * rows) followed by dense own keys.  The keys are cut into splits of at most KS (flash-decoding);
 * each CTA computes S = Q K^T and O = P V for 32 queries of one head on tensor cores (bf16 WMMA,
 * fp32 accumulation) with an exact softmax over its split, and a combine pass merges the splits'
 * (max, sum, acc).  Made for Reuse steps (a block of queries against a cached canvas); Refresh
 * steps over long canvases go through dkv_cuda_attention_dense. */
#include <math.h>

#include <mma.h>

#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

#define QT 32      /* queries per CTA: two 16-row WMMA tiles */
#define KS 128     /* at most this many keys per CTA (one split): the softmax is exact per split */
#define NT 256     /* 8 warps */
#define TARGET_CTAS 264

struct attn_params {
    dkv_bf16 *out;
    const dkv_bf16 *q;
    uint32_t ldq, ldo, Tq, H, G;
    uint32_t n_cache, n_keys, split_keys, n_splits;
    int cache_kind;
    dkv_cuda_kv_pool pool;
    const uint32_t *table;
    uint32_t layer;
    const dkv_bf16 *kp, *vp;
    const dkv_bf16 *k_own, *v_own;
    uint32_t ld_own;
    float *ws;
    float qscale;   /* log2(e) / sqrt(D): scores in the exp2 domain */
};

template <int D>
static __device__ __forceinline__ const dkv_bf16 *key_row(const attn_params &p, uint32_t isv, uint32_t g, uint32_t kk)
{
    if (kk < p.n_cache) {
        if (p.cache_kind == DKV_KV_SRC_PAGED)
            return kv_row(p.pool, p.table, p.layer, isv, g, kk);
        return (isv ? p.vp : p.kp) + ((size_t)g * p.n_cache + kk) * D;
    }
    return (isv ? p.v_own : p.k_own) + (size_t)(kk - p.n_cache) * p.ld_own + (size_t)g * D;
}

/* Shared memory of one CTA (bytes), rows padded by 8 bf16 / 4 floats against bank conflicts;
 * every WMMA tile starts 32-byte aligned. */
template <int D>
struct attn_smem {
    static constexpr int LB = D + 8;          /* bf16 row of Q, K, V */
    static constexpr int LP = KS + 8;         /* bf16 row of P */
    static constexpr int LS = KS + 4;         /* fp32 row of S (and of O, D <= KS) */
    static constexpr size_t q = 0, k = q + (size_t)QT * LB * 2, v = k + (size_t)KS * LB * 2,
                            s = v + (size_t)KS * LB * 2, pp = s + (size_t)QT * LS * 4,
                            ml = pp + (size_t)QT * LP * 2, bytes = ml + 2 * QT * 4;
};

/* grid (n_splits, H, ceil(Tq / QT)).  One CTA: QT queries of head h against the <= KS keys of
 * its split.  S = Q K^T and O = P V on tensor cores (bf16 WMMA, fp32 accumulation); the row
 * softmax in fp32 by 8 threads per row.  Writes out (one split) or (acc, m, l) partials. */
template <int D>
static __global__ void __launch_bounds__(NT) attention_kernel(attn_params p)
{
    using namespace nvcuda;
    using SM = attn_smem<D>;
    extern __shared__ __align__(128) unsigned char smem[];
    dkv_bf16 *Qs = (dkv_bf16 *)(smem + SM::q), *Ks = (dkv_bf16 *)(smem + SM::k), *Vs = (dkv_bf16 *)(smem + SM::v);
    float *Ss = (float *)(smem + SM::s), *Ms = (float *)(smem + SM::ml), *Ls = Ms + QT;
    dkv_bf16 *Ps = (dkv_bf16 *)(smem + SM::pp);
    constexpr int CH = D / 8;
    const uint32_t split = blockIdx.x, h = blockIdx.y, q0 = blockIdx.z * QT, g = h / p.G;
    const int tid = threadIdx.x, warp = tid / 32;
    const uint32_t k0 = split * p.split_keys, nk = min(p.split_keys, p.n_keys - k0);

    /* loads: Q rows (zero past Tq), K and V rows (zero past the split) */
    for (int i = tid; i < QT * CH; i += NT) {
        int r = i / CH, c = i % CH;
        bf16x8 v = {};
        if (q0 + r < p.Tq)
            v = *reinterpret_cast<const bf16x8 *>(p.q + (size_t)(q0 + r) * p.ldq + (size_t)h * D + c * 8);
        *reinterpret_cast<bf16x8 *>(Qs + r * SM::LB + c * 8) = v;
    }
    for (int i = tid; i < 2 * KS * CH; i += NT) {
        uint32_t isv = i >= KS * CH;
        int ii = i - isv * KS * CH, r = ii / CH, c = ii % CH;
        bf16x8 v = {};
        if ((uint32_t)r < nk)
            v = *reinterpret_cast<const bf16x8 *>(key_row<D>(p, isv, g, k0 + r) + c * 8);
        *reinterpret_cast<bf16x8 *>((isv ? Vs : Ks) + r * SM::LB + c * 8) = v;
    }
    __syncthreads();

    /* S (QT x KS) = Q K^T: 2 x 8 tiles of 16 x 16, two per warp */
    for (int t = warp; t < (QT / 16) * (KS / 16); t += NT / 32) {
        int mt = t / (KS / 16), nt = t % (KS / 16);
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
#pragma unroll
        for (int kk = 0; kk < D; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
            wmma::load_matrix_sync(a, (const __nv_bfloat16 *)(Qs + mt * 16 * SM::LB + kk), SM::LB);
            wmma::load_matrix_sync(b, (const __nv_bfloat16 *)(Ks + nt * 16 * SM::LB + kk), SM::LB);
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(Ss + mt * 16 * SM::LS + nt * 16, acc, SM::LS, wmma::mem_row_major);
    }
    __syncthreads();

    /* softmax of each row over the split's nk keys: 8 threads per row, 16 keys each */
    {
        int r = tid / 8, l8 = tid % 8;
        float v[KS / 8], mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < KS / 8; j++) {
            int c = l8 + 8 * j;
            v[j] = (uint32_t)c < nk ? Ss[r * SM::LS + c] * p.qscale : -INFINITY;
            mx = fmaxf(mx, v[j]);
        }
        for (int o = 1; o < 8; o <<= 1)
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < KS / 8; j++) {
            float e = exp2f(v[j] - mx);   /* 0 for masked keys */
            sum += e;
            Ps[r * SM::LP + l8 + 8 * j] = f2bf(e);
        }
        for (int o = 1; o < 8; o <<= 1)
            sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (l8 == 0)
            Ms[r] = mx, Ls[r] = sum;
    }
    __syncthreads();

    /* O (QT x D) = P V into Ss (S is no longer needed): 2 x D/16 tiles */
    for (int t = warp; t < (QT / 16) * (D / 16); t += NT / 32) {
        int mt = t / (D / 16), nt = t % (D / 16);
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
#pragma unroll
        for (int kk = 0; kk < KS; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
            wmma::load_matrix_sync(a, (const __nv_bfloat16 *)(Ps + mt * 16 * SM::LP + kk), SM::LP);
            wmma::load_matrix_sync(b, (const __nv_bfloat16 *)(Vs + kk * SM::LB + nt * 16), SM::LB);
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(Ss + mt * 16 * SM::LS + nt * 16, acc, SM::LS, wmma::mem_row_major);
    }
    __syncthreads();

    /* write: 8 threads per row, D/8 values each */
    {
        int r = tid / 8, l8 = tid % 8;
        uint32_t t = q0 + r;
        if (t >= p.Tq)
            return;
        const float *o = Ss + r * SM::LS;
        if (p.n_splits == 1) {
            float inv = 1.0f / Ls[r];
            dkv_bf16 *dst = p.out + (size_t)t * p.ldo + (size_t)h * D;
            for (int c = l8; c < CH; c += 8) {
                bf16x8 y;
#pragma unroll
                for (int e = 0; e < 8; e++)
                    y.v[e] = f2bf(o[c * 8 + e] * inv);
                *reinterpret_cast<bf16x8 *>(dst + c * 8) = y;
            }
            return;
        }
        size_t row = ((size_t)split * p.H + h) * p.Tq + t, rows = (size_t)p.n_splits * p.H * p.Tq;
        if (l8 == 0) {   /* workspace: acc (rows, D) first (16-byte aligned), then m (rows), l (rows) */
            p.ws[rows * D + row] = Ms[r];
            p.ws[rows * D + rows + row] = Ls[r];
        }
        float *a = p.ws + row * D;
        for (int c = l8; c < CH; c += 8) {
            *reinterpret_cast<float4 *>(a + c * 8) = *reinterpret_cast<const float4 *>(o + c * 8);
            *reinterpret_cast<float4 *>(a + c * 8 + 4) = *reinterpret_cast<const float4 *>(o + c * 8 + 4);
        }
    }
}

/* grid (Tq, H), D threads: merges the splits' (m, l, acc). */
template <int D>
static __global__ void attention_combine_kernel(attn_params p)
{
    const uint32_t t = blockIdx.x, h = blockIdx.y, d = threadIdx.x;
    const size_t rows = (size_t)p.n_splits * p.H * p.Tq;
    const float *ms = p.ws + rows * D, *ls = ms + rows;
    float M = -INFINITY;
    for (uint32_t s = 0; s < p.n_splits; s++)
        M = fmaxf(M, ms[((size_t)s * p.H + h) * p.Tq + t]);
    float L = 0.0f, o = 0.0f;
    for (uint32_t s = 0; s < p.n_splits; s++) {
        size_t row = ((size_t)s * p.H + h) * p.Tq + t;
        float w = exp2f(ms[row] - M);   /* 0 for an empty split (m = -inf) */
        L += ls[row] * w;
        o += p.ws[row * D + d] * w;
    }
    p.out[(size_t)t * p.ldo + (size_t)h * D + d] = f2bf(o / L);
}

static uint32_t pick_splits(uint32_t Tq, uint32_t H, uint32_t n_keys)
{
    uint32_t base = H * ((Tq + QT - 1) / QT), most = (n_keys + 15) / 16, least = (n_keys + KS - 1) / KS;
    uint32_t s = base >= TARGET_CTAS ? 1 : TARGET_CTAS / base;   /* fill the GPU ... */
    s = s < most ? s : most;                                     /* ... with >= 16 keys a split ... */
    return s > least ? s : least;                                /* ... and <= KS keys a split */
}

extern "C" size_t dkv_cuda_attention_workspace_bytes(uint32_t Tq, uint32_t n_heads, uint32_t head_dim,
                                                     uint32_t n_keys)
{
    uint32_t s = pick_splits(Tq, n_heads, n_keys);
    return s == 1 ? 0 : (size_t)s * n_heads * Tq * (head_dim + 2) * sizeof(float);
}

template <int D>
static dkv_status launch_attention(const attn_params &p, cudaStream_t s, dkv_err *err)
{
    dim3 grid(p.n_splits, p.H, (p.Tq + QT - 1) / QT);
    size_t smem = attn_smem<D>::bytes;
    DKV_CU(cudaFuncSetAttribute(attention_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    attention_kernel<D><<<grid, NT, smem, s>>>(p);
    dkv_status st = dkv_launch_check("attention_kernel", err);
    if (st != DKV_OK || p.n_splits == 1)
        return st;
    attention_combine_kernel<D><<<dim3(p.Tq, p.H), D, 0, s>>>(p);
    return dkv_launch_check("attention_combine_kernel", err);
}

extern "C" dkv_status dkv_cuda_attention(const dkv_cuda_attn_args *a, cudaStream_t s, dkv_err *err)
{
    const char *fn = "dkv_cuda_attention";
    DKV_ARG(a && a->out && a->q, fn);
    DKV_ARG(a->head_dim == 128 || a->head_dim == 64, fn);
    DKV_ARG(a->n_heads > 0 && a->n_kv_heads > 0 && a->n_heads % a->n_kv_heads == 0, fn);
    DKV_ARG(a->ldq % 8 == 0 && a->ldq >= a->n_heads * a->head_dim, fn);
    DKV_ARG(a->ldo % 8 == 0 && a->ldo >= a->n_heads * a->head_dim, fn);
    DKV_ARG(a->n_own == 0 || (a->k_own && a->v_own && a->ld_own % 8 == 0 &&
                              a->ld_own >= a->n_kv_heads * a->head_dim), fn);
    const dkv_cuda_kv_src *c = &a->cache;
    DKV_ARG(c->kind == DKV_KV_SRC_NONE || c->kind == DKV_KV_SRC_PAGED || c->kind == DKV_KV_SRC_PACKED, fn);
    DKV_ARG(c->kind != DKV_KV_SRC_PAGED || (c->pool && c->pool->base && c->block_table &&
                                            c->layer < c->pool->n_layers && c->pool->head_dim == a->head_dim &&
                                            c->pool->n_kv_heads == a->n_kv_heads), fn);
    DKV_ARG(c->kind != DKV_KV_SRC_PACKED || (c->k_packed && c->v_packed), fn);
    uint32_t n_cache = c->kind == DKV_KV_SRC_NONE ? 0 : c->n_tokens;
    uint32_t n_keys = n_cache + a->n_own;
    DKV_ARG(n_keys > 0, fn);
    if (a->Tq == 0)
        return DKV_OK;
    attn_params p = {};
    p.out = a->out, p.q = a->q, p.ldq = a->ldq, p.ldo = a->ldo, p.Tq = a->Tq, p.H = a->n_heads;
    p.G = a->n_heads / a->n_kv_heads;
    p.n_cache = n_cache, p.n_keys = n_keys;
    p.n_splits = pick_splits(a->Tq, a->n_heads, n_keys);
    uint32_t per = (n_keys + p.n_splits - 1) / p.n_splits;
    p.split_keys = (per + 15) / 16 * 16;
    p.n_splits = (n_keys + p.split_keys - 1) / p.split_keys;   /* no empty trailing split */
    p.cache_kind = c->kind;
    if (c->kind == DKV_KV_SRC_PAGED)
        p.pool = *c->pool, p.table = c->block_table, p.layer = c->layer;
    p.kp = c->k_packed, p.vp = c->v_packed;
    p.k_own = a->k_own, p.v_own = a->v_own, p.ld_own = a->ld_own;
    p.ws = a->workspace;
    p.qscale = (float)(1.4426950408889634 / sqrt((double)a->head_dim));
    if (p.n_splits > 1) {
        size_t need = (size_t)p.n_splits * p.H * p.Tq * (a->head_dim + 2) * sizeof(float);
        if (!a->workspace || a->workspace_bytes < need)
            return dkv_err_set(err, DKV_EINVAL, "%s: workspace of %zu bytes is too small: %u key splits need %zu "
                               "(dkv_cuda_attention_workspace_bytes)", fn, a->workspace_bytes, p.n_splits, need);
    }
    return a->head_dim == 128 ? launch_attention<128>(p, s, err) : launch_attention<64>(p, s, err);
}
