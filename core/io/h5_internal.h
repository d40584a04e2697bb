/* h5_internal.h - private structures shared by h5_write.c, h5_read.c and h5_attr.c. */
#ifndef DKV_IO_H5_INTERNAL_H
#define DKV_IO_H5_INTERNAL_H

#include <hdf5.h>
#include <stdbool.h>

#include "io/h5.h"

#define DKV_H5_FORMAT "dkv-results"
#define DKV_H5_FORMAT_VERSION 1
#define DKV_H5_MAX_FIXED_STR (16u << 20)   /* a longer fixed-length string attribute is refused */

struct dkv_h5 {
    hid_t file;          /* H5I_INVALID_HID when closed */
    hid_t runs;          /* the /runs group */
    char *path;          /* final name */
    char *tmp_path;      /* "<path>.tmp" when writing, else NULL */
    bool writable;
    bool keep_tmp;       /* close without renaming (dkv_h5_close_uncommitted) */
    uint64_t flushed_bytes;   /* size of the tmp file after the last run's flush */
    uint64_t max_run_bytes;   /* largest growth of the file by one run */
    dkv_h5_run *current; /* run being written */
    char **names;        /* reading: run names in creation order */
    size_t nnames;
};

struct dkv_h5_run {
    dkv_h5 *f;
    hid_t g;
    char *name;
    bool writing;
    dkv_h5_table **tables;   /* writing: open tables (owned) */
    size_t ntables, cap;
    char **tnames;           /* reading: table names (lazy) */
    size_t ntnames;
    bool tnames_loaded;
};

struct dkv_h5_table {
    dkv_h5_run *run;         /* writing: owner; NULL for tables opened for reading */
    hid_t ds;
    hid_t mtype;             /* writing: memory compound type */
    size_t rec_size;
    uint64_t n;              /* records in the dataset */
    char *name;
    dkv_h5_field *fields;    /* owned copies (names, units, docs) */
    size_t nfields;
};

/* Before a run is begun: DKV_EIO when the disk (or ulimit -f) leaves less room than twice the
 * largest run so far (64 KiB at least), since libhdf5 can damage earlier runs when a write
 * fails half-way.  After a run's flush: records its size. */
dkv_status dkv_h5__check_room(dkv_h5 *f, dkv_err *err);
void dkv_h5__note_flush(dkv_h5 *f);

/* Turns off HDF5's automatic error printing (library code never prints). */
void dkv_h5__quiet(void);
/* Native HDF5 type for t (a new id the caller closes). */
hid_t dkv_h5__native_type(dkv_h5_type t);
/* Opens obj ("" / NULL = the run group itself) inside the run; creates missing groups when
 * create is true.  Returns a new id or H5I_INVALID_HID with err set. */
hid_t dkv_h5__open_obj(dkv_h5_run *run, const char *obj, bool create, dkv_err *err);
/* A string attribute on any object (replacing an existing one). */
dkv_status dkv_h5__set_str(hid_t obj, const char *key, const char *value, dkv_err *err);
/* Reads a string attribute into a malloc'd string (*out); DKV_ENOENT when missing. */
dkv_status dkv_h5__get_str(hid_t obj, const char *key, char **out, dkv_err *err);
/* Names of the links of group g in creation order (falling back to name order); caller frees
 * with dkv_h5__free_names. */
dkv_status dkv_h5__list(hid_t g, char ***out, size_t *n, dkv_err *err);
void dkv_h5__free_names(char **names, size_t n);
char *dkv_h5__strdup(const char *s);
void dkv_h5__table_free(dkv_h5_table *t);
/* Checks what can be checked of path without libhdf5 (h5_check.c): a regular file, the HDF5
 * signature and superblock, its size, the root group's header.  DKV_EFORMAT naming the problem. */
dkv_status dkv_h5__precheck(const char *path, dkv_err *err);
/* The root group's format_version attribute, when present: an integer in 1..DKV_H5_FORMAT_VERSION. */
dkv_status dkv_h5__check_version(hid_t root, const char *path, dkv_err *err);

#endif
