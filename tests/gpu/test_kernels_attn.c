/* test_kernels_attn.c - the KV pool (store, layout reorder, RoPE fused with the store), attention
 * in its Refresh and Reuse forms (own keys, paged pool in both layouts, packed per-head rows, GQA,
 * with and without a cluster of key splits, the batched-GEMM fallback), the batched (varlen)
 * attention of several items against the per-item kernel and core/ref, the sparse-cache
 * kernels (attention scores, per-head and shared top-k, packing) against core/ref.
 * Prints "SKIP: ..." and exits 77 without a usable GPU; exits 1 when any check fails. */
#include "gpu_check.h"

#include "ref/ref.h"

static cudaStream_t st;

/* A pool of NB blocks and one sequence using a shuffled subset of them. */
typedef struct pool_fixture {
    dkv_cuda_kv_pool pool;
    uint32_t         table[512], n_table;
    uint32_t        *d_table;
    size_t           elems;   /* whole arena */
} pool_fixture;

static void pool_make(pool_fixture *f, dkv_kv_layout layout, uint32_t layers, uint32_t hkv, uint32_t D,
                      uint32_t bt, uint32_t nb, uint32_t n_table, dkv_rng *r)
{
    memset(f, 0, sizeof *f);
    f->pool = (dkv_cuda_kv_pool){NULL, bt, layers, hkv, D, layout, DKV_KV_ELEM_BF16, NULL};
    f->elems = dkv_cuda_kv_block_bytes(&f->pool) / 2 * nb;
    f->pool.base = dev_alloc(f->elems * 2);
    poison(f->pool.base, f->elems * 2);
    uint32_t perm[512];
    for (uint32_t i = 0; i < nb; i++)
        perm[i] = i;
    for (uint32_t i = nb - 1; i > 0; i--) {
        uint32_t j = (uint32_t)dkv_rng_below(r, i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    f->n_table = n_table;
    memcpy(f->table, perm, n_table * sizeof(uint32_t));
    f->d_table = upload(f->table, n_table * sizeof(uint32_t));
}

static void pool_free(pool_fixture *f)
{
    cudaFree(f->pool.base);
    cudaFree(f->d_table);
}

/* Stores rows k, v (n, hkv*D) at positions 0..n-1 of layer into the pool. */
static void pool_fill(pool_fixture *f, uint32_t layer, const float *k, const float *v, uint32_t n)
{
    uint32_t ld = f->pool.n_kv_heads * f->pool.head_dim, *pos = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++)
        pos[i] = i;
    dkv_bf16 *dk = upload_bf16(k, (size_t)n * ld), *dv = upload_bf16(v, (size_t)n * ld);
    uint32_t *dp = upload(pos, n * 4);
    OK(dkv_cuda_kv_store(&f->pool, f->d_table, layer, dk, dv, ld, dp, n, st, &err));
    CK(cudaDeviceSynchronize());
    cudaFree(dk), cudaFree(dv), cudaFree(dp);
    free(pos);
}

static void test_kv_store_and_reorder(dkv_rng *r)
{
    enum { L = 3, HKV = 2, D = 128, BT = 16, NB = 20, NT = 8, N = 117 };
    pool_fixture f;
    pool_make(&f, DKV_KV_LAYER_MAJOR, L, HKV, D, BT, NB, NT, r);
    float *k = rand_bf16_values((size_t)N * HKV * D, 1, 0, r), *v = rand_bf16_values((size_t)N * HKV * D, 1, 0, r);
    pool_fill(&f, 1, k, v, N);
    uint16_t *arena = download(f.pool.base, f.elems * 2);
    size_t be = dkv_cuda_kv_block_bytes(&f.pool) / 2, right = 0, written = 0, poisoned = 0;
    for (uint32_t p = 0; p < N; p++)
        for (uint32_t kv = 0; kv < 2; kv++)
            for (uint32_t h = 0; h < HKV; h++) {
                const uint16_t *row = arena + f.table[p / BT] * be + dkv_cuda_kv_offset(&f.pool, 1, kv, h, p % BT);
                const float *src = (kv ? v : k) + ((size_t)p * HKV + h) * D;
                for (uint32_t d = 0; d < D; d++)
                    right += h_bf2f(row[d]) == src[d];
            }
    for (size_t i = 0; i < f.elems; i++)
        poisoned += arena[i] == 0xffff;
    written = (size_t)N * 2 * HKV * D;
    char line[128];
    snprintf(line, sizeof line, "%zu/%zu values at their (block, layer, k|v, head, slot); %zu untouched", right,
             written, poisoned);
    check_true("kv_store (layer-major, shuffled blocks)", right == written && poisoned == f.elems - written, line);

    /* t-major copy of every block, then back: identical arena; and each row where it belongs */
    pool_fixture g = f;
    g.pool.layout = DKV_KV_TOKEN_MAJOR;
    g.pool.base = dev_alloc(f.elems * 2);
    uint32_t all[NB];
    for (uint32_t i = 0; i < NB; i++)
        all[i] = i;
    uint32_t *dall = upload(all, sizeof all);
    poison(g.pool.base, f.elems * 2);
    OK(dkv_cuda_kv_reorder(&g.pool, &f.pool, dall, NB, st, &err));
    uint16_t *tm = download(g.pool.base, f.elems * 2);
    size_t same = 0, rows = 0;
    for (uint32_t b = 0; b < NB; b++)
        for (uint32_t l = 0; l < L; l++)
            for (uint32_t kv = 0; kv < 2; kv++)
                for (uint32_t h = 0; h < HKV; h++)
                    for (uint32_t s = 0; s < BT; s++, rows++)
                        same += memcmp(tm + b * be + dkv_cuda_kv_offset(&g.pool, l, kv, h, s),
                                       arena + b * be + dkv_cuda_kv_offset(&f.pool, l, kv, h, s), D * 2) == 0;
    snprintf(line, sizeof line, "%zu/%zu rows where the t-major layout puts them", same, rows);
    check_true("kv_reorder layer-major -> t-major", same == rows, line);
    poison(f.pool.base, f.elems * 2);
    OK(dkv_cuda_kv_reorder(&f.pool, &g.pool, dall, NB, st, &err));
    uint16_t *back = download(f.pool.base, f.elems * 2);
    check_true("kv_reorder t-major -> layer-major", memcmp(back, arena, f.elems * 2) == 0, "round trip bit for bit");
    free(arena), free(tm), free(back), free(k), free(v);
    cudaFree(g.pool.base), cudaFree(dall);
    pool_free(&f);
}

/* Reference attention where KV head g attends keys kc[g] (nc rows of D, per head) then own rows. */
static void ref_attention(float *out, const float *q, uint32_t ldq, uint32_t Tq, const float *const *kc,
                          const float *const *vc, uint32_t nc, const float *ko, const float *vo, uint32_t ldo_kv,
                          uint32_t no, uint32_t H, uint32_t HKV, uint32_t D)
{
    uint32_t G = H / HKV, n = nc + no;
    float *qg = malloc((size_t)Tq * G * D * 4), *og = malloc((size_t)Tq * G * D * 4);
    float *kg = malloc((size_t)n * D * 4 + 4), *vg = malloc((size_t)n * D * 4 + 4);
    for (uint32_t g = 0; g < HKV; g++) {
        if (nc) {
            memcpy(kg, kc[g], (size_t)nc * D * 4);
            memcpy(vg, vc[g], (size_t)nc * D * 4);
        }
        for (uint32_t j = 0; j < no; j++) {
            memcpy(kg + (size_t)(nc + j) * D, ko + (size_t)j * ldo_kv + (size_t)g * D, D * 4);
            memcpy(vg + (size_t)(nc + j) * D, vo + (size_t)j * ldo_kv + (size_t)g * D, D * 4);
        }
        for (uint32_t t = 0; t < Tq; t++)
            memcpy(qg + (size_t)t * G * D, q + (size_t)t * ldq + (size_t)g * G * D, (size_t)G * D * 4);
        dkv_ref_attention(og, qg, kg, vg, Tq, n, G, 1, D);
        for (uint32_t t = 0; t < Tq; t++)
            memcpy(out + (size_t)t * H * D + (size_t)g * G * D, og + (size_t)t * G * D, (size_t)G * D * 4);
    }
    free(qg), free(og), free(kg), free(vg);
}

typedef struct attn_case {
    const char     *name;
    uint32_t        Tq, H, HKV, D, n_cache, n_own;
    dkv_kv_src_kind kind;
    dkv_kv_layout   layout;
} attn_case;

static void test_attention(const attn_case *c, dkv_rng *r)
{
    uint32_t H = c->H, HKV = c->HKV, D = c->D, LD = (H + 2 * HKV) * D, nc = c->n_cache, no = c->n_own;
    /* fused qkv rows of the computed tokens: q | k | v (the Tq queries are the first rows) */
    uint32_t rows = no > c->Tq ? no : c->Tq;
    float *qkv = rand_bf16_values((size_t)rows * LD, 1.5f, 0, r);
    float *kc = rand_bf16_values((size_t)(nc ? nc : 1) * HKV * D, 1.5f, 0, r);   /* cache rows (token, head) */
    float *vc = rand_bf16_values((size_t)(nc ? nc : 1) * HKV * D, 1, 0, r);
    dkv_bf16 *dqkv = upload_bf16(qkv, (size_t)rows * LD), *dout = dev_alloc((size_t)c->Tq * H * D * 2);
    dkv_cuda_attn_args a = {.out = dout, .q = dqkv, .ldq = LD, .ldo = H * D, .Tq = c->Tq, .n_heads = H,
                            .n_kv_heads = HKV, .head_dim = D, .k_own = dqkv + H * D, .v_own = dqkv + (H + HKV) * D,
                            .ld_own = LD, .n_own = no};
    pool_fixture f = {0};
    dkv_bf16 *dkp = NULL, *dvp = NULL;
    const float **kh = malloc(HKV * sizeof *kh), **vh = malloc(HKV * sizeof *vh);
    float *kpk = malloc((size_t)(nc ? nc : 1) * HKV * D * 4), *vpk = malloc((size_t)(nc ? nc : 1) * HKV * D * 4);
    for (uint32_t g = 0; g < HKV; g++) {   /* per-head views: [head, token, feature] */
        for (uint32_t j = 0; j < nc; j++) {
            memcpy(kpk + ((size_t)g * nc + j) * D, kc + ((size_t)j * HKV + g) * D, D * 4);
            memcpy(vpk + ((size_t)g * nc + j) * D, vc + ((size_t)j * HKV + g) * D, D * 4);
        }
        kh[g] = kpk + (size_t)g * nc * D;
        vh[g] = vpk + (size_t)g * nc * D;
    }
    if (c->kind == DKV_KV_SRC_PAGED) {
        pool_make(&f, c->layout, 3, HKV, D, 16, (nc + 15) / 16 + 4, (nc + 15) / 16, r);
        pool_fill(&f, 2, kc, vc, nc);
        a.cache = (dkv_cuda_kv_src){.kind = DKV_KV_SRC_PAGED, .n_tokens = nc, .pool = &f.pool,
                                    .block_table = f.d_table, .layer = 2};
    } else if (c->kind == DKV_KV_SRC_PACKED) {
        dkp = upload_bf16(kpk, (size_t)nc * HKV * D);
        dvp = upload_bf16(vpk, (size_t)nc * HKV * D);
        a.cache = (dkv_cuda_kv_src){.kind = DKV_KV_SRC_PACKED, .n_tokens = nc, .k_packed = dkp, .v_packed = dvp};
    }
    poison(dout, (size_t)c->Tq * H * D * 2);
    OK(dkv_cuda_attention(&a, st, &err));
    float *got = download_bf16(dout, (size_t)c->Tq * H * D), *ref = malloc((size_t)c->Tq * H * D * 4);
    ref_attention(ref, qkv, LD, c->Tq, kh, vh, nc, qkv + H * D, qkv + (H + HKV) * D, LD, no, H, HKV, D);
    char name[96];
    snprintf(name, sizeof name, "attention %s", c->name);
    check(name, got, ref, (size_t)c->Tq * H * D, 2e-2, 2e-2);
    free(qkv), free(kc), free(vc), free(got), free(ref), free(kh), free(vh), free(kpk), free(vpk);
    cudaFree(dqkv), cudaFree(dout), cudaFree(dkp), cudaFree(dvp);
    if (f.pool.base)
        pool_free(&f);
}

/* Refresh attention: D 64/128 through the flash kernel (no workspace: NULL is passed), other
 * head dims through batched GEMMs with a workspace too small for all heads (chunks). */
static void test_attention_dense(uint32_t Tq, uint32_t H, uint32_t HKV, uint32_t D, uint32_t ws_heads, dkv_rng *r)
{
    int flash = D == 64 || D == 128;
    dkv_cuda_ctx *ctx;
    OK(dkv_cuda_ctx_new(0, &ctx, &err));
    uint32_t LD = (H + 2 * HKV) * D;
    float *qkv = rand_bf16_values((size_t)Tq * LD, 1.5f, 0, r), *ref = malloc((size_t)Tq * H * D * 4);
    dkv_bf16 *dqkv = upload_bf16(qkv, (size_t)Tq * LD), *dout = dev_alloc((size_t)Tq * H * D * 2);
    size_t wsb = dkv_cuda_attention_dense_workspace_bytes(Tq, Tq, ws_heads);
    void *ws = dev_alloc(wsb);
    poison(dout, (size_t)Tq * H * D * 2), poison(ws, wsb);
    OK(dkv_cuda_attention_dense(ctx, dout, H * D, dqkv, LD, dqkv + H * D, dqkv + (H + HKV) * D, LD, Tq, Tq, H, HKV, D,
                                flash ? NULL : ws, flash ? 0 : wsb, &err));
    float *got = download_bf16(dout, (size_t)Tq * H * D);
    ref_attention(ref, qkv, LD, Tq, NULL, NULL, 0, qkv + H * D, qkv + (H + HKV) * D, LD, Tq, H, HKV, D);
    char name[96];
    if (flash)
        snprintf(name, sizeof name, "attention dense %u tok, %u/%u heads, D%u, flash", Tq, H, HKV, D);
    else
        snprintf(name, sizeof name, "attention dense %u tok, %u/%u heads, D%u, ws %u heads", Tq, H, HKV, D, ws_heads);
    check(name, got, ref, (size_t)Tq * H * D, 3e-2, 2e-2);   /* P is rounded to bf16 before P v */
    if (flash) {
        free(qkv), free(ref), free(got);
        cudaFree(dqkv), cudaFree(dout), cudaFree(ws);
        dkv_cuda_ctx_free(ctx);
        return;
    }
    dkv_status st2 = dkv_cuda_attention_dense(ctx, dout, H * D, dqkv, LD, dqkv + H * D, dqkv + (H + HKV) * D, LD, Tq,
                                              Tq, H, HKV, D, ws, dkv_cuda_attention_dense_workspace_bytes(Tq, Tq, 1) - 1,
                                              &err);
    check_true("  refuses a workspace below one group", st2 == DKV_EINVAL && strstr(err.msg, "workspace"), err.msg);
    free(qkv), free(ref), free(got);
    cudaFree(dqkv), cudaFree(dout), cudaFree(ws);
    dkv_cuda_ctx_free(ctx);
}

static void test_attention_bad_args(void)
{
    dkv_cuda_attn_args a = {.out = (dkv_bf16 *)16, .q = (dkv_bf16 *)16, .ldq = 4096, .ldo = 4096, .Tq = 32,
                            .n_heads = 32, .n_kv_heads = 32, .head_dim = 96, .k_own = (dkv_bf16 *)16,
                            .v_own = (dkv_bf16 *)16, .ld_own = 4096, .n_own = 768};
    dkv_status s = dkv_cuda_attention(&a, st, &err);
    check_true("attention refuses head_dim 96", s == DKV_EINVAL && strstr(err.msg, "head_dim"), err.msg);
    a.head_dim = 128, a.q = (dkv_bf16 *)18;
    s = dkv_cuda_attention(&a, st, &err);
    check_true("attention refuses unaligned q", s == DKV_EINVAL && strstr(err.msg, "% 16"), err.msg);
    check_true("attention needs no workspace", dkv_cuda_attention_workspace_bytes(32, 32, 128, 768) == 0,
               "splits merge in distributed shared memory");
}

/* RoPE + KV store in one launch against dkv_ref_rope, and the pool against the rotated rows. */
static void test_rope_kv_store(dkv_kv_layout layout, dkv_rng *r)
{
    enum { T = 37, H = 4, HKV = 2, D = 128, LD = (H + 2 * HKV) * D + 64, LO = 5, HI = 30, BT = 16, NB = 8 };
    float *x = rand_bf16_values((size_t)T * LD, 1, 0, r), *ref = malloc((size_t)T * (H + HKV) * D * 4);
    uint32_t pos[T], perm[NB * BT];
    for (uint32_t i = 0; i < NB * BT; i++)
        perm[i] = i;
    for (uint32_t i = NB * BT - 1; i > 0; i--) {   /* distinct positions in the canvas, in any order */
        uint32_t j = (uint32_t)dkv_rng_below(r, i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    memcpy(pos, perm, sizeof pos);
    pool_fixture f;
    pool_make(&f, layout, 3, HKV, D, BT, NB + 2, NB, r);
    dkv_bf16 *dx = upload_bf16(x, (size_t)T * LD);
    uint32_t *dp = upload(pos, sizeof pos);
    OK(dkv_cuda_rope_kv_store(&f.pool, f.d_table, 1, dx, LD, dp, T, H, LO, HI, 500000.0f, st, &err));
    float *got = download_bf16(dx, (size_t)T * LD), *g2 = malloc((size_t)T * (H + HKV) * D * 4);
    for (int t = 0; t < T; t++) {
        memcpy(ref + (size_t)t * (H + HKV) * D, x + (size_t)t * LD, (H + HKV) * D * 4);
        memcpy(g2 + (size_t)t * (H + HKV) * D, got + (size_t)t * LD, (H + HKV) * D * 4);
    }
    dkv_ref_rope(ref, pos, T, H + HKV, D, 500000.0);
    char name[80];
    snprintf(name, sizeof name, "rope_kv_store: q, k rotated (%s)", layout ? "t-major" : "layer-major");
    check(name, g2, ref, (size_t)T * (H + HKV) * D, 1e-2, 8e-3);
    int v_same = 1;
    for (int t = 0; t < T; t++)
        v_same &= memcmp(got + (size_t)t * LD + (H + HKV) * D, x + (size_t)t * LD + (H + HKV) * D, (HKV * D + 64) * 4) == 0;
    check_true("  v heads and row tail untouched", v_same, "bit for bit");
    uint16_t *arena = download(f.pool.base, f.elems * 2), *rows = download(dx, (size_t)T * LD * 2);
    size_t be = dkv_cuda_kv_block_bytes(&f.pool) / 2, same = 0, want = 0, untouched = 0, slots = 0;
    for (int t = 0; t < T; t++) {
        uint32_t b = f.table[pos[t] / BT], slot = pos[t] % BT;
        for (uint32_t kv = 0; kv < 2; kv++)
            for (uint32_t h = 0; h < HKV; h++) {
                const uint16_t *cell = arena + b * be + dkv_cuda_kv_offset(&f.pool, 1, kv, h, slot);
                const uint16_t *src = rows + (size_t)t * LD + (H + kv * HKV + h) * D;
                if (t >= LO && t < HI) {
                    want++;
                    same += memcmp(cell, src, D * 2) == 0;
                } else {   /* not stored: still the poison */
                    slots++;
                    int p = 1;
                    for (int d = 0; d < D; d++)
                        p &= cell[d] == 0xffff;
                    untouched += p;
                }
            }
    }
    snprintf(name, sizeof name, "%zu/%zu stored K/V rows equal the rotated rows; %zu/%zu others untouched", same, want,
             untouched, slots);
    check_true("  pool rows (layer 1, shuffled blocks)", same == want && untouched == slots, name);
    free(x), free(ref), free(got), free(g2), free(arena), free(rows);
    cudaFree(dx), cudaFree(dp);
    pool_free(&f);
}

static void test_sparse_select(dkv_rng *r)
{
    enum { TQ = 32, TK = 300, H = 8, HKV = 2, D = 128, B0 = 200, KEEP = 100 };
    uint32_t LDQ = H * D, LDK = HKV * D;
    float *q = rand_bf16_values((size_t)TQ * LDQ, 1.5f, 0, r), *k = rand_bf16_values((size_t)TK * LDK, 1.5f, 0, r);
    dkv_bf16 *dq = upload_bf16(q, (size_t)TQ * LDQ), *dk = upload_bf16(k, (size_t)TK * LDK);
    float *dscore = dev_alloc(HKV * TK * 4), *ws = dev_alloc(2 * TQ * H * 4), ref[HKV * TK];
    poison(dscore, HKV * TK * 4);
    OK(dkv_cuda_attn_scores(dscore, dq, LDQ, TQ, dk, LDK, TK, H, HKV, D, ws, st, &err));
    float *score = download(dscore, HKV * TK * 4);
    dkv_ref_attention_scores(ref, q, k, TQ, TK, H, HKV, D);
    check("attn_scores (GQA 8/2, 32 queries)", score, ref, HKV * TK, 1e-5, 2e-3);

    /* top-k on the same scores for both, with ties planted: quantise to 1/64 */
    float qs[HKV * TK];
    for (int i = 0; i < HKV * TK; i++)
        qs[i] = floorf(score[i] * 64) / 64;
    float *dqs = upload(qs, sizeof qs);
    uint32_t *didx = dev_alloc(HKV * KEEP * 4);
    poison(didx, HKV * KEEP * 4);
    OK(dkv_cuda_topk(didx, dqs, HKV, TK, KEEP, B0, B0 + TQ, false, st, &err));
    uint32_t *idx = download(didx, HKV * KEEP * 4), ridx[HKV * KEEP];
    uint32_t cand[TK], nc = 0;
    for (uint32_t j = 0; j < TK; j++)
        if (j < B0 || j >= B0 + TQ)
            cand[nc++] = j;
    float cs[TK];
    for (int g = 0; g < HKV; g++) {
        for (uint32_t c = 0; c < nc; c++)
            cs[c] = qs[g * TK + cand[c]];
        dkv_ref_topk(ridx + g * KEEP, cs, nc, KEEP);
        for (int i = 0; i < KEEP; i++)
            ridx[g * KEEP + i] = cand[ridx[g * KEEP + i]];
    }
    int ties = 0;
    for (int i = 1; i < TK; i++)
        ties += qs[i] == qs[i - 1];
    char line[128];
    snprintf(line, sizeof line, "per head, block excluded, %d planted ties: same indices, ascending", ties);
    check_true("topk per head == ref", memcmp(idx, ridx, sizeof ridx) == 0, line);
    /* shared set: rows summed, one set */
    poison(didx, HKV * KEEP * 4);
    OK(dkv_cuda_topk(didx, dqs, HKV, TK, KEEP, B0, B0 + TQ, true, st, &err));
    uint32_t *sidx = download(didx, KEEP * 4), rs[KEEP];
    for (uint32_t c = 0; c < nc; c++)
        cs[c] = qs[cand[c]] + qs[TK + cand[c]];
    dkv_ref_topk(rs, cs, nc, KEEP);
    for (int i = 0; i < KEEP; i++)
        rs[i] = cand[rs[i]];
    check_true("topk shared set == ref", memcmp(sidx, rs, sizeof rs) == 0, "rows summed, then one top-k");

    /* packing of the chosen rows, per head and shared; V is its own random tensor (drawn here,
     * after q and k, so the scores and sets above see the same values as before), so a kernel
     * that fills v_out from k fails the (V) checks */
    float *v = rand_bf16_values((size_t)TK * LDK, 1, 0, r);
    dkv_bf16 *dv = upload_bf16(v, (size_t)TK * LDK);
    dkv_bf16 *kout = dev_alloc(HKV * KEEP * D * 2), *vout = dev_alloc(HKV * KEEP * D * 2);
    poison(kout, HKV * KEEP * D * 2), poison(vout, HKV * KEEP * D * 2);
    uint32_t *dri = upload(ridx, sizeof ridx);
    OK(dkv_cuda_kv_pack(kout, vout, dk, dv, LDK, dri, HKV, D, KEEP, false, st, &err));
    float *pk = download_bf16(kout, HKV * KEEP * D), *pv = download_bf16(vout, HKV * KEEP * D);
    float *rp = malloc(HKV * KEEP * D * 4), *rpv = malloc(HKV * KEEP * D * 4);
    dkv_ref_pack_heads(rp, k, ridx, TK, HKV, D, KEEP, false);
    dkv_ref_pack_heads(rpv, v, ridx, TK, HKV, D, KEEP, false);
    check_true("kv_pack V reference differs from K's", memcmp(rp, rpv, (size_t)HKV * KEEP * D * 4) != 0,
               "V drawn apart from K");
    check("kv_pack per head [head, token, feature]", pk, rp, HKV * KEEP * D, 0, 0);
    check("kv_pack per head (V)", pv, rpv, HKV * KEEP * D, 0, 0);
    free(pk), free(pv);
    uint32_t *drs = upload(rs, sizeof rs);
    poison(kout, HKV * KEEP * D * 2), poison(vout, HKV * KEEP * D * 2);
    OK(dkv_cuda_kv_pack(kout, vout, dk, dv, LDK, drs, HKV, D, KEEP, true, st, &err));
    pk = download_bf16(kout, HKV * KEEP * D), pv = download_bf16(vout, HKV * KEEP * D);
    dkv_ref_pack_heads(rp, k, rs, TK, HKV, D, KEEP, true);
    dkv_ref_pack_heads(rpv, v, rs, TK, HKV, D, KEEP, true);
    check("kv_pack shared set", pk, rp, HKV * KEEP * D, 0, 0);
    check("kv_pack shared set (V)", pv, rpv, HKV * KEEP * D, 0, 0);
    free(q), free(k), free(v), free(score), free(idx), free(sidx), free(pk), free(pv), free(rp), free(rpv);
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dscore), cudaFree(ws), cudaFree(dqs), cudaFree(didx);
    cudaFree(kout), cudaFree(vout), cudaFree(dri), cudaFree(drs);
}

/* Batched attention: items of different query / own / cached counts (Reuse dual, prefix, sparse
 * and Refresh shapes, both groups) over one pool and one block table made of every item's
 * blocks, against dkv_cuda_attention per item and core/ref; outputs poisoned, rows between the
 * items' query rows must stay poisoned. */
typedef struct batch_item { uint32_t nq, n_cache, n_own; } batch_item;

static void test_attention_batch(dkv_kv_layout layout, uint32_t H, uint32_t HKV, uint32_t D, const batch_item *bi,
                                 uint32_t n, dkv_rng *r)
{
    enum { BT = 16, GAP = 3 };   /* GAP unused rows before each item's rows */
    uint32_t LD = (H + 2 * HKV) * D, QD = H * D, rows = 0, nb = 0;
    dkv_cuda_attn_item *it = calloc(n, sizeof *it);
    uint32_t *tab_off = calloc(n, 4);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t own_rows = bi[i].nq > bi[i].n_own ? bi[i].nq : bi[i].n_own;
        rows += GAP;
        it[i] = (dkv_cuda_attn_item){.q_row = rows, .n_q = bi[i].nq, .own_row = rows, .n_own = bi[i].n_own,
                                     .n_cache = bi[i].n_cache, .table_off = nb};
        tab_off[i] = nb;
        rows += own_rows;
        nb += (bi[i].n_cache + BT - 1) / BT;
    }
    float *qkv = rand_bf16_values((size_t)rows * LD, 1.5f, 0, r);
    dkv_bf16 *dqkv = upload_bf16(qkv, (size_t)rows * LD), *dout = dev_alloc((size_t)rows * QD * 2),
             *dref = dev_alloc((size_t)rows * QD * 2);
    /* one pool whose shuffled blocks hold every item's cached keys (layer 2 of 3) */
    pool_fixture f;
    pool_make(&f, layout, 3, HKV, D, BT, nb + 3, nb, r);
    float **kc = calloc(n, sizeof *kc), **vc = calloc(n, sizeof *vc);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t nc = bi[i].n_cache;
        kc[i] = rand_bf16_values((size_t)(nc ? nc : 1) * HKV * D, 1.5f, 0, r);
        vc[i] = rand_bf16_values((size_t)(nc ? nc : 1) * HKV * D, 1, 0, r);
        if (!nc)
            continue;
        uint32_t *pos = malloc(nc * 4);
        for (uint32_t j = 0; j < nc; j++)
            pos[j] = tab_off[i] * BT + j;   /* position j of item i in the shared table */
        dkv_bf16 *dk = upload_bf16(kc[i], (size_t)nc * HKV * D), *dv = upload_bf16(vc[i], (size_t)nc * HKV * D);
        uint32_t *dp = upload(pos, nc * 4);
        OK(dkv_cuda_kv_store(&f.pool, f.d_table, 2, dk, dv, HKV * D, dp, nc, st, &err));
        CK(cudaDeviceSynchronize());
        cudaFree(dk), cudaFree(dv), cudaFree(dp);
        free(pos);
    }
    dkv_cuda_attn_batch b;
    OK(dkv_cuda_attn_batch_plan(&b, it, n, H, D, NULL, 0, &err));
    void *hm = NULL;
    CK(cudaMallocHost(&hm, b.bytes));
    OK(dkv_cuda_attn_batch_plan(&b, it, n, H, D, hm, b.bytes, &err));
    void *dm = upload(hm, b.bytes);
    poison(dout, (size_t)rows * QD * 2), poison(dref, (size_t)rows * QD * 2);
    dkv_cuda_attn_batch_args a = {.out = dout, .q = dqkv, .ldq = LD, .ldo = QD, .n_heads = H, .n_kv_heads = HKV,
                                  .head_dim = D, .k_own = dqkv + QD, .v_own = dqkv + QD + HKV * D, .ld_own = LD,
                                  .pool = &f.pool, .block_table = f.d_table, .layer = 2, .batch = &b, .meta = dm};
    OK(dkv_cuda_attention_batch(&a, st, &err));
    for (uint32_t i = 0; i < n; i++) {   /* the per-item kernel on the same inputs */
        dkv_cuda_attn_args pa = {.out = dref + (size_t)it[i].q_row * QD, .q = dqkv + (size_t)it[i].q_row * LD,
                                 .ldq = LD, .ldo = QD, .Tq = bi[i].nq, .n_heads = H, .n_kv_heads = HKV, .head_dim = D,
                                 .k_own = dqkv + (size_t)it[i].own_row * LD + QD,
                                 .v_own = dqkv + (size_t)it[i].own_row * LD + QD + HKV * D, .ld_own = LD,
                                 .n_own = bi[i].n_own};
        if (bi[i].n_cache)
            pa.cache = (dkv_cuda_kv_src){.kind = DKV_KV_SRC_PAGED, .n_tokens = bi[i].n_cache, .pool = &f.pool,
                                         .block_table = f.d_table + tab_off[i], .layer = 2};
        OK(dkv_cuda_attention(&pa, st, &err));
    }
    CK(cudaDeviceSynchronize());
    uint16_t *raw = download(dout, (size_t)rows * QD * 2);
    float *got = download_bf16(dout, (size_t)rows * QD), *per = download_bf16(dref, (size_t)rows * QD);
    size_t untouched = 0, gap_elems = 0, tot = 0;
    for (uint32_t i = 0; i < n; i++)
        tot += (size_t)bi[i].nq * QD;
    float *g = malloc(tot * 4), *pi = malloc(tot * 4), *ref = malloc(tot * 4);
    size_t o = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t nc = bi[i].n_cache, G = HKV;
        const float **kh = malloc(G * sizeof *kh), **vh = malloc(G * sizeof *vh);
        float *kpk = malloc((size_t)(nc ? nc : 1) * HKV * D * 4), *vpk = malloc((size_t)(nc ? nc : 1) * HKV * D * 4);
        for (uint32_t h = 0; h < HKV; h++) {
            for (uint32_t j = 0; j < nc; j++) {
                memcpy(kpk + ((size_t)h * nc + j) * D, kc[i] + ((size_t)j * HKV + h) * D, D * 4);
                memcpy(vpk + ((size_t)h * nc + j) * D, vc[i] + ((size_t)j * HKV + h) * D, D * 4);
            }
            kh[h] = kpk + (size_t)h * nc * D, vh[h] = vpk + (size_t)h * nc * D;
        }
        const float *base = qkv + (size_t)it[i].q_row * LD;
        ref_attention(ref + o, base, LD, bi[i].nq, kh, vh, nc, base + QD, base + QD + HKV * D, LD, bi[i].n_own, H,
                      HKV, D);
        memcpy(g + o, got + (size_t)it[i].q_row * QD, (size_t)bi[i].nq * QD * 4);
        memcpy(pi + o, per + (size_t)it[i].q_row * QD, (size_t)bi[i].nq * QD * 4);
        o += (size_t)bi[i].nq * QD;
        for (size_t e = (size_t)(it[i].q_row - GAP) * QD; e < (size_t)it[i].q_row * QD; e++, gap_elems++)
            untouched += raw[e] == 0xffff;
        free(kh), free(vh), free(kpk), free(vpk);
    }
    char name[128];
    snprintf(name, sizeof name, "attention batch %u items, %u/%u heads, D%u, %s (splits %u/%u)", n, H, HKV, D,
             layout ? "t-major" : "layer-major", b.n_splits[0], b.n_splits[1]);
    check(name, g, ref, tot, 2e-2, 2e-2);
    check("  batch == per-item kernel", g, pi, tot, 5e-3, 1e-2);   /* other splits: other P roundings */
    snprintf(name, sizeof name, "%zu/%zu elements of the rows between items still poisoned", untouched, gap_elems);
    check_true("  rows outside the items untouched", untouched == gap_elems, name);
    for (uint32_t i = 0; i < n; i++)
        free(kc[i]), free(vc[i]);
    free(kc), free(vc), free(it), free(tab_off), free(qkv), free(raw), free(got), free(per), free(g), free(pi), free(ref);
    cudaFreeHost(hm);
    cudaFree(dm), cudaFree(dqkv), cudaFree(dout), cudaFree(dref);
    pool_free(&f);
}

static void test_attention_batch_args(void)
{
    dkv_cuda_attn_item bad = {.n_q = 4};
    dkv_cuda_attn_batch b;
    dkv_status s = dkv_cuda_attn_batch_plan(&b, &bad, 1, 4, 128, NULL, 0, &err);
    check_true("attention batch refuses an item without keys", s == DKV_EINVAL && strstr(err.msg, "item 0"), err.msg);
    dkv_cuda_attn_item ok = {.n_q = 4, .n_cache = 20};
    OK(dkv_cuda_attn_batch_plan(&b, &ok, 1, 4, 128, NULL, 0, &err));
    dkv_cuda_attn_batch_args a = {.out = (dkv_bf16 *)16, .q = (dkv_bf16 *)16, .ldq = 512, .ldo = 512, .n_heads = 4,
                                  .n_kv_heads = 4, .head_dim = 128, .batch = &b, .meta = (void *)16};
    s = dkv_cuda_attention_batch(&a, st, &err);
    check_true("attention batch needs the pool when an item reads it", s == DKV_EINVAL && strstr(err.msg, "pool"),
               err.msg);
}

/* The batched kernel's clusters resident at once (the simulator's waves, docs/COST_MODEL.md): every split
 * count has some; a cluster of S CTAs needs S resident CTAs, so S x clusters(S) <= clusters(1); bad
 * arguments are refused. */
static void test_attention_clusters(void)
{
    for (uint32_t d = 64; d <= 128; d += 64)
        for (int g = 0; g < 2; g++) {
            uint32_t c[9] = {0};
            bool ok = true;
            for (uint32_t s = 1; s <= 8; s++)
                ok &= dkv_cuda_attention_clusters(d, g, s, &c[s], &err) == DKV_OK && c[s] > 0 && s * c[s] <= c[1];
            char name[96];
            snprintf(name, sizeof name, "attention clusters D%u group %d: %u %u %u %u %u %u %u %u", d, g, c[1], c[2],
                     c[3], c[4], c[5], c[6], c[7], c[8]);
            check_true(name, ok, ok ? "" : err.msg);
        }
    uint32_t c = 0;
    check_true("attention clusters refuse 9 splits", dkv_cuda_attention_clusters(128, 0, 9, &c, &err) == DKV_EINVAL,
               err.msg);
    check_true("attention clusters refuse head_dim 96", dkv_cuda_attention_clusters(96, 0, 1, &c, &err) == DKV_EINVAL,
               err.msg);
}

int main(void)
{
    skip_without_gpu();
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    dkv_rng r;
    dkv_rng_seed(&r, 4242);
    test_kv_store_and_reorder(&r);
    static const attn_case cases[] = {
        {"Refresh: 150 own, GQA 4/2", 150, 4, 2, 128, 0, 150, DKV_KV_SRC_NONE, DKV_KV_LAYER_MAJOR},
        {"Reuse dual: 32 q, 200 paged LM", 32, 4, 4, 128, 200, 0, DKV_KV_SRC_PAGED, DKV_KV_LAYER_MAJOR},
        {"Reuse prefix: 96 paged TM + 64 own", 64, 4, 2, 128, 96, 64, DKV_KV_SRC_PAGED, DKV_KV_TOKEN_MAJOR},
        {"Reuse sparse: 50 packed + 32 own, D64", 32, 8, 2, 64, 50, 32, DKV_KV_SRC_PACKED, DKV_KV_LAYER_MAJOR},
        {"1 query, 700 paged + 3 own", 1, 2, 1, 128, 700, 3, DKV_KV_SRC_PAGED, DKV_KV_LAYER_MAJOR},
        /* enough (head, query tile) pairs to fill the GPU: one split, no cluster merge */
        {"Refresh 1 split: 264 own, 56/8, D128", 264, 56, 8, 128, 0, 264, DKV_KV_SRC_NONE, DKV_KV_LAYER_MAJOR},
        {"Refresh 1 split: 300 own, 56/56, D64", 300, 56, 56, 64, 0, 300, DKV_KV_SRC_NONE, DKV_KV_LAYER_MAJOR},
        {"Reuse dual: 32 q, 768 paged TM (8 splits)", 32, 8, 8, 128, 768, 0, DKV_KV_SRC_PAGED, DKV_KV_TOKEN_MAJOR},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_attention(&cases[i], &r);
    test_attention_bad_args();
    /* batched: dual Reuse (32 q, all keys paged), prefix (paged + own, > 32 q: group 1), sparse
     * (retained paged + 32 own), a 1-query item, Refresh (own keys only, 150 q: group 1) */
    static const batch_item mix[] = {{32, 200, 0}, {64, 96, 64}, {32, 50, 32}, {1, 700, 3}, {150, 0, 150},
                                     {32, 768, 0}, {17, 31, 17}};
    test_attention_batch(DKV_KV_LAYER_MAJOR, 8, 2, 128, mix, 7, &r);
    test_attention_batch(DKV_KV_TOKEN_MAJOR, 8, 8, 128, mix, 7, &r);
    test_attention_batch(DKV_KV_TOKEN_MAJOR, 4, 2, 64, mix, 5, &r);
    static const batch_item reuse32[] = {{32, 768, 0}, {32, 400, 32}, {32, 768, 0}, {32, 333, 32}, {32, 512, 0},
                                         {32, 600, 32}, {32, 768, 0}, {32, 97, 32}, {32, 640, 0}};
    test_attention_batch(DKV_KV_LAYER_MAJOR, 32, 8, 128, reuse32, 9, &r);   /* 288 CTAs: 1 split, no cluster */
    test_attention_batch_args();
    test_attention_clusters();
    test_rope_kv_store(DKV_KV_LAYER_MAJOR, &r);
    test_rope_kv_store(DKV_KV_TOKEN_MAJOR, &r);
    test_attention_dense(150, 4, 2, 128, 2, &r);   /* flash, GQA */
    test_attention_dense(200, 8, 8, 64, 3, &r);    /* flash, MHA */
    test_attention_dense(120, 4, 2, 96, 2, &r);    /* batched GEMMs, GQA: per-group batches */
    test_attention_dense(100, 6, 6, 96, 4, &r);    /* batched GEMMs, MHA: chunks of 4 heads */
    test_sparse_select(&r);
    CK(cudaDeviceSynchronize());
    cudaStreamDestroy(st);
    printf("%s: %d check(s) failed\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
