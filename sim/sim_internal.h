/* sim_internal.h - what sim.c and sim_profile.c share. */
#ifndef DKV_SIM_SIM_INTERNAL_H
#define DKV_SIM_SIM_INTERNAL_H

#include "cost/cost.h"
#include "sim/sim.h"

/* Class times from gpu->profile: t_layer[c] per layer of a layer class, t_once[c] for the
 * once-per-step part; NAN where the profile does not cover the class or shape (and everywhere
 * without a profile). */
void sim_profile_times(const dkv_model *m, const dkv_gpu *g, const dkv_step_plan *plan, const dkv_cost_step *cs,
                       double t_layer[DKV_KCLASS_N], double t_once[DKV_KCLASS_N]);

/* One launch group of the batched attention (cuda/attention.cu): items of at most SIM_ATTN_SMALL_Q
 * queries, or the larger ones, of one attention mode. */
#define SIM_ATTN_SMALL_Q 32
typedef struct sim_attn_grp {
    double rows;    /* query rows of the group's items */
    double qa;      /* sum of q x keys */
    double amax;    /* the largest item's keys */
    double tiles;   /* query tiles (32 rows in the small group, 64 in the other) */
    double cached;  /* query rows of items that also read the pool (prefix Reuse, in the larger group) */
} sim_attn_grp;

/* Seconds of one group per layer (sim_profile.c: the profile's uniform batch at the mean keys,
 * stretched by the longest item's critical path); NAN where the profile does not cover it. */
struct dkv_profile;
double sim_attn_group(const struct dkv_profile *p, const dkv_model *m, const dkv_gpu *g, const sim_attn_grp *x,
                      int md, bool big);

/* The profile's attention mode of prefix-like items (PROFILE_FORMAT.md: items of 64 queries reading
 * the pool and their own rows, the kernel's second launch group with a cache). */
#define SIM_ATTN_MODE_PREFIX 3

#endif
