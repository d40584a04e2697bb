/* backend_score.c - options.targets of the CUDA backend: teacher-forced held-out scoring.
 *
 * The device's unmask committed nothing this step (bk_prepare sets n_unmask 0 on the device and
 * keeps the rule's count in bk_item.n_unmask).  After the step each item's block tokens, the fp32
 * logit rows of its block and their confidences (the LM head's, which the device's own unmask
 * ranks by) are copied to the host, and decode/score.h's dkv_score_block, the CPU backend's
 * definition, commits the targets of the most confident masked positions and scores them from the
 * logits; the block goes back to the device canvas, stream-ordered before the next step's kernels.
 * Ranking by the device's confidence makes a run whose targets are this backend's own greedy
 * tokens retrace that decode exactly (tests/gpu/test_backend_score.c checks it).
 * Declared in backend_internal.h. */
#include <stdlib.h>
#include <string.h>

#include "cuda/backend_internal.h"

dkv_status bk_teacher_force(dkv_cuda_backend *b, const dkv_step_plan *plan, dkv_err *err)
{
    const uint32_t V = b->m.vocab;
    uint32_t R = 0, chunk = b->logit_chunk, maxB = 0;
    if (plan->max_logit_rows && plan->max_logit_rows < chunk)
        chunk = plan->max_logit_rows;
    for (uint32_t i = 0; i < plan->n_items; i++) {
        R += b->items[i].R;
        maxB = b->items[i].B > maxB ? b->items[i].B : maxB;
    }
    if (R > chunk)   /* b->logits holds the last LM-head pass only */
        return dkv_err_set(err, DKV_EINVAL, "cuda backend: targets: step %llu has %u logit rows, more than one LM-head "
                           "pass (%u rows: options.max_logit_rows, or the plan's max_logit_rows); scoring needs "
                           "every row of the step in one pass", (unsigned long long)plan->step_index, R, chunk);
    uint32_t *tok = malloc(((size_t)maxB + 1) * sizeof *tok);
    float *lg = malloc(((size_t)maxB * V + 1) * sizeof *lg), *cf = malloc(((size_t)maxB + 1) * sizeof *cf);
    if (!tok || !lg || !cf) {
        free(tok), free(lg), free(cf);
        return dkv_err_set(err, DKV_ENOMEM, "cuda backend: targets: out of host memory");
    }
    dkv_status st = DKV_OK;
    for (uint32_t i = 0; i < plan->n_items && st == DKV_OK; i++) {
        const bk_item *x = &b->items[i];
        const bk_req *r = &b->rq[x->req];
        if (!x->R || !x->n_unmask)
            continue;
        uint32_t *d_blk = b->d_canvas + r->canvas_off + x->s_b, n = 0;
        cudaError_t e = cudaMemcpyAsync(tok, d_blk, (size_t)x->B * sizeof *tok, cudaMemcpyDeviceToHost, b->st);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(lg, b->logits + (size_t)x->blk_row * V, (size_t)x->B * V * sizeof *lg,
                                cudaMemcpyDeviceToHost, b->st);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(cf, b->conf + x->blk_row, (size_t)x->B * sizeof *cf, cudaMemcpyDeviceToHost, b->st);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(b->st);
        if (e != cudaSuccess) {
            st = dkv_err_set(err, DKV_EIO, "cuda backend: targets: copy of step %llu's block: %s",
                             (unsigned long long)plan->step_index, cudaGetErrorString(e));
            break;
        }
        st = dkv_score_block(lg, cf, x->B, V, tok, b->o.targets[x->req] + (x->s_b - r->P), b->mask_id, x->n_unmask,
                             &b->rep.score[x->req], &n, err);
        if (st != DKV_OK) {
            dkv_err_prefix(err, "cuda backend: request %u, step %llu", x->req, (unsigned long long)plan->step_index);
            break;
        }
        e = cudaMemcpyAsync(d_blk, tok, (size_t)x->B * sizeof *tok, cudaMemcpyHostToDevice, b->st);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(b->st);   /* tok is reused by the next item */
        if (e != cudaSuccess)
            st = dkv_err_set(err, DKV_EIO, "cuda backend: targets: write-back of step %llu's block: %s",
                             (unsigned long long)plan->step_index, cudaGetErrorString(e));
    }
    free(tok), free(lg), free(cf);
    return st;
}
