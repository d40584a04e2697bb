/* follow.h - trajectory replay: a backend decodes along a recorded trajectory instead of its own.
 *
 * Two backends that compute in different precisions (the CUDA backend in bf16, the CPU backend in
 * fp32) cannot be compared by free-running decodes: one near-tie of the top two logits flips one
 * token, and every later step sees a different canvas.  A trajectory records, per request and
 * generated position, the engine step at which it was committed and the token it took (what
 * dkv.execute{outputs = true} returns).  A backend given it (its `follow` option) runs every step
 * on the canvas the trajectory implies: at step S the positions recorded at S take their recorded
 * tokens, whatever the backend's own argmax and confidence ranking say, while the backend still
 * reports its own logits of those positions.  The engine's schedule does not depend on the
 * tokens, so the same configuration gives both runs the same steps (step indices, blocks,
 * positions unmasked per step): a recorded step that does not fit is an error, never a silent
 * skip.  Agreement is then the fraction of committed positions where the follower's argmax
 * equals the recorded token, each difference classified by the follower's logit gap
 * z[argmax] - z[recorded] (dkv_logit_top2, docs/CPU.md "CPU against CUDA").
 *
 * Pure computation. */
#ifndef DKV_DECODE_FOLLOW_H
#define DKV_DECODE_FOLLOW_H

#include <stdint.h>

#include "util/status.h"

/* One request's recorded trajectory: gen generated positions (canvas position P + g). */
typedef struct dkv_follow {
    const uint32_t *tokens;   /* (gen) token committed at generated position g */
    const uint32_t *steps;    /* (gen) engine step index at which it was committed; UINT32_MAX: never */
    uint32_t gen;
} dkv_follow;

/* Step step_index of one block: tok (B) holds the canvas positions [block_start, block_start + B)
 * of a request with prompt length P and gen generated positions.  Every position g with
 * steps[g] == step_index takes tokens[g]; *n_out counts them.  Errors (DKV_EINVAL, naming the
 * request, the step and the position): f->gen != gen (a trajectory of another canvas), a
 * recorded position of this step outside the block or not masked in tok, a token >= vocab, and
 * a count other than expect (the backend's own unmask count for the step: the schedules differ);
 * tok is changed only when every check passes. */
dkv_status dkv_follow_apply(const dkv_follow *f, uint32_t request, uint64_t step_index, uint32_t P, uint32_t gen,
                            uint32_t block_start, uint32_t B, uint32_t *tok, uint32_t mask_id, uint32_t vocab,
                            uint32_t expect, uint32_t *n_out, dkv_err *err);

/* One row of logits z (V > 0): its argmax (lowest index of the maximum), the top-2 margin
 * z[argmax] - max_{v != argmax} z[v] (0 for V = 1), and max_v |z[v]|.  Any output may be NULL. */
void dkv_logit_top2(const float *z, uint32_t V, uint32_t *argmax, float *margin, float *absmax);

#endif
