/* sim.h - the simulator backend: the time of a step plan from its counts (core/cost: FLOPs,
 * HBM bytes and launches per kernel class, docs/COST_MODEL.md) and a PCIe model.
 *
 * Roofline, per kernel class c of the plan's counts:
 *
 *     time(c) = scale_c * max(FLOPs / (peak * flops_eff), bytes_fast / hbm_bw + segments)
 *               + launches * launch_c
 *
 * where segments are the class's traffic that does not stream (core/cost's segments): cached-KV
 * reads and KV stores at the GPU preset's bw_curve efficiency for the item's contiguous run
 * length (the layout policy's output), zero-copy host reads at the pinned host-to-device rate.
 * scale_c and launch_c are the preset's calibrated kclass entry for class c (dkv calibrate,
 * docs/COMPARE.md); uncalibrated classes have scale 1 and the preset's launch_overhead_s, and an
 * explicit launch_overhead_s option overrides launch_c for all.  Layers are identical, so a
 * layer class is costed once and multiplied by n_layers.
 *
 * PCIe: xfers cross at the preset's pinned or pageable rates per direction; when both
 * directions carry pinned traffic in one step the total is capped by pcie_bidir_pinned.
 * Pageable copies are synchronous in CUDA and are therefore costed as blocking.
 *     step time = t_blocking_copies + max(compute, t_async_copies)
 * (async copies overlap the step's kernels; blocking ones are serial to them).
 *
 * With a measured profile (gpu->profile, docs/PROFILE_FORMAT.md) a class's time comes from the
 * profile's tables where they cover the shape (sim_profile.c) and from the roofline above where
 * not; dkv_step_cost.roofline_s says how much of compute_s came from the roofline.  The profile's
 * host table gives dkv_step_cost.host_s (the engine's host time after the step unless
 * scheduler.step_host_s overrides it).
 *
 * Ownership: dkv_sim_backend_new fills a dkv_backend that owns its context; release it with
 * dkv_backend_free.
 */
#ifndef DKV_SIM_SIM_H
#define DKV_SIM_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/backend.h"

/* How copies share the step with compute (docs/COST_MODEL.md, "Copies"). */
typedef enum dkv_sim_copy_model {
    DKV_SIM_COPY_OVERLAP = 0, /* ideal: pinned non-blocking copies overlap the step's own compute */
    DKV_SIM_COPY_STREAM       /* as the CUDA backend runs them: one in-order copy stream; fetches
                                 before the step's kernels (which wait for them), offloads and
                                 compressed results after them, overlapping later steps */
} dkv_sim_copy_model;
extern const dkv_names dkv_sim_copy_model_names;   /* "overlap", "stream" (util/names.h) */

typedef struct dkv_sim_options {
    double launch_overhead_s; /* per kernel launch; < 0: the GPU preset's value (default -1) */
    double gemm_eff;          /* fraction of flops_bf16 GEMMs reach (default 1.0; 0 -> 1.0) */
    double attn_eff;          /* fraction of flops_bf16 attention reaches (default 1.0; 0 -> 1.0) */
    bool   kernel_records;    /* emit per-kernel-class records per step through setup.on_kernel */
    bool   l2_records;        /* emit the L2 replay's kernels of every step through setup.on_kernel (records
                                 with l2_seq >= 1, backend.h; the replay's memo is not used: every step is
                                 replayed, about 2x the simulation's time on varied batches) */
    dkv_sim_copy_model copy_model;   /* default DKV_SIM_COPY_OVERLAP (Lua: STREAM for a profiled GPU) */
    bool   first_use;         /* charge the profile's first-use cost of each new shape; default true */
    bool   warm_gemms;        /* with first_use: the CUDA backend's GEMM warm-up (dkv.execute's
                                 warm_gemms, default true there too) ran, so a GEMM shape of at most
                                 DKV_GEMM_WARM_MAX_ROWS rows (core/model/gemm_warm.h) has no first use:
                                 the backend plans it with its warm bucket's algorithm; default true */
    bool   warm_compressor;   /* with first_use and warm_gemms: the CUDA backend also created and ran its
                                 low-rank compressor at begin (since session 36, when the offload policy can
                                 order COMPRESS), so the first compression has no first use; false: it costs
                                 the profile's first_use.compress_s, as for runs recorded before; default true */
    struct dkv_sim_warm *warm;   /* with first_use: the shapes already warm, shared by the runs that
                                 use it (they run one after another in one process, as hw_lib's
                                 points do on the GPU); each run adds its own.  NULL (default):
                                 every run starts cold, like a fresh process */
    double kernel_scale;      /* the GPU at hand's kernel times over the profile's (or the roofline's):
                                 every kernel class's time is multiplied by it; first use, host time and
                                 copies are not.  A machine calibration (docs/COST_MODEL.md "Machine
                                 calibration": 1 / (1 + the in-sample step bias on this machine));
                                 default 1; 0 -> 1 */
} dkv_sim_options;

/* A set of warm shapes (first-use costs, docs/COST_MODEL.md "Cold shapes"): GEMM (class, rows),
 * attention modes and the other classes' first kernel, per model shape.  Safe to share between
 * threads.  dkv_sim_warm_free(NULL) is a no-op. */
typedef struct dkv_sim_warm dkv_sim_warm;
dkv_status dkv_sim_warm_new(dkv_sim_warm **out, dkv_err *err);
void       dkv_sim_warm_free(dkv_sim_warm *w);
uint32_t   dkv_sim_warm_count(dkv_sim_warm *w);   /* shapes in the set */

/* Defaults as documented above. */
dkv_sim_options dkv_sim_options_default(void);

/* Creates a simulator backend.  opts may be NULL (defaults). */
dkv_status dkv_sim_backend_new(const dkv_sim_options *opts, dkv_backend *out, dkv_err *err);

/* Costs one plan directly (what run_step does), without a backend object; for tests and tools.
 * shared_weights as in dkv_backend_setup.instances.  rec/user optional (per-kernel-class records). */
dkv_status dkv_sim_cost_plan(const dkv_model *m, const dkv_gpu *g, const dkv_sim_options *opts,
                             const dkv_step_plan *plan, dkv_step_cost *out, dkv_kernel_fn rec, void *user,
                             dkv_err *err);

#endif
