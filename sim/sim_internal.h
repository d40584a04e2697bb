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

/* A launch's geometry for attention of a head configuration the profile lacks (sim_profile.c). */
typedef struct sim_attn_geo {
    double tiles;       /* query tiles */
    double amax;        /* the longest item's keys (the split count's floor of 16 keys a split) */
    double tile_rows;   /* 32 (group 0) or 64 */
    int    group;       /* the kernel's launch group: 0 items of <= 32 queries, 1 the others */
} sim_attn_geo;

/* Seconds of one group per layer (sim_profile.c: the profile's uniform batch at the mean keys,
 * stretched by the longest item's critical path); NAN where the profile does not cover it. */
struct dkv_profile;
double sim_attn_group(const struct dkv_profile *p, const dkv_model *m, const dkv_gpu *g, const sim_attn_grp *x,
                      int md, bool big);

/* The profile's attention mode of prefix-like items (PROFILE_FORMAT.md: items of 64 queries reading
 * the pool and their own rows, the kernel's second launch group with a cache). */
#define SIM_ATTN_MODE_PREFIX 3

/* The SM clock a step runs at (sim_clock.c; docs/COST_MODEL.md "The step's clock"): the recent steps'
 * start, length and the clock their work settles to, newest last (the window form); the followed clock
 * at the end of the last step (the follow form). */
#define SIM_CLOCK_STEPS 64
typedef struct sim_clock {
    double   start[SIM_CLOCK_STEPS], len[SIM_CLOCK_STEPS], mhz[SIM_CLOCK_STEPS];
    uint32_t n;      /* steps pushed (the ring holds the last SIM_CLOCK_STEPS) */
    double   at_s;   /* follow form: the time of the last step's end (n > 0) */
    double   x_mhz;  /* follow form: the clock then */
} sim_clock;

/* With the profile's clock block (info->clock_max_mhz > 0): the clock the step's own work settles to
 * (*settle_mhz, for sim_clock_push), the clock it runs at (window form: the mean over the window of the
 * recent steps' settle clocks, idle time at the maximum; follow form: the mean over the step of a clock
 * that follows the settle clocks with the block's time constants) and each GEMM and attention class's
 * time at it, in t_layer / t_once (NAN entries are left).  Without the block nothing changes and
 * *settle_mhz is 0. */
struct dkv_profile_info;
void sim_clock_apply(const sim_clock *c, const struct dkv_profile_info *in,
                     const dkv_step_plan *plan, const dkv_cost_step *cs, double t_layer[DKV_KCLASS_N],
                     double t_once[DKV_KCLASS_N], double *settle_mhz, double *run_mhz);
/* Records a step that started at start_s and took len_s, its work settling to settle_mhz (0: nothing). */
void sim_clock_push(sim_clock *c, const struct dkv_profile_info *in, double start_s, double len_s, double settle_mhz);

/* The low-rank forms of progressive offload as the CUDA backend moves them (sim_lowrank.c). */
typedef struct sim_lr_req {
    bool     valid;          /* a form of [start, end) blocks is on the host (cuda/arena.c lr_valid) */
    uint32_t start, end, m, r;
    uint64_t plan, form;     /* the COMPRESS order's pcie_bytes; the form's bytes */
} sim_lr_req;

/* Per transfer order of a step: FETCH: raw bytes, form bytes, the rebuild's HBM bytes and its
 * shape (rows = m x matrices, rank; 0: none); COMPRESS: raw = the bytes copied out (form or raw
 * blocks; 0 when nothing is held there); OFFLOAD: raw = the bytes copied out. */
typedef struct sim_lr_x {
    double raw, form, rebuild_bytes, rebuild_rows, rank;
} sim_lr_x;

typedef struct sim_lr {
    bool        on;          /* a block pool and a workload: the backend's geometry is known */
    uint32_t    bt, B, max_L, batch, D, kv_bytes;
    uint64_t    block_bytes;
    size_t      n_req;
    sim_lr_req *rq;
    uint32_t   *prompt;      /* per request: prompt tokens */
    sim_lr_x   *x;
    uint32_t    cap_x;
} sim_lr;

dkv_status sim_lr_begin(sim_lr *s, const dkv_backend_setup *setup, dkv_err *err);
/* The step's orders in the backend's order (fetch, compress, offload), the state updated; *out: one
 * entry per plan->xfers[k], or NULL when the geometry is unknown (plan bytes then). */
dkv_status sim_lr_step(sim_lr *s, const dkv_step_plan *plan, const sim_lr_x **out, dkv_err *err);
void sim_lr_free(sim_lr *s);

#endif
