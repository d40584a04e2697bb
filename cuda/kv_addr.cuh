/* kv_addr.cuh - where (block, layer, k|v, head, slot) lives in the KV pool (see dkv_cuda.h), the
 * e4m3 codec of FP8 pools, and kv_load8, the one load of cached KV that every reading kernel uses
 * (attention, the gather for compression and reorder): 8 values of a row, dequantized. */
#ifndef DKV_CUDA_KV_ADDR_CUH
#define DKV_CUDA_KV_ADDR_CUH

#include "cuda/common.cuh"
#include "cuda/dkv_cuda.h"

static __host__ __device__ __forceinline__ size_t kv_block_elems(const dkv_cuda_kv_pool &p)
{
    return (size_t)p.block_tokens * p.n_layers * 2 * p.n_kv_heads * p.head_dim;
}

static __host__ __device__ __forceinline__ uint32_t kv_elem_bytes(const dkv_cuda_kv_pool &p)
{
    return p.elem == DKV_KV_ELEM_E4M3 ? 1u : 2u;
}

/* Element offset of (layer, kv, head, slot, d = 0) inside a block. */
static __host__ __device__ __forceinline__ size_t kv_off(const dkv_cuda_kv_pool &p, uint32_t layer, uint32_t kv,
                                                         uint32_t head, uint32_t slot)
{
    if (p.layout == DKV_KV_LAYER_MAJOR)
        return ((((size_t)layer * 2 + kv) * p.n_kv_heads + head) * p.block_tokens + slot) * p.head_dim;
    return ((((size_t)slot * p.n_layers + layer) * 2 + kv) * p.n_kv_heads + head) * p.head_dim;
}

/* Scales per block id: n_layers * 2 * n_kv_heads. */
static __host__ __device__ __forceinline__ uint32_t kv_n_scales(const dkv_cuda_kv_pool &p)
{
    return p.n_layers * 2 * p.n_kv_heads;
}

/* The scale of (block id b, layer, kv, head) of an FP8 pool. */
static __device__ __forceinline__ float *kv_scale(const dkv_cuda_kv_pool &p, uint32_t b, uint32_t layer, uint32_t kv,
                                                  uint32_t head)
{
    return p.scale + (size_t)b * kv_n_scales(p) + (layer * 2 + kv) * p.n_kv_heads + head;
}

/* Address of the D values of (layer, kv, head) in block b, slot s: bf16 pools (kv_row) and e4m3
 * pools (kv_row8, bytes). */
static __device__ __forceinline__ dkv_bf16 *kv_row_at(const dkv_cuda_kv_pool &p, uint32_t b, uint32_t layer,
                                                       uint32_t kv, uint32_t head, uint32_t s)
{
    return (dkv_bf16 *)p.base + (size_t)b * kv_block_elems(p) + kv_off(p, layer, kv, head, s);
}

static __device__ __forceinline__ uint8_t *kv_row8_at(const dkv_cuda_kv_pool &p, uint32_t b, uint32_t layer,
                                                      uint32_t kv, uint32_t head, uint32_t s)
{
    return (uint8_t *)p.base + (size_t)b * kv_block_elems(p) + kv_off(p, layer, kv, head, s);
}

/* Canvas position pos of a sequence (block table, device), bf16 pool. */
static __device__ __forceinline__ dkv_bf16 *kv_row(const dkv_cuda_kv_pool &p, const uint32_t *table, uint32_t layer,
                                                    uint32_t kv, uint32_t head, uint32_t pos)
{
    return kv_row_at(p, table[pos / p.block_tokens], layer, kv, head, pos % p.block_tokens);
}

/* ---- e4m3 (OCP FP8: s eeee mmm, bias 7, subnormals m/8 * 2^-6, no infinities, 0x7f/0xff NaN,
 * max 448): the CPU backend's dkv_cpu_fp8_encode / dkv_cpu_fp8_decode (cpu/cpu_kv.c), the same
 * operations, so the codes are bit-identical. */
static __device__ __forceinline__ uint8_t e4m3_encode(float x)
{
    if (isnan(x))
        return 0x7f;
    uint32_t sign = signbit(x) ? 0x80u : 0u;
    float a = fabsf(x);
    if (a >= 448.0f)
        return (uint8_t)(sign | 0x7eu);                 /* saturate (448 = e 15, m 6) */
    if (a < 0.015625f)                                  /* 2^-6: the subnormal grid, step 2^-9 */
        return (uint8_t)(sign | (uint32_t)rintf(a * 512.0f));   /* 8 is the smallest normal, same code */
    int e;
    float f = frexpf(a, &e);                            /* a = f 2^e, f in [0.5, 1) */
    float mant = rintf((f * 2.0f - 1.0f) * 8.0f);       /* 3 mantissa bits, ties to even */
    int E = e - 1 + 7;
    if (mant >= 8.0f)
        mant = 0.0f, E++;
    if (E > 15 || (E == 15 && mant > 6.0f))
        return (uint8_t)(sign | 0x7eu);
    return (uint8_t)(sign | ((uint32_t)E << 3) | (uint32_t)mant);
}

/* Exact: every e4m3 value is a float. */
static __device__ __forceinline__ float e4m3_decode(uint32_t b)
{
    uint32_t e = (b >> 3) & 15u, m = b & 7u, s = (b & 0x80u) << 24;
    if (e == 15u && m == 7u)
        return __uint_as_float(0x7fc00000u | s);
    if (e == 0u)
        return __uint_as_float(__float_as_uint((float)m * 0.001953125f) | s);   /* m 2^-9 */
    return __uint_as_float(s | ((e + 120u) << 23) | (m << 20));              /* bias 127 - 7 */
}

/* 8 values d = c*8 .. c*8+7 of (layer, kv, head) at slot s of block b, as bf16: a bf16 pool's as
 * stored; an FP8 pool's e4m3 * scale in fp32, rounded to bf16. */
static __device__ __forceinline__ bf16x8 kv_load8_at(const dkv_cuda_kv_pool &p, uint32_t b, uint32_t layer,
                                                     uint32_t kv, uint32_t head, uint32_t s, uint32_t c)
{
    if (p.elem != DKV_KV_ELEM_E4M3)
        return reinterpret_cast<const bf16x8 *>(kv_row_at(p, b, layer, kv, head, s))[c];
    uint2 w = reinterpret_cast<const uint2 *>(kv_row8_at(p, b, layer, kv, head, s))[c];
    float sc = *kv_scale(p, b, layer, kv, head);
    bf16x8 r;
#pragma unroll
    for (int i = 0; i < 8; i++)
        r.v[i] = f2bf(e4m3_decode(((i < 4 ? w.x : w.y) >> (8 * (i % 4))) & 0xffu) * sc);
    return r;
}

/* The same at canvas position pos of a sequence (block table, device). */
static __device__ __forceinline__ bf16x8 kv_load8(const dkv_cuda_kv_pool &p, const uint32_t *table, uint32_t layer,
                                                  uint32_t kv, uint32_t head, uint32_t pos, uint32_t c)
{
    return kv_load8_at(p, table[pos / p.block_tokens], layer, kv, head, pos % p.block_tokens, c);
}

#endif
