/* model.h - model shapes and GPU descriptions, and the byte and FLOP arithmetic on them.
 *
 * Pure computation.  Presets live as data (datasets/presets/{model,gpu}/<name>.lua) and are
 * turned into these structs by the Lua layer (core/lua), which checks every field; C code and
 * tests may also fill the structs directly.  Every byte count in dkv derives from here.
 */
#ifndef DKV_MODEL_MODEL_H
#define DKV_MODEL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/names.h"
#include "util/status.h"

typedef enum dkv_dtype {
    DKV_DTYPE_BF16 = 0,
    DKV_DTYPE_FP16,
    DKV_DTYPE_FP32,
    DKV_DTYPE_FP8
} dkv_dtype;

uint32_t    dkv_dtype_bytes(dkv_dtype t);
extern const dkv_names dkv_dtype_names;                 /* "bf16", "fp16", "fp32", "fp8" (names.h) */
const char *dkv_dtype_name(dkv_dtype t);

/* A LLaDA/Dream-style transformer: bidirectional attention, RMSNorm, RoPE, SiLU-gated FFN
 * (gate and up projections, then down), untied LM head unless tied_embeddings. */
typedef struct dkv_model {
    char     name[64];
    uint32_t n_layers;
    uint32_t hidden;        /* d_model */
    uint32_t ffn;           /* FFN intermediate size */
    uint32_t n_heads;       /* query heads */
    uint32_t n_kv_heads;    /* KV heads (== n_heads without grouped-query attention) */
    uint32_t head_dim;
    uint32_t vocab;
    uint32_t mask_id;       /* the [MASK] token id */
    uint32_t max_len;       /* longest canvas the model supports, tokens */
    double   rope_theta;
    bool     tied_embeddings;
    bool     qkv_bias;      /* Dream (Qwen2) has q/k/v biases */
    dkv_dtype weight_dtype;
    dkv_dtype kv_dtype;
    dkv_dtype act_dtype;
    char     tokenizer[16]; /* the tokenizer dkv knows for it ("byte"; "" or "none": token ids only;
                             * core/workload/tokenizer.h) */
} dkv_model;

/* Checks dimensions (non-zero, heads divide, head_dim*n_heads == hidden unless documented). */
dkv_status dkv_model_validate(const dkv_model *m, dkv_err *err);

uint64_t dkv_model_params(const dkv_model *m);              /* parameters, incl. embeddings */
uint64_t dkv_model_layer_params(const dkv_model *m);        /* one transformer layer */
uint64_t dkv_model_weight_bytes(const dkv_model *m);        /* params * weight dtype */
uint64_t dkv_model_kv_bytes_per_token_layer(const dkv_model *m); /* K+V, one layer */
uint64_t dkv_model_kv_bytes_per_token(const dkv_model *m);  /* K+V, all layers */
uint64_t dkv_model_logit_row_bytes(const dkv_model *m);     /* vocab * act dtype */

/* FLOPs of one layer's kernel classes for q query rows attending a keys, and of the LM head over
 * `rows` logit rows (2 FLOP per multiply-add): the one formula per class.  core/cost counts a
 * step plan's kernels with these; the two totals below are their sums. */
double dkv_model_qkv_flops(const dkv_model *m, double q);
double dkv_model_o_flops(const dkv_model *m, double q);
double dkv_model_ffn_flops(const dkv_model *m, double q);       /* gate + up + down */
double dkv_model_attn_flops(const dkv_model *m, double q, double a);
double dkv_model_lm_head_flops(const dkv_model *m, double rows);

/* Dense FLOPs of one forward for q query tokens attending a key tokens, without and with the LM
 * head over `logit_rows` rows: sums of the class formulas above. */
double dkv_model_layer_flops(const dkv_model *m, uint64_t q, uint64_t a);
double dkv_model_forward_flops(const dkv_model *m, uint64_t q, uint64_t a, uint64_t logit_rows);

/* One point of a bandwidth-efficiency curve: a contiguous access run of run_bytes achieves
 * `efficiency` (0..1] of the copy bandwidth.  Interpolated log-linearly in run_bytes. */
typedef struct dkv_bw_point {
    double run_bytes;
    double efficiency;
} dkv_bw_point;

#define DKV_GPU_CURVE_MAX 16
#define DKV_GPU_KCLASS_MAX 16   /* >= the engine's kernel classes (engine/backend.h) */

/* A kernel class's calibrated cost (dkv calibrate, docs/COMPARE.md): the simulator charges
 * time = scale * roofline(flops, bytes) + launches * launch_s for that class. */
typedef struct dkv_gpu_kclass {
    double scale;     /* > 0: measured time over the roofline time (1 = at the roofline) */
    double launch_s;  /* >= 0: fixed cost per launch of the class */
} dkv_gpu_kclass;

typedef struct dkv_gpu {
    char     name[64];
    double   hbm_bytes;           /* device memory, bytes */
    double   hbm_bw;              /* bytes/s, measured device copy bandwidth (read + write) */
    double   flops_bf16;          /* FLOP/s, dense bf16 GEMM, measured where available */
    double   flops_fp32;          /* FLOP/s, plain fp32 */
    double   pcie_h2d_pinned;     /* bytes/s */
    double   pcie_d2h_pinned;
    double   pcie_bidir_pinned;   /* both directions at once, total */
    double   pcie_h2d_pageable;
    double   pcie_d2h_pageable;
    double   launch_overhead_s;   /* per kernel */
    double   malloc_s;            /* cudaMalloc of a small/medium block */
    double   free_s;
    double   cost_per_hour;       /* $ per GPU-hour, for cost per token */
    uint32_t n_sms;
    double   l2_bytes;
    uint32_t l2_partitions;       /* L2 halves that each cache what their SMs read (A100/H100/H200: 2; 0 = 1):
                                     data read from both sides is held twice (core/cost/cost_l2.c) */
    /* dLLM-Serve per-GPU defaults */
    uint32_t max_num_logits;
    uint32_t max_num_batched_tokens;
    double   retention;
    uint32_t n_bw_curve;
    dkv_bw_point bw_curve[DKV_GPU_CURVE_MAX];  /* ascending run_bytes */
    /* per-kernel-class calibration: bit c of kclass_set marks kclass[c] (engine/backend.h order)
     * as given; unset classes cost at scale 1 with launch_overhead_s per launch */
    uint32_t kclass_set;
    dkv_gpu_kclass kclass[DKV_GPU_KCLASS_MAX];
    /* measured profile (docs/PROFILE_FORMAT.md, core/cost/profile.h): its name ("" = the roofline
     * only) and the loaded tables, borrowed from whoever loaded them (the Lua state) */
    char     profile_name[64];
    const struct dkv_profile *profile;
    /* the preset's own statement of how far its simulated results may be off (its `expected_error`, "" when it
     * has none), carried into every simulated run as the attribute gpu_expected_error (docs/HDF5_SCHEMA.md) */
    char     expected_error[1024];
    /* its memory section (PROFILE_FORMAT.md "memory"), copied at load; mem_measured false: none */
    bool     mem_measured;
    double   mem_context_bytes, mem_libraries_bytes, mem_blas_handle_bytes, mem_first_launch_bytes;
} dkv_gpu;

dkv_status dkv_gpu_validate(const dkv_gpu *g, dkv_err *err);

/* Efficiency (0..1] for a contiguous run of run_bytes, from the curve (1.0 when empty). */
double dkv_gpu_bw_efficiency(const dkv_gpu *g, double run_bytes);

/* dLLM-Serve budget rules: usable = HBM - weights - margin*HBM, split kv_frac : (1-kv_frac).
 * Defaults: margin 0.10, kv_frac 0.7.  Fails (DKV_ENOMEM) when the weights do not fit. */
typedef struct dkv_budget {
    double usable_bytes;
    double kv_bytes;
    double act_bytes;
    double weight_bytes;
    double margin_bytes;
} dkv_budget;

dkv_status dkv_budget_compute(const dkv_model *m, const dkv_gpu *g, double margin, double kv_frac,
                              dkv_budget *out, dkv_err *err);

#endif
