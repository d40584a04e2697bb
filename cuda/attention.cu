/* attention.cu - bidirectional attention over a cached segment (paged pool or packed per-head
 * rows) followed by dense own keys; fp32 online softmax (flash-attention style), split over the
 * keys when there are too few (head, query-tile) pairs to fill the GPU (flash-decoding), with a
 * combine pass.  SIMT (no tensor cores): right for Reuse steps (few queries, memory-bound);
 * Refresh steps over long canvases would want an mma version. */
#include <math.h>

#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

#define QT 32     /* queries per CTA */
#define KT 32     /* keys per tile */
#define NT 256    /* threads: 8 per query row */
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

/* grid (n_splits, H, ceil(Tq / QT)).  Thread (qr = tid / 8, l8 = tid % 8): query row qr; keys
 * l8 + 8j of each tile; output dims 2*l8 + 16i (+1). */
template <int D>
static __global__ void __launch_bounds__(NT) attention_kernel(attn_params p)
{
    constexpr int CH = D / 8;
    __shared__ __align__(16) float Qs[QT][D + 4];
    __shared__ __align__(16) dkv_bf16 Ks[KT][D + 8];
    __shared__ __align__(16) dkv_bf16 Vs[KT][D + 8];
    __shared__ float Ps[QT][KT + 1];
    const uint32_t split = blockIdx.x, h = blockIdx.y, q0 = blockIdx.z * QT, g = h / p.G;
    const int tid = threadIdx.x, qr = tid / 8, l8 = tid % 8;

    for (int i = tid; i < QT * CH; i += NT) {
        int r = i / CH, c = i % CH;
        uint32_t t = q0 + r;
        bf16x8 v = {};
        if (t < p.Tq)
            v = *reinterpret_cast<const bf16x8 *>(p.q + (size_t)t * p.ldq + (size_t)h * D + c * 8);
        for (int e = 0; e < 8; e++)
            Qs[r][c * 8 + e] = bf2f(v.v[e]) * p.qscale;
    }
    float m = -INFINITY, l = 0.0f, acc[D / 8];
#pragma unroll
    for (int i = 0; i < D / 8; i++)
        acc[i] = 0.0f;
    const uint32_t kbeg = split * p.split_keys;
    const uint32_t kend = min(kbeg + p.split_keys, p.n_keys);
    for (uint32_t k0 = kbeg; k0 < kend; k0 += KT) {
        __syncthreads();
        for (int i = tid; i < 2 * KT * CH; i += NT) {
            uint32_t isv = i >= KT * CH;
            int ii = i - isv * KT * CH, r = ii / CH, c = ii % CH;
            uint32_t kk = k0 + r;
            bf16x8 v = {};
            if (kk < kend)
                v = *reinterpret_cast<const bf16x8 *>(key_row<D>(p, isv, g, kk) + c * 8);
            *reinterpret_cast<bf16x8 *>(isv ? &Vs[r][c * 8] : &Ks[r][c * 8]) = v;
        }
        __syncthreads();
        float s[KT / 8];
#pragma unroll
        for (int j = 0; j < KT / 8; j++)
            s[j] = 0.0f;
#pragma unroll 4
        for (int x = 0; x < D; x += 2) {
            float2 qv = *reinterpret_cast<const float2 *>(&Qs[qr][x]);
#pragma unroll
            for (int j = 0; j < KT / 8; j++) {
                float2 kf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&Ks[l8 + 8 * j][x]));
                s[j] += qv.x * kf.x + qv.y * kf.y;
            }
        }
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < KT / 8; j++) {
            if (k0 + l8 + 8 * j >= kend)
                s[j] = -INFINITY;
            mx = fmaxf(mx, s[j]);
        }
        for (int o = 1; o < 8; o <<= 1)
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        float mnew = fmaxf(m, mx), scale = exp2f(m - mnew), ps = 0.0f;
#pragma unroll
        for (int j = 0; j < KT / 8; j++) {
            float e = exp2f(s[j] - mnew);
            Ps[qr][l8 + 8 * j] = e;
            ps += e;
        }
        for (int o = 1; o < 8; o <<= 1)
            ps += __shfl_xor_sync(0xffffffffu, ps, o);
        l = l * scale + ps;
        m = mnew;
#pragma unroll
        for (int i = 0; i < D / 8; i++)
            acc[i] *= scale;
        __syncwarp();   /* a row's 8 threads are in one warp */
        for (int j = 0; j < KT; j++) {
            float pj = Ps[qr][j];
#pragma unroll
            for (int i = 0; i < D / 16; i++) {
                float2 vf = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&Vs[j][2 * l8 + 16 * i]));
                acc[2 * i] += pj * vf.x;
                acc[2 * i + 1] += pj * vf.y;
            }
        }
    }
    const uint32_t t = q0 + qr;
    if (t >= p.Tq)
        return;
    if (p.n_splits == 1) {
        float inv = 1.0f / l;
        dkv_bf16 *o = p.out + (size_t)t * p.ldo + (size_t)h * D;
#pragma unroll
        for (int i = 0; i < D / 16; i++) {
            __nv_bfloat162 y = __floats2bfloat162_rn(acc[2 * i] * inv, acc[2 * i + 1] * inv);
            *reinterpret_cast<__nv_bfloat162 *>(o + 2 * l8 + 16 * i) = y;
        }
        return;
    }
    size_t row = ((size_t)split * p.H + h) * p.Tq + t, rows = (size_t)p.n_splits * p.H * p.Tq;
    if (l8 == 0) {
        p.ws[row] = m;
        p.ws[rows + row] = l;
    }
    float *a = p.ws + 2 * rows + row * D;
#pragma unroll
    for (int i = 0; i < D / 16; i++)
        *reinterpret_cast<float2 *>(a + 2 * l8 + 16 * i) = make_float2(acc[2 * i], acc[2 * i + 1]);
}

/* grid (Tq, H), D threads: merges the splits' (m, l, acc). */
template <int D>
static __global__ void attention_combine_kernel(attn_params p)
{
    const uint32_t t = blockIdx.x, h = blockIdx.y, d = threadIdx.x;
    const size_t rows = (size_t)p.n_splits * p.H * p.Tq;
    float M = -INFINITY;
    for (uint32_t s = 0; s < p.n_splits; s++)
        M = fmaxf(M, p.ws[((size_t)s * p.H + h) * p.Tq + t]);
    float L = 0.0f, o = 0.0f;
    for (uint32_t s = 0; s < p.n_splits; s++) {
        size_t row = ((size_t)s * p.H + h) * p.Tq + t;
        float w = exp2f(p.ws[row] - M);   /* 0 for an empty split (m = -inf) */
        L += p.ws[rows + row] * w;
        o += p.ws[2 * rows + row * D + d] * w;
    }
    p.out[(size_t)t * p.ldo + (size_t)h * D + d] = f2bf(o / L);
}

static uint32_t pick_splits(uint32_t Tq, uint32_t H, uint32_t n_keys)
{
    uint32_t base = H * ((Tq + QT - 1) / QT), by_keys = (n_keys + 2 * KT - 1) / (2 * KT);
    uint32_t s = base >= TARGET_CTAS ? 1 : TARGET_CTAS / base;
    s = s < by_keys ? s : by_keys;
    return s ? s : 1;
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
    attention_kernel<D><<<grid, NT, 0, s>>>(p);
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
    DKV_ARG(a->ldo % 2 == 0 && a->ldo >= a->n_heads * a->head_dim, fn);
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
    p.split_keys = (per + KT - 1) / KT * KT;
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
