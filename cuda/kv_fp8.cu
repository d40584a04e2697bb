/* kv_fp8.cu - FP8 KV: the rows of pool blocks quantized to OCP e4m3 with one fp32 scale per
 * (block, layer, k|v, kv head) and read back (dkv_cuda.h, dkv_cuda_kv_fp8_requant).
 *
 * The format is the CPU backend's (docs/CPU.md "KV element formats"): e4m3 = s eeee mmm, bias 7,
 * subnormals m/8 * 2^-6, max 448, saturating, round to nearest even; scale = amax / 448 over the
 * block's stored rows of that (layer, k|v, head).  The device pool stays bf16: every value is
 * replaced in place by bf16(decode(encode(x / scale)) * scale), which is what attention reads
 * after a dequantize-on-read of an FP8 pool (up to the bf16 rounding of that product). */
#include "cuda/common.cuh"
#include "cuda/kv_addr.cuh"

/* e4m3 round trip of x (already divided by the scale): the representable value nearest x. */
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

/* grid (blocks, n_layers*2*Hkv), 128 threads: block j = ids[j0 + blockIdx.x]; its stored slots
 * are [0, n) with n = min(block_tokens, tok_hi - (j0 + blockIdx.x) * block_tokens). */
static __global__ void kv_fp8_kernel(dkv_cuda_kv_pool p, const uint32_t *ids, uint32_t j0, uint32_t tok_hi)
{
    __shared__ float red[4];
    uint32_t j = j0 + blockIdx.x, lkh = blockIdx.y, D = p.head_dim, bt = p.block_tokens;
    uint32_t h = lkh % p.n_kv_heads, kv = (lkh / p.n_kv_heads) % 2, l = lkh / (2 * p.n_kv_heads);
    uint32_t n = tok_hi - j * bt < bt ? tok_hi - j * bt : bt;
    dkv_bf16 *blk = p.base + (size_t)ids[j] * kv_block_elems(p);
    float amax = 0;
    for (uint32_t i = threadIdx.x; i < n * D; i += blockDim.x)
        amax = fmaxf(amax, fabsf(bf2f(blk[kv_off(p, l, kv, h, i / D) + i % D])));
    amax = warp_max(amax);
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = amax;
    __syncthreads();
    amax = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
    if (amax == 0.0f || !isfinite(amax))
        return;   /* all zero: exact; a NaN/Inf row stays as it is, for the reader to see */
    float scale = amax / 448.0f;
    for (uint32_t i = threadIdx.x; i < n * D; i += blockDim.x) {
        dkv_bf16 *e = blk + kv_off(p, l, kv, h, i / D) + i % D;
        *e = f2bf(e4m3_round(bf2f(*e) / scale) * scale);
    }
}

static dkv_status launch_kv_fp8(const dkv_cuda_kv_pool *pool, const uint32_t *ids, uint32_t j0, uint32_t nb,
                                uint32_t tok_hi, cudaStream_t s, dkv_err *err)
{
    kv_fp8_kernel<<<dim3(nb, pool->n_layers * 2 * pool->n_kv_heads), 128, 0, s>>>(*pool, ids, j0, tok_hi);
    return dkv_launch_check("kv_fp8_kernel", err);
}

extern "C" dkv_status dkv_cuda_kv_fp8_requant(const dkv_cuda_kv_pool *pool, const uint32_t *block_table,
                                              uint32_t tok_lo, uint32_t tok_hi, cudaStream_t s, dkv_err *err)
{
    DKV_ARG(pool && pool->base && block_table && pool->block_tokens > 0 && pool->head_dim > 0, "dkv_cuda_kv_fp8_requant");
    DKV_ARG(tok_lo <= tok_hi, "dkv_cuda_kv_fp8_requant");
    DKV_ARG(pool->n_layers * 2 * pool->n_kv_heads <= 65535, "dkv_cuda_kv_fp8_requant");
    if (tok_lo == tok_hi)
        return DKV_OK;
    uint32_t j0 = tok_lo / pool->block_tokens, j1 = (tok_hi - 1) / pool->block_tokens;
    return launch_kv_fp8(pool, block_table, j0, j1 - j0 + 1, tok_hi, s, err);
}
