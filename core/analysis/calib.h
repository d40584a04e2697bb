/* calib.h - fitting a GPU preset's cost parameters to measured runs (`dkv calibrate`,
 * docs/COMPARE.md "Calibration").
 *
 * Measurements come from runs saved from dkv.execute with record.kernels = true (steps and
 * kernels tables, the resolved config) and from the text cuda/bench/bwcurve.cu prints.  Fits:
 *
 *   launch overhead   elementwise class records (streaming kernels; kv_store writes short
 *                     runs and belongs to the bw_curve): time_s = n_launches * L + bytes / B,
 *                     least squares over (L, 1/B) with no intercept, relative residuals
 *                     (weights 1 / time_s^2); L >= 0 (else L = 0 and B refitted).  B / hbm_bw is
 *                     the streaming efficiency (reported; the preset keeps its copy bandwidth).
 *   bw_curve          (run_bytes, bytes/s) points: efficiency = min(1, rate / hbm_bw), run
 *                     lengths averaged, made non-decreasing in run length (pool-adjacent-
 *                     violators), at most 16 points (the preset's limit) spread in log scale.
 *   GEMM efficiency   GEMM class records (qkv, o_proj, ffn, lm_head) with the launches taken
 *                     off (t = time_s - n_launches * L): compute-bound ones (flops / peak >=
 *                     bytes / hbm_bw) give flops / (t * flops_bf16), memory-bound ones bytes /
 *                     (t * hbm_bw); medians per (class, M bucket [2^k, 2^(k+1))), M = the
 *                     step's q_tokens (lm_head: logit_rows).  A scalar gemm_eff (flops over
 *                     time of the compute-bound records) is what cfg.sim.gemm_eff takes: the
 *                     preset format has no per-shape field.  Near the ridge point the bound
 *                     is ambiguous (a record limited by memory at a lower compute efficiency
 *                     reads as compute-bound at a higher one).
 *   kernel classes    records paired with the simulator's record of the same step and class
 *                     (dkv_calib_pair_sim; the simulator under an uncalibrated preset gives the
 *                     class's launches n and roofline time r): time_s = a * n + b * r, least
 *                     squares with relative residuals (weights 1 / time_s^2), a >= 0 (else a = 0
 *                     and b refitted); b must come out > 0.  Written as kclass = {<class> =
 *                     {scale = b, launch_s = a}}: the simulator's time for the class becomes
 *                     b * roofline + a * launches (sim/sim.h).  The roofline depends on the
 *                     preset the simulated run used (its bw_curve): simulate the fit runs under
 *                     the preset carrying the other fitted fields (scripts/hw_session.sh post).
 *   PCIe rates        steps with PCIe bytes in one direction only: time = a + bytes / R
 *                     (least squares; a = per-step latency) per direction; steps with both
 *                     directions: (h2d + d2h) / time.  Only runs with policies.offload.pinned.
 *
 * Nothing is fitted from fewer than 2 points; a quantity that cannot be fitted is reported
 * with the reason and left to the base preset.  The caller decides whether to write a preset:
 * dkv_calib_write_preset refuses when nothing was fitted, so no file holds invented numbers.
 *
 *     dkv_calib *c; dkv_calib_new(&c, &err);
 *     dkv_calib_add_run(c, f, "h200:dual", &err);            // a results file opened for reading
 *     dkv_calib_add_bwcurve(c, "bwcurve.txt", &err);
 *     dkv_calib_result res; dkv_calib_fit(c, &res, &err);
 *     dkv_calib_write_preset(c, &res, "datasets/presets/gpu/h200-calibrated.lua", "h200-calibrated",
 *                            "dkv calibrate ...", &err);
 *     dkv_calib_free(c);
 */
#ifndef DKV_ANALYSIS_CALIB_H
#define DKV_ANALYSIS_CALIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/h5.h"
#include "util/status.h"

typedef struct dkv_calib dkv_calib;

dkv_status dkv_calib_new(dkv_calib **out, dkv_err *err);
void dkv_calib_free(dkv_calib *c);   /* accepts NULL */

/* The base preset: name and the figures the fits are relative to.  dkv_calib_add_run takes
 * them from the first run's config (gpu.name, gpu.hbm_bw, gpu.flops_bf16); set them here for
 * measurements without runs.  A later run with another gpu.name is an error. */
dkv_status dkv_calib_set_base(dkv_calib *c, const char *name, double hbm_bw, double flops_bf16, dkv_err *err);

/* Adds the measurements of run `run` of f (opened for reading): its kernels records and steps
 * with PCIe traffic, and the run as a fitting input (file, run, workload fingerprint).
 * Errors: no steps table, no kernels table (record.kernels = true), no config. */
dkv_status dkv_calib_add_run(dkv_calib *c, dkv_h5 *f, const char *run, dkv_err *err);

/* Pairs the kernels records of the run added last (dkv_calib_add_run) with those of `run` of f,
 * the same plan costed by the simulator under an uncalibrated preset (no gpu.kclass), step by step
 * and class by class; what the per-class fit (below) needs.  Errors: no run added yet, no kernels
 * table, a simulated run with a calibrated preset or with sim.gemm_eff / sim.attn_eff set, steps
 * that do not pair (different plans). */
dkv_status dkv_calib_pair_sim(dkv_calib *c, dkv_h5 *f, const char *run, dkv_err *err);

/* Adds the "run <bytes> <GB/s>" lines of cuda/bench/bwcurve.cu's output at path (other lines
 * are ignored; a malformed run line is an error naming path:line). */
dkv_status dkv_calib_add_bwcurve(dkv_calib *c, const char *path, dkv_err *err);

/* Single measurements (what the readers above add; for tests and other sources).
 * dkv_calib_add_kernel_pair: a kernel record with its simulated launches and roofline time. */
typedef struct dkv_calib_kernel {
    uint32_t kind;          /* kernel class (kernels.kind) */
    uint32_t n_launches;
    double time_s, flops, bytes;
    double m_tokens;        /* GEMM rows: step q_tokens (lm_head: logit_rows) */
} dkv_calib_kernel;
dkv_status dkv_calib_add_kernel(dkv_calib *c, const dkv_calib_kernel *k, dkv_err *err);
dkv_status dkv_calib_add_kernel_pair(dkv_calib *c, const dkv_calib_kernel *k, uint32_t n_sim, double roof_s,
                                     dkv_err *err);
dkv_status dkv_calib_add_pcie(dkv_calib *c, double h2d_bytes, double d2h_bytes, double time_s, dkv_err *err);
dkv_status dkv_calib_add_bw(dkv_calib *c, double run_bytes, double bytes_per_s, dkv_err *err);

#define DKV_CALIB_MAX_SHAPES 64
#define DKV_CALIB_MAX_KCLASS 16
#define DKV_CALIB_MAX_CURVE 16

typedef struct dkv_calib_shape {   /* GEMM efficiency of one (class, M bucket, bound) */
    uint32_t kind;
    double m_lo, m_hi;             /* rows in [m_lo, m_hi) */
    bool compute_bound;            /* eff is of flops_bf16 (true) or of hbm_bw (false) */
    size_t n;
    double eff_median, eff_min, eff_max;
} dkv_calib_shape;

typedef struct dkv_calib_result {
    char base[64];
    double hbm_bw, flops_bf16;
    /* launch overhead */
    bool launch_ok;
    size_t launch_n;
    double launch_overhead_s, stream_bw, launch_rms_rel;
    char launch_why[160];
    /* bandwidth curve */
    bool bw_ok;
    size_t bw_n_raw, n_curve;
    double curve_run[DKV_CALIB_MAX_CURVE], curve_eff[DKV_CALIB_MAX_CURVE];
    char bw_why[160];
    /* GEMM efficiency */
    bool gemm_ok;
    size_t gemm_n, n_shapes;
    double gemm_eff;
    dkv_calib_shape shapes[DKV_CALIB_MAX_SHAPES];
    char gemm_why[160];
    /* per kernel class (records paired with a simulated run): time = launch_s * n_sim + scale * roof */
    size_t kclass_n[DKV_CALIB_MAX_KCLASS], kclass_unpaired[DKV_CALIB_MAX_KCLASS];
    bool kclass_ok[DKV_CALIB_MAX_KCLASS];
    double kclass_scale[DKV_CALIB_MAX_KCLASS], kclass_launch_s[DKV_CALIB_MAX_KCLASS];
    double kclass_rms_rel[DKV_CALIB_MAX_KCLASS];   /* rms relative residual of the fit */
    char kclass_why[DKV_CALIB_MAX_KCLASS][96];
    size_t n_paired;
    /* PCIe (pinned) */
    bool h2d_ok, d2h_ok, bidir_ok;
    size_t h2d_n, d2h_n, bidir_n;
    double pcie_h2d, pcie_d2h, pcie_bidir, h2d_latency_s, d2h_latency_s;
    char pcie_why[160];
} dkv_calib_result;

/* Fits everything that has data.  DKV_EINVAL when no base is known (no run added and no
 * dkv_calib_set_base). */
dkv_status dkv_calib_fit(const dkv_calib *c, dkv_calib_result *res, dkv_err *err);

/* Writes the preset file (base = res->base, name, the fitted fields only) with its provenance
 * as Lua comments: date, command, dkv version and commit, the inputs and their workload
 * fingerprints (validation must use other workloads: dkv compare --calibration), the fits
 * with their residuals, and every raw number they were fitted from.  The file is written to
 * "<path>.tmp" and renamed.  DKV_EINVAL when nothing was fitted.  git_commit may be NULL. */
dkv_status dkv_calib_write_preset(const dkv_calib *c, const dkv_calib_result *res, const char *path,
                                  const char *name, const char *command, const char *git_commit, dkv_err *err);

#endif
