/* profile_internal.h - what the files of `dkv profile` share (cuda/profile*.c): the measurement
 * context, the timing harness and the sections.  Not a public header: see profile.h. */
#ifndef DKV_CUDA_PROFILE_INTERNAL_H
#define DKV_CUDA_PROFILE_INTERNAL_H

#include <cuda_runtime_api.h>

#include "cuda/clock.h"
#include "cuda/dkv_cuda.h"
#include "cuda/profile.h"
#include "cuda/sm_probe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* H200 ceilings for the time estimate only (issue 9's figures; the measurement uses none). */
#define PR_PEAK_FLOPS 790e12
#define PR_PEAK_BW    4.3e12
#define PR_LAUNCH_S   5e-6
#define PR_FIRST_REPS 3   /* warm host-timed calls after the first */
#define PR_SLAB_BYTES ((size_t)4 << 30)   /* random inputs */
#define PR_OUT_BYTES  ((size_t)3 << 29)   /* outputs */
#define PR_POOL_BYTES ((size_t)6 << 30)
/* opts.states (profile.c states()) */
#define PR_STATE_REPS  9       /* calls per state */
#define PR_COOL_LEAD_S 0.03    /* spin before the first cool call */
#define PR_COOL_GAP_S  1.5e-3  /* spin before each cool call */
#define PR_HEAT_FIRST  50      /* heaters before the first hot call */
#define PR_HEATER_S    1.5e-3  /* one heater GEMM (8,192 x 12,288 x 4,096), for the estimate */
#define PR_FLUSH_MIN  DKV_CUDA_L2_FLUSH_MIN /* the L2 flush reads at least this (and twice the L2) */   /* the KV pool of the attention, store and selection sections */

typedef struct prof_ctx {
    const dkv_prof_opts *o;
    dkv_prof     *p;
    bool          dry;              /* estimate only: pr_want adds the case's time and says no */
    int           sec;              /* the running section */
    double        est[DKV_PROF_S_N];
    double        t0;               /* monotonic start */
    bool          stopped;          /* the deadline passed */
    double        last_progress;
    size_t        sec_rows, sec_cases;
    /* device state (not in dry runs) */
    dkv_cuda_ctx *ctx;
    cudaStream_t  st;
    void         *blas;             /* cublasHandle_t for dkv_bk_scores */
    char         *slab;             /* random bf16 inputs, rotated */
    size_t        slab_bytes;
    char         *out;              /* outputs */
    size_t        out_bytes;
    cudaEvent_t  *ev;
    uint32_t      n_ev;
    char         *pool;             /* PR_POOL_BYTES, random (allocated by the first section that needs it) */
    void         *pinned;           /* the copy section's pinned host buffer */
    int           n_copy_big;       /* the compute-beside-copies measurement is done */
    char         *aux;              /* PR_AUX_BYTES of small device arrays (tables, positions, scores) */
    char         *flush;            /* the L2 flush's buffer (NULL: o->l2_warm) */
    size_t        flush_bytes;
    dkv_cuda_clock *clock;          /* the SM clock beside the rows (cuda/clock.h; NULL: not recorded) */
    dkv_sm_probe  *probe;           /* opts.probe: the SMs' own clock over each row's timed calls (NULL: none) */
    dkv_sm_probe  *sprobe[DKV_PROF_SUSTAIN_MAX_WIN];   /* pr_sustain's windows (opened on first use) */
} prof_ctx;

#define PR_AUX_BYTES ((size_t)256 << 20)
/* The pool and aux areas (allocated and filled on first use). */
dkv_status pr_pool(prof_ctx *P, dkv_err *err);

/* One call of the measured entry on P->st for repeat `rep` (inputs rotate with rep). */
typedef dkv_status (*prof_call)(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err);

double pr_now(void);
void   pr_say(prof_ctx *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Time of one call at the ceilings (FLOPs and bytes) plus a launch floor per launch. */
double pr_est(double flops, double bytes, uint32_t launches);
/* Dry run: adds the case's estimated cost and returns false.  Run: false once the deadline has
 * passed (and marks the profile incomplete), true otherwise. */
bool   pr_want(prof_ctx *P, double call_s);
/* A table (created on first use). */
dkv_prof_table *pr_table(prof_ctx *P, const char *name, const char *const *fields, uint32_t n_fields,
                         const char *note);
/* Measures fn as profile.h says and appends a row with the field values f. */
dkv_status pr_measure(prof_ctx *P, dkv_prof_table *t, const double *f, uint32_t launches, double call_s,
                      prof_call fn, void *arg, dkv_err *err);
/* A sustained run of fn (profile.h's dkv_prof_sustained): 3 untimed calls, 8 timed back to back for the calls a
 * window takes, a lead spin, then the windows, each between two probe marks; appends p->sustained.  step_calls > 0
 * (kind duty): steps of step_calls calls instead, each between its own probe marks and synchronised, the host idle
 * gap_s seconds after each.  Dry: adds the run's time to the estimate.  After the deadline: nothing. */
dkv_status pr_sustain(prof_ctx *P, uint32_t model, uint32_t kind, double rows, double keys, double gap_s,
                      uint32_t step_calls, prof_call fn, void *arg, dkv_err *err);
/* An input region of bytes inside the slab for repeat rep and operand slot (256-byte aligned;
 * successive repeats land elsewhere while the slab holds several copies). */
void  *pr_in(prof_ctx *P, size_t bytes, uint32_t rep, uint32_t slot);
/* A shape's outcome: DKV_EINVAL or DKV_ENOMEM (an entry refused the shape, an allocation failed) is
 * logged, counted in p->n_skipped and turned into DKV_OK so the grid goes on; anything else passes. */
dkv_status pr_case(prof_ctx *P, dkv_status st, dkv_err *err);
/* At least n timing events in P->ev. */
dkv_status pr_events(prof_ctx *P, uint32_t n, dkv_err *err);
/* Device scratch of bytes: cudaMalloc'd once per call site by the caller, or this pool. */
dkv_status pr_alloc(void **p, size_t bytes, dkv_err *err);

/* profile_kern.cu */
dkv_status dkv_prof_spin(cudaStream_t s, double seconds, dkv_err *err);

/* The sections (profile_gemm.c, profile_attn.c, profile_misc.c). */
dkv_status pr_sec_gemm(prof_ctx *P, dkv_err *err);
dkv_status pr_sec_lm_head(prof_ctx *P, dkv_err *err);
dkv_status pr_sec_gemm_grid(prof_ctx *P, dkv_err *err);
dkv_status pr_sec_attn(prof_ctx *P, dkv_err *err);
dkv_status pr_sec_kv_store(prof_ctx *P, dkv_err *err);
dkv_status pr_sec_select(prof_ctx *P, dkv_err *err);
dkv_status pr_sec_elementwise(prof_ctx *P, dkv_err *err);
dkv_status pr_sec_compress(prof_ctx *P, dkv_err *err);
dkv_status pr_sec_copy(prof_ctx *P, dkv_err *err);
dkv_status pr_sec_host(prof_ctx *P, dkv_err *err);
dkv_status pr_sec_memory(prof_ctx *P, dkv_err *err);
dkv_status pr_sec_sustained(prof_ctx *P, dkv_err *err);
/* profile_gemm.c: one dkv_cuda_gemm of T x K by N (beta; the bias where the class has one), inputs rotated by rep */
typedef struct gemm_arg {
    uint32_t T, K, N;
    float    beta;
    bool     bias;
} gemm_arg;
dkv_status pr_gemm_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err);
/* profile_gemm.c: model m's layer GEMMs at T rows, in the forward's order: q|k|v (its bias), o (beta 1), gate|up,
 * down (beta 1) */
void pr_layer_gemms(const dkv_model *m, uint32_t T, gemm_arg g[4]);
/* profile_misc.c: one elementwise kernel (kind 0 rmsnorm, 1 rope, 2 swiglu, 3 embedding, 4 unmask) */
typedef struct ew_arg {
    uint32_t kind, T, C, heads, hd;
} ew_arg;
dkv_status pr_ew_call(prof_ctx *P, void *arg, uint32_t rep, dkv_err *err);
/* profile_attn.c: a sustained run of model mi's whole layer at T rows (kind DKV_PROF_SUSTAIN_LAYER); gap_s >= 0: kind
 * DKV_PROF_SUSTAIN_DUTY, steps of the model's layer count of layers with gap_s idle after each */
dkv_status pr_layer_sustain(prof_ctx *P, uint32_t mi, uint32_t T, uint32_t K, double gap_s, dkv_err *err);
/* profile_attn.c: a sustained run (pr_sustain) of model mi's attention as the attention section's row (Q, K) */
dkv_status pr_attn_sustain(prof_ctx *P, uint32_t mi, uint32_t Q, uint32_t K, dkv_err *err);
/* profile_host.c: p->host_resume_s and p->host_handover_s (the host section) */
dkv_status pr_host_handover(prof_ctx *P, dkv_err *err);
/* profile_mem.c: the context right after cudaFree(0); then, right after dkv_cuda_ctx_new, the
 * libraries, one more cuBLAS handle and the first launches */
dkv_status pr_mem_context(prof_ctx *P, dkv_err *err);
dkv_status pr_mem_setup(prof_ctx *P, dkv_err *err);

/* The rows (query tokens) of a step the grids use: M of the GEMMs, T of the elementwise kernels. */
uint32_t pr_rows(const prof_ctx *P, const uint32_t **rows);

#define PR_CU(call)                                                                                   \
    do {                                                                                              \
        cudaError_t e_ = (call);                                                                      \
        if (e_ != cudaSuccess)                                                                        \
            return dkv_err_set(err, DKV_EIO, "dkv profile: %s:%d: %s: %s", __FILE__, __LINE__, #call, \
                               cudaGetErrorString(e_));                                               \
    } while (0)
#define PR_TRY(call)                       \
    do {                                   \
        dkv_status s_ = (call);            \
        if (s_ != DKV_OK)                  \
            return s_;                     \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif
