/* compare.h - a hardware run against a simulated run of the same script and configuration
 * (`dkv compare`, docs/COMPARE.md).
 *
 * Both runs are `dkv.save` runs (docs/HDF5_SCHEMA.md): one written from dkv.execute (REAL), one
 * from dkv.simulate (SIM).  The comparison pairs them
 *
 *   - step by step, by the steps table's `index` (only steps whose plans agree: same n_items,
 *     q_tokens and logit_rows; the others are counted, not compared): step time, compute and
 *     PCIe time, HBM read/write bytes, PCIe bytes;
 *   - per kernel class and step, when both runs have a `kernels` table: time and HBM bytes;
 *   - in summary (one value per run): throughput, latency, traffic totals, peak memory by tag,
 *     fragmentation of the KV and device managers;
 *   - per kernel class over the whole run, when REAL carries measured Nsight Compute figures
 *     (`ncu_classes`, written by analysis/ncu.h) and SIM a `kernels` table: HBM bytes and time.
 *
 * Quantity names: "step.<field>", "kclass.<class>.time_s|bytes", "run.<summary key>",
 * "ncu.<class>.read_bytes|write_bytes|bytes|time_s" (class "all": every class).
 * Errors: relative, (sim - real) / real, for everything but fragmentations and rates in [0, 1]
 * (run.*frag*, run.block_reuse_rate), which are absolute: sim - real (0.01 = 1 percentage point).
 * Per-step pairs where both values are 0 are skipped (a quantity whose every pair is 0 on both
 * sides has error 0); pairs where real is 0 and sim is not, or either is NaN, count as undefined.
 *
 *     dkv_h5 *a, *b; dkv_cmp *c;
 *     dkv_h5_open_read("real.h5", &a, &err); dkv_h5_open_read("sim.h5", &b, &err);
 *     dkv_cmp_runs(a, "dual", b, "dual", &c, &err);
 *     const dkv_cmp_quantity *q = dkv_cmp_find(c, "step.time_s");   // q->mean_abs, q->bias ...
 *     dkv_cmp_write(c, out, "compare:dual", tols, ntols, &err);
 *     dkv_cmp_free(c);
 *
 * Configurations are compared on their provenance attribute `config` (the resolved dkv.simulate
 * configuration as a Lua literal): every key outside gpu.*, sim.*, record.* and cost_per_hour
 * "matters" (decides the plans); differences are listed, they do not stop the comparison.
 */
#ifndef DKV_ANALYSIS_COMPARE_H
#define DKV_ANALYSIS_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/h5.h"
#include "util/status.h"

/* Kernel classes, by the index the `kernels` table stores (engine/backend.h dkv_kernel_class:
 * core/io cannot link the engine, so the names are repeated here; tests/e2e/test_compare.sh
 * checks them against a simulated run).  DKV_CMP_NCLASS is "unknown" (kernels no rule
 * classified), DKV_CMP_NCLASS + 1 is "setup" (weight initialisation, not part of any step). */
#define DKV_CMP_NCLASS 10
const char *dkv_cmp_class_name(uint32_t kind);   /* "qkv" ... "compress", "unknown", "setup", "?" */

typedef struct dkv_cmp dkv_cmp;

typedef enum dkv_cmp_kind {
    DKV_CMP_RELATIVE = 0,   /* (sim - real) / real */
    DKV_CMP_ABSOLUTE = 1    /* sim - real (fractions: 0.01 = 1 percentage point) */
} dkv_cmp_kind;

typedef struct dkv_cmp_quantity {
    char name[48];          /* "step.time_s", "ncu.attn.bytes", ... */
    const char *unit;       /* static: "s", "bytes", "tokens/s", "" ... */
    dkv_cmp_kind kind;
    bool per_step;          /* the pairs are steps (or step x class); else one value per run */
    uint64_t n;             /* pairs with a defined error */
    uint64_t n_undefined;   /* pairs with real == 0 != sim (relative), or a NaN */
    double real, sim;       /* sums over the defined pairs (per step) or the two values */
    double total_err;       /* the error of those sums (NaN when undefined) */
    double median_abs, mean_abs, max_abs;  /* of |error| over the pairs (NaN when n == 0) */
    double bias;            /* mean signed error (NaN when n == 0) */
} dkv_cmp_quantity;

/* A configuration key whose value differs (or exists on one side only: value "(absent)"). */
typedef struct dkv_cmp_diff {
    const char *key;        /* "decode.cache", "gpu.bw_curve[3][2]" */
    const char *real, *sim; /* value texts as in the literal */
    bool matters;           /* outside gpu.*, sim.*, record.*, cost_per_hour */
} dkv_cmp_diff;

/* One paired step (for the compare_steps table). */
typedef struct dkv_cmp_step {
    uint64_t index;
    uint8_t same_plan;      /* 1: n_items, q_tokens, logit_rows, PCIe bytes agree, and the PCIe bytes of the
                             * step before (compared) */
    double real_time_s, sim_time_s;
    double real_hbm_bytes, sim_hbm_bytes;     /* read + write */
    double real_pcie_bytes, sim_pcie_bytes;   /* h2d + d2h */
} dkv_cmp_step;

typedef struct dkv_cmp_info {
    const char *real_file, *real_run, *sim_file, *sim_run;   /* borrowed from the comparison */
    uint64_t steps_real, steps_sim, steps_paired, steps_plan_mismatch;
    bool has_kernels;       /* both runs have a kernels table */
    bool has_ncu;           /* REAL has ncu_classes and SIM kernels: ncu.* compared */
    bool real_has_ncu;      /* REAL has ncu_classes */
    uint64_t real_workload_fp, sim_workload_fp;   /* dkv_cmp_workload_fingerprint (0: no config) */
    uint64_t real_config_fp, sim_config_fp;       /* dkv_cmp_config_fingerprint */
    size_t n_diffs_matter;
} dkv_cmp_info;

/* Compares run real_run of real with run sim_run of sim (both opened by dkv_h5_open_read;
 * borrowed during the call).  *out is owned by the caller (dkv_cmp_free).  Errors: a run or its
 * steps table missing (DKV_ENOENT), a table without the fields it needs (DKV_EFORMAT), both
 * naming file, run and table. */
dkv_status dkv_cmp_runs(dkv_h5 *real, const char *real_run, dkv_h5 *sim, const char *sim_run, dkv_cmp **out,
                        dkv_err *err);
void dkv_cmp_free(dkv_cmp *c);   /* accepts NULL */

const dkv_cmp_info *dkv_cmp_get_info(const dkv_cmp *c);
size_t dkv_cmp_count(const dkv_cmp *c);
const dkv_cmp_quantity *dkv_cmp_at(const dkv_cmp *c, size_t i);      /* NULL out of range */
const dkv_cmp_quantity *dkv_cmp_find(const dkv_cmp *c, const char *name);  /* NULL when absent */
size_t dkv_cmp_diff_count(const dkv_cmp *c);
const dkv_cmp_diff *dkv_cmp_diff_at(const dkv_cmp *c, size_t i);
/* Paired steps in index order (n of them); borrowed. */
const dkv_cmp_step *dkv_cmp_steps(const dkv_cmp *c, size_t *n);

/* ------------------------------------------------------------------ tolerances */

typedef enum dkv_cmp_stat {
    DKV_CMP_STAT_MEAN = 0,  /* mean |error| over pairs (the default) */
    DKV_CMP_STAT_MEDIAN,    /* median |error| */
    DKV_CMP_STAT_MAX,       /* max |error| */
    DKV_CMP_STAT_BIAS,      /* |mean signed error| */
    DKV_CMP_STAT_TOTAL      /* |error of the sums| */
} dkv_cmp_stat;
const char *dkv_cmp_stat_name(dkv_cmp_stat s);   /* "mean", "median", "max", "bias", "total" */
/* The statistic's value for q (>= 0; NaN when undefined). */
double dkv_cmp_stat_value(const dkv_cmp_quantity *q, dkv_cmp_stat s);

typedef struct dkv_cmp_tol {
    char pattern[64];       /* quantity name; '*' matches any run of characters ("ncu.*.bytes") */
    dkv_cmp_stat stat;
    double limit;           /* fraction (0.08 = 8 %; for absolute quantities 0.01 = 1 pp) */
} dkv_cmp_tol;

/* Parses "PATTERN[:STAT]=LIMIT", LIMIT a fraction ("0.08") or a percentage ("8%"), e.g.
 * "step.time_s=0.08", "ncu.*.bytes:total=5%".  DKV_EINVAL with a message naming the problem. */
dkv_status dkv_cmp_tol_parse(const char *arg, dkv_cmp_tol *out, dkv_err *err);

/* A tolerance exceeded (or not checkable: value NaN). */
typedef struct dkv_cmp_violation {
    const dkv_cmp_quantity *q;   /* borrowed from the comparison */
    dkv_cmp_stat stat;
    double value, limit;
} dkv_cmp_violation;

/* Checks every tolerance against every quantity its pattern matches.  A NaN statistic (no
 * defined pair) is a violation.  Writes up to max violations to out and their total to *n.
 * DKV_ENOENT when a pattern matches no quantity of c (err names it and lists the quantities'
 * prefixes). */
dkv_status dkv_cmp_check(const dkv_cmp *c, const dkv_cmp_tol *tols, size_t ntol, dkv_cmp_violation *out,
                         size_t max, size_t *n, dkv_err *err);

/* Writes the comparison as run `name` of out (opened by dkv_h5_create, no run open): summary
 * attributes, the tables compare_quantities, compare_steps, compare_config (docs/HDF5_SCHEMA.md).
 * tols may be NULL; given ones are recorded with each quantity they match.  command (may be
 * NULL) is stored as the run's `command` attribute. */
dkv_status dkv_cmp_write(const dkv_cmp *c, dkv_h5 *out, const char *name, const dkv_cmp_tol *tols, size_t ntol,
                         const char *command, dkv_err *err);

/* ------------------------------------------------------------------ configuration literals */

/* One leaf of a flattened configuration literal. */
typedef struct dkv_cfg_kv {
    char *key;     /* dotted path; array elements as [i] ("gpu.bw_curve[1][2]") */
    char *value;   /* the value's text: numbers and booleans as written, strings unquoted */
    bool is_num;
    double num;
} dkv_cfg_kv;

/* Flattens a Lua table literal as dkv writes it (lua/l_literal.c: strings, numbers, booleans,
 * nil, nested tables, (0/0), math.huge) into leaves in text order.  *out is malloc'd (caller
 * frees with dkv_cfg_kv_free).  DKV_EFORMAT with the byte offset of a syntax error. */
dkv_status dkv_cfg_flatten(const char *literal, dkv_cfg_kv **out, size_t *n, dkv_err *err);
void dkv_cfg_kv_free(dkv_cfg_kv *kv, size_t n);   /* accepts NULL */

/* True when key decides the plans (not gpu.*, sim.*, record.*, cost_per_hour). */
bool dkv_cfg_key_matters(const char *key);

/* 64-bit FNV-1a fingerprints of a configuration literal: over the workload.* leaves (but
 * workload.source, which repeats workload.file), and over every leaf that matters.  Two runs
 * of the same workload have the same workload fingerprint whatever GPU, cache mode or policy
 * they use.  0 when the literal does not parse. */
uint64_t dkv_cmp_workload_fingerprint(const char *literal);
uint64_t dkv_cmp_config_fingerprint(const char *literal);

#endif
