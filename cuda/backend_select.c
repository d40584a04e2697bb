/* backend_select.c - selection replay and report of the CUDA backend's sparse selecting steps
 * (decode/follow.h, docs/CPU.md "CPU against CUDA"): after the device scored the keys and took
 * its own top-k, the scores and the sets come to the host; each set's boundary margin by the
 * device's own scores is computed there (dkv_select_boundary), and with a trajectory that
 * carries selections the recorded sets replace the device's own before the pack.  Synchronises
 * the stream (agreement runs, not timing runs). */
#include <math.h>
#include <stdlib.h>

#include "cuda/backend_internal.h"

dkv_status bk_select_replay(dkv_cuda_backend *b, const bk_item *x, uint64_t step, uint32_t l, dkv_err *err)
{
    const dkv_follow *f = b->o.follow ? &b->o.follow[x->req] : NULL;
    if (!b->o.on_select && !(f && f->has_sel))
        return DKV_OK;
    uint32_t Hkv = b->m.n_kv_heads, n = x->nq, K = x->keep, n_sets = x->shared_set ? 1 : Hkv;
    uint32_t lo = x->s_b - x->q0, hi = lo + x->B;
    const uint32_t *rec = NULL;
    DKV_TRY(dkv_follow_select(f, x->req, step, l, n_sets, K, b->rq[x->req].L, x->s_b, x->B, &rec, err));
    size_t nk = (size_t)n_sets * K;
    size_t n_st = 2 * (size_t)b->m.n_heads * x->B;   /* dkv_bk_scores' row statistics (max, sum) */
    float *hs = malloc(((size_t)Hkv * n + 2 * (size_t)n_sets + n_st) * sizeof *hs);
    uint32_t *own = malloc((2 * nk + 1) * sizeof *own);
    uint8_t *d = malloc(n_sets);
    dkv_status st = DKV_OK;
    if (!hs || !own || !d) {
        st = dkv_err_set(err, DKV_ENOMEM, "cuda backend: out of memory (selection report)");
        goto out;
    }
    uint32_t *kept = own + nk;
    float *mg = hs + (size_t)Hkv * n;
    DKV_CU_OR(st, cudaMemcpyAsync(hs, b->score, (size_t)Hkv * n * sizeof *hs, cudaMemcpyDeviceToHost, b->st), out);
    if (nk)
        DKV_CU_OR(st, cudaMemcpyAsync(own, b->sel, nk * sizeof *own, cudaMemcpyDeviceToHost, b->st), out);
    float *rs = mg + 2 * n_sets, lam = -INFINITY;   /* stats follow S (H, B, n) in the workspace */
    DKV_CU_OR(st, cudaMemcpyAsync(rs, b->score_ws + (size_t)b->m.n_heads * x->B * n, n_st * sizeof *rs,
                                  cudaMemcpyDeviceToHost, b->st), out);
    DKV_CU_OR(st, cudaStreamSynchronize(b->st), out);
    for (size_t i = 0; i < n_st; i += 2)
        lam = rs[i] > lam ? rs[i] : lam;
    if (x->shared_set)   /* the rows summed in topk_kernel's order (cuda/topk.cu) */
        for (uint32_t j = 0; j < n; j++) {
            float s = 0.0f;
            for (uint32_t g = 0; g < Hkv; g++)
                s += hs[(size_t)g * n + j];
            hs[j] = s;
        }
    for (uint32_t s = 0; s < n_sets; s++) {
        for (uint32_t i = 0; i < K; i++)
            kept[(size_t)s * K + i] = rec ? rec[(size_t)s * K + i] : x->q0 + own[(size_t)s * K + i];
        dkv_select_boundary(hs + (size_t)s * n, n, lo, hi, x->q0, own + (size_t)s * K, kept + (size_t)s * K, K, &d[s],
                            &mg[s], &mg[n_sets + s]);
    }
    if (rec && nk) {   /* the recorded sets replace the device's own (indices relative to q0) */
        for (size_t i = 0; i < nk; i++)
            own[i] = kept[i] - x->q0;
        DKV_CU_OR(st, cudaMemcpyAsync(b->sel, own, nk * sizeof *own, cudaMemcpyHostToDevice, b->st), out);
        DKV_CU_OR(st, cudaStreamSynchronize(b->st), out);
    }
    if (b->o.on_select) {
        dkv_select_report r = {.step_index = step, .request = x->req, .layer = l, .n_sets = n_sets, .keep = K,
                               .followed = rec != NULL, .kept = kept, .differs = d, .margin = mg,
                               .mag = mg + n_sets, .lam = lam};
        b->o.on_select(b->o.on_select_user, &r);
    }
out:
    free(hs);
    free(own);
    free(d);
    return st;
}
