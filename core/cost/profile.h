/* profile.h - a measured GPU profile (docs/PROFILE_FORMAT.md) and lookups in it.
 *
 * A profile holds, per kernel table, rows of (shape fields..., seconds per call, launches per
 * call); copy-engine rows alone and contended; the first-use cost of a shape; the host time per
 * step.  The loader (core/lua/profile_load.c) fills it with dkv_profile_table_add and calls
 * dkv_profile_finish, which checks every table against the lookup it serves and indexes it.
 *
 * A lookup is exact in a table's key fields (e.g. a GEMM's n and k) and interpolates in its axis
 * fields (e.g. m), piecewise linearly in (log x, log seconds) -- the GEMM tables (qkv, o, ffn,
 * lm_head, gemm) in (x, seconds); several axes interpolate as a tensor grid (bilinear, trilinear),
 * so a function log t = c + Σ b_i log x_i (a GEMM's launch + bytes + FLOPs, each term linear in
 * m, n and k) is reproduced exactly inside the grid and every measured point is reproduced
 * exactly (docs/COST_MODEL.md "GEMM interpolation").  Outside the measured
 * range, or where a grid corner is missing, a lookup returns NAN and the caller falls back to
 * the roofline (sim/, which records the fraction of time that came from it).
 *
 * Pure computation.  Ownership: dkv_profile_new allocates; dkv_profile_free releases (NULL ok).
 */
#ifndef DKV_COST_PROFILE_H
#define DKV_COST_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

/* The tables a profile may hold (kernels.<name>), and the copy tables. */
typedef enum dkv_prof_tab {
    DKV_PT_QKV = 0,
    DKV_PT_O,
    DKV_PT_FFN,
    DKV_PT_GEMM,
    DKV_PT_LM_HEAD,
    DKV_PT_ATTN,
    DKV_PT_KV_STORE,
    DKV_PT_KV_GATHER,
    DKV_PT_ELEMENTWISE,
    DKV_PT_COMPRESS,
    DKV_PT_DECOMPRESS,
    DKV_PT_COPY_ALONE,      /* copy.alone */
    DKV_PT_COPY_CONTENDED,  /* copy.contended */
    DKV_PT_N
} dkv_prof_tab;

#define DKV_PROF_FIELDS 8

/* Table name as the file spells it ("qkv", ..., "copy.alone"); NULL for a bad id. */
const char *dkv_prof_tab_name(dkv_prof_tab t);
/* Table id from a kernels.<name> key; -1 when unknown. */
int dkv_prof_tab_find(const char *name);
/* The fields a table must list, NULL-terminated (keys first, then axes, then ignored ones). */
const char *const *dkv_prof_tab_fields(dkv_prof_tab t);

/* elementwise kinds (field "kind") */
enum { DKV_PROF_EW_RMSNORM = 0, DKV_PROF_EW_ROPE, DKV_PROF_EW_SWIGLU, DKV_PROF_EW_EMBEDDING, DKV_PROF_EW_BOOKKEEP };

typedef struct dkv_profile dkv_profile;

#define DKV_PROFILE_CLOCK_PTS 32   /* points of a GEMM class's clock by rows (dkv_profile_info.clock_*) */
#define DKV_PROFILE_SPLITK_SHAPES 16   /* GEMM shapes of a gemm_splitk block (dkv_profile_info.splitk_*) */
#define DKV_PROFILE_SPLITK_PTS 64      /* change points of one shape's split-K by rows */
#define DKV_PROFILE_READS_SHAPES 8     /* GEMM shapes of a gemm_reads block (dkv_profile_info.reads_*) */
#define DKV_PROFILE_READS_PTS 1024     /* its row counts: the warm-up buckets 8, 16, ..., 8,192 (gemm_warm.h) */

typedef struct dkv_profile_info {
    char   name[64];
    char   gpu[128];
    char   date[64];
    char   dkv_commit[64];
    bool   measured;       /* false: a stand-in (never a shipped preset's profile) */
    double first_gemm_s, first_attn_s, first_other_s;   /* first_use */
    double first_compress_s;   /* the low-rank compressor's first call in a process (first_use.compress_s,
                                  else the largest first_s of kernels.compress); 0: other_s */
    double host_base_s, host_per_item_s;           /* planning per step: serial host time */
    double host_per_launch_s, host_per_gemm_launch_s;   /* enqueue per launch: overlaps the GPU */
    double host_resume_s, host_handover_s;   /* GPU idle between two steps of one thread / two threads (0: none) */
    /* hold (PROFILE_FORMAT.md "hold"; absent: all 0, no hold): a step that starts within hold_window_s
     * of the end of a step whose kernels took at least hold_after_s runs its kernels hold_slowdown
     * slower (x (1 + hold_slowdown)); docs/COST_MODEL.md "After a Refresh: the clocks' hold" */
    double hold_after_s, hold_window_s, hold_slowdown;
    /* attn_waves (PROFILE_FORMAT.md "attn_waves"; absent: 0): clusters of the batched attention kernel
     * resident at once, [head_dim 64 / 128][launch group: 0 items of <= 32 queries, 1 the others]
     * [key splits - 1]; the simulator's rule for head configurations the profile does not hold */
    double attn_clusters[2][2][8];
    /* clock (PROFILE_FORMAT.md "clock"; absent: clock_max_mhz 0, no clock model): the SM clock a step runs at,
     * predicted from the work before it, and each class's time at that clock (docs/COST_MODEL.md "The step's
     * clock"): the clock the rows of each GEMM class ran at by rows (clock_rows / clock_mhz, [qkv, o, ffn,
     * lm_head], clock_n points each; attention and the rest at clock_max_mhz), the sensitivities (a time
     * scales as clock^-sens: the GEMMs' from 0 at clock_gemm_lo_rows to clock_gemm_sens at
     * clock_gemm_hi_rows, log-linear in rows; attention's in steps without / with a Refresh item) and the
     * clock the step runs at: either the mean settle clock of the work in [start - lag - window, end - lag]
     * (the window form) or, when clock_down_s > 0, a clock that follows the settle clocks (idle time: the
     * maximum) as a first-order lag with time constant clock_down_s while falling and clock_up_s while
     * rising (the follow form; lag and window then 0). */
    double   clock_max_mhz, clock_lag_s, clock_window_s, clock_down_s, clock_up_s;
    double   clock_gemm_lo_rows, clock_gemm_hi_rows, clock_gemm_sens, clock_reuse_sens, clock_refresh_sens;
    uint32_t clock_n[4];
    double   clock_rows[4][DKV_PROFILE_CLOCK_PTS], clock_mhz[4][DKV_PROFILE_CLOCK_PTS];
    /* clock.settle (optional; absent: settle_n 0, each class settles at its row clock): the clock sustained work
     * settles at, for the GEMM classes by rows (settle_rows / settle_mhz, log-linear between), every other class at
     * settle_other_mhz (docs/COST_MODEL.md "The clock on the probe's scale") */
    uint32_t clock_settle_n;
    double   clock_settle_rows[DKV_PROFILE_CLOCK_PTS], clock_settle_mhz[DKV_PROFILE_CLOCK_PTS], clock_settle_other_mhz;
    double   clock_attn_mhz;   /* clock.attn_mhz (optional; 0: max_mhz): the clock the attention rows ran at */
    /* memory (PROFILE_FORMAT.md "memory"; absent: has_memory false): device memory a CUDA backend
     * process holds besides dkv's own allocations, bytes */
    bool   has_memory;
    double mem_context_bytes, mem_libraries_bytes, mem_blas_handle_bytes, mem_first_launch_bytes;
    /* gemm_splitk (PROFILE_FORMAT.md "gemm_splitk"; absent: splitk_n 0): the K splits cuBLASLt's heuristic
     * gives GEMM shape i (splitk_nk[i]: its weight rows N and K) by the warm-up bucket of its token rows:
     * splitk_val[i][j] from splitk_rows[i][j] rows up to the next point (1: no split); docs/COST_MODEL.md
     * "GEMM configurations from cuBLASLt" */
    uint32_t splitk_n, splitk_pts[DKV_PROFILE_SPLITK_SHAPES];
    double   splitk_nk[DKV_PROFILE_SPLITK_SHAPES][2];
    double   splitk_rows[DKV_PROFILE_SPLITK_SHAPES][DKV_PROFILE_SPLITK_PTS];
    double   splitk_val[DKV_PROFILE_SPLITK_SHAPES][DKV_PROFILE_SPLITK_PTS];
    /* gemm_reads (PROFILE_FORMAT.md "gemm_reads"; absent: reads_n 0): the HBM bytes GEMM shape i
     * (reads_nk[i]: N, K) read at warm-up bucket 8 (j + 1) rows, measured alone as the forward meets it
     * (reads_bytes[i][j]; 0: not measured); docs/COST_MODEL.md "Large-M GEMM reads, measured" */
    uint32_t reads_n;
    double   reads_nk[DKV_PROFILE_READS_SHAPES][2];
    float    reads_bytes[DKV_PROFILE_READS_SHAPES][DKV_PROFILE_READS_PTS];
    /* gemm_left (PROFILE_FORMAT.md "gemm_left"; absent: left_n 0): the bytes of its output GEMM shape i
     * (left_nk[i]: N, K) of 8 (j + 1) rows leaves in L2 for the row walk after it, measured alone
     * (left_bytes[i][j], where left_has[i][j]); docs/COST_MODEL.md "What a GEMM leaves of its output" */
    uint32_t left_n;
    double   left_nk[DKV_PROFILE_READS_SHAPES][2];
    float    left_bytes[DKV_PROFILE_READS_SHAPES][DKV_PROFILE_READS_PTS];
    uint8_t  left_has[DKV_PROFILE_READS_SHAPES][DKV_PROFILE_READS_PTS];
    /* gemm_store (PROFILE_FORMAT.md "gemm_store"; absent: store_n 0): the bytes of its output q|k|v GEMM shape i
     * (store_nk[i]: N, K) of 8 (j + 1) rows that the fused RoPE-store's row walk right after it finds in L2,
     * measured alone (store_bytes[i][j], where store_has[i][j]); docs/COST_MODEL.md "The walk after a GEMM" */
    uint32_t store_n;
    double   store_nk[DKV_PROFILE_READS_SHAPES][2];
    float    store_bytes[DKV_PROFILE_READS_SHAPES][DKV_PROFILE_READS_PTS];
    uint8_t  store_has[DKV_PROFILE_READS_SHAPES][DKV_PROFILE_READS_PTS];
    /* gemm_steps (PROFILE_FORMAT.md "gemm_steps"; absent: steps_n 0): GEMM shape i's (steps_nk[i]: N, K) time at
     * 8 (j + 1) rows over the linear interpolation between the class table's rows, measured on a dense sweep
     * (steps_ratio[i][j], where steps_has[i][j]); docs/COST_MODEL.md "GEMM rows between the grid's" */
    uint32_t steps_n;
    double   steps_nk[DKV_PROFILE_READS_SHAPES][2];
    float    steps_ratio[DKV_PROFILE_READS_SHAPES][DKV_PROFILE_READS_PTS];
    uint8_t  steps_has[DKV_PROFILE_READS_SHAPES][DKV_PROFILE_READS_PTS];
} dkv_profile_info;

/* The K splits of a GEMM of M token rows, N weight rows and inner dimension K from in's gemm_splitk
 * block: the value at M's warm-up bucket (M rounded up to a multiple of 8, as the CUDA backend plans it;
 * core/model/gemm_warm.h); 0 when in is NULL, the block lacks the shape, or M is above the warm-up's
 * range (the caller's rule then). */
double dkv_profile_gemm_splitk(const dkv_profile_info *in, double M, double N, double K);

/* The HBM bytes a GEMM of M token rows, N weight rows and inner dimension K read when measured alone at
 * M's warm-up bucket (in's gemm_reads block), and that bucket's rows in *bucket; 0 (and *bucket 0) when
 * in is NULL, the block lacks the shape or that bucket, or M is above the warm-up's range. */
double dkv_profile_gemm_reads(const dkv_profile_info *in, double M, double N, double K, double *bucket);

/* What a GEMM of M token rows, N weight rows and inner dimension K leaves of its output in L2, measured alone
 * (in's gemm_left block) at the measured row count nearest M's warm-up bucket, at most DKV_PROFILE_LEFT_NEAR
 * rows away (the larger of two as near), whose rows go to *rows; -1 (and *rows 0) when in is NULL, the block
 * lacks the shape or a row count that near, or M is above the warm-up's range. */
#define DKV_PROFILE_LEFT_NEAR 64
double dkv_profile_gemm_left(const dkv_profile_info *in, double M, double N, double K, double *rows);

/* What the fused RoPE-store's row walk right after a q|k|v GEMM of M token rows, N weight rows and inner dimension
 * K finds of the GEMM's output in L2, measured alone (in's gemm_store block), looked up as dkv_profile_gemm_left
 * looks up its block; -1 (and *rows 0) when there is none that near. */
double dkv_profile_gemm_store(const dkv_profile_info *in, double M, double N, double K, double *rows);

/* The factor on the class table's interpolated time of a GEMM of M token rows, N weight rows and inner dimension K
 * (in's gemm_steps block): the measured ratio at M's warm-up bucket, linear between the two measured row counts
 * around it; 1 when in is NULL, the block lacks the shape, or the bucket is not between two measured row counts
 * (docs/COST_MODEL.md "GEMM rows between the grid's"). */
double dkv_profile_gemm_step(const dkv_profile_info *in, double M, double N, double K);

/* Table id's extra column `extra` (0-based among the extras) is warm_s, the same calls without the L2
 * flush (PROFILE_FORMAT.md): the tables whose operands are L2-hot or larger than the L2 in a real
 * step (dkv_profile_uses_warm) are then costed from it, the others from the flushed median.  Call
 * after dkv_profile_table_add, before dkv_profile_finish; every value must be > 0. */
dkv_status dkv_profile_table_warm(dkv_profile *p, dkv_prof_tab id, uint32_t extra, const char *where, dkv_err *err);
bool       dkv_profile_uses_warm(dkv_prof_tab id);
/* Table id's extra column `extra` is stream_s, the same calls back to back between one pair of events
 * (PROFILE_FORMAT.md): every row is then costed less its event overhead warm_s - stream_s (the warm
 * tables from stream_s itself).  Needs dkv_profile_table_warm first; every value must be > 0. */
dkv_status dkv_profile_table_stream(dkv_profile *p, dkv_prof_tab id, uint32_t extra, const char *where, dkv_err *err);

dkv_status dkv_profile_new(const dkv_profile_info *info, dkv_profile **out, dkv_err *err);
void       dkv_profile_free(dkv_profile *p);
const dkv_profile_info *dkv_profile_get_info(const dkv_profile *p);

/* Adds table t: fields (n_fields names, in the file's order), then n_rows rows of
 * n_fields + 2 + n_extra numbers (fields, seconds, launches, extras; copied).  Copy tables have
 * no launch column: rows of n_fields + 1.  Errors name `where` (the file) and the row. */
dkv_status dkv_profile_table_add(dkv_profile *p, dkv_prof_tab t, const char *const *fields, uint32_t n_fields,
                                 uint32_t n_extra, const double *rows, size_t n_rows, const char *where,
                                 dkv_err *err);

/* Checks every table (fields the lookup needs, seconds > 0, distinct coordinates) and builds the
 * lookup index.  Call once after the last table_add. */
dkv_status dkv_profile_finish(dkv_profile *p, const char *where, dkv_err *err);

bool   dkv_profile_has(const dkv_profile *p, dkv_prof_tab t);
size_t dkv_profile_rows(const dkv_profile *p, dkv_prof_tab t);

/* Lookups: seconds per call, NAN outside the measured range.  A GEMM class (QKV, O, FFN,
 * LM_HEAD) uses its own rows when they hold the exact (n, k), else the GEMM grid (not for
 * LM_HEAD, whose call includes the argmax). */
double dkv_profile_gemm(const dkv_profile *p, dkv_prof_tab cls, double m, double n, double k);
double dkv_profile_attn(const dkv_profile *p, double q_rows, double kv_tokens, double heads, double kv_heads,
                        double head_dim, double mode);
/* Attention for a head configuration the profile does not hold: the measured configuration with
 * the same head_dim and mode nearest in (log heads, log kv_heads); its heads in *ref_heads,
 * *ref_kv_heads (the caller rescales).  NAN when none covers the shape. */
double dkv_profile_attn_nearest(const dkv_profile *p, double q_rows, double kv_tokens, double heads, double kv_heads,
                                double head_dim, double mode, double *ref_heads, double *ref_kv_heads);
/* kv_store and elementwise: a width the profile lacks (another model's) is looked up in the nearest
 * measured width (same head_dim / kind) at the rows that move the same bytes. */
double dkv_profile_kv_store(const dkv_profile *p, double rows, double heads, double kv_heads, double head_dim);
/* One sparse selection of `keys` keys by `rows` block rows: the top-k's sort (a step at each power of
 * two) apart from the rest in the keys' interpolation; another head configuration from the measured
 * one with the same kv_heads (else the nearest), then the nearest heads, unscaled (COST_MODEL.md). */
double dkv_profile_select(const dkv_profile *p, double rows, double keys, double heads, double kv_heads,
                          double head_dim);
double dkv_profile_elementwise(const dkv_profile *p, double kind, double rows, double cols);
double dkv_profile_compress(const dkv_profile *p, double rows, double cols, double rank);
/* The low-rank rebuild (dkv_cuda_lowrank_decompress) of rows (tokens x matrices) at head_dim cols
 * and rank; NAN where the profile has no such (cols, rank). */
double dkv_profile_decompress(const dkv_profile *p, double rows, double cols, double rank);
/* dir 0 host-to-device, 1 device-to-host; contended: beside running compute */
double dkv_profile_copy(const dkv_profile *p, int dir, double bytes, bool contended);

#endif
