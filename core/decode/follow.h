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
 * Selection replay: a sparse block's selecting step keeps, per layer, `keep` keys outside the
 * block by the block queries' attention mass (one set per KV head, or one set shared by every
 * head).  Two precisions can keep different keys near the top-k boundary, after which the
 * attention sees different keys.  A trajectory may carry every selection of the leader
 * (dkv_follow_sel); the follower then keeps the recorded keys (dkv_follow_select) and reports,
 * per set, whether its own top-k would have differed and the boundary margin of its own scores
 * (dkv_select_boundary, dkv_select_report).
 *
 * Pure computation. */
#ifndef DKV_DECODE_FOLLOW_H
#define DKV_DECODE_FOLLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "util/status.h"

/* One recorded selection: at engine step `step`, layer `layer`, n_sets sets (1: one set shared
 * by every KV head; else one per KV head, in head order) of keep canvas positions each, pos
 * (n_sets, keep), ascending within a set. */
typedef struct dkv_follow_sel {
    uint64_t        step;
    uint32_t        layer, n_sets, keep;
    const uint32_t *pos;
} dkv_follow_sel;

/* One request's recorded trajectory: gen generated positions (canvas position P + g). */
typedef struct dkv_follow {
    const uint32_t *tokens;   /* (gen) token committed at generated position g */
    const uint32_t *steps;    /* (gen) engine step index at which it was committed; UINT32_MAX: never */
    uint32_t gen;
    bool     has_sel;         /* the trajectory carries the leader's selections: every selecting step
                                 keeps the recorded keys (a missing record is an error); false: the
                                 follower selects by its own scores (token replay only) */
    const dkv_follow_sel *sel;   /* (n_sel) in any order; (step, layer) unique */
    uint32_t n_sel;
} dkv_follow;

/* What a backend reports per selecting (step, item, layer) (its on_select hook; arrays valid
 * during the call): the sets kept, and per set whether the backend's own top-k differs from the
 * kept set, with its own boundary margin (dkv_select_boundary). */
typedef struct dkv_select_report {
    uint64_t        step_index;
    uint32_t        request, layer, n_sets, keep;
    bool            followed;   /* kept came from the trajectory (dkv_follow.has_sel) */
    const uint32_t *kept;       /* (n_sets, keep) canvas positions kept, ascending within a set */
    const uint8_t  *differs;    /* (n_sets) 1: this backend's own top-k is another set */
    const float    *margin;     /* (n_sets) own score of the lowest kept key - of the highest dropped one */
    const float    *mag;        /* (n_sets) the larger |score| of those two keys */
    float           lam;        /* the largest attention logit q.k / sqrt(D) of the block's query rows
                                   (every head), this backend's: the scale of the scores' rounding
                                   error (docs/CPU.md, "Selection replay") */
} dkv_select_report;
typedef void (*dkv_select_fn)(void *user, const dkv_select_report *r);

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

/* Selection replay of one (step, layer) of request `request`: the step keeps n_sets sets of keep
 * keys of the canvas [0, L) outside the block [block_start, block_start + B).  *pos = NULL when
 * f->has_sel is false (the caller keeps its own selection); else the recorded (n_sets, keep)
 * positions.  Errors (DKV_EINVAL, naming the request, step and layer): no record of this (step,
 * layer), or one whose set count or keep differs, or a position >= L, inside the block, or not
 * ascending within its set (the schedules or the retention settings differ). */
dkv_status dkv_follow_select(const dkv_follow *f, uint32_t request, uint64_t step, uint32_t layer, uint32_t n_sets,
                             uint32_t keep, uint32_t L, uint32_t block_start, uint32_t B, const uint32_t **pos,
                             dkv_err *err);

/* One set's boundary by a backend's own selection scores: score (n) of the keys j = 0 .. n-1 of
 * the rows [q0, q0 + n) (those in [lo, hi), the block, are no candidates), own (keep) the
 * backend's own top-k (indices j, ascending), kept (keep) the canvas positions kept (q0 + j,
 * ascending).  *differs = the two sets differ; *margin = min over kept of score - max over the
 * dropped candidates of score (>= 0 when kept is a top-k of score; < 0: a dropped key outscores
 * a kept one; +INFINITY when keep is 0 or nothing is dropped); *mag = the larger |score| of the
 * two keys (0 with no margin). */
void dkv_select_boundary(const float *score, uint32_t n, uint32_t lo, uint32_t hi, uint32_t q0, const uint32_t *own,
                         const uint32_t *kept, uint32_t keep, uint8_t *differs, float *margin, float *mag);

#endif
