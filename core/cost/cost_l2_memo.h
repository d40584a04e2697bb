/* cost_l2_memo.h - what the L2 replay (cost_l2.c) and its memo (cost_l2_memo.c) share; not a public header: the
 * memo's public side is cost.h's dkv_cost_l2_memo.  docs/COST_MODEL.md "The replay's memo". */
#ifndef DKV_COST_L2_MEMO_H
#define DKV_COST_L2_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "cost/cost.h"

/* What the replay reads of a step's items besides their rows: the bytes of K and V it stores, of the items' own K
 * and V, and of the cached K and V the attention streams, and whether a selection runs (cost_l2.c replay_inputs). */
typedef struct l2_inputs {
    double stored, own, cached;
    bool   select;
} l2_inputs;

/* The classes the replay counts, in the memo's order. */
#define L2_MODELLED_N 8
extern const int l2_modelled[L2_MODELLED_N];

#define L2_MEMO_KEY 48   /* doubles a key holds at most (a step of more items' logit rows replays) */

/* The replay's inputs as a key into k (L2_MEMO_KEY doubles); its length, 0 when it does not fit (no memo). */
uint32_t l2_memo_key(const dkv_step_plan *plan, const dkv_cost_step *cs, const l2_inputs *in, double *k);
/* A hit: the stored classes' bytes into lay / once (indexed by class), true.  A miss: false, *slot where
 * l2_memo_put stores the replay's.  Another model or GPU (profile, L2, partitions, SMs) than the memo's clears it. */
bool l2_memo_get(dkv_cost_l2_memo *mm, const dkv_model *m, const dkv_cost_hw *hw, double parts, double sms,
                 const double *k, uint32_t n, dkv_cost_class *lay, dkv_cost_class *once, void **slot);
void l2_memo_put(dkv_cost_l2_memo *mm, void *slot, const double *k, uint32_t n, const dkv_cost_class *lay,
                 const dkv_cost_class *once);

#endif
