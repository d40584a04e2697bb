/* profile_misc.c - `dkv profile`'s other sections: the elementwise kernels (rmsnorm, RoPE, SwiGLU,
 * embedding), the low-rank compressor of progressive offload, the copy engine alone and beside a
 * GEMM loop, and the host's enqueue time per launch. */
#include <stdlib.h>
#include <string.h>

#include "cuda/backend_internal.h"
#include "cuda/lowrank.h"
#include "cuda/profile_internal.h"

/* ---- elementwise: kind 0 rmsnorm, 1 rope (without store), 2 swiglu, 3 embedding, 4 the per-step
 * bookkeeping (dkv_bk_unmask over `rows` items of a 32-token block; reset is the same size).  The
 * residual add has no kernel: the o and down GEMMs fuse it (beta 1). */

#define EW_VOCAB 126464u

dkv_status pr_ew_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err)
{
    const ew_arg *a = arg;
    dkv_bf16 *o = (dkv_bf16 *)P->out;
    switch (a->kind) {
    case 0:
        return dkv_cuda_rmsnorm(o, pr_in(P, (size_t)a->T * a->C * 2, rep, 0), pr_in(P, (size_t)a->C * 2, rep, 1), a->T,
                                a->C, 1e-5f, P->st, err);
    case 1:
        return dkv_cuda_rope(pr_in(P, (size_t)a->T * a->C * 2, rep, 0), a->C, (const uint32_t *)P->aux, a->T, a->heads,
                             a->hd, 500000.0f, P->st, err);
    case 2: {
        dkv_bf16 *gu = pr_in(P, (size_t)a->T * a->C * 4, rep, 0);
        return dkv_cuda_swiglu(o, gu, gu + a->C, 2 * a->C, a->T, a->C, P->st, err);
    }
    case 4: {
        const char *x = P->aux + ((size_t)128 << 20);
        return dkv_bk_unmask((const dkv_bk_item *)x, a->T, (const uint32_t *)(x + (1 << 20)),
                             (const float *)(x + (2 << 20)), 0, P->st, err);
    }
    default:
        return dkv_cuda_embedding(o, (const uint32_t *)P->aux, pr_in(P, (size_t)EW_VOCAB * a->C * 2, rep, 0), a->T,
                                  a->C, EW_VOCAB, P->st, err);
    }
}

static dkv_status ew_case(prof_ctx *P, ew_arg a, dkv_err *err)
{
    static const char *const fields[] = {"kind", "rows", "cols"};
    double bytes = a.kind == 4 ? 64.0 * a.T : (double)a.T * a.C * 2 * (a.kind == 2 ? 3 : 2);
    double e = pr_est(0, bytes, 1);
    if ((size_t)a.T * a.C * 2 > P->out_bytes || !pr_want(P, e))
        return DKV_OK;
    PR_TRY(pr_pool(P, err));
    dkv_prof_table *t = pr_table(P, "elementwise", fields, 3,
                                 "kind 0 dkv_cuda_rmsnorm (rows, hidden), 1 dkv_cuda_rope (rows, (heads + kv_heads) x "
                                 "head_dim; the backend's path without a KV store), 2 dkv_cuda_swiglu (rows, ffn), 3 "
                                 "dkv_cuda_embedding (rows, hidden), 4 dkv_bk_unmask (rows = items, cols 1); the "
                                 "residual add has no kernel (fused into the o and down GEMMs)");
    double f[3] = {a.kind, a.T, a.C};
    return pr_case(P, pr_measure(P, t, f, 1, e, pr_ew_call, &a, err), err);
}

/* 64 items of a 32-token block for dkv_bk_unmask at aux + 128 MiB: canvases, argmax, conf after them */
static dkv_status bookkeeping_items(prof_ctx *P, dkv_err *err)
{
    char *x = P->aux + ((size_t)128 << 20);
    dkv_bk_item it[64];
    for (uint32_t i = 0; i < 64; i++)
        it[i] = (dkv_bk_item){.tokens = (uint32_t *)(x + (3 << 20)) + (size_t)i * 4096, .block_start = 1024,
                              .block_len = 32, .reset = 0, .n_unmask = 4, .logit_row = i * 32};
    PR_CU(cudaMemcpy(x, it, sizeof it, cudaMemcpyHostToDevice));
    PR_CU(cudaMemset(x + (1 << 20), 0, 1 << 20));   /* argmax: token 0 */
    float *conf = malloc(64 * 32 * 4);
    if (!conf)
        return dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
    for (uint32_t i = 0; i < 64 * 32; i++)
        conf[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    cudaError_t e = cudaMemcpy(x + (2 << 20), conf, 64 * 32 * 4, cudaMemcpyHostToDevice);
    free(conf);
    PR_CU(e);
    PR_CU(cudaMemset(x + (3 << 20), 0, (size_t)64 * 4096 * 4));   /* canvases: token 0 = the mask id given */
    PR_CU(cudaDeviceSynchronize());   /* cudaMemset runs on the legacy stream; the kernels on a non-blocking one */
    return DKV_OK;
}

static uint32_t add_unique(uint32_t *v, uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] == x)
            return n;
    v[n] = x;
    return n + 1;
}

dkv_status pr_sec_elementwise(prof_ctx *P, dkv_err *err)
{
    const uint32_t *rows;
    uint32_t nr = pr_rows(P, &rows), C[8], nc = 0, F[8], nf = 0;
    if (!P->dry) {   /* token ids < EW_VOCAB and positions for RoPE (aux: the first 32 KiB) */
        PR_TRY(pr_pool(P, err));
        uint32_t *h = malloc(8192 * 4);
        if (!h)
            return dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
        for (uint32_t i = 0; i < 8192; i++)
            h[i] = (i * 2654435761u) % EW_VOCAB % 4096;   /* < every position bound and vocabulary */
        cudaError_t e = cudaMemcpy(P->aux, h, 8192 * 4, cudaMemcpyHostToDevice);
        free(h);
        PR_CU(e);
    }
    if (!P->dry)
        PR_TRY(bookkeeping_items(P, err));
    static const uint32_t items[] = {1, 4, 16, 64};
    for (uint32_t i = 0; i < (P->o->quick ? 2u : 4u); i++)
        PR_TRY(ew_case(P, (ew_arg){4, items[i], 1, 0, 0}, err));
    for (uint32_t i = 0; i < P->o->n_models && nc < 6; i++) {
        nc = add_unique(C, nc, P->o->models[i].hidden);
        nf = add_unique(F, nf, P->o->models[i].ffn);
    }
    if (!P->o->quick) {
        nc = add_unique(C, nc, 2048), nc = add_unique(C, nc, 8192);
        nf = add_unique(F, nf, 8192), nf = add_unique(F, nf, 24576);
    }
    for (uint32_t i = 0; i < nr; i++) {
        uint32_t T = rows[i];
        for (uint32_t c = 0; c < nc; c++) {
            PR_TRY(ew_case(P, (ew_arg){0, T, C[c], 0, 0}, err));
            PR_TRY(ew_case(P, (ew_arg){3, T, C[c], 0, 0}, err));
        }
        for (uint32_t c = 0; c < nf; c++)
            PR_TRY(ew_case(P, (ew_arg){2, T, F[c], 0, 0}, err));
        for (uint32_t m = 0; m < P->o->n_models; m++) {
            const dkv_model *md = &P->o->models[m];
            uint32_t hh = md->n_heads + md->n_kv_heads;
            PR_TRY(ew_case(P, (ew_arg){1, T, hh * md->head_dim, hh, md->head_dim}, err));
        }
    }
    return DKV_OK;
}

/* ---- low-rank compression (progressive offload's middle phase): the projection and its bf16
 * staging, as the backend's compress() runs them (the gather before it, one copy kernel, is not
 * included) */

typedef struct lr_arg {
    dkv_cuda_lowrank *lr;
    uint32_t          m, n, batch, rank;
} lr_arg;

static dkv_status lr_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err)
{
    const lr_arg *a = arg;
    const dkv_bf16 *A = pr_in(P, (size_t)a->batch * a->m * a->n * 2, rep, 0);
    float *Q = (float *)P->out, *B = Q + (size_t)a->batch * a->m * a->rank, *re = B + (size_t)a->batch * a->rank * a->n;
    dkv_bf16 *st = (dkv_bf16 *)P->pool;
    PR_TRY(dkv_cuda_lowrank_compress(a->lr, A, a->m, a->n, a->batch, a->rank, 1, P->o->seed + rep, Q, B, re, err));
    PR_TRY(dkv_cuda_f32_to_bf16(st, Q, (size_t)a->batch * a->m * a->rank, P->st, err));
    return dkv_cuda_f32_to_bf16(st + (size_t)a->batch * a->m * a->rank, B, (size_t)a->batch * a->rank * a->n, P->st,
                                err);
}

/* ---- the low-rank rebuild (decompress on fetch, cuda/arena.c rebuild_lowrank): Q (m x r) B (r x
 * head_dim) of every matrix written into the pool blocks of m tokens, t-major, through a scattered
 * block table, with the model's full matrix count (layers x 2 x kv_heads) */

typedef struct dec_arg {
    dkv_cuda_kv_pool pool;
    const uint32_t  *table;
    uint32_t         m, rank, batch;
} dec_arg;

static dkv_status dec_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err)
{
    const dec_arg *a = arg;
    size_t q = (size_t)a->batch * a->m * a->rank, b = (size_t)a->batch * a->rank * a->pool.head_dim;
    const dkv_bf16 *Q = pr_in(P, (q + b) * 2, rep, 0);
    return dkv_cuda_lowrank_decompress(&a->pool, a->table, Q, Q + q, a->m, a->rank, P->st, err);
}

static dkv_status pr_decompress(prof_ctx *P, dkv_err *err)
{
    static const char *const fields[] = {"rows", "cols", "rank"};
    static const uint32_t ms[] = {256, 1024, 2048}, ranks[] = {38, 64};
    for (uint32_t mi = 0; mi < P->o->n_models; mi++) {
        const dkv_model *md = &P->o->models[mi];
        uint32_t batch = md->n_layers * 2 * md->n_kv_heads, D = md->head_dim;
        dkv_cuda_kv_pool pool = {.base = P->pool, .block_tokens = 32, .n_layers = md->n_layers,
                                 .n_kv_heads = md->n_kv_heads, .head_dim = D, .layout = DKV_KV_TOKEN_MAJOR};
        for (uint32_t i = 0; i < (P->o->quick ? 1u : 3u); i++)
            for (uint32_t r = 0; r < 2; r++) {
                dec_arg a = {pool, NULL, ms[i], ranks[r], batch};
                double rows = (double)batch * a.m, form = rows * a.rank * 2 + (double)batch * a.rank * D * 2;
                double fl = 2.0 * rows * a.rank * D, by = form + rows * D * 2;
                if (a.rank > D || form > (double)P->slab_bytes / 4 || !pr_want(P, pr_est(fl, by, 1)))
                    continue;
                PR_TRY(pr_pool(P, err));
                size_t bb = dkv_cuda_kv_block_bytes(&a.pool);
                uint32_t nb = (uint32_t)(PR_POOL_BYTES / bb), n = (a.m + 31) / 32;
                if (nb < n)
                    continue;
                uint32_t *t = malloc((size_t)n * 4);
                if (!t)
                    return dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
                for (uint32_t j = 0; j < n; j++)
                    t[j] = (uint32_t)(((uint64_t)j * 7919u + 13u) % nb);
                cudaError_t e = cudaMemcpy(P->aux, t, (size_t)n * 4, cudaMemcpyHostToDevice);
                free(t);
                if (e != cudaSuccess)
                    return dkv_err_set(err, DKV_EIO, "dkv profile: block table upload: %s", cudaGetErrorString(e));
                a.table = (const uint32_t *)P->aux;
                double f[3] = {rows, D, a.rank};
                dkv_prof_table *tb = pr_table(P, "decompress", fields, 3,
                                              "dkv_cuda_lowrank_decompress (the backend's rebuild_lowrank): bf16 Q "
                                              "(m x rank) B (rank x cols) of every matrix into the pool blocks of m "
                                              "tokens (t-major, bf16, a scattered block table): rows = m x layers x 2 "
                                              "x kv_heads, cols = head_dim; extra batch");
                tb->extra[0] = "batch";
                size_t before = tb->n;
                PR_TRY(pr_case(P, pr_measure(P, tb, f, 1, pr_est(fl, by, 1), dec_call, &a, err), err));
                if (tb->n > before)
                    tb->rows[tb->n - 1].x[0] = batch;
            }
    }
    return DKV_OK;
}

dkv_status pr_sec_compress(prof_ctx *P, dkv_err *err)
{
    static const char *const fields[] = {"rows", "cols", "rank"};
    static const uint32_t ms[] = {256, 1024, 2048}, ranks[] = {38, 64};
    dkv_cuda_lowrank *lr = NULL;
    dkv_status st = DKV_OK;
    for (uint32_t mi = 0; st == DKV_OK && mi < P->o->n_models; mi++) {
        const dkv_model *md = &P->o->models[mi];
        uint32_t batch = md->n_layers * 2 * md->n_kv_heads, D = md->head_dim;
        for (uint32_t i = 0; st == DKV_OK && i < (P->o->quick ? 1u : 3u); i++)
            for (uint32_t r = 0; st == DKV_OK && r < 2; r++) {
                lr_arg a = {NULL, ms[i], D, batch, ranks[r]};
                double A = (double)batch * a.m * D, fl = 2.0 * A * a.rank * 4, by = A * 2 * 6;
                size_t qb = ((size_t)batch * a.m * a.rank + (size_t)batch * a.rank * D + batch) * 4;
                if (a.rank > D || qb > P->out_bytes || A * 2 > P->slab_bytes || !pr_want(P, pr_est(fl, by, 15)))
                    continue;
                if (!lr && (st = dkv_cuda_lowrank_new(P->st, 2048, 128, DKV_LOWRANK_MAX_RANK, 256, &lr, err)) != DKV_OK)
                    break;
                if ((st = pr_pool(P, err)) != DKV_OK)
                    break;
                a.lr = lr;
                double f[3] = {(double)a.m * batch, D, a.rank};
                dkv_prof_table *t = pr_table(P, "compress", fields, 3,
                                             "dkv_cuda_lowrank_compress (randomized range finder, 1 power iteration) "
                                             "then the two fp32 -> bf16 stagings (the backend's compress() less its "
                                             "gather): rows = the rows of all the matrices (tokens x layers x 2 x "
                                             "kv_heads: batch matrices of rows / batch tokens each), cols = head_dim; "
                                             "extra batch; launches: the backend's count less the gather");
                t->extra[0] = "batch";
                size_t before = t->n;
                st = pr_case(P, pr_measure(P, t, f, 15, pr_est(fl, by, 15), lr_call, &a, err), err);
                if (st == DKV_OK && t->n > before)
                    t->rows[t->n - 1].x[0] = batch;
            }
    }
    if (lr) {
        cudaStreamSynchronize(P->st);
        dkv_cuda_lowrank_free(lr);
    }
    return st == DKV_OK ? pr_decompress(P, err) : st;
}
