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

#endif
