/* kv_fp8.cu - FP8 KV: rows stored into pool blocks quantized to OCP e4m3 with one fp32 scale per
 * (block, layer, k|v, kv head) and read back (dkv_cuda.h, dkv_cuda_kv_fp8_store).
 *
 * The format is the CPU backend's (docs/CPU.md "KV element formats"): e4m3 = s eeee mmm, bias 7,
 * subnormals m/8 * 2^-6, max 448, saturating, round to nearest even; one fp32 scale per (pool block,
 * layer, k|v, kv head), amax / 448, kept in a device array beside the pool.  The device pool stays bf16: every value is
 * replaced in place by bf16(decode(encode(x / scale)) * scale), which is what attention reads
 * after a dequantize-on-read of an FP8 pool (up to the bf16 rounding of that product). */
#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

/* e4m3 round trip of x (already multiplied by 1 / scale): the representable value nearest x. */
static __device__ __forceinline__ float e4m3_round(float x)
{
    if (isnan(x))
        return x;
    float a = fabsf(x), q;
    if (a >= 448.0f)
        q = 448.0f;                                   /* saturate */
    else if (a < 0.015625f)                           /* 2^-6: subnormal grid, step 2^-9 */
        q = rintf(a * 512.0f) / 512.0f;
    else {
        int e;
        float f = frexpf(a, &e);                      /* a = f 2^e, f in [0.5, 1) */
        float mant = rintf((f * 2.0f - 1.0f) * 8.0f); /* 3 mantissa bits, ties to even */
        q = ldexpf(1.0f + mant / 8.0f, e - 1);        /* mant 8 carries into the exponent */
        q = q > 448.0f ? 448.0f : q;
    }
    return copysignf(q, x);
}

/* Largest |x| over rows [r0, r1) of (l, kv, h) in a block: a block-wide reduction (128 threads). */
static __device__ float rows_amax(const dkv_cuda_kv_pool &p, const dkv_bf16 *blk, uint32_t l, uint32_t kv, uint32_t h,
                                  uint32_t r0, uint32_t r1, float *red)
{
    uint32_t D = p.head_dim;
    float a = 0;
    for (uint32_t i = threadIdx.x; i < (r1 - r0) * D; i += blockDim.x)
        a = fmaxf(a, fabsf(bf2f(blk[kv_off(p, l, kv, h, r0 + i / D) + i % D])));
    a = warp_max(a);
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = a;
    __syncthreads();
    a = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
    __syncthreads();
    return a;
}

/* Rows [r0, r1) replaced by their e4m3 round trip at scale s. */
static __device__ void rows_quant(const dkv_cuda_kv_pool &p, dkv_bf16 *blk, uint32_t l, uint32_t kv, uint32_t h,
                                  uint32_t r0, uint32_t r1, float s)
{
    uint32_t D = p.head_dim;
    float inv = 1.0f / s;   /* x * (1/s), as the CPU backend encodes */
    for (uint32_t i = threadIdx.x; i < (r1 - r0) * D; i += blockDim.x) {
        dkv_bf16 *e = blk + kv_off(p, l, kv, h, r0 + i / D) + i % D;
        *e = f2bf(e4m3_round(bf2f(*e) * inv) * s);
    }
}

/* grid (blocks, 2*Hkv), 128 threads, one layer.  Block j = j0 + blockIdx.x of the table (pool id
 * ids[j]) holds canvas positions [j*bt, (j+1)*bt): the store's new rows are slots [a, e) of
 * [tok_lo, tok_hi), rows stored before are [0, a) and [e, v) with v from tok_valid.  As the CPU
 * backend: a store that covers every stored row of the block sets the scale to amax(new) / 448;
 * otherwise the scale becomes max(old, amax(new) / 448) and, when it grows, the older rows are
 * quantized again with it.  The new rows are quantized with the scale, which is kept. */
static __global__ void kv_fp8_kernel(dkv_cuda_kv_pool p, const uint32_t *ids, float *scales, uint32_t l, uint32_t j0,
                                     uint32_t tok_lo, uint32_t tok_hi, uint32_t tok_valid)
{
    __shared__ float red[4];
    uint32_t j = j0 + blockIdx.x, bt = p.block_tokens, jb = j * bt;
    uint32_t h = blockIdx.y % p.n_kv_heads, kv = blockIdx.y / p.n_kv_heads, lkh = l * 2 * p.n_kv_heads + blockIdx.y;
    uint32_t a = (tok_lo > jb ? tok_lo : jb) - jb, e = (tok_hi < jb + bt ? tok_hi : jb + bt) - jb;
    uint32_t v = (tok_valid < jb + bt ? tok_valid : jb + bt) - jb;
    v = v > e ? v : e;
    dkv_bf16 *blk = p.base + (size_t)ids[j] * kv_block_elems(p);
    float *sc = scales + (size_t)ids[j] * p.n_layers * 2 * p.n_kv_heads + lkh;
    float amax = rows_amax(p, blk, l, kv, h, a, e, red), old = *sc;
    bool alone = a == 0 && e == v;
    float s = alone ? amax / 448.0f : fmaxf(old, amax / 448.0f);
    if (!(s > 0.0f) || !isfinite(s)) {   /* all zero (exact), or a NaN/Inf row kept for the reader to see */
        if (threadIdx.x == 0 && alone)
            *sc = 0.0f;
        return;
    }
    if (!alone && s > old) {
        rows_quant(p, blk, l, kv, h, 0, a, s);
        rows_quant(p, blk, l, kv, h, e, v, s);
    }
    rows_quant(p, blk, l, kv, h, a, e, s);
    if (threadIdx.x == 0)
        *sc = s;
}

static dkv_status launch_kv_fp8(const dkv_cuda_kv_pool *pool, const uint32_t *ids, float *scales, uint32_t layer,
                                uint32_t j0, uint32_t nb, uint32_t lo, uint32_t hi, uint32_t valid, cudaStream_t s,
                                dkv_err *err)
{
    kv_fp8_kernel<<<dim3(nb, 2 * pool->n_kv_heads), 128, 0, s>>>(*pool, ids, scales, layer, j0, lo, hi, valid);
    return dkv_launch_check("kv_fp8_kernel", err);
}

extern "C" dkv_status dkv_cuda_kv_fp8_store(const dkv_cuda_kv_pool *pool, const uint32_t *block_table, float *scales,
                                            uint32_t layer, uint32_t tok_lo, uint32_t tok_hi, uint32_t tok_valid, cudaStream_t s,
                                            dkv_err *err)
{
    DKV_ARG(pool && pool->base && block_table && scales && pool->block_tokens > 0 && pool->head_dim > 0,
            "dkv_cuda_kv_fp8_store");
    DKV_ARG(tok_lo <= tok_hi && tok_hi <= tok_valid, "dkv_cuda_kv_fp8_store");
    DKV_ARG(layer < pool->n_layers && 2 * pool->n_kv_heads <= 65535, "dkv_cuda_kv_fp8_store");
    if (tok_lo == tok_hi)
        return DKV_OK;
    uint32_t j0 = tok_lo / pool->block_tokens, j1 = (tok_hi - 1) / pool->block_tokens;
    return launch_kv_fp8(pool, block_table, scales, layer, j0, j1 - j0 + 1, tok_lo, tok_hi, tok_valid, s, err);
}
