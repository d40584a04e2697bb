/* cpu_pool.c - KV rows in the pool's blocks: quantize on store, dequantize on read.
 *
 * A token slot holds [layer][k|v][kv head][head_dim] elements of eb bytes (bf16, fp16, fp32 or
 * FP8 e4m3).  FP8 has one scale per (block, layer, k|v, kv head), cuda/kv_fp8.cu's rule: a store
 * that covers every stored row of the block (slots below `valid`) sets it to amax(rows) / 448;
 * any other (dual's in-place write of the current block, a store from a block's first slot whose
 * later slots hold earlier rows) keeps max(scale, amax / 448) and, when that grows, re-quantizes
 * the block's older rows, before and after the new ones, with it. */
#include <math.h>
#include <string.h>

#include "cpu/cpu_internal.h"

#define FP8_MAX 448.0f

static inline uint8_t *elem(const cpu_backend *b, const uint32_t *tab, uint32_t slot, uint32_t layer, uint32_t kv,
                            uint32_t head)
{
    uint64_t blk = tab[slot / b->bt];
    uint64_t off = blk * b->block_bytes + (uint64_t)(slot % b->bt) * b->tok_bytes +
                   ((uint64_t)(layer * 2 + kv) * b->m.n_kv_heads + head) * b->m.head_dim * b->eb;
    return b->pool + off;
}

static inline float *scale_of(const cpu_backend *b, uint32_t blk, uint32_t layer, uint32_t kv, uint32_t head)
{
    return b->scale + (size_t)blk * b->n_scale + (layer * 2 + kv) * b->m.n_kv_heads + head;
}

static void put(const cpu_backend *b, uint8_t *dst, const float *src, float inv_scale)
{
    uint32_t D = b->m.head_dim;
    switch (b->kv_dtype) {
    case DKV_DTYPE_FP8:
        for (uint32_t d = 0; d < D; d++)
            dst[d] = dkv_cpu_fp8_encode(src[d] * inv_scale);
        break;
    case DKV_DTYPE_FP16:
        for (uint32_t d = 0; d < D; d++) {
            _Float16 hv = (_Float16)src[d];
            memcpy(dst + 2 * d, &hv, 2);
        }
        break;
    case DKV_DTYPE_FP32:
        memcpy(dst, src, D * sizeof(float));
        break;
    default:
        for (uint32_t d = 0; d < D; d++) {
            uint16_t u = dkv_cpu_bf16_encode(src[d]);
            memcpy(dst + 2 * d, &u, 2);
        }
    }
}

static void get(const cpu_backend *b, const uint8_t *src, float *dst, float scale)
{
    uint32_t D = b->m.head_dim;
    switch (b->kv_dtype) {
    case DKV_DTYPE_FP8:
        for (uint32_t d = 0; d < D; d++)
            dst[d] = dkv_cpu_fp8_decode(src[d]) * scale;
        break;
    case DKV_DTYPE_FP16:
        for (uint32_t d = 0; d < D; d++) {
            _Float16 hv;
            memcpy(&hv, src + 2 * d, 2);
            dst[d] = (float)hv;
        }
        break;
    case DKV_DTYPE_FP32:
        memcpy(dst, src, D * sizeof(float));
        break;
    default:
        for (uint32_t d = 0; d < D; d++) {
            uint16_t u;
            memcpy(&u, src + 2 * d, 2);
            dst[d] = dkv_cpu_bf16_decode(u);
        }
    }
}

static void touch(cpu_backend *b, uint32_t blk)
{
    if (blk < b->n_pool && !b->touched[blk]) {
        b->touched[blk] = 1;
        b->rep.pool_blocks_touched++;
    }
}

void cpu_store(cpu_backend *b, const uint32_t *tab, uint32_t layer, uint32_t kv, uint32_t head, uint32_t slot0,
               uint32_t n, uint32_t valid, const float *const *rows)
{
    uint32_t D = b->m.head_dim, bt = b->bt;
    for (uint32_t j = 0; j < n;) {
        uint32_t s = slot0 + j, blk = tab[s / bt], run = bt - s % bt;
        if (run > n - j)
            run = n - j;
        touch(b, blk);
        float inv = 1.0f;
        if (b->kv_dtype == DKV_DTYPE_FP8) {
            /* block-relative: new rows [a, e), rows stored before [0, a) and [e, v) */
            uint32_t jb = s - s % bt, a = s - jb, e = a + run, v = valid > jb + bt ? bt : valid > jb ? valid - jb : 0;
            v = v > e ? v : e;
            float amax = 0;
            for (uint32_t i = 0; i < run; i++)
                for (uint32_t d = 0; d < D; d++)
                    amax = fmaxf(amax, fabsf(rows[j + i][d]));
            float *sp = scale_of(b, blk, layer, kv, head), want = amax > 0 ? amax / FP8_MAX : 1.0f;
            if (a == 0 && e == v) {    /* the store covers every stored row of the block */
                *sp = want;
            } else if (want > *sp) {   /* re-quantize the block's older rows with the new scale */
                float tmp[512];
                for (uint32_t i = 0; i < v; i++) {
                    if (i == a)
                        i = e;
                    if (i >= v)
                        break;
                    uint8_t *el = elem(b, tab, jb + i, layer, kv, head);
                    get(b, el, tmp, *sp);
                    put(b, el, tmp, 1.0f / want);
                }
                *sp = want;
            }
            inv = 1.0f / *sp;
        }
        for (uint32_t i = 0; i < run; i++)
            put(b, elem(b, tab, s + i, layer, kv, head), rows[j + i], inv);
        j += run;
    }
}

void cpu_load(const cpu_backend *b, const uint32_t *tab, uint32_t layer, uint32_t kv, uint32_t head, uint32_t n,
              float *out)
{
    uint32_t D = b->m.head_dim;
    for (uint32_t s = 0; s < n; s++) {
        float sc = b->kv_dtype == DKV_DTYPE_FP8 ? *scale_of(b, tab[s / b->bt], layer, kv, head) : 1.0f;
        get(b, elem(b, tab, s, layer, kv, head), out + (size_t)s * D, sc);
    }
}

void cpu_block_out(const cpu_backend *b, uint32_t block, uint8_t *dst, float *dst_scale)
{
    memcpy(dst, b->pool + (uint64_t)block * b->block_bytes, b->block_bytes);
    if (b->scale)
        memcpy(dst_scale, b->scale + (size_t)block * b->n_scale, b->n_scale * sizeof(float));
}

void cpu_block_in(cpu_backend *b, uint32_t block, const uint8_t *src, const float *src_scale)
{
    memcpy(b->pool + (uint64_t)block * b->block_bytes, src, b->block_bytes);
    if (b->scale)
        memcpy(b->scale + (size_t)block * b->n_scale, src_scale, b->n_scale * sizeof(float));
}
