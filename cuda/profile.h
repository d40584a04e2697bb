/* profile.h - `dkv profile`: the kernels of the CUDA backend timed on the GPU at hand over a grid of
 * shapes, for the simulator's measured cost model (issue 9; the file format is docs/PROFILE_FORMAT.md,
 * written by core/cli/cmd_profile.c).
 *
 * Every measurement calls the same entry the backend calls (dkv_cuda.h, backend_internal.h,
 * lowrank.h) on seeded random device data (no weights files), rotating its inputs through a slab
 * larger than the L2 so repeats do not measure the cache.  Per shape: one first call timed by the
 * host clock with a synchronisation (the cold cost: cuBLASLt's heuristic and plan, lazy module
 * loading), three warm calls timed the same way, `warmup` untimed calls, then `repeats` calls
 * each between two CUDA events, enqueued behind a spin kernel so the host stays ahead of the GPU
 * (the events measure the kernels, not the enqueue): median, p10 and p90 of those.  first_s =
 * first host time - median warm host time.  Before every timed call, outside its events, a kernel
 * reads a buffer of twice the L2 (at least 128 MiB), so every call finds its operands in HBM as a
 * real step does (between two uses of a layer's weights, its KV and the step's inputs the other
 * layers stream through the L2); warm_s is the median of `repeats` more calls without the flush
 * (what the L2 can hold of a call's operands, e.g. the 32 MB o-projection weights, stays there), and
 * stream_s the seconds per call of `repeats` more calls back to back between ONE pair of events, as a
 * step runs its kernels (an event between two kernels costs ~2 us: the GPU drains before the
 * timestamp, so the next launch no longer overlaps the previous kernel's tail; warm_s - stream_s).
 * o.l2_warm: no flush (warm_s NAN), the method of the profiles before 2026-12-02.
 *
 *     dkv_prof_opts o = dkv_prof_opts_default();
 *     o.models = models; o.n_models = 1;                       // exact shapes of these models
 *     dkv_prof *p; dkv_prof_run(&o, &p, &err);                 // o.on_section: after each section
 *     ... p->tables[i], p->copy ...; dkv_prof_free(p);
 *
 * The measurement stops at o.deadline_s (wall seconds since dkv_prof_run started): the section
 * running then is cut, later sections are skipped, and p->complete is false with the reason in
 * p->incomplete (what was measured is kept). */
#ifndef DKV_CUDA_PROFILE_H
#define DKV_CUDA_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DKV_PROF_MAX_FIELDS 8
#define DKV_PROF_MAX_TABLES 16

/* One measured shape: its field values, then the statistics. */
typedef struct dkv_prof_row {
    double   f[DKV_PROF_MAX_FIELDS];
    double   median_s, p10_s, p90_s;   /* seconds per call (event-timed, warm) */
    double   first_s;                  /* first call's extra host-clock seconds over a warm call */
    double   warm_s;                   /* with the L2 flush: the median of `repeats` more calls without
                                          it (operands the previous call left in the L2); else NAN */
    double   stream_s;                 /* with the L2 flush: `repeats` calls back to back between one pair
                                          of events, per call (no event between calls); else NAN */
    uint32_t launches;                 /* kernel launches one call makes */
    double   sm_mhz;                   /* median SM clock while the flushed calls ran (NVML; NAN: not sampled) */
    double   probe_mhz, warm_probe_mhz;  /* opts.probe: the SMs' mean clock over the flushed calls (their flushes
                                          with them) and over the warm ones, from their cycle counters; NAN: none */
    /* opts.states (NAN otherwise): the call in two power states, each flushed and event-timed, the clock
       sampled while the state's work runs (docs/COST_MODEL.md "Clock sensitivity"): cool, each call after
       a one-thread spin (the GPU awake, the clock at its maximum); hot, each right after a heater GEMM
       (the clock power-capped).  Medians. */
    double   cool_s, cool_mhz, hot_s, hot_mhz;
    double   x[2];                     /* the table's extra values (dkv_prof_table.extra) */
} dkv_prof_row;

/* One kernel class: PROFILE_FORMAT.md's kernels.<name>. */
typedef struct dkv_prof_table {
    const char   *name;                /* e.g. "qkv", "attn" (static) */
    const char   *fields[DKV_PROF_MAX_FIELDS];
    uint32_t      n_fields;
    const char   *extra[2];            /* names of up to 2 more values per row (NULL: none) */
    const char   *note;                /* what a row measures (static) */
    dkv_prof_row *rows;
    size_t        n, cap;
} dkv_prof_table;

/* Copy engine: seconds per copy of bytes (pinned), alone and beside a running GEMM loop. */
typedef struct dkv_prof_copy_row {
    uint32_t dir;                      /* 0 h2d, 1 d2h */
    double   bytes, alone_s, contended_s;
} dkv_prof_copy_row;

/* A sustained run (opts.sustain_s, the `sustained` section; docs/COST_MODEL.md "Settle clocks measured"): one
 * shape's call back to back for about sustain_s seconds after a light spin (the GPU awake at its maximum clock), the
 * SMs' own clock (cuda/sm_probe.h) read over each of opts.sustain_windows (default DKV_PROF_SUSTAIN_WIN, at most
 * DKV_PROF_SUSTAIN_MAX_WIN) equal windows of it, in order: the clock that seconds of this work settle at (the last
 * windows) and how it got there (the first; with many short windows, the clock's path after the lead). */
#define DKV_PROF_SUSTAIN_WIN 4
#define DKV_PROF_SUSTAIN_MAX_WIN 64
#define DKV_PROF_SUSTAIN_MAX 64
#define DKV_PROF_SUSTAIN_MAX_GAPS 8
typedef struct dkv_prof_sustained {
    uint32_t model;                       /* index into opts.models */
    uint32_t kind;                        /* DKV_PROF_SUSTAIN_GEMM, _ATTN or _LAYER */
    double   rows, keys;                  /* rows of the step (the GEMMs' M; the attention's query rows); keys: the
                                             attention's cached or own keys per item (0 for the GEMMs) */
    uint32_t calls;                       /* calls back to back */
    double   call_s;                      /* seconds per call over the whole run (two events) */
    double   nvml_mhz;                    /* median NVML SM clock while it ran (0: not sampled) */
    double   mhz[DKV_PROF_SUSTAIN_MAX_WIN];   /* the SMs' clock over each window (0: the probe read nothing) */
    /* kind duty only (0 otherwise): the host's idle between steps asked for, the calls a step (the model's layers),
     * and the wall seconds from one step's start to the next's (the step, the synchronisation, the idle) */
    double   gap_s;
    uint32_t step_calls;
    double   cycle_s;
} dkv_prof_sustained;
enum { DKV_PROF_SUSTAIN_GEMM = 0,  /* the layer's four GEMMs in the forward's order: q|k|v, o, gate|up, down */
       DKV_PROF_SUSTAIN_ATTN = 1,  /* dkv_cuda_attention_batch as the attention section's row of (rows, keys) */
       DKV_PROF_SUSTAIN_LAYER = 2, /* the layer's kernels in order: rmsnorm, q|k|v, attention (rows, keys), o, rmsnorm,
                                      gate|up, SwiGLU, down (the RoPE-store left out) */
       DKV_PROF_SUSTAIN_DUTY = 3   /* opts.sustain_gaps_s: steps of the model's layer count of layer calls, the host
                                      idle gap_s after each (synchronised; the SMs' clock read over each step alone):
                                      the clock against the duty cycle */ };

typedef struct dkv_prof {
    dkv_prof_table    tables[DKV_PROF_MAX_TABLES];
    uint32_t          n_tables;
    dkv_prof_copy_row copy[32];
    uint32_t          n_copy;
    dkv_prof_sustained sustained[DKV_PROF_SUSTAIN_MAX];
    uint32_t          n_sustained;
    double            sustain_s;                          /* opts.sustain_s of the run (0: no sustained section) */
    uint32_t          sustain_windows;                    /* ... its windows a run */
    double            sustain_lead_s;                     /* ... its lead spin */
    double            compute_alone_s, compute_beside_s;   /* the contention GEMM loop, alone / with copies */
    double            host_launch_s, host_gemm_launch_s;   /* host enqueue time per launch (elementwise, GEMM) */
    double            host_resume_s, host_handover_s;      /* GPU idle between two steps of one thread / of two
                                                              threads handing the GPU over (profile_host.c) */
    /* the batched attention kernel's clusters resident at once (cudaOccupancyMaxActiveClusters;
     * PROFILE_FORMAT.md "attn_waves"): [head_dim 64 / 128][launch group][splits - 1]; 0: not measured */
    uint32_t attn_clusters[2][2][8];
    /* memory (profile_mem.c, cudaMemGetInfo; PROFILE_FORMAT.md "memory"), measured at set-up */
    bool     mem_measured;
    double   mem_total_bytes, mem_context_bytes, mem_libraries_bytes, mem_blas_handle_bytes,
             mem_first_launch_bytes, mem_blas_handle_again_bytes;
    /* provenance */
    char     gpu[128], sm[16];
    int      driver, runtime;          /* cudaDriverGetVersion / cudaRuntimeGetVersion */
    double   l2_bytes, hbm_bytes;
    double   flush_bytes;              /* the L2 flush read before every timed call (0: none) */
    uint32_t repeats, warmup;
    double   est_s, wall_s;            /* estimated grid time at the ceilings; measured wall time */
    uint32_t n_skipped;                /* shapes an entry refused (pr_case); the first reason below */
    char     skipped[256];
    bool     complete;
    char     incomplete[256];
} dkv_prof;

/* "gemm", "attn", "layer", "duty" (inline: the profile writer is built without CUDA too) */
static inline const char *dkv_prof_sustain_kind(uint32_t kind)
{
    return kind == DKV_PROF_SUSTAIN_GEMM   ? "gemm"
           : kind == DKV_PROF_SUSTAIN_ATTN ? "attn"
           : kind == DKV_PROF_SUSTAIN_DUTY ? "duty"
                                           : "layer";
}

/* Sections, in run order; opts.sections is a mask of (1u << DKV_PROF_S_*). */
enum {
    DKV_PROF_S_GEMM = 0,     /* qkv, o, ffn: the exact models' projections */
    DKV_PROF_S_LM_HEAD,      /* lm_head: one chunk of dkv_cuda_lm_head_argmax */
    DKV_PROF_S_ATTN,         /* attn: dkv_cuda_attention_batch */
    DKV_PROF_S_KV_STORE,     /* kv_store: dkv_cuda_rope_kv_store_at */
    DKV_PROF_S_ELEMENTWISE,  /* rmsnorm, rope, swiglu, embedding, unmask */
    DKV_PROF_S_SELECT,       /* kv_gather: scores + top-k + pack (the sparse selection) */
    DKV_PROF_S_GEMM_GRID,    /* gemm: a generic (m, n, k) grid for shapes of other models */
    DKV_PROF_S_COMPRESS,     /* compress: gather + low-rank projection + bf16 staging */
    DKV_PROF_S_COPY,         /* copy engine alone and beside compute */
    DKV_PROF_S_HOST,         /* host enqueue per launch */
    DKV_PROF_S_MEMORY,       /* device memory besides dkv's own allocations (profile_mem.c) */
    DKV_PROF_S_SUSTAINED,    /* sustained runs (dkv_prof_sustained): only with opts.sustain_s > 0 */
    DKV_PROF_S_N
};
const char *dkv_prof_section_name(int s);   /* "gemm", "lm_head", ... "host" */

typedef struct dkv_prof_opts {
    const dkv_model *models;   /* exact shapes of these models (>= 1) */
    uint32_t         n_models;
    bool             quick;    /* a small grid (minutes -> seconds) */
    uint32_t         sections; /* mask; 0 = all */
    double           deadline_s;
    uint32_t         repeats, warmup;
    uint64_t         seed;
    int              device;
    bool             l2_warm;  /* no L2 flush before the timed calls (the method before 2026-12-02) */
    uint32_t         min_rows; /* gemm, gemm_grid: only shapes of at least this many rows (0: all) */
    uint32_t         gemm_step; /* gemm: > 0: the class tables at every multiple of this many rows up to 8,192 instead
                                   of the grid's rows (the staircase between them; docs/COST_MODEL.md "GEMM rows between
                                   the grid's") */
    bool             states;   /* also time every row cool and hot (dkv_prof_row.cool_s ...; needs NVML) */
    bool             probe;    /* the SMs' own clock over each row's timed calls (dkv_prof_row.probe_mhz; cuda/sm_probe.h) */
    double           sustain_s;  /* > 0: the sustained section runs (in `sections` or with all), this many seconds a
                                    shape (dkv_prof_sustained); 0: it does not */
    uint32_t         sustain_windows;   /* windows a sustained run is read over (0: DKV_PROF_SUSTAIN_WIN) */
    double           sustain_lead_s;    /* the one-thread spin before each sustained run (default 0.3 s; 0: none, the
                                           run starts at the clock the run before left) */
    double           sustain_gaps_s[DKV_PROF_SUSTAIN_MAX_GAPS];   /* n_sustain_gaps > 0: the sustained section runs
                                           only kind duty, each model's layer at a few row counts, once for each of
                                           these host idle gaps between steps (seconds, each 0 to 1) */
    uint32_t         n_sustain_gaps;
    /* progress: a line per section and every few seconds (may be NULL) */
    void (*progress)(void *user, const char *line);
    /* after each section (may be NULL): the caller can write what is measured so far */
    void (*on_section)(void *user, const struct dkv_prof *p);
    void *user;
} dkv_prof_opts;

dkv_prof_opts dkv_prof_opts_default(void);

/* The grid's time estimate (seconds) from FLOPs and bytes at the H200's ceilings, without running
 * anything (no GPU needed): what --quick and the sections would cost; est_s per section and
 * shapes (the number of shapes; copy and host count none) may be NULL. */
double dkv_prof_estimate(const dkv_prof_opts *o, double est_s[DKV_PROF_S_N], size_t *shapes);

/* Runs the profile on o->device.  DKV_ENODEV without a usable GPU.  *out is allocated even when
 * the deadline cut it short (complete false); free with dkv_prof_free. */
dkv_status dkv_prof_run(const dkv_prof_opts *o, dkv_prof **out, dkv_err *err);
void       dkv_prof_free(dkv_prof *p);

#ifdef __cplusplus
}
#endif

#endif
