/* test_backend_fp8.c - FP8 KV stored for real on the device: e4m3 codes, 1 byte an element, with
 * one fp32 scale per (block, layer, k|v, kv head) (docs/GPU.md "Lossy policies").
 *
 * Kernels, at the tiny model's KV shapes (6 layers, 2 KV heads, head_dim 64, blocks of 32 tokens
 * in a shuffled table), against host references built on the CPU backend's own codec
 * (dkv_cpu_fp8_encode / dkv_cpu_fp8_decode, cpu/cpu_kv.c) and its scale rule (cpu/cpu_pool.c):
 *   - dkv_cuda_kv_fp8_store: a store of 48 rows, an in-block store of 24 rows at 40 with values
 *     x4 (the scale grows: the older rows are encoded again), one at x0.25 (it does not), then the
 *     sparse forms (per-head and shared indices into a fresh block): every byte of the pool equals
 *     the host encoding (never-stored bytes keep their poison), every scale equal;
 *   - attention over an FP8 pool (dkv_cuda_attention, 2-warp and 4-warp kernels, and the batched
 *     dkv_cuda_attention_batch) against core/ref's attention over e4m3 * scale rounded to bf16 (the
 *     values the tensor cores take: the method of test_kernels_attn, the reference computes on
 *     exactly the kernel's inputs) at its tolerances (atol 2e-2 + rtol 2e-2), and the per-item
 *     kernel against core/ref over e4m3 * scale in fp32 (the CPU backend's read): rel-L2 <= 1e-2;
 *   - the gather (compression input: bf16(e4m3 * scale) exactly; reorder: the codes), the layout
 *     reorder (bytes moved, scales copied) and the low-rank decompress into an FP8 pool (values
 *     within one e4m3 step of Q B, scales amax / 448).
 * On the trained tiny dLLM (cache dual, the first 4 prompts): the FP8 block is half the bf16 block
 * (the model's e4m3 figure); the engine fixes the pool's capacity in bytes, so at the same 256 MiB
 * FP8 holds twice the blocks, and at capacity = the bf16 run's blocks x the FP8 block the same
 * blocks in exactly half the arena bytes, with cudaMemGetInfo's least free memory higher by at
 * least 90 % of the bytes the model says FP8 saves (an arena allocated as bf16 fails it) and the
 * same decode; the backend's own allocations equal core/model/devmem.c's count; with progressive
 * offload at ratio 1 (raw e4m3 bytes and scales go to the host and come back) the decode equals
 * the FP8 run without offload; at ratio 0.3 every order's bf16 low-rank form of one block is
 * larger than its e4m3 bytes, so the backend stores them raw (0 forms, decode unchanged); at ratio
 * 0.15 every order is a form, stored and rebuilt into FP8 blocks.
 * `test_backend_fp8 kernels` runs the kernels only (for compute-sanitizer).
 * Exit 0 PASS, 1 FAIL, 77 SKIP without a usable GPU. */
#include "gpu_check.h"
#include "tiny_model.h"

#include "cpu/backend.h"
#include "cuda/backend_internal.h"

enum { NL = 6, HKV = 2, D = 64, BT = 32, NBLK = 5, LKH = NL * 2 * HKV, BE = BT * LKH * D, SRC_LD = 2 * HKV * D + 8 };

#define POISON 0x5a

static dkv_cuda_kv_pool fp8_pool(void *base, float *scale, dkv_kv_layout layout)
{
    return (dkv_cuda_kv_pool){.base = base, .block_tokens = BT, .n_layers = NL, .n_kv_heads = HKV, .head_dim = D,
                              .layout = layout, .elem = DKV_KV_ELEM_E4M3, .scale = scale};
}

static size_t code_at(const dkv_cuda_kv_pool *p, uint32_t blk, uint32_t l, uint32_t kv, uint32_t h, uint32_t s)
{
    return (size_t)blk * BE + dkv_cuda_kv_offset(p, l, kv, h, s);
}

static float *scale_at(float *sc, uint32_t blk, uint32_t l, uint32_t kv, uint32_t h)
{
    return sc + (size_t)blk * LKH + (l * 2 + kv) * HKV + h;
}

/* The host image of one store (cpu/cpu_pool.c's cpu_store, on the device's layout): rows of source
 * src (n rows, SRC_LD: k heads then v heads, bf16 values) into positions [lo, hi) of table. */
static void store_ref(uint8_t *codes, float *sc, const dkv_cuda_kv_pool *p, const uint32_t *table, uint32_t l,
                      const float *src, const uint32_t *idx, bool shared, uint32_t lo, uint32_t hi, uint32_t valid)
{
    uint32_t n = hi - lo;
    for (uint32_t j = lo / BT; j <= (hi - 1) / BT; j++)
        for (uint32_t kv = 0; kv < 2; kv++)
            for (uint32_t h = 0; h < HKV; h++) {
                uint32_t jb = j * BT, a = (lo > jb ? lo : jb) - jb, e = (hi < jb + BT ? hi : jb + BT) - jb;
                uint32_t v = (valid < jb + BT ? valid : jb + BT) - jb, b = table[j];
                v = v > e ? v : e;
                const float *row[BT];
                float amax = 0, *s = scale_at(sc, b, l, kv, h);
                for (uint32_t r = a; r < e; r++) {
                    uint32_t i = jb + r - lo, t = idx ? idx[(shared ? 0 : h * n) + i] : i;
                    row[r] = src + (size_t)t * SRC_LD + (kv * HKV + h) * D;
                    for (uint32_t d = 0; d < D; d++)
                        amax = fmaxf(amax, fabsf(row[r][d]));
                }
                float want = amax > 0 ? amax / 448.0f : 1.0f;
                if (a == 0 && e == v) {
                    *s = want;
                } else if (want > *s) {
                    for (uint32_t r = 0; r < v; r++) {
                        if (r >= a && r < e)
                            continue;   /* the new rows: encoded below */
                        for (uint32_t d = 0; d < D; d++) {
                            uint8_t *c = codes + code_at(p, b, l, kv, h, r) + d;
                            float x = dkv_cpu_fp8_decode(*c) * *s;
                            *c = dkv_cpu_fp8_encode(x * (1.0f / want));
                        }
                    }
                    *s = want;
                }
                float inv = 1.0f / *s;
                for (uint32_t r = a; r < e; r++)
                    for (uint32_t d = 0; d < D; d++)
                        codes[code_at(p, b, l, kv, h, r) + d] = dkv_cpu_fp8_encode(row[r][d] * inv);
            }
}

/* Codes and scales on the device equal the host image: every byte, every scale. */
static void compare_pool(const char *what, const uint8_t *dcodes, const float *dsc, const uint8_t *codes,
                         const float *sc)
{
    uint8_t *got = download(dcodes, (size_t)NBLK * BE);
    float *gs = download(dsc, NBLK * LKH * sizeof(float));
    size_t bad = 0, first = 0, sbad = 0;
    for (size_t i = 0; i < (size_t)NBLK * BE; i++)
        if (got[i] != codes[i] && !bad++)
            first = i;
    for (size_t i = 0; i < NBLK * LKH; i++)
        sbad += gs[i] != sc[i];
    char name[96], detail[96];
    snprintf(name, sizeof name, "fp8 %s: bytes == CPU e4m3", what);
    snprintf(detail, sizeof detail, "%zu of %d bytes differ (first %zu: 0x%02x vs 0x%02x)", bad, NBLK * BE, first,
             got[first], codes[first]);
    check_true(name, bad == 0, detail);
    snprintf(name, sizeof name, "fp8 %s: scales == CPU", what);
    snprintf(detail, sizeof detail, "%zu of %d differ", sbad, NBLK * LKH);
    check_true(name, sbad == 0, detail);
    free(got), free(gs);
}

typedef struct fp8_fixture {
    dkv_cuda_kv_pool hp, dp;   /* host layout view, device pool */
    uint8_t *codes, *dcodes;
    float *sc, *dsc;
    uint32_t table[3], *dtab;
} fp8_fixture;

/* A table of blocks {2, 0, 3} holding 64 stored positions, built by three stores per layer. */
static void fixture_build(fp8_fixture *f, cudaStream_t st, dkv_rng *rng, bool check_each)
{
    memset(f, 0, sizeof *f);
    f->codes = malloc((size_t)NBLK * BE);
    memset(f->codes, POISON, (size_t)NBLK * BE);
    f->sc = calloc(NBLK * LKH, sizeof(float));
    f->dcodes = dev_alloc((size_t)NBLK * BE);
    CK(cudaMemset(f->dcodes, POISON, (size_t)NBLK * BE));
    f->dsc = dev_alloc(NBLK * LKH * sizeof(float));
    CK(cudaMemset(f->dsc, 0, NBLK * LKH * sizeof(float)));
    f->hp = fp8_pool(NULL, NULL, DKV_KV_TOKEN_MAJOR);
    f->dp = fp8_pool(f->dcodes, f->dsc, DKV_KV_TOKEN_MAJOR);
    uint32_t table[3] = {2, 0, 3};
    memcpy(f->table, table, sizeof table);
    f->dtab = upload(table, sizeof table);
    struct { uint32_t lo, hi, valid; float scale; } stores[3] = {{0, 48, 48, 1.0f}, {40, 64, 64, 4.0f},
                                                                 {40, 64, 64, 0.25f}};
    for (int k = 0; k < 3; k++) {
        uint32_t n = stores[k].hi - stores[k].lo;
        for (uint32_t l = 0; l < NL; l++) {
            float *src = rand_bf16_values((size_t)n * SRC_LD, stores[k].scale * (1 + 0.25f * l), 0, rng);
            dkv_bf16 *dsrc = upload_bf16(src, (size_t)n * SRC_LD);
            OK(dkv_cuda_kv_fp8_store(&f->dp, f->dtab, l, dsrc, dsrc + HKV * D, SRC_LD, NULL, false, stores[k].lo,
                                     stores[k].hi, stores[k].valid, st, &err));
            store_ref(f->codes, f->sc, &f->hp, table, l, src, NULL, false, stores[k].lo, stores[k].hi,
                      stores[k].valid);
            CK(cudaStreamSynchronize(st));
            cudaFree(dsrc), free(src);
        }
        if (check_each) {
            char what[64];
            snprintf(what, sizeof what, "store %d [%u, %u) x%.2f", k, stores[k].lo, stores[k].hi, stores[k].scale);
            compare_pool(what, f->dcodes, f->dsc, f->codes, f->sc);
        }
    }
}

static void fixture_free(fp8_fixture *f)
{
    cudaFree(f->dcodes), cudaFree(f->dsc), cudaFree(f->dtab);
    free(f->codes), free(f->sc);
}

/* e4m3 * scale of (l, kv, h) at canvas position t of the fixture's table, fp32. */
static float value_at(const fp8_fixture *f, uint32_t l, uint32_t kv, uint32_t h, uint32_t t, uint32_t d)
{
    uint32_t b = f->table[t / BT];
    return dkv_cpu_fp8_decode(f->codes[code_at(&f->hp, b, l, kv, h, t % BT) + d]) * *scale_at(f->sc, b, l, kv, h);
}

static void test_store(cudaStream_t st, dkv_rng *rng)
{
    fp8_fixture f;
    fixture_build(&f, st, rng, true);
    /* the selecting step's pack: kept rows by index into slots [0, kk) of block 1 */
    uint32_t tab1 = 1, *dtab1 = upload(&tab1, 4);
    for (int shared = 0; shared < 2; shared++) {
        uint32_t kk = shared ? 12 : 20, rows = 40, idx[2 * 20];
        for (uint32_t i = 0; i < (shared ? 1u : (uint32_t)HKV) * kk; i++)
            idx[i] = (uint32_t)((i * 7 + 3 + shared) % rows);
        uint32_t *didx = upload(idx, sizeof idx);
        for (uint32_t l = 0; l < NL; l++) {
            float *src = rand_bf16_values((size_t)rows * SRC_LD, 0.5f + l, 0, rng);
            dkv_bf16 *dsrc = upload_bf16(src, (size_t)rows * SRC_LD);
            OK(dkv_cuda_kv_fp8_store(&f.dp, dtab1, l, dsrc, dsrc + HKV * D, SRC_LD, didx, shared, 0, kk, kk, st, &err));
            store_ref(f.codes, f.sc, &f.hp, &tab1, l, src, idx, shared, 0, kk, kk);
            CK(cudaStreamSynchronize(st));
            cudaFree(dsrc), free(src);
        }
        compare_pool(shared ? "sparse shared set" : "sparse per head", f.dcodes, f.dsc, f.codes, f.sc);
        cudaFree(didx);
    }
    cudaFree(dtab1);
    dkv_err e = {0};
    check_true("fp8 store: tok_hi > tok_valid is EINVAL",
               dkv_cuda_kv_fp8_store(&f.dp, f.dtab, 0, (dkv_bf16 *)8, (dkv_bf16 *)8, SRC_LD, NULL, false, 0, 10, 5, st,
                                     &e) == DKV_EINVAL, e.msg);
    dkv_cuda_kv_pool bf = f.dp;
    bf.elem = DKV_KV_ELEM_BF16;
    check_true("fp8 store into a bf16 pool is EINVAL",
               dkv_cuda_kv_fp8_store(&bf, f.dtab, 0, (dkv_bf16 *)8, (dkv_bf16 *)8, SRC_LD, NULL, false, 0, 10, 10, st,
                                     &e) == DKV_EINVAL, e.msg);
    check_true("bf16 kv_store into an FP8 pool is EINVAL",
               dkv_cuda_kv_store(&f.dp, f.dtab, 0, (dkv_bf16 *)8, (dkv_bf16 *)8, SRC_LD, (uint32_t *)8, 4, st, &e) ==
                   DKV_EINVAL, e.msg);
    fixture_free(&f);
}

/* core/ref's attention of Tq queries (H = 6 heads, GQA 3:1) over n_cache keys of layer 3 of the
 * FP8 pool, e4m3 * scale in fp32 (the CPU backend's read) or rounded to bf16 (bf: what the tensor
 * cores take), then n_own own keys. */
static void ref_item(const fp8_fixture *f, float *out, const float *qkv, uint32_t LD, uint32_t Tq, uint32_t nc,
                     uint32_t no, bool bf)
{
    uint32_t H = 6, n = nc + no;
    float *k = malloc((size_t)n * HKV * D * 4), *v = malloc((size_t)n * HKV * D * 4), *q = malloc((size_t)Tq * H * D * 4);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t h = 0; h < HKV; h++)
            for (uint32_t d = 0; d < D; d++) {
                size_t o = ((size_t)t * HKV + h) * D + d, r = (size_t)(t - nc) * LD + (size_t)h * D + d;
                float kc = t < nc ? value_at(f, 3, 0, h, t, d) : 0, vc = t < nc ? value_at(f, 3, 1, h, t, d) : 0;
                k[o] = t < nc ? (bf ? h_bf2f(h_f2bf(kc)) : kc) : qkv[r + H * D];
                v[o] = t < nc ? (bf ? h_bf2f(h_f2bf(vc)) : vc) : qkv[r + (H + HKV) * D];
            }
    for (uint32_t t = 0; t < Tq; t++)
        memcpy(q + (size_t)t * H * D, qkv + (size_t)t * LD, (size_t)H * D * 4);
    dkv_ref_attention(out, q, k, v, Tq, n, H, HKV, D);
    free(k), free(v), free(q);
}

static void test_attention(cudaStream_t st, dkv_rng *rng)
{
    fp8_fixture f;
    fixture_build(&f, st, rng, false);
    const uint32_t H = 6, LD = (H + 2 * HKV) * D, ROWS = 80;
    float *qkv = rand_bf16_values((size_t)ROWS * LD, 1.0f, 0, rng);
    dkv_bf16 *dqkv = upload_bf16(qkv, (size_t)ROWS * LD), *dout = dev_alloc((size_t)ROWS * H * D * 2);
    struct { uint32_t Tq, nc, no; } cases[3] = {{32, 64, 0}, {24, 50, 24}, {70, 64, 70}};
    for (int c = 0; c < 3; c++) {
        dkv_cuda_attn_args a = {.out = dout, .q = dqkv, .ldq = LD, .ldo = H * D, .Tq = cases[c].Tq, .n_heads = H,
                                .n_kv_heads = HKV, .head_dim = D, .k_own = dqkv + H * D,
                                .v_own = dqkv + (H + HKV) * D, .ld_own = LD, .n_own = cases[c].no};
        a.cache = (dkv_cuda_kv_src){.kind = DKV_KV_SRC_PAGED, .n_tokens = cases[c].nc, .pool = &f.dp,
                                    .block_table = f.dtab, .layer = 3};
        poison(dout, (size_t)ROWS * H * D * 2);
        OK(dkv_cuda_attention(&a, st, &err));
        CK(cudaStreamSynchronize(st));
        size_t n = (size_t)cases[c].Tq * H * D;
        float *got = download_bf16(dout, n), *ref = malloc(n * 4);
        ref_item(&f, ref, qkv, LD, cases[c].Tq, cases[c].nc, cases[c].no, true);
        char name[96];
        snprintf(name, sizeof name, "attention fp8 pool q%u cache %u own %u", cases[c].Tq, cases[c].nc, cases[c].no);
        check(name, got, ref, n, 2e-2, 2e-2);
        ref_item(&f, ref, qkv, LD, cases[c].Tq, cases[c].nc, cases[c].no, false);
        double num = 0, den = 0;
        for (size_t i = 0; i < n; i++)
            num += (got[i] - ref[i]) * (double)(got[i] - ref[i]), den += (double)ref[i] * ref[i];
        char d[96];
        snprintf(d, sizeof d, "rel-L2 %.2e against core/ref over e4m3 * scale in fp32", sqrt(num / den));
        snprintf(name, sizeof name, "  q%u vs fp32 dequant (rel-L2 <= 1e-2)", cases[c].Tq);
        check_true(name, sqrt(num / den) <= 1e-2, d);
        free(got), free(ref);
    }
    /* batched: item 0 = case 0 (dual: every key from the pool), item 1 = case 1 (prefix-like) */
    dkv_cuda_attn_item items[2] = {{.q_row = 0, .n_q = 32, .own_row = 0, .n_own = 0, .n_cache = 64, .table_off = 0},
                                   {.q_row = 32, .n_q = 24, .own_row = 32, .n_own = 24, .n_cache = 50, .table_off = 0}};
    dkv_cuda_attn_batch b;
    OK(dkv_cuda_attn_batch_plan(&b, items, 2, H, D, NULL, 0, &err));
    void *hm = aligned_alloc(16, (b.bytes + 15) / 16 * 16);
    OK(dkv_cuda_attn_batch_plan(&b, items, 2, H, D, hm, b.bytes, &err));
    void *dm = upload(hm, b.bytes);
    dkv_cuda_attn_batch_args ba = {.out = dout, .q = dqkv, .ldq = LD, .ldo = H * D, .n_heads = H, .n_kv_heads = HKV,
                                   .head_dim = D, .k_own = dqkv + H * D, .v_own = dqkv + (H + HKV) * D, .ld_own = LD,
                                   .pool = &f.dp, .block_table = f.dtab, .layer = 3, .batch = &b, .meta = dm};
    poison(dout, (size_t)ROWS * H * D * 2);
    OK(dkv_cuda_attention_batch(&ba, st, &err));
    CK(cudaStreamSynchronize(st));
    float *got = download_bf16(dout, (size_t)56 * H * D), *ref = malloc((size_t)56 * H * D * 4);
    ref_item(&f, ref, qkv, LD, 32, 64, 0, true);
    ref_item(&f, ref + (size_t)32 * H * D, qkv + (size_t)32 * LD, LD, 24, 50, 24, true);
    check("attention_batch fp8 pool (2 items)", got, ref, (size_t)56 * H * D, 2e-2, 2e-2);
    free(got), free(ref), free(hm), free(qkv);
    cudaFree(dm), cudaFree(dqkv), cudaFree(dout);
    fixture_free(&f);
}

static void test_gather_reorder(cudaStream_t st, dkv_rng *rng)
{
    fp8_fixture f;
    fixture_build(&f, st, rng, false);
    const uint32_t T = 64;
    size_t n = (size_t)LKH * T * D;
    dkv_bf16 *dout = dev_alloc(n * 2);
    uint8_t *draw = dev_alloc(n);
    OK(dkv_bk_gather(dout, &f.dp, f.dtab, T, false, st, &err));
    OK(dkv_bk_gather(draw, &f.dp, f.dtab, T, true, st, &err));
    CK(cudaStreamSynchronize(st));
    float *got = download_bf16(dout, n), *want = malloc(n * 4);
    uint8_t *raw = download(draw, n);
    size_t raw_bad = 0;
    for (uint32_t lkh = 0; lkh < LKH; lkh++) {
        uint32_t h = lkh % HKV, kv = (lkh / HKV) % 2, l = lkh / (2 * HKV);
        for (uint32_t t = 0; t < T; t++)
            for (uint32_t d = 0; d < D; d++) {
                size_t i = ((size_t)lkh * T + t) * D + d;
                want[i] = h_bf2f(h_f2bf(value_at(&f, l, kv, h, t, d)));
                raw_bad += raw[i] != f.codes[code_at(&f.hp, f.table[t / BT], l, kv, h, t % BT) + d];
            }
    }
    check("gather fp8: bf16(e4m3 * scale)", got, want, n, 0, 0);
    check_true("gather fp8 raw: the codes", raw_bad == 0, "");
    /* the layout reorder: token-major -> layer-major, codes moved, scales copied */
    uint8_t *dlm = dev_alloc((size_t)NBLK * BE);
    float *dlsc = dev_alloc(NBLK * LKH * sizeof(float));
    CK(cudaMemset(dlsc, 0, NBLK * LKH * sizeof(float)));
    dkv_cuda_kv_pool lm = fp8_pool(dlm, dlsc, DKV_KV_LAYER_MAJOR);
    OK(dkv_cuda_kv_reorder(&lm, &f.dp, f.dtab, 3, st, &err));
    CK(cudaStreamSynchronize(st));
    uint8_t *lmc = download(dlm, (size_t)NBLK * BE);
    float *lms = download(dlsc, NBLK * LKH * sizeof(float));
    size_t bad = 0, sbad = 0;
    for (uint32_t j = 0; j < 3; j++) {
        uint32_t b = f.table[j];
        for (uint32_t l = 0; l < NL; l++)
            for (uint32_t kv = 0; kv < 2; kv++)
                for (uint32_t h = 0; h < HKV; h++) {
                    sbad += *scale_at(lms, b, l, kv, h) != *scale_at(f.sc, b, l, kv, h);
                    for (uint32_t s = 0; s < BT; s++)
                        bad += memcmp(lmc + code_at(&lm, b, l, kv, h, s), f.codes + code_at(&f.hp, b, l, kv, h, s), D) != 0;
                }
    }
    check_true("reorder fp8: rows moved as bytes", bad == 0, "");
    check_true("reorder fp8: scales copied", sbad == 0, "");
    free(got), free(want), free(raw), free(lmc), free(lms);
    cudaFree(dout), cudaFree(draw), cudaFree(dlm), cudaFree(dlsc);
    fixture_free(&f);
}

/* Low-rank rows Q B (rank 16, 80 positions: 2 full blocks and a partial one) into an FP8 pool. */
static void test_decompress(cudaStream_t st, dkv_rng *rng)
{
    const uint32_t m = 80, r = 16;
    float *Q = rand_bf16_values((size_t)LKH * m * r, 1.0f, 0, rng), *B = rand_bf16_values((size_t)LKH * r * D, 0.5f, 0, rng);
    dkv_bf16 *dQ = upload_bf16(Q, (size_t)LKH * m * r), *dB = upload_bf16(B, (size_t)LKH * r * D);
    uint8_t *dc = dev_alloc((size_t)NBLK * BE);
    float *dsc = dev_alloc(NBLK * LKH * sizeof(float));
    CK(cudaMemset(dsc, 0, NBLK * LKH * sizeof(float)));
    uint32_t table[3] = {4, 1, 2}, *dtab = upload(table, sizeof table);
    dkv_cuda_kv_pool p = fp8_pool(dc, dsc, DKV_KV_TOKEN_MAJOR);
    OK(dkv_cuda_lowrank_decompress(&p, dtab, dQ, dB, m, r, st, &err));
    CK(cudaStreamSynchronize(st));
    uint8_t *codes = download(dc, (size_t)NBLK * BE);
    float *sc = download(dsc, NBLK * LKH * sizeof(float));
    size_t n = (size_t)LKH * m * D, sbad = 0;
    float *got = malloc(n * 4), *prod = malloc(n * 4), smax = 0;
    for (uint32_t lkh = 0; lkh < LKH; lkh++) {
        uint32_t h = lkh % HKV, kv = (lkh / HKV) % 2, l = lkh / (2 * HKV);
        for (uint32_t j = 0; j < 3; j++) {
            float amax = 0;
            for (uint32_t t = j * BT; t < (j + 1) * BT && t < m; t++)
                for (uint32_t d = 0; d < D; d++) {
                    size_t i = ((size_t)lkh * m + t) * D + d;
                    double s = 0;
                    for (uint32_t k = 0; k < r; k++)
                        s += (double)Q[((size_t)lkh * m + t) * r + k] * B[((size_t)lkh * r + k) * D + d];
                    prod[i] = (float)s;
                    amax = fmaxf(amax, fabsf(prod[i]));
                    got[i] = dkv_cpu_fp8_decode(codes[code_at(&p, table[j], l, kv, h, t % BT) + d]) *
                             *scale_at(sc, table[j], l, kv, h);
                }
            float s = *scale_at(sc, table[j], l, kv, h);
            sbad += fabsf(s - amax / 448.0f) > 1e-5f * amax / 448.0f;
            smax = fmaxf(smax, s);
        }
    }
    /* e4m3's half step: 2^-4 relative for normals, 2^-10 scale below 2^-6 scale (subnormals) */
    check("decompress fp8: e4m3(Q B) vs Q B", got, prod, n, smax / 1024.0 * 1.01, 1.0 / 16 + 1e-3);
    check_true("decompress fp8: scales amax / 448", sbad == 0, "");
    free(Q), free(B), free(codes), free(sc), free(got), free(prod);
    cudaFree(dQ), cudaFree(dB), cudaFree(dc), cudaFree(dsc), cudaFree(dtab);
}

/* ------------------------------------------------------------------ the tiny model */

typedef struct run_out {
    dkv_cuda_backend_report rep;
    uint32_t n, max_L;
    uint32_t *final;
} run_out;

static void on_item(void *user, const dkv_cuda_item_report *r)
{
    run_out *o = user;
    memcpy(o->final + (size_t)r->request * o->max_L, r->tokens_after, r->canvas * sizeof(uint32_t));
}

/* capacity: the pool's KV bytes (mem.capacity_bytes; 0: tiny_config's 256 MiB) */
static void run_tiny(const dkv_model *m, const dkv_ref_weights *w, dkv_offload_mode offload, double ratio,
                     uint64_t capacity, run_out *o)
{
    dkv_gpu g = h200();
    dkv_tokenizer tok;
    dkv_workload *wl = tiny_prompts(m, 32, 4, &tok);
    memset(o, 0, sizeof *o);
    o->n = (uint32_t)dkv_workload_count(wl);
    for (size_t i = 0; i < o->n; i++) {
        const dkv_request *q = dkv_workload_get(wl, i);
        uint32_t L = q->prompt_tokens + q->gen_tokens;
        o->max_L = L > o->max_L ? L : o->max_L;
    }
    o->final = calloc((size_t)o->n * o->max_L, sizeof(uint32_t));
    dkv_model mm = *m;
    dkv_engine_config c;
    tiny_config(&c, &mm, &g, wl, DKV_CACHE_DUAL, 8);
    c.weights = w;
    if (capacity)
        c.mem.capacity_bytes = capacity;
    c.offload.mode = offload;
    c.offload.lowrank_ratio = ratio;
    c.offload.t1 = 0.25, c.offload.t2 = 1.0;
    dkv_cuda_backend_options opt = backend_options_for(&c);
    opt.on_item = on_item, opt.on_item_user = o, opt.poison = true, opt.report = &o->rep;
    if (offload != DKV_OFFLOAD_NONE) {   /* a slot and staging for every canvas */
        uint64_t per = (uint64_t)(o->max_L + 31) / 32 * 32 * dkv_model_kv_bytes_per_token(m);
        opt.staging_bytes = o->n * per, opt.host_bytes = o->n * per;
    }
    dkv_backend be;
    OK(dkv_cuda_backend_new(&opt, &be, &err));
    c.backend = &be;
    dkv_engine_result *res = NULL;
    OK(dkv_engine_run(&c, &res, &err));
    const dkv_run_summary *s = dkv_engine_result_summary(res);
    char name[100];
    snprintf(name, sizeof name, "tiny dual kv %s offload %s %.2f, %.1f MiB: all finished", dkv_dtype_name(m->kv_dtype),
             dkv_offload_mode_name(offload), ratio, c.mem.capacity_bytes / 1048576.0);
    check_true(name, s && s->n_done == o->n, "");
    dkv_engine_result_free(res);
    dkv_backend_free(&be);
    dkv_workload_free(wl);
}

static uint64_t same_tokens(const run_out *a, const run_out *b, uint64_t *tot)
{
    uint64_t same = 0;
    *tot = (uint64_t)a->n * a->max_L;
    for (size_t i = 0; i < *tot; i++)
        same += a->final[i] == b->final[i];
    return same;
}

/* The arena: FP8 halves the block (block_tokens x layers x 2 x KV heads x head_dim bytes, the
 * model's figure, not the report's); the engine fixes the pool's capacity in BYTES
 * (mem.capacity_bytes; blocks = capacity / block_bytes), so at the same 256 MiB FP8 gets twice the
 * blocks, and at capacity = the bf16 run's blocks x the FP8 block the same blocks in half the arena
 * bytes.  cudaMemGetInfo's least free memory of that run must be higher than the bf16 run's by at
 * least 90 % of the arena bytes the model says FP8 saves: an FP8 pool stored (allocated) as bf16
 * would show no difference and fail. */
static void check_arena(const dkv_model *m, const run_out *bf, const run_out *f8, const run_out *f8n, uint64_t cap)
{
    const dkv_cuda_backend_report *a = &bf->rep, *b = &f8->rep, *n = &f8n->rep;
    uint64_t fp8_bb = 32ull * m->n_layers * 2 * m->n_kv_heads * m->head_dim;   /* 1 byte an element */
    char d[240];
    snprintf(d, sizeof d, "model: fp8 %llu B a block; bf16 %llu B, fp8 %llu B", (unsigned long long)fp8_bb,
             (unsigned long long)a->block_bytes, (unsigned long long)b->block_bytes);
    check_true("fp8 block bytes = bf16 / 2 = the model's e4m3 block", b->block_bytes == fp8_bb &&
                                                                       a->block_bytes == 2 * fp8_bb, d);
    snprintf(d, sizeof d, "%.0f MiB: bf16 %llu blocks, fp8 %llu (expected %llu, %llu)", cap / 1048576.0,
             (unsigned long long)a->arena_blocks, (unsigned long long)b->arena_blocks,
             (unsigned long long)(cap / (2 * fp8_bb)), (unsigned long long)(cap / fp8_bb));
    check_true("same capacity bytes: fp8 holds twice the blocks", a->arena_blocks == cap / (2 * fp8_bb) &&
                                                                   b->arena_blocks == cap / fp8_bb &&
                                                                   b->arena_blocks >= 2 * a->arena_blocks, d);
    snprintf(d, sizeof d, "bf16 %llu x %llu B + staging/discard = %llu B, fp8 %llu x %llu B = %llu B",
             (unsigned long long)a->arena_blocks, (unsigned long long)a->block_bytes,
             (unsigned long long)a->arena_bytes, (unsigned long long)n->arena_blocks,
             (unsigned long long)n->block_bytes, (unsigned long long)n->arena_bytes);
    check_true("same blocks: fp8 arena = bf16 arena / 2", n->arena_blocks == a->arena_blocks && a->arena_blocks > 0 &&
                                                            n->staging_blocks == a->staging_blocks &&
                                                            2 * n->arena_bytes == a->arena_bytes, d);
    /* what the model says the FP8 arena saves: every arena block (pool, staging, discard) halved */
    int64_t save = (int64_t)((a->arena_blocks + a->staging_blocks + 1) * fp8_bb),
            dfree = (int64_t)n->mem_free_min_bytes - (int64_t)a->mem_free_min_bytes;
    snprintf(d, sizeof d, "least free memory +%.2f MiB with fp8, the model's saving %.2f MiB (%.1f %%); least free "
             "bf16 %.2f GiB, fp8 %.2f GiB", dfree / 1048576.0, save / 1048576.0,
             save > 0 ? 100.0 * dfree / save : 0.0, a->mem_free_min_bytes / 1073741824.0,
             n->mem_free_min_bytes / 1073741824.0);
    /* both least-free figures measured (> 0): a bf16 run's 0 would make any fp8 figure a "saving" */
    check_true("same blocks: cudaMemGetInfo shows the halving (>= 90 %)",
               a->mem_free_min_bytes > 0 && n->mem_free_min_bytes > 0 && save > 0 &&
                   dfree >= (int64_t)(0.9 * (double)save), d);
    snprintf(d, sizeof d, "counted %llu, allocated %llu; same blocks %llu, %llu (fp8 scales included)",
             (unsigned long long)b->devmem_counted_bytes, (unsigned long long)b->devmem_allocated_bytes,
             (unsigned long long)n->devmem_counted_bytes, (unsigned long long)n->devmem_allocated_bytes);
    check_true("fp8 devmem count == allocations", b->devmem_counted_bytes == b->devmem_allocated_bytes &&
                                                   n->devmem_counted_bytes == n->devmem_allocated_bytes, d);
}

static void test_tiny(void)
{
    dkv_model m = tiny_dllm();
    dkv_ref_weights *w = tiny_weights(&m);
    const uint64_t cap = 256ull << 20;   /* tiny_config's */
    run_out bf, f8, f8n, f8o, f8r, f8l;
    run_tiny(&m, w, DKV_OFFLOAD_NONE, 1, cap, &bf);
    m.kv_dtype = DKV_DTYPE_FP8;
    run_tiny(&m, w, DKV_OFFLOAD_NONE, 1, cap, &f8);
    run_tiny(&m, w, DKV_OFFLOAD_NONE, 1, bf.rep.arena_blocks * (bf.rep.block_bytes / 2), &f8n);
    check_arena(&m, &bf, &f8, &f8n, cap);
    uint64_t tot, same = same_tokens(&f8, &f8n, &tot);
    char d[200];
    snprintf(d, sizeof d, "%llu of %llu canvas tokens equal", (unsigned long long)same, (unsigned long long)tot);
    check_true("fp8 at the same blocks decodes as at the same bytes", same == tot, d);
    /* progressive offload (t1 1/4, t2 1).  The CUDA backend stores a COMPRESS order's bf16 form
     * (Q m x r, B r x 64, per matrix 2 r (m + 64) bytes) only when it is not larger than the raw
     * e4m3 blocks (m x 64 bytes), else the blocks raw (cuda/arena.c; core/model/devmem.h).  These
     * canvases (<= 64 tokens) compress 1 block an order (tests/unit/test_cpu_offload_forms.c: 4
     * orders of 1 block): at ratio 0.3 (r 19: 3,648 > 2,048 B) every order goes raw, exactly; at
     * ratio 0.15 (r 10: 1,920 < 2,048 B) every order is a form, rebuilt into FP8 blocks on fetch. */
    run_tiny(&m, w, DKV_OFFLOAD_PROGRESSIVE, 1.0, cap, &f8o);
    run_tiny(&m, w, DKV_OFFLOAD_PROGRESSIVE, 0.3, cap, &f8r);
    run_tiny(&m, w, DKV_OFFLOAD_PROGRESSIVE, 0.15, cap, &f8l);
    same = same_tokens(&f8, &f8o, &tot);
    snprintf(d, sizeof d, "%llu of %llu canvas tokens equal; %llu compress orders, %llu bytes fetched",
             (unsigned long long)same, (unsigned long long)tot, (unsigned long long)f8o.rep.n_compress,
             (unsigned long long)f8o.rep.pcie_h2d_bytes);
    check_true("fp8 offload ratio 1 (bytes + scales) == no offload", same == tot && f8o.rep.pcie_h2d_bytes > 0, d);
    same = same_tokens(&f8, &f8r, &tot);
    snprintf(d, sizeof d, "%llu compress orders, %llu forms stored; %llu of %llu canvas tokens equal",
             (unsigned long long)f8r.rep.n_compress, (unsigned long long)f8r.rep.n_lowrank_stored,
             (unsigned long long)same, (unsigned long long)tot);
    check_true("fp8 offload ratio 0.3: 1-block forms larger than e4m3 -> raw, == no offload",
               f8r.rep.n_compress > 0 && f8r.rep.n_lowrank_stored == 0 && same == tot, d);
    same = same_tokens(&f8, &f8l, &tot);
    snprintf(d, sizeof d, "%llu compress orders, %llu forms stored, %llu rebuilt; tokens equal to no offload %.2f %% "
             "(free-running)", (unsigned long long)f8l.rep.n_compress, (unsigned long long)f8l.rep.n_lowrank_stored,
             (unsigned long long)f8l.rep.n_lowrank_rebuilt, 100.0 * same / tot);
    check_true("fp8 offload ratio 0.15: forms stored and rebuilt into FP8 blocks",
               f8l.rep.n_lowrank_stored > 0 && f8l.rep.n_lowrank_stored == f8l.rep.n_compress &&
               f8l.rep.n_lowrank_rebuilt > 0, d);
    run_out *all[6] = {&bf, &f8, &f8n, &f8o, &f8r, &f8l};
    for (int i = 0; i < 6; i++) {
        dkv_cuda_backend_report_clear(&all[i]->rep);
        free(all[i]->final);
    }
    dkv_ref_weights_free(w);
}

int main(int argc, char **argv)
{
    bool kernels_only = argc > 1 && strcmp(argv[1], "kernels") == 0;   /* under compute-sanitizer */
    skip_without_gpu();
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    dkv_rng rng;
    dkv_rng_seed(&rng, 17);
    test_store(st, &rng);
    test_attention(st, &rng);
    test_gather_reorder(st, &rng);
    test_decompress(st, &rng);
    if (!kernels_only)
        test_tiny();
    cudaStreamDestroy(st);
    printf("%s: %d failure(s)\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
