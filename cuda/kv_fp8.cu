/* kv_fp8.cu - FP8 KV: rows of K and V stored into an FP8 pool's blocks as OCP e4m3 codes, one
 * byte an element, with one fp32 scale per (block, layer, k|v, kv head) (dkv_cuda.h,
 * dkv_cuda_kv_fp8_store).
 *
 * The format and the scale rule are the CPU backend's (docs/CPU.md "KV in the pool's blocks",
 * cpu/cpu_pool.c's cpu_store): the codes come from kv_addr.cuh's e4m3_encode, the CPU's encode
 * operation for operation; readers dequantize with kv_addr.cuh's kv_load8 (e4m3 * scale, fp32). */
#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

#define FP8_MAX 448.0f
#define FP8_THREADS 128

/* Where a store's rows come from: row i of head h is source row t = i, idx[h*n + i] or (shared)
 * idx[i], at k / v + t*ld + h*D. */
struct fp8_src {
    const dkv_bf16 *k, *v;
    uint32_t ld, n;
    const uint32_t *idx;
    int shared;
};

static __device__ __forceinline__ const dkv_bf16 *src_row(const fp8_src &s, uint32_t kv, uint32_t h, uint32_t D,
                                                          uint32_t i)
{
    uint32_t t = s.idx ? s.idx[(s.shared ? 0 : (size_t)h * s.n) + i] : i;
    return (kv ? s.v : s.k) + (size_t)t * s.ld + (size_t)h * D;
}

/* Largest |x| over the new rows i in [i0, i1) of (kv, h): a block-wide reduction. */
static __device__ float new_amax(const fp8_src &s, uint32_t kv, uint32_t h, uint32_t D, uint32_t i0, uint32_t i1,
                                 float *red)
{
    float a = 0;
    for (uint32_t j = threadIdx.x; j < (i1 - i0) * D; j += blockDim.x)
        a = fmaxf(a, fabsf(bf2f(src_row(s, kv, h, D, i0 + j / D)[j % D])));
    return block_max(a, red);
}

/* Older rows [r0, r1) of block b: decoded with scale old, encoded again at 1 / want (as
 * cpu_store: get(old) then put(1 / want)). */
static __device__ void requant(const dkv_cuda_kv_pool &p, uint32_t b, uint32_t l, uint32_t kv, uint32_t h,
                               uint32_t r0, uint32_t r1, float old, float want)
{
    uint32_t D = p.head_dim;
    float inv = 1.0f / want;
    for (uint32_t j = threadIdx.x; j < (r1 - r0) * D; j += blockDim.x) {
        uint8_t *e = kv_row8_at(p, b, l, kv, h, r0 + j / D) + j % D;
        float x = e4m3_decode(*e) * old;
        *e = e4m3_encode(x * inv);
    }
}

/* grid (blocks, 2*Hkv), FP8_THREADS threads, one layer.  Block j = j0 + blockIdx.x of the table
 * holds canvas positions [j*bt, (j+1)*bt): the new rows are its slots [a, e) of [lo, hi), the rows
 * stored before are [0, a) and [e, v) with v from valid. */
static __global__ void __launch_bounds__(FP8_THREADS) kv_fp8_kernel(dkv_cuda_kv_pool p, const uint32_t *table,
                                                                    uint32_t l, fp8_src src, uint32_t j0, uint32_t lo,
                                                                    uint32_t hi, uint32_t valid)
{
    __shared__ float red[FP8_THREADS / 32];
    uint32_t j = j0 + blockIdx.x, bt = p.block_tokens, jb = j * bt, D = p.head_dim;
    uint32_t h = blockIdx.y % p.n_kv_heads, kv = blockIdx.y / p.n_kv_heads, b = table[j];
    uint32_t a = (lo > jb ? lo : jb) - jb, e = (hi < jb + bt ? hi : jb + bt) - jb;
    uint32_t v = (valid < jb + bt ? valid : jb + bt) - jb;
    v = v > e ? v : e;
    float *sc = kv_scale(p, b, l, kv, h);
    float old = *sc;   /* read by every thread before thread 0 writes it (after the reduction's barrier) */
    uint32_t i0 = jb + a - lo;   /* source row of slot a */
    float amax = new_amax(src, kv, h, D, i0, i0 + (e - a), red);
    float want = amax > 0.0f ? amax / FP8_MAX : 1.0f, s = old;
    if (a == 0 && e == v)   /* the store covers every stored row of the block */
        s = want;
    else if (want > old) {  /* older rows encoded again with the grown scale */
        requant(p, b, l, kv, h, 0, a, old, want);
        requant(p, b, l, kv, h, e, v, old, want);
        s = want;
    }
    float inv = 1.0f / s;
    for (uint32_t q = threadIdx.x; q < (e - a) * D; q += blockDim.x) {
        uint32_t r = q / D, d = q % D;
        kv_row8_at(p, b, l, kv, h, a + r)[d] = e4m3_encode(bf2f(src_row(src, kv, h, D, i0 + r)[d]) * inv);
    }
    if (threadIdx.x == 0)
        *sc = s;
}

static dkv_status launch_kv_fp8(const dkv_cuda_kv_pool *pool, const uint32_t *table, uint32_t layer,
                                const fp8_src &src, uint32_t j0, uint32_t nb, uint32_t lo, uint32_t hi, uint32_t valid,
                                cudaStream_t s, dkv_err *err)
{
    kv_fp8_kernel<<<dim3(nb, 2 * pool->n_kv_heads), FP8_THREADS, 0, s>>>(*pool, table, layer, src, j0, lo, hi, valid);
    return dkv_launch_check("kv_fp8_kernel", err);
}

extern "C" dkv_status dkv_cuda_kv_fp8_store(const dkv_cuda_kv_pool *pool, const uint32_t *block_table, uint32_t layer,
                                            const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ld, const uint32_t *idx,
                                            bool shared, uint32_t tok_lo, uint32_t tok_hi, uint32_t tok_valid,
                                            cudaStream_t s, dkv_err *err)
{
    const char *fn = "dkv_cuda_kv_fp8_store";
    DKV_ARG(pool && pool->base && pool->scale && block_table && k && v, fn);
    DKV_ARG(pool->elem == DKV_KV_ELEM_E4M3 && pool->block_tokens > 0 && pool->head_dim > 0, fn);
    DKV_ARG(ld >= pool->n_kv_heads * pool->head_dim, fn);
    DKV_ARG(tok_lo <= tok_hi && tok_hi <= tok_valid, fn);
    DKV_ARG(layer < pool->n_layers && 2 * pool->n_kv_heads <= 65535, fn);
    if (tok_lo == tok_hi)
        return DKV_OK;
    fp8_src src = {k, v, ld, tok_hi - tok_lo, idx, shared ? 1 : 0};
    uint32_t j0 = tok_lo / pool->block_tokens, j1 = (tok_hi - 1) / pool->block_tokens;
    return launch_kv_fp8(pool, block_table, layer, src, j0, j1 - j0 + 1, tok_lo, tok_hi, tok_valid, s, err);
}
