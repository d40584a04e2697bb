/* cost.h - what a step plan does on the GPU, counted in one place: FLOPs, HBM bytes and kernel
 * launches per kernel class (engine/backend.h's DKV_KCLASS_*), and its PCIe bytes.
 *
 * Pure computation (no I/O, no timing).  sim/ turns the counts into time (the roofline or a
 * measured profile, docs/COST_MODEL.md); cuda/ reports them beside the times it measures (the
 * FLOPs and HBM bytes of a dkv.execute run are these counts, not measurements).
 *
 * The kernels follow the CUDA backend's forward (cuda/backend_fwd.c), so a measured run and its
 * simulation pair class by class.  Per layer: QKV (1 GEMM); RoPE + KV store over all the step's
 * rows (1, when any item stores rows; else RoPE is an elementwise kernel); attention (1, varlen
 * over all items); O projection (1, reads the residual); FFN (2: gate+up, down reading the
 * residual); elementwise (3: two RMSNorms and SiLU(gate)*up, +1 RoPE); a sparse selection (item
 * kv_select_rows > 0) is 5 gather-class kernels per item: scores GEMM into fp32 [heads, rows,
 * keys], row statistics, column sums, top-k, pack of the kept K/V.  Once per step: reset + one
 * embedding gather per item + the unmask after the LM head (elementwise), the final norm per item
 * with logit rows and one GEMM + one sampling kernel per logit chunk of at most
 * plan->max_logit_rows rows (LM head; each chunk re-reads the LM-head weights).  Transfer orders:
 * REORDER is a kernel (read + write), COMPRESS a projection kernel whose result crosses PCIe,
 * OFFLOAD and FETCH only cross PCIe (their HBM side counts as a read or a write).
 *
 * Traffic that does not stream at full bandwidth is listed as segments, in item order: cached-KV
 * reads of attention, KV stores and the sparse selection's pack at the layout's contiguous run
 * length, and zero-copy reads of host-resident KV over PCIe.  Their bytes are inside rd / wr too.
 *
 *     dkv_cost_step cs; dkv_cost_step_init(&cs);
 *     for each plan: dkv_cost_count(model, plan, &cs, &err);  ... cs.layer[c], cs.once[c] ...
 *     dkv_cost_step_free(&cs);
 */
#ifndef DKV_COST_COST_H
#define DKV_COST_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/backend.h"
#include "model/model.h"
#include "util/status.h"

/* Bytes of one logit: the LM head writes fp32 logits (cuda/lm_head.cu) and the sampling kernel
 * reads them back. */
#define DKV_COST_LOGIT_BYTES 4.0

/* The work of one kernel class, in one layer (dkv_cost_step.layer) or once per step (.once). */
typedef struct dkv_cost_class {
    double   flops;
    double   rd, wr;       /* HBM bytes read / written */
    double   bytes_fast;   /* bytes that stream at full HBM bandwidth (the rest are segments) */
    uint32_t launches;
} dkv_cost_class;

/* How a segment's bytes travel. */
enum { DKV_COST_VIA_HBM = 0,   /* device memory, in contiguous runs of run_bytes (0: contiguous) */
       DKV_COST_VIA_PCIE_H2D   /* host memory read by a kernel over PCIe (zero-copy), one layer's share */
};

typedef struct dkv_cost_seg {
    uint8_t kind;        /* DKV_KCLASS_* the traffic belongs to (per layer) */
    uint8_t via;         /* DKV_COST_VIA_* */
    double  bytes;
    double  run_bytes;
} dkv_cost_seg;

/* The counts of one plan.  Layer classes: the kernels of one transformer layer (every layer is
 * the same; multiply by n_layers).  Once classes: LM head, compress, reorder, and the per-step
 * part of elementwise.  Owns segs (dkv_cost_step_free). */
typedef struct dkv_cost_step {
    dkv_cost_class layer[DKV_KCLASS_N];
    dkv_cost_class once[DKV_KCLASS_N];
    double   n_layers;
    double   q_rows;          /* rows through the network, all items */
    double   logit_rows;      /* rows through the LM head */
    double   logit_chunks;    /* LM-head chunks (ceil(logit_rows / chunk)) */
    double   logit_items;     /* items with logit rows */
    double   weight_streams;  /* weight copies read (>= 1) */
    bool     any_store;       /* the fused RoPE + KV store runs */
    uint64_t pcie_h2d_bytes;  /* fetches + zero-copy host KV reads */
    uint64_t pcie_d2h_bytes;  /* offloads + compressed results */
    uint64_t fetch_bytes;     /* of pcie_h2d_bytes, the fetches (they write HBM) */
    dkv_cost_seg *segs;
    uint32_t n_segs, cap_segs;
} dkv_cost_step;

void dkv_cost_step_init(dkv_cost_step *cs);
void dkv_cost_step_free(dkv_cost_step *cs);   /* accepts NULL */

/* Counts plan under model m into cs (reusing its segment storage).  Errors: an item with
 * kv_cached_tokens > kv_tokens, a transfer of unknown kind (DKV_EINVAL), no memory. */
dkv_status dkv_cost_count(const dkv_model *m, const dkv_step_plan *plan, dkv_cost_step *cs, dkv_err *err);

/* The L2 replay's kernels of one step in launch order (a diagnostic: per kernel what dkv_cost_count_hw
 * charges, to set beside Nsight Compute's rows; dkv.simulate's record.l2_kernels): the step's start (reset,
 * embeddings: k[0 .. n_start - 1]), one layer (the counted one: every layer charges its bytes;
 * k[n_start .. n_start + n_layer - 1]) and the step's end (LM head, argmax, unmask: the rest). */
#define DKV_COST_L2_TRACE_MAX 4096   /* a layer of 9 + 5 per selecting item, plus the start and end: ~800 selecting items */
typedef struct dkv_cost_l2_kernel {
    dkv_kernel_class kind;
    double rd, wr;   /* HBM bytes read and written back during the kernel */
    double dirty;    /* dirty bytes the replay's L2 holds after it */
    double held_x, held_qkv, held_att;   /* bytes the replay's L2 holds after it of the residual stream, of the q|k|v
                                            buffer (its q, k and v) and of the attention's output (since session 48:
                                            the L2 flush diagnostic's read entries measure the GPU's) */
} dkv_cost_l2_kernel;
typedef struct dkv_cost_l2_trace {
    uint32_t n;         /* kernels recorded (at most DKV_COST_L2_TRACE_MAX) */
    uint32_t n_start, n_layer;   /* ... of them the step's start, then the layer */
    uint32_t dropped;   /* kernels past DKV_COST_L2_TRACE_MAX, not recorded (callers must not ignore it) */
    dkv_cost_l2_kernel k[DKV_COST_L2_TRACE_MAX];
} dkv_cost_l2_trace;

/* The GPU's L2 between kernels (dkv_cost_count_hw). */
typedef struct dkv_cost_hw {
    double   l2_bytes;   /* L2 capacity; 0: no L2 model (every operand from HBM, every write to HBM) */
    uint32_t l2_partitions;   /* halves each caching what their SMs read (0 = 1): the model's capacity is
                                 l2_bytes / l2_partitions (the forward's operands are read from both) */
    uint32_t n_sms;      /* streaming multiprocessors: output tiles per GEMM wave */
    dkv_cost_l2_trace *trace;   /* NULL, or receives the counted layer's and the step end's kernels */
    const struct dkv_profile_info *profile;   /* NULL, or a measured profile whose gemm_splitk block gives the
                                                 GEMMs' K splits (dkv_profile_gemm_splitk; else the rule) */
    struct dkv_cost_l2_memo *memo;   /* NULL, or the caller's memo of replays (dkv_cost_l2_memo_new): the same
                                        bytes, without replaying a step whose inputs it has seen (not with trace) */
} dkv_cost_hw;

/* A memo of the L2 replay's results by its inputs (cost_l2.c): a step of the same rows, items' logit rows,
 * selections and KV bytes as one seen before gets the stored bytes, bit for bit what the replay gives.  Valid
 * for one model and hardware at a time (another clears it).  Not thread-safe: one per backend. */
typedef struct dkv_cost_l2_memo dkv_cost_l2_memo;
dkv_cost_l2_memo *dkv_cost_l2_memo_new(void);   /* NULL: out of memory (then run without one) */
void dkv_cost_l2_memo_free(dkv_cost_l2_memo *mm);
void dkv_cost_l2_memo_stats(const dkv_cost_l2_memo *mm, uint64_t *hits, uint64_t *misses);

/* The replay's hardware for GPU preset g: its L2, SMs and measured profile (the GEMMs' K splits). */
dkv_cost_hw dkv_cost_hw_of(const dkv_gpu *g);

/* How cuBLAS runs a GEMM out[M x N] = in[M x K] W on n_sms SMs, as the L2 replay models it
 * (cost_gemm.c, docs/COST_MODEL.md "Large-M GEMMs"): tiles of tile_rows token rows x 128 weight rows;
 * with few tiles K is split over `splits` CTAs per tile (fp32 partials: a K-heavy GEMM, K >= 2 N,
 * with at most n_sms / 2 tiles; another when even 64 x 32 tiles are at most n_sms / 2); otherwise
 * (splits 0) the persistent grid walks the output in super-tiles of group_rows row tiles (at most
 * DKV_COST_GEMM_GROUP_ROWS token rows) x group_cols = n_sms / group_rows column tiles: the weights
 * are streamed once per group (`groups` times), a group's input rows once per column wave
 * (`col_waves` per group) unless they stay in L2.  One group runs round(tiles / n_sms) column waves,
 * one wave at most 64 token rows when tiles of 384 weight rows fit the SMs (cuBLAS widens them). */
#define DKV_COST_GEMM_GROUP_ROWS 1152.0

/* The L2 replay's bound on dirty lines (cost_l2.c, docs/COST_MODEL.md "Writes per class"): at most
 * this fraction of hw->l2_bytes is dirty; past it the oldest dirty lines are written to HBM (they
 * stay, clean), charged to the kernel that wrote past it.  Measured on the fit point val:w2:sparse
 * (device call 3): the RoPE kernel at 2,112 rows writes 34.6 MB in place and keeps 21.1 MB of
 * them in L2 (Nsight Compute's writes of that layer's kernels, chained); 60 MiB / 3 = 21.0 MB. */
#define DKV_COST_L2_DIRTY_FRAC (1.0 / 3.0)

/* The share of the L2 that a GEMM weight line read by one CTA takes (a GEMM of one row tile: every
 * weight tile has one reader), against the operands the replay's capacity C stands for (lines read
 * by many CTAs: a GEMM's input, read by every CTA column).  Measured on the H200 (cuda/bench/l2probe.cu
 * under Nsight Compute, device calls 56 and 58, docs/COST_MODEL.md "What the L2 keeps between
 * kernels"): a probe survives 41.4 MB of a stream read by one CTA a line (the mean of eight fitted
 * capacities, 39.0-43.0 MB) and 30.0 MB of one read by 4, 16 or 64 CTAs a line (29.5-30.5): 30.0 / 41.4. */
#define DKV_COST_L2_ONE_READER 0.725

/* The L2's soft edge (cost_l2_edge.h, docs/COST_MODEL.md "The soft edge"): past the capacity C a line leaves with a
 * probability rising linearly over DKV_COST_L2_EDGE x C of age (resident bytes newer than it), and a dirty line's age
 * counts DKV_COST_L2_DIRTY_CREDIT x C younger.  Both measured by cuda/bench/l2drain.cu `order` under Nsight Compute
 * (device calls 117 and 118): a half of an 8 MB probe goes from 10 % to 90 % gone over 13.7 MB of a one-reader
 * stream, 13.7 x 0.725 / 31.46 = 0.32 of C; a dirty half goes as late as a clean one 4 MB of stream newer,
 * 4 x 0.725 / 31.46 = 0.092 of C.  Judged unchanged on device call 119's fresh Nsight Compute set (the writes within
 * 5 % 22 -> 25 of 42, the reads 39 of 42 kept). */
#define DKV_COST_L2_EDGE 0.32
#define DKV_COST_L2_DIRTY_CREDIT 0.092

typedef struct dkv_cost_gemm_plan {
    double tile_rows;               /* token rows per tile */
    double tiles_m, tiles_n;        /* row tiles (tokens), column tiles (weight rows) */
    double splits;                  /* split-K CTAs per tile; 0: no split */
    double group_rows, group_cols;  /* a super-tile: row tiles x column tiles */
    double groups, col_waves;       /* row groups; column waves per group */
} dkv_cost_gemm_plan;

/* splitk: cuBLASLt's K splits for the shape where known (a profile's gemm_splitk block: 1 none, > 1 that
 * many, with the rule's tiles; docs/COST_MODEL.md "GEMM configurations from cuBLASLt"), 0: the rule's. */
void dkv_cost_gemm_tiles(double M, double N, double K, double n_sms, double splitk, dkv_cost_gemm_plan *g);

/* dkv_cost_count, then the HBM bytes read and written per kernel class (rd / wr) replaced by
 * those of the forward replayed through hw's L2 (cost_l2.c, docs/COST_MODEL.md "HBM bytes with
 * an L2"): activations still in L2 are not read from HBM, writes reach HBM when a later kernel
 * pushes them out and count for that kernel; bytes_fast = those bytes less the class's HBM
 * segments (the roofline streams what reaches HBM).  FLOPs, launches and the segments are
 * dkv_cost_count's.  hw NULL or hw->l2_bytes 0: dkv_cost_count. */
dkv_status dkv_cost_count_hw(const dkv_model *m, const dkv_cost_hw *hw, const dkv_step_plan *plan,
                             dkv_cost_step *cs, dkv_err *err);

/* The L2 replay alone, on counts dkv_cost_count made of the same plan (cost_l2.c). */
void dkv_cost_l2_bytes(const dkv_model *m, const dkv_step_plan *plan, const dkv_cost_hw *hw, dkv_cost_step *cs);

/* Class c over the whole step: n_layers x the layer part + the once part, as a kernel record
 * (time_s 0, layer UINT32_MAX).  Returns false when the class launches nothing this step. */
bool dkv_cost_class_record(const dkv_cost_step *cs, dkv_kernel_class c, uint64_t step_index,
                           dkv_kernel_record *out);

/* Step totals: FLOPs, HBM bytes read and written (kernels, plus the HBM side of PCIe copies) and
 * kernel launches. */
typedef struct dkv_cost_totals {
    double   flops;
    uint64_t hbm_read_bytes, hbm_write_bytes;
    uint32_t launches;
} dkv_cost_totals;

void dkv_cost_step_totals(const dkv_cost_step *cs, dkv_cost_totals *out);

#endif
