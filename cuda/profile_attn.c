/* profile_attn.c - `dkv profile`'s attention-side sections: the batched attention
 * (dkv_cuda_attention_batch, the backend's one launch per kernel shape for every item of a step),
 * RoPE + KV store (dkv_cuda_rope_kv_store_at) and the sparse selection (scores, top-k, pack: the
 * backend's 5 launches per selecting item).  Pool: block_tokens 32, the backend's default layout
 * (t-major), 4 layers (the layer rotates with the repeat, so repeats read other memory). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/backend_internal.h"
#include "cuda/profile_internal.h"

#define BT 32
#define POOL_LAYERS 4

typedef struct heads {
    uint32_t H, Hkv, D;
} heads;

/* The head configurations: each model's, then generic GQA ones (32 / 8 and 32 / 4 x 128) unless a
 * model has them. */
static uint32_t head_cfgs(const prof_ctx *P, heads *out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < P->o->n_models && n < 6; i++) {
        const dkv_model *m = &P->o->models[i];
        heads h = {m->n_heads, m->n_kv_heads, m->head_dim};
        bool dup = false;
        for (uint32_t j = 0; j < n; j++)
            dup |= out[j].H == h.H && out[j].Hkv == h.Hkv && out[j].D == h.D;
        if (!dup)
            out[n++] = h;
    }
    static const heads gen[] = {{32, 8, 128}, {32, 4, 128}};
    for (uint32_t k = 0; k < 2 && !P->o->quick; k++) {
        bool dup = false;
        for (uint32_t j = 0; j < n; j++)
            dup |= out[j].H == gen[k].H && out[j].Hkv == gen[k].Hkv && out[j].D == gen[k].D;
        if (!dup)
            out[n++] = gen[k];
    }
    return n;
}

static dkv_cuda_kv_pool pool_of(const prof_ctx *P, heads h)
{
    return (dkv_cuda_kv_pool){.base = (dkv_bf16 *)P->pool, .block_tokens = BT, .n_layers = POOL_LAYERS,
                              .n_kv_heads = h.Hkv, .head_dim = h.D, .layout = DKV_KV_TOKEN_MAJOR};
}

/* n block ids into aux at byte offset off (scattered over the pool, wrapping when it is full). */
static dkv_status upload_table(prof_ctx *P, heads h, uint32_t n, size_t off, uint32_t **dev, dkv_err *err)
{
    dkv_cuda_kv_pool pool = pool_of(P, h);
    uint32_t nb = (uint32_t)(PR_POOL_BYTES / dkv_cuda_kv_block_bytes(&pool));
    uint32_t *t = malloc((size_t)n * 4 + 4);
    if (!t)
        return dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
    for (uint32_t i = 0; i < n; i++)
        t[i] = (uint32_t)(((uint64_t)i * 7919u + 13u) % nb);
    *dev = (uint32_t *)(P->aux + off);
    cudaError_t e = cudaMemcpy(*dev, t, (size_t)n * 4, cudaMemcpyHostToDevice);
    free(t);
    if (e != cudaSuccess)
        return dkv_err_set(err, DKV_EIO, "dkv profile: block table upload: %s", cudaGetErrorString(e));
    return DKV_OK;
}

/* ---- attention */

typedef struct attn_arg {
    heads                h;
    uint32_t             rows;   /* query rows of all items */
    dkv_cuda_attn_batch  b;
    const void          *meta;
    const uint32_t      *table;
} attn_arg;

static dkv_status attn_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err)
{
    const attn_arg *a = arg;
    uint32_t QD = a->h.H * a->h.D, KD = a->h.Hkv * a->h.D, QKV = QD + 2 * KD;
    dkv_bf16 *qkv = pr_in(P, (size_t)a->rows * QKV * 2, rep, 0);
    dkv_cuda_kv_pool pool = pool_of(P, a->h);
    dkv_cuda_attn_batch_args x = {.out = (dkv_bf16 *)P->out, .q = qkv, .ldq = QKV, .ldo = QD, .n_heads = a->h.H,
                                  .n_kv_heads = a->h.Hkv, .head_dim = a->h.D, .k_own = qkv + QD,
                                  .v_own = qkv + QD + KD, .ld_own = QKV, .pool = &pool, .block_table = a->table,
                                  .layer = rep % POOL_LAYERS, .batch = &a->b, .meta = a->meta};
    return dkv_cuda_attention_batch(&x, P->st, err);
}

static const char *const attn_fields[] = {"q_rows", "kv_tokens", "heads", "kv_heads", "head_dim", "mode"};

/* A step's attention of Q query rows in all, each attending K keys, as the engine's steps make it:
 * Q >= K, Refresh-like: Q / K items of K rows attending their own K rows (the last item takes the
 * remainder); Q < K, Reuse-like: ceil(Q / 32) items of the block's 32 queries (the last one the
 * remainder) attending K cached keys from the pool (dual).  prefix (mode 3, Q >= 64, K >= 128):
 * ceil(Q / 64) items of 64 queries attending K - 64 cached keys from the pool and their own 64 rows,
 * as prefix-cache Reuse items (the block and the generated suffix after it) run: the kernel's second
 * launch group, 64-row tiles, with a cache. */
static uint32_t attn_items(uint32_t Q, uint32_t K, bool prefix)
{
    return prefix ? (Q + 63) / 64 : !prefix && Q >= K ? Q / K : (Q + 31) / 32;
}

static bool attn_fits(const prof_ctx *P, heads h, uint32_t Q, uint32_t K)
{
    uint32_t QKV = (h.H + 2 * h.Hkv) * h.D;
    return (size_t)(Q + K) * QKV * 2 <= P->slab_bytes / 2 && (size_t)Q * h.H * h.D * 2 <= P->out_bytes;
}

/* The items, block table and metadata of attn_case's step into *a (the pool and aux areas) */
static dkv_status attn_prepare(prof_ctx *P, heads h, uint32_t Q, uint32_t K, bool prefix, attn_arg *ap, dkv_err *err)
{
    bool refresh = !prefix && Q >= K;
    uint32_t n = attn_items(Q, K, prefix), q = prefix ? 64 : refresh ? K : 32;
    PR_TRY(pr_pool(P, err));
    uint32_t nb = refresh ? 0 : (K + BT - 1) / BT;   /* prefix items read K - 64 <= K cached keys */
    attn_arg a = {.h = h, .rows = Q + K};
    dkv_cuda_attn_item *it = calloc(n, sizeof *it);
    if (!it)
        return dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
    for (uint32_t i = 0; i < n; i++) {
        uint32_t qi = i == n - 1 ? Q - i * q : q;   /* the last item takes the remainder */
        it[i] = (dkv_cuda_attn_item){.q_row = i * q, .n_q = qi, .own_row = i * q,
                                     .n_own = prefix ? qi : refresh ? K : 0,
                                     .n_cache = prefix ? K - qi : refresh ? 0 : K, .table_off = i * nb};
    }
    uint32_t *table = NULL;
    void *host = NULL;
    dkv_status st = upload_table(P, h, n * nb + 1, 0, &table, err);
    if (st == DKV_OK)
        st = dkv_cuda_attn_batch_plan(&a.b, it, n, h.H, h.D, NULL, 0, err);
    size_t off = ((size_t)(n * nb + 1) * 4 + 255) / 256 * 256;
    if (st == DKV_OK && off + a.b.bytes > PR_AUX_BYTES)
        st = dkv_err_set(err, DKV_EINVAL, "dkv profile: attention metadata of %zu bytes", a.b.bytes);
    if (st == DKV_OK && !(host = aligned_alloc(64, (a.b.bytes + 63) / 64 * 64)))
        st = dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
    if (st == DKV_OK)
        st = dkv_cuda_attn_batch_plan(&a.b, it, n, h.H, h.D, host, a.b.bytes, err);
    if (st == DKV_OK && cudaMemcpy(P->aux + off, host, a.b.bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        st = dkv_err_set(err, DKV_EIO, "dkv profile: attention metadata upload failed");
    free(host);
    free(it);
    if (st != DKV_OK)
        return st;
    a.meta = P->aux + off, a.table = table;
    *ap = a;
    return DKV_OK;
}

static dkv_status attn_case(prof_ctx *P, heads h, uint32_t Q, uint32_t K, bool prefix, dkv_err *err)
{
    uint32_t n = attn_items(Q, K, prefix);
    double fl = 4.0 * Q * (double)K * h.H * h.D, by = 2.0 * ((double)Q * h.H * h.D * 2 + (double)n * K * h.Hkv * h.D * 2);
    double e = pr_est(fl, by, 2);
    if (!attn_fits(P, h, Q, K) || !pr_want(P, e))
        return DKV_OK;
    attn_arg a;
    PR_TRY(attn_prepare(P, h, Q, K, prefix, &a, err));
    uint32_t launches = (a.b.n_tiles[0] > 0) + (a.b.n_tiles[1] > 0);
    double f[6] = {Q, K, h.H, h.Hkv, h.D, prefix ? 3 : 0};
    dkv_prof_table *t = pr_table(P, "attn", attn_fields, 6,
                                 "dkv_cuda_attention_batch (one layer of a step): q_rows query rows in all, each "
                                 "attending kv_tokens keys; q_rows >= kv_tokens: q_rows / kv_tokens Refresh-like items "
                                 "attending their own rows; q_rows < kv_tokens: items of 32 queries (dual Reuse) reading "
                                 "kv_tokens keys from the pool (t-major, 32-token blocks); mode 3: items of 64 "
                                 "queries (prefix Reuse) reading kv_tokens - 64 keys from the pool and their own 64 "
                                 "rows; extra items: the items");
    t->extra[0] = "items";
    PR_TRY(pr_measure(P, t, f, launches, e, attn_call, &a, err));
    t->rows[t->n - 1].x[0] = n;
    return DKV_OK;
}

dkv_status pr_attn_sustain(prof_ctx *P, uint32_t mi, uint32_t Q, uint32_t K, dkv_err *err)
{
    const dkv_model *m = &P->o->models[mi];
    heads h = {m->n_heads, m->n_kv_heads, m->head_dim};
    if (!attn_fits(P, h, Q, K))
        return DKV_OK;
    attn_arg a;
    memset(&a, 0, sizeof a);
    if (!P->dry)
        PR_TRY(attn_prepare(P, h, Q, K, false, &a, err));
    return pr_sustain(P, mi, DKV_PROF_SUSTAIN_ATTN, Q, K, 0, 0, attn_call, &a, err);
}

/* The attention rows: the common grid plus every Reuse-like item count from 1 to 16 and 20, 28
 * (32 rows an item): the kernel's grid (splits x items x heads CTAs) crosses a wave of the GPU at
 * counts the powers-of-two grid does not hold, and an interpolation across that step was 17-31 % off
 * at 7 and 13-14 items on the H200 (device call 23, scripts/attn_bench.sh). */
static uint32_t attn_rows(const prof_ctx *P, const uint32_t **rows)
{
    static const uint32_t full[] = {16,  32,  48,  64,  96,  128, 160, 192,  224,  256,  288,  320,  352,  384,
                                    416, 448, 480, 512, 640, 768, 896, 1024, 1536, 2048, 3072, 4096, 6144, 8192};
    if (P->o->quick)
        return pr_rows(P, rows);
    *rows = full;
    return (uint32_t)(sizeof full / sizeof full[0]);
}

/* Clusters of each split count (1-8) that fit on the GPU at once, per launch group, for the head
 * sizes measured: a launch of more runs in waves, which the simulator needs for head counts the
 * profile does not hold (docs/COST_MODEL.md "Attention of another head configuration"). */
static dkv_status attn_waves(prof_ctx *P, const heads *hs, uint32_t nh, dkv_err *err)
{
    for (uint32_t c = 0; c < nh && !P->dry; c++) {
        uint32_t d = hs[c].D == 128;
        if (P->p->attn_clusters[d][0][0] > 0)
            continue;   /* this head size is done */
        char list[2][96];
        for (int g = 0; g < 2; g++)
            for (uint32_t s = 1, o = 0; s <= 8; s++) {
                uint32_t *n = &P->p->attn_clusters[d][g][s - 1];
                PR_TRY(dkv_cuda_attention_clusters(hs[c].D, g, s, n, err));
                o += (uint32_t)snprintf(list[g] + o, sizeof list[g] - o, "%s%u", s > 1 ? " " : "", *n);
            }
        pr_say(P, "profile: attn: head_dim %u: clusters at once by splits 1-8: %s (32-query items), %s (others)",
               hs[c].D, list[0], list[1]);
    }
    return DKV_OK;
}

dkv_status pr_sec_attn(prof_ctx *P, dkv_err *err)
{
    static const uint32_t Ks[] = {128, 256, 512, 1024, 2048, 4096}, Kq[] = {256, 2048};
    heads hs[8];
    uint32_t nh = head_cfgs(P, hs), nK = P->o->quick ? 2 : 6;
    PR_TRY(attn_waves(P, hs, nh, err));
    const uint32_t *K = P->o->quick ? Kq : Ks, *rows;
    uint32_t nr = attn_rows(P, &rows);
    for (uint32_t c = 0; c < nh; c++)
        for (uint32_t i = 0; i < nr; i++)
            for (uint32_t j = 0; j < nK; j++) {
                PR_TRY(pr_case(P, attn_case(P, hs[c], rows[i], K[j], false, err), err));
                if (rows[i] >= 64 && K[j] >= 128)
                    PR_TRY(pr_case(P, attn_case(P, hs[c], rows[i], K[j], true, err), err));
            }
    return DKV_OK;
}

/* ---- RoPE + KV store of every computed row (the backend's fused kernel) */

typedef struct store_arg {
    heads           h;
    uint32_t        T;
    const uint32_t *table, *pos;
} store_arg;

static dkv_status store_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err)
{
    const store_arg *a = arg;
    uint32_t QKV = (a->h.H + 2 * a->h.Hkv) * a->h.D;
    dkv_cuda_kv_pool pool = pool_of(P, a->h);
    dkv_bf16 *qkv = pr_in(P, (size_t)a->T * QKV * 2, rep, 0);
    return dkv_cuda_rope_kv_store_at(&pool, a->table, rep % POOL_LAYERS, qkv, QKV, a->pos, a->pos, a->T, a->h.H,
                                     500000.0f, P->st, err);
}

dkv_status pr_sec_kv_store(prof_ctx *P, dkv_err *err)
{
    static const char *const fields[] = {"rows", "heads", "kv_heads", "head_dim"};
    heads hs[8];
    uint32_t nh = head_cfgs(P, hs);
    const uint32_t *rows;
    uint32_t nr = pr_rows(P, &rows);
    for (uint32_t c = 0; c < nh; c++)
        for (uint32_t i = 0; i < nr; i++) {
            heads h = hs[c];
            uint32_t T = rows[i], QKV = (h.H + 2 * h.Hkv) * h.D;
            double e = pr_est(0, 2.0 * T * QKV * 2, 1);
            if (!pr_want(P, e))
                continue;
            PR_TRY(pr_pool(P, err));
            store_arg a = {.h = h, .T = T};
            uint32_t *table;
            PR_TRY(upload_table(P, h, (T + BT - 1) / BT, 0, &table, err));
            uint32_t *pos = malloc((size_t)T * 4);
            if (!pos)
                return dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
            for (uint32_t t = 0; t < T; t++)
                pos[t] = t;
            cudaError_t ce = cudaMemcpy(P->aux + ((size_t)64 << 20), pos, (size_t)T * 4, cudaMemcpyHostToDevice);
            free(pos);
            PR_CU(ce);
            a.table = table, a.pos = (const uint32_t *)(P->aux + ((size_t)64 << 20));
            double f[4] = {T, h.H, h.Hkv, h.D};
            dkv_prof_table *t = pr_table(P, "kv_store", fields, 4,
                                         "dkv_cuda_rope_kv_store_at: RoPE of the q and k heads of `rows` rows and the "
                                         "store of their K and V into the pool (the backend's one launch per layer)");
            PR_TRY(pr_case(P, pr_measure(P, t, f, 1, e, store_call, &a, err), err));
        }
    return DKV_OK;
}

/* ---- the sparse selection of one item: scores of its L keys by the block's B queries, top-k, pack */

typedef struct sel_arg {
    heads           h;
    uint32_t        L, keep;
    bool            shared;
    const uint32_t *table;
    float          *score, *ws;
    uint32_t       *sel;
    size_t          ws_bytes;
} sel_arg;

static dkv_status sel_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err)
{
    const sel_arg *a = arg;
    uint32_t QD = a->h.H * a->h.D, KD = a->h.Hkv * a->h.D, QKV = QD + 2 * KD, B = BT;
    dkv_cuda_kv_pool pool = pool_of(P, a->h);
    dkv_bf16 *q = pr_in(P, (size_t)a->L * QKV * 2, rep, 0), *k = q + QD, *v = q + QD + KD;
    PR_TRY(dkv_bk_scores(P->blas, a->score, q + (size_t)(a->L - B) * QKV, QKV, B, k, QKV, a->L, a->h.H, a->h.Hkv,
                         a->h.D, a->ws, a->ws_bytes, P->st, err));
    PR_TRY(dkv_cuda_topk(a->sel, a->score, a->h.Hkv, a->L, a->keep, a->L - B, a->L, a->shared, P->st, err));
    return dkv_bk_pack_paged(&pool, a->table, rep % POOL_LAYERS, k, v, QKV, a->sel, a->keep, a->shared, P->st, err);
}

/* The selection's key counts: multiples of 256 (3,328: 13 x 256) and, since session 13, the alignment
 * anchors (multiples of 32 off the powers of two, so that anchor + 16 sorts as many slots as the
 * anchor) each followed by anchor + 1, 2, 4, 8, 16: one row of every alignment class of the key count
 * beside its aligned partner (docs/COST_MODEL.md "Unaligned key counts").  --quick: 512, 2048, and
 * 768 with 769 and 772.  Into L (at most SEL_MAX_KEYS); the count. */
#define SEL_MAX_KEYS 40
static uint32_t sel_keys(const prof_ctx *P, uint32_t *L)
{
    static const uint32_t base[] = {256, 512, 1024, 2048, 3328, 4096}, anchors[] = {384, 768, 1536, 3072};
    static const uint32_t offs[] = {0, 1, 2, 4, 8, 16}, qbase[] = {512, 2048}, qoffs[] = {0, 1, 4};
    bool q = P->o->quick;
    uint32_t n = 0, nb = q ? 2 : 6, na = q ? 1 : 4, no = q ? 3 : 6;
    for (uint32_t i = 0; i < nb; i++)
        L[n++] = q ? qbase[i] : base[i];
    for (uint32_t a = 0; a < na; a++)
        for (uint32_t o = 0; o < no; o++)
            L[n++] = (q ? 768 : anchors[a]) + (q ? qoffs[o] : offs[o]);
    return n;
}

dkv_status pr_sec_select(prof_ctx *P, dkv_err *err)
{
    static const char *const fields[] = {"rows", "keys", "keep", "heads", "kv_heads", "head_dim"};
    uint32_t L[SEL_MAX_KEYS];
    heads hs[8];
    uint32_t nh = head_cfgs(P, hs), nL = sel_keys(P, L);
    for (uint32_t c = 0; c < nh; c++)
        for (uint32_t i = 0; i < nL; i++) {
            heads h = hs[c];
            uint32_t keep = (L[i] - BT) / 2;   /* rho 0.5 of the keys outside the block */
            double e = pr_est(2.0 * BT * L[i] * h.H * h.D, 4.0 * h.H * BT * L[i] * 2 + 4.0 * keep * h.Hkv * h.D, 5);
            if (!pr_want(P, 2 * e))
                continue;
            PR_TRY(pr_pool(P, err));
            sel_arg a = {.h = h, .L = L[i], .keep = keep};
            uint32_t *table;
            PR_TRY(upload_table(P, h, (keep + BT - 1) / BT, 0, &table, err));
            a.table = table;
            a.ws_bytes = dkv_bk_scores_workspace_bytes(BT, L[i], h.H);
            char *x = P->aux + ((size_t)64 << 20);
            a.score = (float *)x, a.sel = (uint32_t *)(x + ((size_t)4 << 20));
            a.ws = (float *)(x + ((size_t)8 << 20));
            if (a.ws_bytes > ((size_t)120 << 20))
                continue;
            double f[6] = {BT, L[i], keep, h.H, h.Hkv, h.D};
            dkv_prof_table *t = pr_table(P, "kv_gather", fields, 6,
                                         "the sparse selection of one item and layer (dkv_bk_scores, dkv_cuda_topk, "
                                         "dkv_bk_pack_paged: the backend's 5 launches): `rows` block queries score "
                                         "`keys` keys, `keep` (half of those outside the block) kept per head; extra "
                                         "shared_s: the same with one set for every head (shared retention)");
            t->extra[0] = "shared_s";
            dkv_prof_table tmp = {.name = "kv_gather_shared", .n_fields = 6};
            a.shared = true;
            dkv_status st = pr_measure(P, &tmp, f, 5, e, sel_call, &a, err);
            double sh = tmp.n ? tmp.rows[0].median_s : -1;   /* -1: the shared variant was refused */
            free(tmp.rows);
            P->sec_rows -= tmp.n;
            PR_TRY(pr_case(P, st, err));
            a.shared = false;
            size_t before = t->n;
            PR_TRY(pr_case(P, pr_measure(P, t, f, 5, e, sel_call, &a, err), err));
            if (t->n > before)
                t->rows[t->n - 1].x[0] = sh;
        }
    return DKV_OK;
}

/* ---- a whole layer, sustained: the forward's kernels of one layer in order (cuda/backend_fwd.c: rmsnorm, q|k|v,
 * attention, o, rmsnorm, gate|up, SwiGLU, down; the RoPE-store left out, a few percent of a layer) at T rows, the
 * attention as attn_case's step of T query rows against K keys (T < K: Reuse items of 32 queries reading K cached
 * keys; T >= K: Refresh items of K rows attending their own) */
typedef struct layer_all_arg {
    gemm_arg g[4];
    ew_arg   norm, swiglu;
    attn_arg a;
} layer_all_arg;

static dkv_status layer_all_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err)
{
    layer_all_arg *l = arg;
    PR_TRY(pr_ew_call(P, &l->norm, rep, err));
    PR_TRY(pr_gemm_call(P, &l->g[0], rep, err));
    PR_TRY(attn_call(P, &l->a, rep, err));
    PR_TRY(pr_gemm_call(P, &l->g[1], rep, err));
    PR_TRY(pr_ew_call(P, &l->norm, rep, err));
    PR_TRY(pr_gemm_call(P, &l->g[2], rep, err));
    PR_TRY(pr_ew_call(P, &l->swiglu, rep, err));
    return pr_gemm_call(P, &l->g[3], rep, err);
}

dkv_status pr_layer_sustain(prof_ctx *P, uint32_t mi, uint32_t T, uint32_t K, double gap_s, dkv_err *err)
{
    const dkv_model *m = &P->o->models[mi];
    heads h = {m->n_heads, m->n_kv_heads, m->head_dim};
    uint32_t F = m->ffn;
    layer_all_arg l = {.norm = {0, T, m->hidden, 0, 0}, .swiglu = {2, T, F, 0, 0}};
    pr_layer_gemms(m, T, l.g);
    if (!attn_fits(P, h, T, K) || (size_t)T * 2 * F * 2 > P->out_bytes || (size_t)T * F * 2 > ((size_t)1 << 30))
        return DKV_OK;
    if (!P->dry)
        PR_TRY(attn_prepare(P, h, T, K, false, &l.a, err));
    if (gap_s >= 0)
        return pr_sustain(P, mi, DKV_PROF_SUSTAIN_DUTY, T, K, gap_s, m->n_layers, layer_all_call, &l, err);
    return pr_sustain(P, mi, DKV_PROF_SUSTAIN_LAYER, T, K, 0, 0, layer_all_call, &l, err);
}
