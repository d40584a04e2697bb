/* sim.h - the simulator backend: a roofline cost model of each kernel class plus a PCIe model.
 *
 * For one step plan (all items batched into one forward pass) every kernel class gets FLOPs and
 * HBM bytes (weights, activations, KV, logits), and
 *
 *     time(class) = scale_c * max(FLOPs / (peak * flops_eff), bytes / (hbm_bw * bw_eff))
 *                   + launches * launch_c
 *
 * where bw_eff is 1 for streaming weights and activations and, for cached-KV reads and KV
 * stores, the GPU preset's bw_curve at the item's contiguous run length (the layout policy's
 * output).  scale_c and launch_c are the preset's calibrated kclass entry for class c (dkv
 * calibrate, docs/COMPARE.md); uncalibrated classes have scale 1 and the preset's
 * launch_overhead_s, and an explicit launch_overhead_s option overrides launch_c for all.
 * Layers are identical, so a class is costed once and multiplied by n_layers.
 *
 * Kernel classes and launches follow the CUDA backend's forward (cuda/backend_fwd.c) so a
 * measured run and its simulation pair class by class.  Per layer: QKV (1); RoPE + KV store
 * over all the step's rows (1, when any item stores rows; else RoPE is an elementwise kernel);
 * attention (1, varlen over all items); O projection (1, reads the residual); FFN (2: gate+up,
 * down reading the residual); elementwise (3: two RMSNorms and SiLU(gate)*up, +1 RoPE); a sparse
 * selection (item kv_select_rows > 0) is 5 gather-class kernels per item: scores GEMM into fp32
 * [heads, rows, keys], row statistics, column sums, top-k, pack of the kept K/V.  Once per step:
 * reset + one embedding gather per item + the unmask after the LM head (elementwise), the final
 * norm per item with logit rows and one GEMM + one sampling kernel per logit chunk of at most
 * plan->max_logit_rows rows (LM head; each chunk re-reads the LM-head weights).
 *
 * PCIe: xfers cross at the preset's pinned or pageable rates per direction; when both
 * directions carry pinned traffic in one step the total is capped by pcie_bidir_pinned.
 * Pageable copies are synchronous in CUDA and are therefore costed as blocking.
 *     step time = t_blocking_copies + max(compute, t_async_copies)
 * (async copies overlap the step's kernels; blocking ones are serial to them).
 *
 * Ownership: dkv_sim_backend_new fills a dkv_backend that owns its context; release it with
 * dkv_backend_free.
 */
#ifndef DKV_SIM_SIM_H
#define DKV_SIM_SIM_H

#include <stdbool.h>

#include "engine/backend.h"

typedef struct dkv_sim_options {
    double launch_overhead_s; /* per kernel launch; < 0: the GPU preset's value (default -1) */
    double gemm_eff;          /* fraction of flops_bf16 GEMMs reach (default 1.0; 0 -> 1.0) */
    double attn_eff;          /* fraction of flops_bf16 attention reaches (default 1.0; 0 -> 1.0) */
    bool   kernel_records;    /* emit per-kernel-class records per step through setup.on_kernel */
} dkv_sim_options;

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
