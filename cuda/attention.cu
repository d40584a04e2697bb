/* attention.cu - bidirectional attention over a cached segment (paged pool or packed per-head
 * rows) followed by dense own keys: one flash-attention kernel on tensor cores for Reuse and
 * Refresh steps alike.
 *
 * A CTA takes 16 * NW queries of one head (NW warps, 16 query rows each) against one split of
 * the keys.  Keys stream through shared memory in tiles of KT by cp.async, ST tiles in flight;
 * per tile S = Q K^T and O += P V run as bf16 mma.sync m16n8k16 with fp32 accumulation, Q and
 * the running O staying in registers, with an online softmax (exp2 domain).  When a (head,
 * query tile) has too few queries to fill the GPU (Reuse: 32 queries), its keys are cut into up
 * to 8 splits that run as one thread-block cluster: each CTA leaves (O, m, l) in its shared
 * memory and, after a cluster barrier, every CTA merges a share of the rows by reading the
 * others' shared memory (DSMEM).  No workspace and no second launch.  Cached keys of an FP8 pool
 * are dequantized on load (kv_addr.cuh's kv_load8: e4m3 * scale in fp32, rounded to bf16) into the
 * same shared-memory tiles, so the tensor-core loop is the same for both pools. */
#include <math.h>
#include <string.h>

#include <cooperative_groups.h>

#include "cuda/common.cuh"
#include "cuda/fused_mma.cuh"
#include "cuda/kv_addr.cuh"

namespace cg = cooperative_groups;

#define KT 32            /* keys per shared-memory tile */
#define TPR 4            /* threads per K or V row when loading: 64 contiguous bytes per instruction */
#define MAX_SPLITS 8     /* the portable cluster size */
#define TARGET_CTAS 264  /* 2 per SM on the H200's 132 */

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
    float qscale;   /* log2(e) / sqrt(D): scores in the exp2 domain */
    const dkv_cuda_attn_item *items;   /* batched: the items, and the group's tile -> item map */
    const uint32_t *tiles;
};

/* Key kk's K or V row of KV head g, for cp.async (bf16 in memory: not a row of an FP8 pool). */
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

/* Key kk comes from an FP8 pool: it is dequantized on load (kv_load8) into shared memory. */
static __device__ __forceinline__ bool key_fp8(const attn_params &p, uint32_t kk)
{
    return kk < p.n_cache && p.cache_kind == DKV_KV_SRC_PAGED && p.pool.elem == DKV_KV_ELEM_E4M3;
}

/* Shared memory of one CTA (bytes).  Rows of Q, K, V are padded by 8 bf16 (16 bytes), so the 8
 * row addresses of an ldmatrix fall in distinct banks.  After the key loop the K/V tiles are
 * reused for the split's (O, m, l) that the cluster merges. */
template <int D, int NW, int ST>
struct fa_smem {
    static constexpr int QM = 16 * NW, LB = D + 8, LO = D + 4, CH = D / 8;
    static constexpr size_t q = 0, kv = (size_t)QM * LB * 2, tile = (size_t)KT * LB * 2,
                            bytes = kv + 2 * ST * tile;   /* ST stages x (K, V) */
    static constexpr size_t o = kv, m = o + (size_t)QM * LO * 4, l = m + QM * 4, comb = l + QM * 4;
    static_assert(comb <= bytes, "the merge area fits in the key tiles");
};

/* grid (n_splits, H, ceil(Tq / QM)), cluster (n_splits, 1, 1), NW warps, ST tiles in flight.
 * BATCH: grid (n_splits x query tiles of all items, H); the CTA's item comes from its tile, and
 * q, out, own keys, table and the key counts are offset to it (each item its own split length). */
template <int D, int NW, int ST, bool BATCH>
static __global__ void __launch_bounds__(NW * 32) flash_kernel(attn_params p)
{
    using SM = fa_smem<D, NW, ST>;
    constexpr int NT = NW * 32, QM = SM::QM, LB = SM::LB, CH = SM::CH, LO = SM::LO;
    extern __shared__ __align__(128) unsigned char smem[];
    dkv_bf16 *Qs = (dkv_bf16 *)(smem + SM::q);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, c = lane & 3;
    uint32_t split, q0;
    if constexpr (BATCH) {
        const uint32_t tile = blockIdx.x / p.n_splits;
        split = blockIdx.x % p.n_splits;
        const dkv_cuda_attn_item it = p.items[p.tiles[tile]];
        q0 = (tile - it.tile0) * QM;
        p.q += (size_t)it.q_row * p.ldq;
        p.out += (size_t)it.q_row * p.ldo;
        p.Tq = it.n_q;
        p.k_own += (size_t)it.own_row * p.ld_own;
        p.v_own += (size_t)it.own_row * p.ld_own;
        p.n_cache = it.n_cache;
        p.n_keys = it.n_cache + it.n_own;
        p.split_keys = it.split_keys;
        if (p.table)
            p.table += it.table_off;
    } else {
        split = blockIdx.x, q0 = blockIdx.z * QM;
    }
    const uint32_t h = blockIdx.y, kvh = h / p.G;
    const uint32_t k0 = split * p.split_keys;
    const uint32_t nk = k0 < p.n_keys ? min(p.split_keys, p.n_keys - k0) : 0;
    const int ntiles = (int)((nk + KT - 1) / KT);

    constexpr int CPT = CH / TPR;   /* 16-byte chunks per thread and row */
    for (int it = tid; it < QM * TPR; it += NT) {   /* Q rows, zero past Tq */
        int r = it / TPR, part = it % TPR;
        bool ok = q0 + r < p.Tq;
        const dkv_bf16 *src = ok ? p.q + (size_t)(q0 + r) * p.ldq + (size_t)h * D : p.q;
#pragma unroll
        for (int cc = 0; cc < CPT; cc++) {
            int ch = cc * TPR + part;
            cp_async16(Qs + r * LB + ch * 8, ok ? src + ch * 8 : p.q, ok ? 16 : 0);
        }
    }
    /* K and V rows of tile t into stage t % ST, zero past the split: one address per row and
     * thread (a paged row costs a block-table lookup), TPR threads per row */
    auto load_tile = [&](int t) {
        dkv_bf16 *Ks = (dkv_bf16 *)(smem + SM::kv + (size_t)(t % ST) * 2 * SM::tile), *Vs = Ks + KT * LB;
        for (int it = tid; it < 2 * KT * TPR; it += NT) {
            int isv = it >= KT * TPR, rem = it - isv * KT * TPR, r = rem / TPR, part = rem % TPR;
            uint32_t j = (uint32_t)t * KT + r;
            bool ok = j < nk;
            dkv_bf16 *dst = (isv ? Vs : Ks) + r * LB;
            if (ok && key_fp8(p, k0 + j)) {   /* FP8 pool: synchronous load, e4m3 * scale to bf16 */
#pragma unroll
                for (int cc = 0; cc < CPT; cc++) {
                    int ch = cc * TPR + part;
                    *reinterpret_cast<bf16x8 *>(dst + ch * 8) = kv_load8(p.pool, p.table, p.layer, isv, kvh, k0 + j, ch);
                }
                continue;
            }
            const dkv_bf16 *src = ok ? key_row<D>(p, isv, kvh, k0 + j) : p.q;
#pragma unroll
            for (int cc = 0; cc < CPT; cc++) {
                int ch = cc * TPR + part;
                cp_async16(dst + ch * 8, ok ? src + ch * 8 : p.q, ok ? 16 : 0);
            }
        }
    };
#pragma unroll
    for (int t = 0; t < ST; t++) {   /* group t: tile t (group 0 also Q); empty groups past the split */
        if (t < ntiles)
            load_tile(t);
        cp_async_commit();
    }
    cp_async_wait<ST - 1>();
    __syncthreads();

    uint32_t qf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
        ldsm_x4(qf[kk], Qs + (warp * 16 + (lane & 15)) * LB + kk * 16 + (lane >> 4) * 8);

    float o[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; n++)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;   /* rows g and g + 8 of the warp */

    for (int t = 0; t < ntiles; t++) {
        if (t > 0) {   /* tile t has landed (tiles t + 1 .. t + ST - 1 may still be in flight) */
            cp_async_wait<ST - 1>();
            __syncthreads();
        }
        const dkv_bf16 *Ks = (const dkv_bf16 *)(smem + SM::kv + (size_t)(t % ST) * 2 * SM::tile), *Vs = Ks + KT * LB;
        float s[KT / 8][4];
#pragma unroll
        for (int n = 0; n < KT / 8; n++)
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
        /* S = Q K^T; the K fragments of step kk + 1 are loaded before the mmas of step kk */
        const dkv_bf16 *kaddr = Ks + ((lane >> 4) * 8 + (lane & 7)) * LB + ((lane >> 3) & 1) * 8;
        uint32_t kb[2][KT / 16][4];
#pragma unroll
        for (int np = 0; np < KT / 16; np++)
            ldsm_x4(kb[0][np], kaddr + np * 16 * LB);
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            if (kk + 1 < D / 16) {
#pragma unroll
                for (int np = 0; np < KT / 16; np++)
                    ldsm_x4(kb[(kk + 1) & 1][np], kaddr + np * 16 * LB + (kk + 1) * 16);
            }
#pragma unroll
            for (int np = 0; np < KT / 16; np++) {
                const uint32_t *b = kb[kk & 1][np];
                mma_bf16(s[2 * np], qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], b[0], b[1]);
                mma_bf16(s[2 * np + 1], qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], b[2], b[3]);
            }
        }
        /* the first V fragment loads while the softmax runs */
        constexpr int NPV = (KT / 16) * (D / 16);
        const dkv_bf16 *vaddr = Vs + (((lane >> 3) & 1) * 8 + (lane & 7)) * LB + (lane >> 4) * 8;
        uint32_t vb[2][4];
        ldsm_x4_t(vb[0], vaddr);
        const int valid = (int)nk - t * KT;   /* keys of this tile inside the split (>= 1) */
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int n = 0; n < KT / 8; n++) {
            int col = n * 8 + 2 * c;
            s[n][0] = col < valid ? s[n][0] * p.qscale : -INFINITY;
            s[n][1] = col + 1 < valid ? s[n][1] * p.qscale : -INFINITY;
            s[n][2] = col < valid ? s[n][2] * p.qscale : -INFINITY;
            s[n][3] = col + 1 < valid ? s[n][3] * p.qscale : -INFINITY;
            mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
            mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
        }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);   /* finite: the tile has a valid key */
        const float al0 = exp2f(m0 - mn0), al1 = exp2f(m1 - mn1);   /* 0 on the first tile */
        m0 = mn0, m1 = mn1;
        float rs0 = 0.0f, rs1 = 0.0f;
        uint32_t pf[KT / 16][4];   /* P as A fragments: the S accumulators' layout, rounded to bf16 */
#pragma unroll
        for (int n = 0; n < KT / 8; n++) {
            float e0 = exp2f(s[n][0] - mn0), e1 = exp2f(s[n][1] - mn0);
            float e2 = exp2f(s[n][2] - mn1), e3 = exp2f(s[n][3] - mn1);
            rs0 += e0 + e1;
            rs1 += e2 + e3;
            pf[n >> 1][(n & 1) * 2] = pack_bf16x2(e0, e1);
            pf[n >> 1][(n & 1) * 2 + 1] = pack_bf16x2(e2, e3);
        }
        l0 = l0 * al0 + rs0;
        l1 = l1 * al1 + rs1;
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            o[n][0] *= al0, o[n][1] *= al0;
            o[n][2] *= al1, o[n][3] *= al1;
        }
        /* O += P V, the V fragment of step i + 1 loaded before the mmas of step i */
#pragma unroll
        for (int i = 0; i < NPV; i++) {
            const int kt = i / (D / 16), dp = i % (D / 16);
            if (i + 1 < NPV) {
                const int kt1 = (i + 1) / (D / 16), dp1 = (i + 1) % (D / 16);
                ldsm_x4_t(vb[(i + 1) & 1], vaddr + kt1 * 16 * LB + dp1 * 16);
            }
            const uint32_t *b = vb[i & 1];
            mma_bf16(o[2 * dp], pf[kt][0], pf[kt][1], pf[kt][2], pf[kt][3], b[0], b[1]);
            mma_bf16(o[2 * dp + 1], pf[kt][0], pf[kt][1], pf[kt][2], pf[kt][3], b[2], b[3]);
        }
        __syncthreads();   /* every warp is done with this stage before it is refilled */
        if (t + ST < ntiles)
            load_tile(t + ST);
        cp_async_commit();
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const int lr0 = warp * 16 + g, lr1 = lr0 + 8;

    if (p.n_splits == 1) {   /* the whole row is here: normalise and write */
        const float i0 = 1.0f / l0, i1 = 1.0f / l1;
        dkv_bf16 *d0 = p.out + (size_t)(q0 + lr0) * p.ldo + (size_t)h * D + 2 * c;
        dkv_bf16 *d1 = p.out + (size_t)(q0 + lr1) * p.ldo + (size_t)h * D + 2 * c;
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            if (q0 + lr0 < p.Tq)
                *reinterpret_cast<uint32_t *>(d0 + n * 8) = pack_bf16x2(o[n][0] * i0, o[n][1] * i0);
            if (q0 + lr1 < p.Tq)
                *reinterpret_cast<uint32_t *>(d1 + n * 8) = pack_bf16x2(o[n][2] * i1, o[n][3] * i1);
        }
        return;
    }

    /* this split's (O, m, l) into shared memory, then the cluster merges them row by row */
    cp_async_wait<0>();
    __syncthreads();
    float *Os = (float *)(smem + SM::o), *Ms = (float *)(smem + SM::m), *Ls = (float *)(smem + SM::l);
#pragma unroll
    for (int n = 0; n < D / 8; n++) {
        *reinterpret_cast<float2 *>(Os + lr0 * LO + n * 8 + 2 * c) = make_float2(o[n][0], o[n][1]);
        *reinterpret_cast<float2 *>(Os + lr1 * LO + n * 8 + 2 * c) = make_float2(o[n][2], o[n][3]);
    }
    if (c == 0)
        Ms[lr0] = m0, Ms[lr1] = m1, Ls[lr0] = l0, Ls[lr1] = l1;
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    const int S = (int)p.n_splits, rank = (int)cl.block_rank();
    constexpr int V4 = D / 4;
    const int my_rows = (QM - rank + S - 1) / S;   /* rows rank, rank + S, ... */
    for (int i = tid; i < my_rows * V4; i += NT) {
        int r = rank + (i / V4) * S, d4 = i % V4;
        if (q0 + r >= p.Tq)
            continue;
        float ms[MAX_SPLITS], ls[MAX_SPLITS];
        float4 ov[MAX_SPLITS];
#pragma unroll
        for (int sp = 0; sp < MAX_SPLITS; sp++) {   /* every remote read issued before the first use */
            if (sp < S) {
                ms[sp] = cl.map_shared_rank(Ms, sp)[r];
                ls[sp] = cl.map_shared_rank(Ls, sp)[r];
                ov[sp] = *reinterpret_cast<const float4 *>(cl.map_shared_rank(Os, sp) + r * LO + d4 * 4);
            }
        }
        float M = -INFINITY;
#pragma unroll
        for (int sp = 0; sp < MAX_SPLITS; sp++)
            if (sp < S)
                M = fmaxf(M, ms[sp]);
        float Lsum = 0.0f, a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma unroll
        for (int sp = 0; sp < MAX_SPLITS; sp++) {
            if (sp < S) {
                float w = exp2f(ms[sp] - M);   /* 0 for an empty split */
                Lsum += ls[sp] * w;
                a0 += ov[sp].x * w, a1 += ov[sp].y * w, a2 += ov[sp].z * w, a3 += ov[sp].w * w;
            }
        }
        float inv = 1.0f / Lsum;
        uint2 y = make_uint2(pack_bf16x2(a0 * inv, a1 * inv), pack_bf16x2(a2 * inv, a3 * inv));
        *reinterpret_cast<uint2 *>(p.out + (size_t)(q0 + r) * p.ldo + (size_t)h * D + d4 * 4) = y;
    }
    cl.sync();   /* the others' shared memory stays alive until every CTA has read it */
}

/* The launch configuration of a flash kernel: block, shared memory and a cluster of `splits` CTAs
 * (at[] holds the cluster attribute cfg points to); the kernel's shared-memory limit set once. */
template <int D, int NW, int ST, bool BATCH>
static dkv_status flash_config(uint32_t splits, cudaLaunchConfig_t *cfg, cudaLaunchAttribute *at, dkv_err *err)
{
    using SM = fa_smem<D, NW, ST>;
    static bool attr = false;
    if (!attr) {
        DKV_CU(cudaFuncSetAttribute(flash_kernel<D, NW, ST, BATCH>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)SM::bytes));
        attr = true;
    }
    *cfg = cudaLaunchConfig_t{};
    cfg->blockDim = dim3(NW * 32);
    cfg->dynamicSmemBytes = SM::bytes;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = splits;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg->attrs = at;
    cfg->numAttrs = 1;
    return DKV_OK;
}

/* grid.x: the splits (x the batch's query tiles when BATCH, n_tiles of them) */
template <int D, int NW, int ST, bool BATCH = false>
static dkv_status launch_flash(const attn_params &p, cudaStream_t s, dkv_err *err, uint32_t n_tiles = 0)
{
    using SM = fa_smem<D, NW, ST>;
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[1];
    DKV_TRY((flash_config<D, NW, ST, BATCH>(p.n_splits, &cfg, at, err)));
    cfg.gridDim = BATCH ? dim3(p.n_splits * n_tiles, p.H, 1) : dim3(p.n_splits, p.H, (p.Tq + SM::QM - 1) / SM::QM);
    cfg.stream = s;
    DKV_CU(cudaLaunchKernelEx(&cfg, flash_kernel<D, NW, ST, BATCH>, p));
    return dkv_launch_check("flash_kernel", err);
}

/* The batched kernel's clusters of `splits` CTAs resident at once on this GPU (one wave). */
template <int D, int NW, int ST>
static dkv_status flash_clusters(uint32_t splits, uint32_t *clusters, dkv_err *err)
{
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[1];
    DKV_TRY((flash_config<D, NW, ST, true>(splits, &cfg, at, err)));
    cfg.gridDim = dim3(splits * 4096, 1, 1);   /* more clusters than fit: the query reads the limit */
    int n = 0;
    DKV_CU(cudaOccupancyMaxActiveClusters(&n, (const void *)flash_kernel<D, NW, ST, true>, &cfg));
    *clusters = n > 0 ? (uint32_t)n : 0;
    return DKV_OK;
}

extern "C" dkv_status dkv_cuda_attention_clusters(uint32_t head_dim, int group, uint32_t splits, uint32_t *clusters,
                                                  dkv_err *err)
{
    const char *fn = "dkv_cuda_attention_clusters";
    DKV_ARG(clusters && (head_dim == 128 || head_dim == 64) && (group == 0 || group == 1), fn);
    DKV_ARG(splits >= 1 && splits <= MAX_SPLITS, fn);
    if (head_dim == 128)
        return group == 0 ? flash_clusters<128, 2, 3>(splits, clusters, err)
                          : flash_clusters<128, 4, 2>(splits, clusters, err);
    return group == 0 ? flash_clusters<64, 2, 3>(splits, clusters, err) : flash_clusters<64, 4, 2>(splits, clusters, err);
}

/* Queries per CTA: 32 (two warps) for a Reuse block, 64 (four warps) otherwise. */
static uint32_t rows_per_cta(uint32_t Tq) { return Tq <= 32 ? 32 : 64; }

/* Key splits: enough CTAs to fill the GPU, at most a cluster's 8, at least 16 keys each. */
static uint32_t pick_splits(uint32_t Tq, uint32_t H, uint32_t n_keys)
{
    uint32_t qm = rows_per_cta(Tq), base = H * ((Tq + qm - 1) / qm);
    uint32_t s = base >= TARGET_CTAS ? 1 : (TARGET_CTAS + base - 1) / base;
    s = s < MAX_SPLITS ? s : MAX_SPLITS;
    s = s < (n_keys + 15) / 16 ? s : (n_keys + 15) / 16;
    return s > 0 ? s : 1;
}

extern "C" size_t dkv_cuda_attention_workspace_bytes(uint32_t Tq, uint32_t n_heads, uint32_t head_dim,
                                                     uint32_t n_keys)
{
    (void)Tq, (void)n_heads, (void)head_dim, (void)n_keys;
    return 0;   /* the splits merge through distributed shared memory */
}

extern "C" dkv_status dkv_cuda_attention(const dkv_cuda_attn_args *a, cudaStream_t s, dkv_err *err)
{
    const char *fn = "dkv_cuda_attention";
    DKV_ARG(a && a->out && a->q, fn);
    DKV_ARG(a->head_dim == 128 || a->head_dim == 64, fn);
    DKV_ARG(a->n_heads > 0 && a->n_kv_heads > 0 && a->n_heads % a->n_kv_heads == 0, fn);
    DKV_ARG(a->ldq % 8 == 0 && a->ldq >= a->n_heads * a->head_dim, fn);
    DKV_ARG(a->ldo % 8 == 0 && a->ldo >= a->n_heads * a->head_dim, fn);
    DKV_ARG((uintptr_t)a->q % 16 == 0 && (uintptr_t)a->out % 16 == 0, fn);
    DKV_ARG(a->n_own == 0 || (a->k_own && a->v_own && a->ld_own % 8 == 0 && (uintptr_t)a->k_own % 16 == 0 &&
                              (uintptr_t)a->v_own % 16 == 0 && a->ld_own >= a->n_kv_heads * a->head_dim), fn);
    const dkv_cuda_kv_src *c = &a->cache;
    DKV_ARG(c->kind == DKV_KV_SRC_NONE || c->kind == DKV_KV_SRC_PAGED || c->kind == DKV_KV_SRC_PACKED, fn);
    DKV_ARG(c->kind != DKV_KV_SRC_PAGED || (c->pool && c->pool->base && c->block_table &&
                                            c->layer < c->pool->n_layers && c->pool->head_dim == a->head_dim &&
                                            c->pool->n_kv_heads == a->n_kv_heads &&
                                            (uintptr_t)c->pool->base % 16 == 0 &&
                                            (c->pool->elem == DKV_KV_ELEM_BF16 || c->pool->scale)), fn);
    DKV_ARG(c->kind != DKV_KV_SRC_PACKED || (c->k_packed && c->v_packed && (uintptr_t)c->k_packed % 16 == 0 &&
                                             (uintptr_t)c->v_packed % 16 == 0), fn);
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
    p.qscale = (float)(1.4426950408889634 / sqrt((double)a->head_dim));
    /* a Reuse block: 2 warps, 3 tiles in flight (a 96-key split at once; 61 KB, 3 CTAs per SM, so
     * the clusters of 8 all fit); else 4 warps, 2 tiles (52 KB: 3 CTAs per SM by registers, the
     * Refresh grid in one wave) */
    bool small = rows_per_cta(a->Tq) == 32;
    if (a->head_dim == 128)
        return small ? launch_flash<128, 2, 3>(p, s, err) : launch_flash<128, 4, 2>(p, s, err);
    return small ? launch_flash<64, 2, 3>(p, s, err) : launch_flash<64, 4, 2>(p, s, err);
}

/* ------------------------------------------------------------------ batched (varlen) */

#define BATCH_SMALL_Q 32   /* items of at most this many queries: group 0 (2-warp CTAs) */

static size_t al16(size_t x) { return (x + 15) / 16 * 16; }

extern "C" dkv_status dkv_cuda_attn_batch_plan(dkv_cuda_attn_batch *b, const dkv_cuda_attn_item *items, uint32_t n,
                                               uint32_t n_heads, uint32_t head_dim, void *host_meta, size_t cap,
                                               dkv_err *err)
{
    const char *fn = "dkv_cuda_attn_batch_plan";
    DKV_ARG(b && (items || n == 0) && n_heads > 0, fn);
    DKV_ARG(head_dim == 128 || head_dim == 64, fn);
    memset(b, 0, sizeof *b);
    b->n_items = n, b->n_heads = n_heads, b->head_dim = head_dim;
    uint32_t max_keys[2] = {0, 0};
    for (uint32_t i = 0; i < n; i++) {
        const dkv_cuda_attn_item *it = &items[i];
        if (it->n_q == 0)
            continue;   /* nothing to compute: no tiles */
        if (it->n_cache + it->n_own == 0 || it->n_cache + it->n_own < it->n_cache)
            return dkv_err_set(err, DKV_EINVAL, "%s: item %u: %u queries against %u cached + %u own keys (both "
                               "count must be > 0)", fn, i, it->n_q, it->n_cache, it->n_own);
        int g = it->n_q > BATCH_SMALL_Q;
        b->n_tiles[g] += (it->n_q + (g ? 63 : 31)) / (g ? 64 : 32);
        uint32_t nk = it->n_cache + it->n_own;
        max_keys[g] = nk > max_keys[g] ? nk : max_keys[g];
        b->any_cache |= it->n_cache > 0;
        b->any_own |= it->n_own > 0;
    }
    for (int g = 0; g < 2; g++) {   /* key splits: enough CTAs to fill the GPU, at most 8, >= 16 keys */
        uint32_t base = n_heads * b->n_tiles[g], sp = base == 0 || base >= TARGET_CTAS ? 1
                                                                 : (TARGET_CTAS + base - 1) / base;
        sp = sp < MAX_SPLITS ? sp : MAX_SPLITS;
        sp = sp < (max_keys[g] + 15) / 16 ? sp : (max_keys[g] + 15) / 16;
        b->n_splits[g] = sp > 0 ? sp : 1;
    }
    b->tiles_off[0] = al16((size_t)n * sizeof(dkv_cuda_attn_item));
    b->tiles_off[1] = b->tiles_off[0] + al16((size_t)b->n_tiles[0] * 4);
    b->bytes = b->tiles_off[1] + al16((size_t)b->n_tiles[1] * 4);
    if (!host_meta)
        return DKV_OK;
    DKV_ARG(cap >= b->bytes && (uintptr_t)host_meta % 16 == 0, fn);
    dkv_cuda_attn_item *mi = (dkv_cuda_attn_item *)host_meta;
    uint32_t *map[2] = {(uint32_t *)((char *)host_meta + b->tiles_off[0]),
                        (uint32_t *)((char *)host_meta + b->tiles_off[1])};
    uint32_t next[2] = {0, 0};
    for (uint32_t i = 0; i < n; i++) {
        dkv_cuda_attn_item it = items[i];
        int g = it.n_q > BATCH_SMALL_Q;
        uint32_t S = b->n_splits[g], nk = it.n_cache + it.n_own, per = (nk + S - 1) / S;
        it.split_keys = (per + 15) / 16 * 16;   /* trailing splits of a short item may be empty */
        it.tile0 = next[g];
        uint32_t nt = (it.n_q + (g ? 63 : 31)) / (g ? 64 : 32);
        for (uint32_t t = 0; t < nt; t++)
            map[g][next[g]++] = i;
        mi[i] = it;
    }
    return DKV_OK;
}

extern "C" dkv_status dkv_cuda_attention_batch(const dkv_cuda_attn_batch_args *a, cudaStream_t s, dkv_err *err)
{
    const char *fn = "dkv_cuda_attention_batch";
    DKV_ARG(a && a->batch && a->out && a->q, fn);
    const dkv_cuda_attn_batch *b = a->batch;
    DKV_ARG(b->n_items == 0 || (a->meta && (uintptr_t)a->meta % 16 == 0), fn);
    DKV_ARG(a->head_dim == b->head_dim && a->n_heads == b->n_heads, fn);
    DKV_ARG(a->n_kv_heads > 0 && a->n_heads % a->n_kv_heads == 0, fn);
    DKV_ARG(a->ldq % 8 == 0 && a->ldq >= a->n_heads * a->head_dim, fn);
    DKV_ARG(a->ldo % 8 == 0 && a->ldo >= a->n_heads * a->head_dim, fn);
    DKV_ARG((uintptr_t)a->q % 16 == 0 && (uintptr_t)a->out % 16 == 0, fn);
    DKV_ARG(!b->any_own || a->k_own, fn);
    DKV_ARG(!a->k_own || (a->v_own && a->ld_own % 8 == 0 && (uintptr_t)a->k_own % 16 == 0 &&
                          (uintptr_t)a->v_own % 16 == 0 && a->ld_own >= a->n_kv_heads * a->head_dim), fn);
    const dkv_cuda_kv_pool *pool = a->pool;
    DKV_ARG(!b->any_cache || (pool && pool->base && a->block_table && a->layer < pool->n_layers &&
                              pool->head_dim == a->head_dim && pool->n_kv_heads == a->n_kv_heads &&
                              (uintptr_t)pool->base % 16 == 0 && (pool->elem == DKV_KV_ELEM_BF16 || pool->scale)), fn);
    attn_params p = {};
    p.out = a->out, p.q = a->q, p.ldq = a->ldq, p.ldo = a->ldo, p.H = a->n_heads, p.G = a->n_heads / a->n_kv_heads;
    p.cache_kind = b->any_cache ? DKV_KV_SRC_PAGED : DKV_KV_SRC_NONE;
    if (b->any_cache)
        p.pool = *pool, p.table = a->block_table, p.layer = a->layer;
    p.k_own = a->k_own ? a->k_own : a->q, p.v_own = a->v_own ? a->v_own : a->q, p.ld_own = a->ld_own;
    p.qscale = (float)(1.4426950408889634 / sqrt((double)a->head_dim));
    p.items = (const dkv_cuda_attn_item *)a->meta;
    for (int g = 0; g < 2; g++) {
        if (b->n_tiles[g] == 0)
            continue;
        p.n_splits = b->n_splits[g];
        p.tiles = (const uint32_t *)((const char *)a->meta + b->tiles_off[g]);
        dkv_status st;
        if (a->head_dim == 128)
            st = g == 0 ? launch_flash<128, 2, 3, true>(p, s, err, b->n_tiles[0])
                        : launch_flash<128, 4, 2, true>(p, s, err, b->n_tiles[1]);
        else
            st = g == 0 ? launch_flash<64, 2, 3, true>(p, s, err, b->n_tiles[0])
                        : launch_flash<64, 4, 2, true>(p, s, err, b->n_tiles[1]);
        if (st != DKV_OK)
            return st;
    }
    return DKV_OK;
}
