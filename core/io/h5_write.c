/* h5_write.c - creating a dkv results file: runs, tables, appends, close + rename, merge copy. */
#include "io/h5_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ shared helpers */

void dkv_h5__quiet(void)
{
    static bool once;
    if (!once) {
        /* No library shutdown at exit: after an H5Fclose that failed (a full disk), libhdf5 1.10's
         * atexit handler closes the file id again and crashes.  dkv closes every file itself. */
        H5dont_atexit();
        once = true;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

char *dkv_h5__strdup(const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

size_t dkv_h5_type_size(dkv_h5_type t)
{
    switch (t) {
    case DKV_H5_U8: return 1;
    case DKV_H5_U32:
    case DKV_H5_I32:
    case DKV_H5_F32: return 4;
    case DKV_H5_U64:
    case DKV_H5_I64:
    case DKV_H5_F64: return 8;
    case DKV_H5_STR32: return DKV_H5_STR32_LEN;
    }
    return 0;
}

const char *dkv_h5_type_name(dkv_h5_type t)
{
    static const char *names[] = {"u8", "u32", "u64", "i32", "i64", "f32", "f64", "str32"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

hid_t dkv_h5__native_type(dkv_h5_type t)
{
    hid_t s;
    switch (t) {
    case DKV_H5_U8: return H5Tcopy(H5T_NATIVE_UINT8);
    case DKV_H5_U32: return H5Tcopy(H5T_NATIVE_UINT32);
    case DKV_H5_U64: return H5Tcopy(H5T_NATIVE_UINT64);
    case DKV_H5_I32: return H5Tcopy(H5T_NATIVE_INT32);
    case DKV_H5_I64: return H5Tcopy(H5T_NATIVE_INT64);
    case DKV_H5_F32: return H5Tcopy(H5T_NATIVE_FLOAT);
    case DKV_H5_F64: return H5Tcopy(H5T_NATIVE_DOUBLE);
    case DKV_H5_STR32:
        s = H5Tcopy(H5T_C_S1);
        H5Tset_size(s, DKV_H5_STR32_LEN);
        H5Tset_strpad(s, H5T_STR_NULLTERM);
        return s;
    }
    return H5I_INVALID_HID;
}

void dkv_h5__free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

dkv_status dkv_h5__list(hid_t g, char ***out, size_t *n, dkv_err *err)
{
    H5G_info_t info;
    *out = NULL;
    *n = 0;
    if (H5Gget_info(g, &info) < 0)
        return dkv_err_set(err, DKV_EFORMAT, "cannot read group info");
    if (info.nlinks == 0)
        return DKV_OK;
    char **names = calloc(info.nlinks, sizeof *names);
    if (!names)
        return dkv_err_set(err, DKV_ENOMEM, "out of memory listing a group");
    H5_index_t idx = H5_INDEX_CRT_ORDER;
    for (hsize_t i = 0; i < info.nlinks; i++) {
        ssize_t len = H5Lget_name_by_idx(g, ".", idx, H5_ITER_INC, i, NULL, 0, H5P_DEFAULT);
        if (len < 0 && idx == H5_INDEX_CRT_ORDER && i == 0) {
            idx = H5_INDEX_NAME;  /* group without creation-order tracking */
            len = H5Lget_name_by_idx(g, ".", idx, H5_ITER_INC, i, NULL, 0, H5P_DEFAULT);
        }
        if (len < 0 || !(names[i] = malloc((size_t)len + 1))) {
            dkv_h5__free_names(names, info.nlinks);
            return dkv_err_set(err, DKV_EFORMAT, "cannot read link %llu of a group", (unsigned long long)i);
        }
        H5Lget_name_by_idx(g, ".", idx, H5_ITER_INC, i, names[i], (size_t)len + 1, H5P_DEFAULT);
    }
    *out = names;
    *n = info.nlinks;
    return DKV_OK;
}

static bool valid_name(const char *s, size_t max, const char *extra)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              strchr(extra, c)))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ file */

static hid_t new_crt_order_gcpl(void)
{
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    return gcpl;
}

dkv_status dkv_h5_create(const char *path, dkv_h5 **out, dkv_err *err)
{
    *out = NULL;
    dkv_h5__quiet();
    if (!path || !*path)
        return dkv_err_set(err, DKV_EINVAL, "h5: empty output path");
    dkv_h5 *f = calloc(1, sizeof *f);
    if (!f)
        return dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
    f->file = f->runs = H5I_INVALID_HID;
    f->writable = true;
    f->path = dkv_h5__strdup(path);
    f->tmp_path = malloc(strlen(path) + 5);
    if (!f->path || !f->tmp_path) {
        dkv_h5_close(f, NULL);
        return dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
    }
    sprintf(f->tmp_path, "%s.tmp", path);
    struct stat sb;
    if (lstat(f->tmp_path, &sb) == 0) {
        /* never truncate what may be the only copy of a killed run's results */
        dkv_err_set(err, DKV_EIO, "h5: '%s' exists (left by a run that was killed?); it is not overwritten: "
                    "move it away first", f->tmp_path);
        free(f->tmp_path);
        f->tmp_path = NULL;
        dkv_h5_close(f, NULL);
        return err ? err->code : DKV_EIO;
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), gcpl = H5I_INVALID_HID;
    H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    errno = 0;
    f->file = H5Fcreate(f->tmp_path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (f->file < 0) {
        dkv_err_set(err, DKV_EIO, "h5: cannot create '%s' (%s)", f->tmp_path,
                    errno ? strerror(errno) : "HDF5 error");
        f->file = H5I_INVALID_HID;
        free(f->tmp_path);
        f->tmp_path = NULL;  /* nothing to rename */
        dkv_h5_close(f, NULL);
        return err ? err->code : DKV_EIO;
    }
    gcpl = new_crt_order_gcpl();
    f->runs = H5Gcreate2(f->file, "runs", H5P_DEFAULT, gcpl, H5P_DEFAULT);
    H5Pclose(gcpl);
    hid_t root = H5Gopen2(f->file, "/", H5P_DEFAULT);
    dkv_status st = f->runs < 0 ? dkv_err_set(err, DKV_EIO, "h5: cannot create /runs in '%s'", f->tmp_path)
                                : dkv_h5__set_str(root, "format", DKV_H5_FORMAT, err);
    if (st == DKV_OK)
        st = dkv_h5__set_str(root, "dkv_version", DKV_VERSION, err);
    if (st == DKV_OK) {
        hid_t sp = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(root, "format_version", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
        int64_t v = DKV_H5_FORMAT_VERSION;
        if (a < 0 || H5Awrite(a, H5T_NATIVE_INT64, &v) < 0)
            st = dkv_err_set(err, DKV_EIO, "h5: cannot write format_version");
        if (a >= 0)
            H5Aclose(a);
        H5Sclose(sp);
    }
    H5Gclose(root);
    if (st != DKV_OK) {
        dkv_h5_close(f, NULL);
        return st;
    }
    *out = f;
    return DKV_OK;
}

const char *dkv_h5_path(const dkv_h5 *f)
{
    return f ? f->path : NULL;
}

dkv_status dkv_h5_close(dkv_h5 *f, dkv_err *err)
{
    if (!f)
        return DKV_OK;
    dkv_status st = DKV_OK;
    if (f->current)
        st = dkv_h5_run_end(f->current, err);
    if (f->runs >= 0)
        H5Gclose(f->runs);
    if (f->file >= 0) {
        if (f->writable)
            H5Fflush(f->file, H5F_SCOPE_GLOBAL);
        errno = 0;
        if (H5Fclose(f->file) < 0 && st == DKV_OK)
            st = dkv_err_set(err, DKV_EIO, "h5: closing '%s' failed%s%s", f->tmp_path ? f->tmp_path : f->path,
                             errno ? ": " : "", errno ? strerror(errno) : "");
        /* A file that did not close cleanly never replaces the target: the tmp stays where it is. */
        if (f->writable && f->tmp_path && !f->keep_tmp && st == DKV_OK && rename(f->tmp_path, f->path) != 0)
            st = dkv_err_set(err, DKV_EIO, "h5: cannot rename '%s' to '%s': %s", f->tmp_path, f->path,
                             strerror(errno));
    }
    dkv_h5__free_names(f->names, f->nnames);
    free(f->path);
    free(f->tmp_path);
    free(f);
    return st;
}

void dkv_h5_discard(dkv_h5 *f)
{
    if (!f)
        return;
    char *tmp = f->tmp_path;
    f->tmp_path = NULL;  /* close without renaming */
    dkv_h5_close(f, NULL);
    if (tmp)
        remove(tmp);
    free(tmp);
}

/* ------------------------------------------------------------------ runs */

dkv_status dkv_h5_run_begin(dkv_h5 *f, const char *name, dkv_h5_run **out, dkv_err *err)
{
    *out = NULL;
    if (!f->writable)
        return dkv_err_set(err, DKV_ESTATE, "h5: '%s' is open read-only", f->path);
    if (f->current)
        return dkv_err_set(err, DKV_ESTATE, "h5: run '%s' is still open (end it before starting '%s')",
                           f->current->name, name ? name : "");
    if (!valid_name(name, 200, ".:=,+-"))
        return dkv_err_set(err, DKV_EINVAL,
                           "h5: bad run name '%s' (use 1-200 of A-Z a-z 0-9 _ . : = , + -)", name ? name : "");
    if (H5Lexists(f->runs, name, H5P_DEFAULT) > 0)
        return dkv_err_set(err, DKV_EINVAL, "h5: run '%s' already exists in '%s'", name, f->path);
    if (dkv_h5__check_room(f, err) != DKV_OK)
        return err ? err->code : DKV_EIO;
    dkv_h5_run *r = calloc(1, sizeof *r);
    if (!r || !(r->name = dkv_h5__strdup(name))) {
        free(r);
        return dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
    }
    r->f = f;
    r->writing = true;
    r->g = H5Gcreate2(f->runs, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (r->g < 0) {
        free(r->name);
        free(r);
        return dkv_err_set(err, DKV_EIO, "h5: cannot create run '%s' in '%s'", name, f->path);
    }
    f->current = r;
    *out = r;
    return DKV_OK;
}

dkv_h5_run *dkv_h5_current_run(dkv_h5 *f)
{
    return f ? f->current : NULL;
}

const char *dkv_h5_run_name(const dkv_h5_run *run)
{
    return run ? run->name : NULL;
}

void dkv_h5__table_free(dkv_h5_table *t)
{
    if (!t)
        return;
    if (t->ds >= 0)
        H5Dclose(t->ds);
    if (t->mtype >= 0)
        H5Tclose(t->mtype);
    for (size_t i = 0; i < t->nfields; i++) {
        free((char *)t->fields[i].name);
        free((char *)t->fields[i].unit);
        free((char *)t->fields[i].doc);
    }
    free(t->fields);
    free(t->name);
    free(t);
}

dkv_status dkv_h5_run_end(dkv_h5_run *run, dkv_err *err)
{
    if (!run)
        return DKV_OK;
    if (!run->writing) {
        dkv_h5_run_free(run);
        return DKV_OK;
    }
    for (size_t i = 0; i < run->ntables; i++)
        dkv_h5__table_free(run->tables[i]);
    free(run->tables);
    dkv_h5 *f = run->f;
    H5Gclose(run->g);
    dkv_status st = DKV_OK;
    errno = 0;
    if (H5Fflush(f->file, H5F_SCOPE_GLOBAL) < 0)
        st = dkv_err_set(err, DKV_EIO, "h5: flushing run '%s' to '%s' failed%s%s", run->name, f->tmp_path,
                         errno ? ": " : "", errno ? strerror(errno) : "");
    else
        dkv_h5__note_flush(f);
    f->current = NULL;
    dkv_h5__free_names(run->tnames, run->ntnames);
    free(run->name);
    free(run);
    return st;
}

/* ------------------------------------------------------------------ tables */

dkv_status dkv_h5_table_create(dkv_h5_run *run, const char *name, size_t rec_size,
                               const dkv_h5_field *fields, size_t nfields, dkv_h5_table **out,
                               dkv_err *err)
{
    *out = NULL;
    if (!run || !run->writing)
        return dkv_err_set(err, DKV_ESTATE, "h5: table '%s': run is not open for writing", name ? name : "");
    if (!valid_name(name, 64, ".-") || strcmp(name, "params") == 0 || strcmp(name, "summary") == 0)
        return dkv_err_set(err, DKV_EINVAL, "h5: run '%s': bad table name '%s'", run->name, name ? name : "");
    if (nfields == 0 || rec_size == 0)
        return dkv_err_set(err, DKV_EINVAL, "h5: table '%s': no fields", name);
    if (H5Lexists(run->g, name, H5P_DEFAULT) > 0)
        return dkv_err_set(err, DKV_EINVAL, "h5: run '%s' already has '%s'", run->name, name);
    for (size_t i = 0; i < nfields; i++) {
        if (!valid_name(fields[i].name, 64, "."))
            return dkv_err_set(err, DKV_EINVAL, "h5: table '%s': bad field name '%s'", name,
                               fields[i].name ? fields[i].name : "(null)");
        if (dkv_h5_type_size(fields[i].type) == 0 ||
            fields[i].offset + dkv_h5_type_size(fields[i].type) > rec_size)
            return dkv_err_set(err, DKV_EINVAL, "h5: table '%s': field '%s' has a bad type or lies outside the %zu-byte record",
                               name, fields[i].name, rec_size);
        for (size_t j = 0; j < i; j++)
            if (strcmp(fields[i].name, fields[j].name) == 0)
                return dkv_err_set(err, DKV_EINVAL, "h5: table '%s': field '%s' appears twice", name, fields[i].name);
    }
    if (run->ntables == run->cap) {
        size_t cap = run->cap ? 2 * run->cap : 4;
        dkv_h5_table **nt = realloc(run->tables, cap * sizeof *nt);
        if (!nt)
            return dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
        run->tables = nt;
        run->cap = cap;
    }
    dkv_h5_table *t = calloc(1, sizeof *t);
    if (!t)
        return dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
    t->ds = t->mtype = H5I_INVALID_HID;
    t->run = run;
    t->rec_size = rec_size;
    t->name = dkv_h5__strdup(name);
    t->fields = calloc(nfields, sizeof *t->fields);
    if (!t->name || !t->fields) {
        dkv_h5__table_free(t);
        return dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
    }
    t->nfields = nfields;
    dkv_status st = DKV_OK;
    hid_t ftype = H5I_INVALID_HID, space = H5I_INVALID_HID, dcpl = H5I_INVALID_HID;
    t->mtype = H5Tcreate(H5T_COMPOUND, rec_size);
    size_t fields_len = 0;
    for (size_t i = 0; i < nfields; i++) {
        t->fields[i] = fields[i];
        t->fields[i].name = dkv_h5__strdup(fields[i].name);
        t->fields[i].unit = dkv_h5__strdup(fields[i].unit);
        t->fields[i].doc = dkv_h5__strdup(fields[i].doc);
        fields_len += strlen(fields[i].name) + 1;
        hid_t ft = dkv_h5__native_type(fields[i].type);
        if (H5Tinsert(t->mtype, fields[i].name, fields[i].offset, ft) < 0)
            st = dkv_err_set(err, DKV_EINVAL, "h5: table '%s': field '%s' overlaps another", name, fields[i].name);
        H5Tclose(ft);
        if (st != DKV_OK)
            goto done;
    }
    ftype = H5Tcopy(t->mtype);
    H5Tpack(ftype);
    hsize_t dims = 0, maxdims = H5S_UNLIMITED;
    hsize_t chunk = rec_size >= 65536 ? 1 : 65536 / rec_size;
    space = H5Screate_simple(1, &dims, &maxdims);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    if (H5Zfilter_avail(H5Z_FILTER_SHUFFLE) > 0)
        H5Pset_shuffle(dcpl);
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0)
        H5Pset_deflate(dcpl, 4);
    t->ds = H5Dcreate2(run->g, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (t->ds < 0) {
        st = dkv_err_set(err, DKV_EIO, "h5: run '%s': cannot create table '%s'", run->name, name);
        goto done;
    }
    /* Self-description: field order, units and docs as attributes. */
    char *order = malloc(fields_len + 1), key[80];
    if (!order) {
        st = dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
        goto done;
    }
    order[0] = '\0';
    for (size_t i = 0; i < nfields; i++) {
        if (i)
            strcat(order, ",");
        strcat(order, fields[i].name);
    }
    st = dkv_h5__set_str(t->ds, "fields", order, err);
    free(order);
    for (size_t i = 0; i < nfields && st == DKV_OK; i++) {
        snprintf(key, sizeof key, "units.%s", fields[i].name);
        st = dkv_h5__set_str(t->ds, key, t->fields[i].unit, err);
        snprintf(key, sizeof key, "doc.%s", fields[i].name);
        if (st == DKV_OK)
            st = dkv_h5__set_str(t->ds, key, t->fields[i].doc, err);
    }
done:
    if (ftype >= 0)
        H5Tclose(ftype);
    if (space >= 0)
        H5Sclose(space);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (st != DKV_OK) {
        if (t->ds >= 0) {
            H5Dclose(t->ds);
            t->ds = H5I_INVALID_HID;
            H5Ldelete(run->g, name, H5P_DEFAULT);
        }
        dkv_h5__table_free(t);
        return st;
    }
    run->tables[run->ntables++] = t;
    *out = t;
    return DKV_OK;
}

dkv_status dkv_h5_table_append(dkv_h5_table *t, const void *recs, size_t n, dkv_err *err)
{
    if (n == 0)
        return DKV_OK;
    if (!t || !t->run || t->mtype < 0)
        return dkv_err_set(err, DKV_ESTATE, "h5: append to a table not open for writing");
    hsize_t start = t->n, count = n, size = t->n + n;
    if (H5Dset_extent(t->ds, &size) < 0)
        return dkv_err_set(err, DKV_EIO, "h5: table '%s': cannot grow to %llu records", t->name,
                           (unsigned long long)size);
    hid_t fs = H5Dget_space(t->ds);
    hid_t ms = H5Screate_simple(1, &count, NULL);
    herr_t rc = H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL);
    errno = 0;
    if (rc >= 0)
        rc = H5Dwrite(t->ds, t->mtype, ms, fs, H5P_DEFAULT, recs);
    int e = errno;
    H5Sclose(ms);
    H5Sclose(fs);
    if (rc < 0)
        return dkv_err_set(err, DKV_EIO, "h5: table '%s': writing %zu records failed%s%s", t->name, n,
                           e ? ": " : "", e ? strerror(e) : "");
    t->n = size;
    return DKV_OK;
}

void dkv_h5_table_close(dkv_h5_table *t)
{
    if (!t)
        return;
    dkv_h5_run *run = t->run;
    if (run) {
        for (size_t i = 0; i < run->ntables; i++)
            if (run->tables[i] == t) {
                run->tables[i] = run->tables[--run->ntables];
                break;
            }
    }
    dkv_h5__table_free(t);
}

/* ------------------------------------------------------------------ merge */

dkv_status dkv_h5_run_copy(dkv_h5 *dst, dkv_h5 *src, const char *name, dkv_err *err)
{
    if (!dst->writable)
        return dkv_err_set(err, DKV_ESTATE, "h5: '%s' is open read-only", dst->path);
    if (dst->current)
        return dkv_err_set(err, DKV_ESTATE, "h5: '%s' has run '%s' open", dst->path, dst->current->name);
    if (H5Lexists(src->runs, name, H5P_DEFAULT) <= 0)
        return dkv_err_set(err, DKV_ENOENT, "h5: '%s' has no run '%s'", src->path, name);
    if (H5Lexists(dst->runs, name, H5P_DEFAULT) > 0)
        return dkv_err_set(err, DKV_EINVAL, "h5: run '%s' from '%s' already exists in '%s'", name, src->path,
                           dst->path);
    if (H5Ocopy(src->runs, name, dst->runs, name, H5P_DEFAULT, H5P_DEFAULT) < 0)
        return dkv_err_set(err, DKV_EIO, "h5: copying run '%s' from '%s' failed", name, src->path);
    errno = 0;
    if (H5Fflush(dst->file, H5F_SCOPE_GLOBAL) < 0)
        return dkv_err_set(err, DKV_EIO, "h5: flushing '%s' failed%s%s", dst->tmp_path, errno ? ": " : "",
                           errno ? strerror(errno) : "");
    return DKV_OK;
}
