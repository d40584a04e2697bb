/* ncu.h - Nsight Compute measurements (HBM bytes and time per kernel) imported into a run.
 *
 * Input: what `ncu --csv --clock-control none --metrics
 * dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum <program>` prints: the
 * program's own output and "==PROF==" lines, then a CSV table with one row per (kernel launch,
 * metric) and the header
 *
 *     "ID","Process ID","Process Name","Host Name","Kernel Name",["Context","Stream",
 *     "Block Size","Grid Size","Device","CC",]"Section Name","Metric Name","Metric Unit","Metric Value"
 *
 * (columns are found by name; versions differ in the optional ones).  Values may carry
 * thousands separators ("1,234,567"); units are byte / Kbyte / Mbyte / Gbyte / Tbyte (ncu's
 * decimal multiples; KiB-style binary ones are accepted too) and nsecond / usecond / msecond /
 * second (or ns, us, ms, s).  "n/a" is a missing value.  Other metrics are ignored.
 *
 * Kernel classes (compare.h numbering): by the kernel's function name for dkv's own kernels
 * (the .cu files of cuda/) and by launch order for GEMM kernels (cuBLAS / cuBLASLt / CUTLASS / dkv's
 * skinny GEMM), following the order of cuda/backend_fwd.c's forward; docs/COMPARE.md has the
 * table of patterns and the limits of the heuristic.
 *
 *     dkv_ncu_kernel *k; size_t n;
 *     dkv_ncu_read("ncu.csv", &k, &n, &err);      // parsed and classified
 *     dkv_ncu_class_total tot[DKV_NCU_NTOTALS];
 *     dkv_ncu_totals(k, n, tot);
 *     free(k);
 *     dkv_ncu_import("ncu.csv", "results.h5", "h200:dual", false, &rep, &err);   // all of it, into a file
 */
#ifndef DKV_ANALYSIS_NCU_H
#define DKV_ANALYSIS_NCU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/compare.h"
#include "io/h5.h"
#include "util/status.h"

/* How a kernel got its class. */
enum {
    DKV_NCU_BY_NAME = 0,    /* a name pattern */
    DKV_NCU_BY_ORDER = 1,   /* a GEMM placed by the kernels around it */
    DKV_NCU_UNMATCHED = 2   /* no rule: class "unknown" */
};

typedef struct dkv_ncu_kernel {
    uint64_t id;                        /* ncu's "ID": launch order in the profiled process */
    char name[DKV_H5_STR32_LEN];        /* function name without return type, namespaces,
                                           template and parameter lists; cut to 31 characters */
    uint32_t kind;                      /* class: 0..DKV_CMP_NCLASS-1, DKV_CMP_NCLASS unknown,
                                           DKV_CMP_NCLASS + 1 setup (weight initialisation) */
    uint8_t rule;                       /* DKV_NCU_BY_* */
    uint8_t gemm;                       /* 1: a GEMM kernel (or a cuBLAS reduction after one) */
    double read_bytes, write_bytes;     /* dram__bytes_read.sum / _write.sum, bytes (NaN: missing) */
    double time_s;                      /* gpu__time_duration.sum, s (NaN: missing) */
} dkv_ncu_kernel;

#define DKV_NCU_NTOTALS (DKV_CMP_NCLASS + 2)

typedef struct dkv_ncu_class_total {
    uint32_t kind;
    uint64_t n_kernels;
    uint64_t n_incomplete;              /* kernels with a metric missing (not in the sums) */
    double read_bytes, write_bytes, time_s;
} dkv_ncu_class_total;

/* Reads and classifies the CSV at path.  *out is malloc'd (caller frees; NULL when n == 0).
 * Errors name path:line: no header (DKV_EFORMAT "no ncu CSV header"), a row with another
 * number of fields than the header, an unterminated quote, a value that is not a number, an
 * unknown unit; DKV_ENOENT when the file cannot be opened. */
dkv_status dkv_ncu_read(const char *path, dkv_ncu_kernel **out, size_t *n, dkv_err *err);

/* The function name of a demangled kernel name, e.g. "void flash_kernel<128, 4>(attn_params)"
 * -> "flash_kernel", "cutlass::Kernel2<cutlass_80_...>(...)" -> "Kernel2".  Writes at most
 * size - 1 characters. */
void dkv_ncu_base_name(const char *full, char *out, size_t size);

/* Classifies kernels in launch order (k sorted by id): names first, then the GEMMs by their
 * neighbours.  full_names[i] is kernel i's name as ncu printed it (the patterns look at
 * namespaces and template arguments too); may be NULL (then k[i].name is used). */
void dkv_ncu_classify(dkv_ncu_kernel *k, const char *const *full_names, size_t n);

/* Sums per class: tot[c] for c in 0..DKV_NCU_NTOTALS-1 (kind = c). */
void dkv_ncu_totals(const dkv_ncu_kernel *k, size_t n, dkv_ncu_class_total tot[DKV_NCU_NTOTALS]);

typedef struct dkv_ncu_report {
    size_t n_kernels, n_unknown, n_gemm_by_order, n_incomplete;
    dkv_ncu_class_total tot[DKV_NCU_NTOTALS];
    char unknown[8][DKV_H5_STR32_LEN];   /* the first distinct names of unknown-class kernels */
    size_t n_unknown_names;
} dkv_ncu_report;

/* Reads csv and adds tables `ncu_kernels` and `ncu_classes` (docs/HDF5_SCHEMA.md) to run `run`
 * of the results file h5_path.  The file is rewritten through "<h5_path>.tmp" and renamed, so
 * it is either unchanged or complete.  A run that already has ncu tables is an error unless
 * replace.  rep (may be NULL) receives counts and class totals. */
dkv_status dkv_ncu_import(const char *csv, const char *h5_path, const char *run, bool replace, dkv_ncu_report *rep,
                          dkv_err *err);

#endif
