/* h5.h - the dkv results file (HDF5, serial C API).
 *
 * One file per `dkv run`.  It is written as "<path>.tmp" and renamed to <path> by dkv_h5_close,
 * so a finished file is always complete.  Layout (docs/HDF5_SCHEMA.md is the full reference):
 *
 *     /                       attrs: format = "dkv-results", format_version, dkv_version
 *     /runs/<run>/            one group per run; attrs: provenance (dkv_h5_attr_*)
 *     /runs/<run>/params      group; attrs: the run's parameters
 *     /runs/<run>/summary     group; attrs: the run's scalar results
 *     /runs/<run>/<table>     chunked, deflate-compressed, extendible 1-D dataset of compound
 *                             records; attrs per field: units.<field>, doc.<field>
 *
 * Tables are self-describing: the compound type carries field names and types, and every
 * field's unit and doc string is stored as attributes "units.<field>" / "doc.<field>" on the
 * dataset (plus "fields", the comma-separated field order).
 *
 * Crash behaviour: dkv_h5_run_end flushes the file, so every completed run is on disk.  The
 * target is replaced only by a run that succeeded; `dkv run` keeps a failed or interrupted
 * run's completed runs as "<path>.partial" (dkv_h5_set_aside); if the process is killed
 * outright, "<path>.tmp" holds the runs flushed before the kill, and the next `dkv run` moves
 * it aside instead of overwriting it (docs/RELIABILITY.md).
 *
 * Writing:
 *
 *     typedef struct { uint32_t id; double latency_s; } rec;
 *     static const dkv_h5_field fields[] = {
 *         {"id", DKV_H5_U32, offsetof(rec, id), "", "request id"},
 *         {"latency_s", DKV_H5_F64, offsetof(rec, latency_s), "s", "arrival to completion"},
 *     };
 *     dkv_h5 *f; dkv_h5_run *run; dkv_h5_table *t;
 *     dkv_h5_create("out.h5", &f, &err);
 *     dkv_h5_run_begin(f, "baseline", &run, &err);
 *     dkv_h5_attr_f64(run, "summary", "p99_s", 0.42, &err);
 *     dkv_h5_table_create(run, "requests", sizeof(rec), fields, 2, &t, &err);
 *     dkv_h5_table_append(t, recs, n, &err);       // as often as needed
 *     dkv_h5_table_close(t);
 *     dkv_h5_run_end(run, &err);                    // flushes; frees run
 *     dkv_h5_close(f, &err);                        // renames out.h5.tmp -> out.h5
 *
 * Every call returns DKV_OK or an error status with err naming the file, run, table, field.
 * Handles are not thread-safe.  HDF5's own error printing is switched off by this module.
 */
#ifndef DKV_IO_H5_H
#define DKV_IO_H5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

typedef struct dkv_h5 dkv_h5;             /* an open results file (write or read) */
typedef struct dkv_h5_run dkv_h5_run;     /* one /runs/<name> group */
typedef struct dkv_h5_table dkv_h5_table; /* one compound dataset inside a run */

/* Field types of table records.  STR32 is char[32], NUL-padded (31 characters at most). */
typedef enum dkv_h5_type {
    DKV_H5_U8 = 0,
    DKV_H5_U32,
    DKV_H5_U64,
    DKV_H5_I32,
    DKV_H5_I64,
    DKV_H5_F32,
    DKV_H5_F64,
    DKV_H5_STR32
} dkv_h5_type;

#define DKV_H5_STR32_LEN 32

/* Size in bytes of one value of type t; name ("u32", "f64", "str32", ...). */
size_t      dkv_h5_type_size(dkv_h5_type t);
const char *dkv_h5_type_name(dkv_h5_type t);

/* One field of a record.  Strings are borrowed for the duration of the call that takes them. */
typedef struct dkv_h5_field {
    const char *name;    /* field name: [A-Za-z0-9_.]+ */
    dkv_h5_type type;
    size_t offset;       /* offsetof(record, field) */
    const char *unit;    /* "s", "bytes", "tokens", ... ; "" or NULL when dimensionless */
    const char *doc;     /* one line; may be NULL */
} dkv_h5_field;

/* ------------------------------------------------------------------ writing */

/* Creates "<path>.tmp" for writing; *out owns it until dkv_h5_close.  An existing "<path>.tmp"
 * (a killed run's results) is never truncated: DKV_EIO, and the caller may move it away with
 * dkv_h5_set_aside first. */
dkv_status dkv_h5_create(const char *path, dkv_h5 **out, dkv_err *err);

/* Closes the file.  A file opened by dkv_h5_create is flushed and renamed "<path>.tmp" -> path;
 * a run still open is ended first (its tables keep the records appended so far).  When ending
 * the run or closing failed (a full disk), nothing is renamed: path keeps its old content and
 * "<path>.tmp" stays for the caller to inspect (dkv_h5_count_complete).
 * Accepts NULL (returns DKV_OK).  Frees f even on error. */
dkv_status dkv_h5_close(dkv_h5 *f, dkv_err *err);

/* ------------------------------------------------------------------ never losing results
 * (core/io/h5_safe.c) */

/* Closes a file being written without renaming it: "<path>.tmp" stays, and *tmp_out (caller
 * frees) names it (NULL when f is NULL).  The status is that of closing. */
dkv_status dkv_h5_close_uncommitted(dkv_h5 *f, char **tmp_out, dkv_err *err);

/* Moves src to the first free name of "<final_path><suffix>", "<final_path><suffix>.2", ...
 * (never replacing a file); the name chosen is written to kept. */
dkv_status dkv_h5_set_aside(const char *src, const char *final_path, const char *suffix, char *kept,
                            size_t kept_n, dkv_err *err);

/* Opens path read-only and counts its runs (*total) and those with status "complete". */
dkv_status dkv_h5_count_complete(const char *path, size_t *complete, size_t *total, dkv_err *err);

/* Whether a command may write its results to path: DKV_OK when nothing is there or an HDF5 file is (a results file,
 * which the command replaces as documented); DKV_EINVAL naming path when it is a folder, or a file that is not an
 * HDF5 file (a script, a trace, notes: dkv never replaces those). */
dkv_status dkv_h5_output_ok(const char *path, dkv_err *err);

/* DKV_EIO with a message when path's folder has less than need_bytes free, or when the
 * process's file size limit (ulimit -f) is below it.  Checked before copies that libhdf5 does
 * not survive on a full disk (H5Ocopy). */
dkv_status dkv_h5_check_space(const char *path, uint64_t need_bytes, dkv_err *err);

/* Closes a file being written and deletes "<path>.tmp" without renaming (for aborted merges).
 * Accepts NULL. */
void dkv_h5_discard(dkv_h5 *f);

/* Path the file will have after close (the final name, not the .tmp).  Borrowed. */
const char *dkv_h5_path(const dkv_h5 *f);

/* Starts run `name` ([A-Za-z0-9_.:=,+-]+, max 200 chars); DKV_EINVAL when it already exists.
 * Only one run is open at a time per file.  *out is owned by the file; end it with run_end. */
dkv_status dkv_h5_run_begin(dkv_h5 *f, const char *name, dkv_h5_run **out, dkv_err *err);

/* Ends the run: closes its open tables and flushes the file.  Accepts NULL. */
dkv_status dkv_h5_run_end(dkv_h5_run *run, dkv_err *err);

/* The run open for writing on f, or NULL. */
dkv_h5_run *dkv_h5_current_run(dkv_h5 *f);
const char *dkv_h5_run_name(const dkv_h5_run *run);

/* Attributes.  obj names the object inside the run that carries the attribute: NULL or "" for
 * the run group itself, or a relative path such as "params", "summary" or "requests" (a table).
 * A missing group on that path is created.  Writing an existing key replaces it. */
dkv_status dkv_h5_attr_str(dkv_h5_run *run, const char *obj, const char *key, const char *value,
                           dkv_err *err);
dkv_status dkv_h5_attr_i64(dkv_h5_run *run, const char *obj, const char *key, int64_t value,
                           dkv_err *err);
/* An unsigned count (bytes, events): int64 when it is below 2^63, else float64 (the nearest double),
 * so a total of 2^63 bytes or more is never written as a negative number. */
dkv_status dkv_h5_attr_u64(dkv_h5_run *run, const char *obj, const char *key, uint64_t value, dkv_err *err);
dkv_status dkv_h5_attr_f64(dkv_h5_run *run, const char *obj, const char *key, double value,
                           dkv_err *err);
/* A 1-D double array attribute (n >= 1). */
dkv_status dkv_h5_attr_f64v(dkv_h5_run *run, const char *obj, const char *key, const double *v,
                            size_t n, dkv_err *err);

/* Creates table `name` in the run: records of rec_size bytes laid out by fields (copied; the
 * caller keeps its array).  Chunked, deflate level 4, unlimited length.  *out is owned by the
 * run (closed by run_end) but may be closed earlier with dkv_h5_table_close. */
dkv_status dkv_h5_table_create(dkv_h5_run *run, const char *name, size_t rec_size,
                               const dkv_h5_field *fields, size_t nfields, dkv_h5_table **out,
                               dkv_err *err);

/* Appends n records (n * rec_size bytes at recs).  n == 0 is a no-op. */
dkv_status dkv_h5_table_append(dkv_h5_table *t, const void *recs, size_t n, dkv_err *err);

/* Closes a table early.  Accepts NULL. */
void dkv_h5_table_close(dkv_h5_table *t);

/* ------------------------------------------------------------------ reading */

/* Opens an existing results file read-only.  Checks the format attribute. */
dkv_status dkv_h5_open_read(const char *path, dkv_h5 **out, dkv_err *err);

/* Runs in creation order. */
size_t      dkv_h5_run_count(const dkv_h5 *f);
const char *dkv_h5_run_name_at(const dkv_h5 *f, size_t i);   /* borrowed; NULL if i is out of range */

/* Opens run `name` for reading (attributes, tables).  Free with dkv_h5_run_free. */
dkv_status dkv_h5_run_open(dkv_h5 *f, const char *name, dkv_h5_run **out, dkv_err *err);
void       dkv_h5_run_free(dkv_h5_run *run);   /* for runs from run_open; accepts NULL */

/* An attribute value as read back.  s is owned by the iterator (valid during the callback). */
typedef enum dkv_h5_attr_kind { DKV_H5_ATTR_STR, DKV_H5_ATTR_I64, DKV_H5_ATTR_F64, DKV_H5_ATTR_F64V } dkv_h5_attr_kind;
typedef struct dkv_h5_attr {
    const char *key;
    dkv_h5_attr_kind kind;
    const char *s;          /* STR */
    int64_t i;              /* I64 */
    double f;               /* F64; F64V: first element */
    const double *v;        /* F64V (n elements) and F64 (1) */
    size_t n;
} dkv_h5_attr;

/* Calls cb for every attribute of obj (see dkv_h5_attr_str) in name order; a non-zero return
 * from cb stops the walk.  DKV_ENOENT when obj does not exist. */
typedef int (*dkv_h5_attr_cb)(const dkv_h5_attr *a, void *ud);
dkv_status dkv_h5_attr_foreach(dkv_h5_run *run, const char *obj, dkv_h5_attr_cb cb, void *ud,
                               dkv_err *err);

/* Reads one attribute.  get_str mallocs *out (caller frees).  DKV_ENOENT when missing,
 * DKV_EFORMAT when of another type (get_f64 accepts integer attributes). */
dkv_status dkv_h5_attr_get_str(dkv_h5_run *run, const char *obj, const char *key, char **out,
                               dkv_err *err);
dkv_status dkv_h5_attr_get_i64(dkv_h5_run *run, const char *obj, const char *key, int64_t *out,
                               dkv_err *err);
dkv_status dkv_h5_attr_get_f64(dkv_h5_run *run, const char *obj, const char *key, double *out,
                               dkv_err *err);

/* Tables (compound datasets) directly in the run, in name order. */
size_t      dkv_h5_table_count(dkv_h5_run *run);
const char *dkv_h5_table_name_at(dkv_h5_run *run, size_t i);  /* borrowed; NULL out of range */

/* Opens a table for reading; close with dkv_h5_table_close. */
dkv_status dkv_h5_table_open(dkv_h5_run *run, const char *name, dkv_h5_table **out, dkv_err *err);
uint64_t   dkv_h5_table_nrecords(const dkv_h5_table *t);
size_t     dkv_h5_table_nfields(const dkv_h5_table *t);

/* Field i of an open table (name, type, unit and doc from the file; offset = in-file offset).
 * Strings are owned by the table.  DKV_ERANGE when i is out of range. */
dkv_status dkv_h5_table_field(const dkv_h5_table *t, size_t i, dkv_h5_field *out, dkv_err *err);

/* Reads records [start, start+n) into out (n * rec_size bytes) using the caller's layout:
 * fields are matched by name (a subset in any order); HDF5 converts numeric types. */
dkv_status dkv_h5_table_read(dkv_h5_table *t, size_t rec_size, const dkv_h5_field *fields,
                             size_t nfields, uint64_t start, uint64_t n, void *out, dkv_err *err);

/* Reads one numeric column [start, start+n) as doubles. */
dkv_status dkv_h5_table_read_f64(dkv_h5_table *t, const char *field, uint64_t start, uint64_t n,
                                 double *out, dkv_err *err);

/* ------------------------------------------------------------------ merging */

/* Copies run `name` of src (opened for reading) into dst (open for writing, no run open),
 * with all its groups, tables and attributes.  DKV_EINVAL when dst already has that run. */
dkv_status dkv_h5_run_copy(dkv_h5 *dst, dkv_h5 *src, const char *name, dkv_err *err);

/* Adding to a copied run (core/io/h5_append.c): opens existing run `name` of dst (writable, no
 * run open) for writing like dkv_h5_run_begin does for a new one; end it with dkv_h5_run_end. */
dkv_status dkv_h5_run_reopen(dkv_h5 *dst, const char *name, dkv_h5_run **out, dkv_err *err);
/* Removes table or group `name` directly under a run open for writing (not an open table). */
dkv_status dkv_h5_run_unlink(dkv_h5_run *run, const char *name, dkv_err *err);
/* True when the run (open for reading or writing) has a table or group `name`. */
bool dkv_h5_run_has(dkv_h5_run *run, const char *name);

#endif
