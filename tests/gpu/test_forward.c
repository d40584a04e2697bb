/* test_forward.c - a full decoding step of each cache mode on the GPU (dkv_cuda_step, composed
 * from the kernels) against core/ref's dkv_ref_step on a small GQA model with the same (bf16-
 * rounded) weights: Refresh and Reuse steps of none, prefix, dual and sparse (per-head and
 * shared, rho = 1 and 0.5).  The block's final hidden rows are compared; the picked tokens must
 * match the reference's up to near-ties of the logits.
 * Prints "SKIP: ..." and exits 77 without a usable GPU; exits 1 when any check fails. */
#include "gpu_check.h"

#include "ref/ref.h"

enum { L = 160, S = 128, B = 16, BT = 16, NB = 10 };   /* L >= 128: Refresh takes the dense path */

static dkv_model tiny(void)
{
    dkv_model m = {.name = "tiny-gqa", .n_layers = 2, .hidden = 256, .ffn = 512, .n_heads = 4, .n_kv_heads = 2,
                   .head_dim = 64, .vocab = 1000, .mask_id = 999, .max_len = 256, .rope_theta = 10000.0,
                   .qkv_bias = true};
    return m;
}

static dkv_status round_bf16(void *ctx, const char *name, float *data, uint32_t d0, uint32_t d1)
{
    (void)ctx, (void)name;
    for (size_t i = 0; i < (size_t)d0 * (d1 ? d1 : 1); i++)
        data[i] = h_bf2f(h_f2bf(data[i]));
    return DKV_OK;
}

typedef struct fixture {
    dkv_model         m;
    dkv_ref_weights  *rw;
    dkv_ref_kv       *rkv;
    dkv_cuda_ctx     *ctx;
    dkv_cuda_weights *dw;
    dkv_cuda_scratch *scr;
    dkv_cuda_kv_pool  pool;
    dkv_cuda_seq      seq;
    uint32_t          tok[L];
    uint32_t         *d_tok, *d_am;
    float            *d_conf;
    dkv_bf16         *d_hid;
    dkv_bf16         *kp[2], *vp[2];
} fixture;

static void setup(fixture *f, dkv_rng *r)
{
    memset(f, 0, sizeof *f);
    f->m = tiny();
    OK(dkv_ref_weights_new(&f->m, 1e-5f, &f->rw, &err));
    dkv_ref_weights_randomize(f->rw, dkv_rng_u64(r));
    dkv_ref_weights_foreach(f->rw, round_bf16, NULL);
    OK(dkv_ref_kv_new(&f->m, L, &f->rkv, &err));
    OK(dkv_cuda_ctx_new(0, &f->ctx, &err));
    OK(dkv_cuda_weights_new(&f->m, 1e-5f, &f->dw, &err));
    OK(dkv_cuda_weights_upload(f->dw, f->rw, &err));
    OK(dkv_cuda_scratch_new(&f->m, L, 8, &f->scr, &err));
    f->pool = (dkv_cuda_kv_pool){NULL, BT, f->m.n_layers, f->m.n_kv_heads, f->m.head_dim, DKV_KV_LAYER_MAJOR, DKV_KV_ELEM_BF16, NULL};
    f->pool.base = dev_alloc(dkv_cuda_kv_block_bytes(&f->pool) * NB);
    poison(f->pool.base, dkv_cuda_kv_block_bytes(&f->pool) * NB);
    uint32_t table[NB] = {7, 2, 9, 0, 5, 3, 8, 1, 6, 4}, pos[L];
    for (int i = 0; i < L; i++) {
        pos[i] = i;
        f->tok[i] = i >= S ? f->m.mask_id : (uint32_t)dkv_rng_below(r, f->m.vocab - 1);
    }
    f->tok[S + 3] = 17;   /* a decoded token inside the block */
    f->seq.tokens = f->d_tok = upload(f->tok, sizeof f->tok);
    f->seq.pos = upload(pos, sizeof pos);
    f->seq.block_table = upload(table, sizeof table);
    for (int l = 0; l < 2; l++) {
        f->kp[l] = dev_alloc((size_t)f->m.n_kv_heads * L * f->m.head_dim * 2);
        f->vp[l] = dev_alloc((size_t)f->m.n_kv_heads * L * f->m.head_dim * 2);
    }
    f->seq.k_packed = f->kp, f->seq.v_packed = f->vp, f->seq.packed_cap = L;
    f->d_am = dev_alloc(B * 4), f->d_conf = dev_alloc(B * 4), f->d_hid = dev_alloc((size_t)B * f->m.hidden * 2);
}

static void teardown(fixture *f)
{
    dkv_ref_weights_free(f->rw);
    dkv_ref_kv_free(f->rkv);
    dkv_cuda_weights_free(f->dw);
    dkv_cuda_scratch_free(f->scr);
    dkv_cuda_ctx_free(f->ctx);
    cudaFree(f->pool.base), cudaFree(f->d_tok), cudaFree((void *)f->seq.pos), cudaFree((void *)f->seq.block_table);
    for (int l = 0; l < 2; l++)
        cudaFree(f->kp[l]), cudaFree(f->vp[l]);
    cudaFree(f->d_am), cudaFree(f->d_conf), cudaFree(f->d_hid);
}

/* One step on both; compares the block's hidden rows and the picked tokens. */
static void both(fixture *f, dkv_cache_mode mode, uint32_t step, double rho, bool shared, double tol)
{
    dkv_ref_step_args a = {.mode = mode, .canvas_len = L, .block_start = S, .block_len = B, .step = step,
                           .retention = rho, .shared_set = shared, .logit_chunk = 6};
    uint32_t C = f->m.hidden, V = f->m.vocab, ram[B];
    float rhid[B * 256], rconf[B], *rlog = malloc((size_t)B * V * 4);
    dkv_ref_step_out o = {.block_hidden = rhid, .block_logits = rlog, .argmax = ram, .conf = rconf};
    OK(dkv_ref_step(f->rw, f->rkv, &a, f->tok, &o, &err));
    CK(cudaMemcpy(f->d_tok, f->tok, sizeof f->tok, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
    poison(f->d_hid, (size_t)B * C * 2), poison(f->d_am, B * 4), poison(f->d_conf, B * 4);
    OK(dkv_cuda_step(f->ctx, f->dw, &f->pool, &f->seq, f->scr, &a, f->d_am, f->d_conf, f->d_hid, &err));
    float *hid = download_bf16(f->d_hid, (size_t)B * C), *conf = download(f->d_conf, B * 4);
    uint32_t *am = download(f->d_am, B * 4);
    char name[96];
    snprintf(name, sizeof name, "step %s%s rho %.1f, step %u (%s)", dkv_cache_mode_name(mode),
             mode == DKV_CACHE_SPARSE ? (shared ? " shared" : " per-head") : "", rho, step,
             o.phase == DKV_REF_PHASE_REUSE ? "Reuse" : "Refresh");
    check(name, hid, rhid, (size_t)B * C, tol, tol);
    int same = 0, near = 1;
    for (int t = 0; t < B; t++) {
        same += am[t] == ram[t];
        near &= am[t] < V && rlog[(size_t)t * V + am[t]] >= rlog[(size_t)t * V + ram[t]] - 0.05f;
    }
    char line[96];
    snprintf(line, sizeof line, "%d/%d tokens as the reference (others within 0.05 logit)", same, B);
    check_true("  argmax", near, line);
    check("  confidence", conf, rconf, B, 0.02, 0.05);
    free(hid), free(conf), free(am), free(rlog);
}

int main(void)
{
    skip_without_gpu();
    dkv_rng r;
    dkv_rng_seed(&r, 777);
    fixture f;
    setup(&f, &r);
    const double tol = 0.06;   /* bf16 activations through 2 layers, both ends normalised */
    both(&f, DKV_CACHE_NONE, 0, 0, false, tol);
    both(&f, DKV_CACHE_PREFIX, 0, 0, false, tol);
    both(&f, DKV_CACHE_PREFIX, 1, 0, false, tol);
    both(&f, DKV_CACHE_DUAL, 0, 0, false, tol);
    both(&f, DKV_CACHE_DUAL, 1, 0, false, tol);
    f.tok[S] = 5, f.tok[S + 9] = 123;   /* tokens decoded: the Reuse step sees the new block */
    both(&f, DKV_CACHE_DUAL, 2, 0, false, tol);
    for (int shared = 0; shared < 2; shared++)
        for (int i = 0; i < 3; i++)
            both(&f, DKV_CACHE_SPARSE, i, 1.0, shared, tol);
    for (int i = 0; i < 3; i++)
        both(&f, DKV_CACHE_SPARSE, i, 0.5, false, 2 * tol);
    dkv_ref_step_args bad = {.mode = DKV_CACHE_SPARSE, .canvas_len = L, .block_start = S, .block_len = B,
                             .step = 2, .retention = 0.25};
    dkv_status s = dkv_cuda_step(f.ctx, f.dw, &f.pool, &f.seq, f.scr, &bad, f.d_am, f.d_conf, NULL, &err);
    check_true("sparse Reuse without its selection", s == DKV_ESTATE, err.msg);
    teardown(&f);
    printf("%s: %d check(s) failed\n", g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}
