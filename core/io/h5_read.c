/* h5_read.c - reading a dkv results file back: runs, tables, fields, records. */
#include "io/h5_internal.h"

#include <stdlib.h>
#include <string.h>

dkv_status dkv_h5_open_read(const char *path, dkv_h5 **out, dkv_err *err)
{
    *out = NULL;
    dkv_h5__quiet();
    if (!path)
        return dkv_err_set(err, DKV_EINVAL, "h5: no path");
    dkv_status pre = dkv_h5__precheck(path, err);   /* before libhdf5 reads anything */
    if (pre != DKV_OK)
        return pre;
    if (H5Fis_hdf5(path) <= 0)
        return dkv_err_set(err, DKV_EFORMAT, "%s: not an HDF5 file (or missing)", path);
    dkv_h5 *f = calloc(1, sizeof *f);
    if (!f)
        return dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
    f->runs = H5I_INVALID_HID;
    f->path = dkv_h5__strdup(path);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    f->file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    dkv_status st = DKV_OK;
    char *fmt = NULL;
    if (f->file < 0) {
        f->file = H5I_INVALID_HID;
        st = dkv_err_set(err, DKV_EIO, "%s: cannot open", path);
    } else {
        hid_t root = H5Gopen2(f->file, "/", H5P_DEFAULT);
        if (dkv_h5__get_str(root, "format", &fmt, NULL) != DKV_OK || strcmp(fmt, DKV_H5_FORMAT) != 0)
            st = dkv_err_set(err, DKV_EFORMAT, "%s: not a dkv results file (root attribute format != \"%s\")",
                             path, DKV_H5_FORMAT);
        else
            st = dkv_h5__check_version(root, path, err);
        H5Gclose(root);
        free(fmt);
    }
    if (st == DKV_OK) {
        f->runs = H5Gopen2(f->file, "runs", H5P_DEFAULT);
        if (f->runs < 0)
            st = dkv_err_set(err, DKV_EFORMAT, "%s: no /runs group", path);
    }
    if (st == DKV_OK && dkv_h5__list(f->runs, &f->names, &f->nnames, err) != DKV_OK)
        st = err ? err->code : DKV_EFORMAT;
    if (st != DKV_OK) {
        dkv_h5_close(f, NULL);
        return st;
    }
    *out = f;
    return DKV_OK;
}

size_t dkv_h5_run_count(const dkv_h5 *f)
{
    return f ? f->nnames : 0;
}

const char *dkv_h5_run_name_at(const dkv_h5 *f, size_t i)
{
    return f && i < f->nnames ? f->names[i] : NULL;
}

dkv_status dkv_h5_run_open(dkv_h5 *f, const char *name, dkv_h5_run **out, dkv_err *err)
{
    *out = NULL;
    if (!name || H5Lexists(f->runs, name, H5P_DEFAULT) <= 0)
        return dkv_err_set(err, DKV_ENOENT, "%s: no run '%s'", f->path, name ? name : "");
    dkv_h5_run *r = calloc(1, sizeof *r);
    if (!r)
        return dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
    r->f = f;
    r->name = dkv_h5__strdup(name);
    r->g = H5Gopen2(f->runs, name, H5P_DEFAULT);
    if (r->g < 0 || !r->name) {
        dkv_h5_run_free(r);
        return dkv_err_set(err, DKV_EFORMAT, "%s: cannot open run '%s'", f->path, name);
    }
    *out = r;
    return DKV_OK;
}

void dkv_h5_run_free(dkv_h5_run *run)
{
    if (!run)
        return;
    if (run->writing) {
        dkv_h5_run_end(run, NULL);
        return;
    }
    if (run->g >= 0)
        H5Gclose(run->g);
    dkv_h5__free_names(run->tnames, run->ntnames);
    free(run->name);
    free(run);
}

/* ------------------------------------------------------------------ tables */

static void load_table_names(dkv_h5_run *run)
{
    if (run->tnames_loaded)
        return;
    run->tnames_loaded = true;
    char **all;
    size_t n;
    if (dkv_h5__list(run->g, &all, &n, NULL) != DKV_OK)
        return;
    run->tnames = calloc(n ? n : 1, sizeof *run->tnames);
    for (size_t i = 0; i < n; i++) {
        hid_t o = H5Oopen(run->g, all[i], H5P_DEFAULT);
        bool is_table = false;
        if (o >= 0 && H5Iget_type(o) == H5I_DATASET) {
            hid_t t = H5Dget_type(o);
            is_table = H5Tget_class(t) == H5T_COMPOUND;
            H5Tclose(t);
        }
        if (o >= 0)
            H5Oclose(o);
        if (is_table && run->tnames) {
            run->tnames[run->ntnames++] = all[i];
            all[i] = NULL;
        }
    }
    dkv_h5__free_names(all, n);
    /* name order, whatever order the group keeps */
    for (size_t i = 1; i < run->ntnames; i++)
        for (size_t j = i; j > 0 && strcmp(run->tnames[j - 1], run->tnames[j]) > 0; j--) {
            char *x = run->tnames[j];
            run->tnames[j] = run->tnames[j - 1];
            run->tnames[j - 1] = x;
        }
}

size_t dkv_h5_table_count(dkv_h5_run *run)
{
    if (!run)
        return 0;
    load_table_names(run);
    return run->ntnames;
}

const char *dkv_h5_table_name_at(dkv_h5_run *run, size_t i)
{
    if (!run)
        return NULL;
    load_table_names(run);
    return i < run->ntnames ? run->tnames[i] : NULL;
}

static bool map_type(hid_t t, dkv_h5_type *out)
{
    H5T_class_t c = H5Tget_class(t);
    size_t size = H5Tget_size(t);
    if (c == H5T_STRING) {
        *out = DKV_H5_STR32;
        return true;
    }
    if (c == H5T_FLOAT) {
        *out = size == 4 ? DKV_H5_F32 : DKV_H5_F64;
        return true;
    }
    if (c == H5T_INTEGER) {
        bool sign = H5Tget_sign(t) == H5T_SGN_2;
        if (size == 1 && !sign)
            *out = DKV_H5_U8;
        else if (size <= 4)
            *out = sign ? DKV_H5_I32 : DKV_H5_U32;
        else
            *out = sign ? DKV_H5_I64 : DKV_H5_U64;
        return true;
    }
    return false;
}

dkv_status dkv_h5_table_open(dkv_h5_run *run, const char *name, dkv_h5_table **out, dkv_err *err)
{
    *out = NULL;
    if (!run || !name || H5Lexists(run->g, name, H5P_DEFAULT) <= 0)
        return dkv_err_set(err, DKV_ENOENT, "h5: run '%s' has no table '%s'", run ? run->name : "?",
                           name ? name : "");
    dkv_h5_table *t = calloc(1, sizeof *t);
    if (!t)
        return dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
    t->mtype = H5I_INVALID_HID;
    t->name = dkv_h5__strdup(name);
    t->ds = H5Dopen2(run->g, name, H5P_DEFAULT);
    dkv_status st = DKV_OK;
    hid_t ft = H5I_INVALID_HID;
    if (t->ds < 0) {
        t->ds = H5I_INVALID_HID;
        st = dkv_err_set(err, DKV_EFORMAT, "h5: run '%s': '%s' is not a table", run->name, name);
        goto done;
    }
    ft = H5Dget_type(t->ds);
    if (H5Tget_class(ft) != H5T_COMPOUND) {
        st = dkv_err_set(err, DKV_EFORMAT, "h5: run '%s': '%s' is not a table of records", run->name, name);
        goto done;
    }
    hid_t sp = H5Dget_space(t->ds);
    hsize_t dims = 0;
    if (H5Sget_simple_extent_ndims(sp) == 1)
        H5Sget_simple_extent_dims(sp, &dims, NULL);
    H5Sclose(sp);
    t->n = dims;
    t->rec_size = H5Tget_size(ft);
    int nm = H5Tget_nmembers(ft);
    t->fields = calloc(nm > 0 ? (size_t)nm : 1, sizeof *t->fields);
    if (!t->fields) {
        st = dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
        goto done;
    }
    for (int i = 0; i < nm; i++) {
        char *mname = H5Tget_member_name(ft, (unsigned)i);
        hid_t mt = H5Tget_member_type(ft, (unsigned)i);
        dkv_h5_field *fd = &t->fields[t->nfields++];
        fd->name = dkv_h5__strdup(mname);
        fd->offset = H5Tget_member_offset(ft, (unsigned)i);
        if (!map_type(mt, &fd->type))
            st = dkv_err_set(err, DKV_EFORMAT, "h5: table '%s': field '%s' has an unsupported type", name, mname);
        H5Tclose(mt);
        H5free_memory(mname);
        char key[96], *v = NULL;
        snprintf(key, sizeof key, "units.%s", fd->name);
        fd->unit = dkv_h5__get_str(t->ds, key, &v, NULL) == DKV_OK ? v : dkv_h5__strdup("");
        snprintf(key, sizeof key, "doc.%s", fd->name);
        v = NULL;
        fd->doc = dkv_h5__get_str(t->ds, key, &v, NULL) == DKV_OK ? v : dkv_h5__strdup("");
        if (st != DKV_OK)
            goto done;
    }
done:
    if (ft >= 0)
        H5Tclose(ft);
    if (st != DKV_OK) {
        dkv_h5__table_free(t);
        return st;
    }
    *out = t;
    return DKV_OK;
}

uint64_t dkv_h5_table_nrecords(const dkv_h5_table *t)
{
    return t ? t->n : 0;
}

size_t dkv_h5_table_nfields(const dkv_h5_table *t)
{
    return t ? t->nfields : 0;
}

dkv_status dkv_h5_table_field(const dkv_h5_table *t, size_t i, dkv_h5_field *out, dkv_err *err)
{
    if (!t || i >= t->nfields)
        return dkv_err_set(err, DKV_ERANGE, "h5: table '%s': no field %zu", t ? t->name : "?", i);
    *out = t->fields[i];
    return DKV_OK;
}

dkv_status dkv_h5_table_read(dkv_h5_table *t, size_t rec_size, const dkv_h5_field *fields, size_t nfields,
                             uint64_t start, uint64_t n, void *out, dkv_err *err)
{
    if (n == 0)
        return DKV_OK;
    if (start + n > t->n || start + n < start)
        return dkv_err_set(err, DKV_ERANGE, "h5: table '%s': records [%llu, %llu) out of range (%llu records)",
                           t->name, (unsigned long long)start, (unsigned long long)(start + n),
                           (unsigned long long)t->n);
    dkv_status st = DKV_OK;
    hid_t mt = H5Tcreate(H5T_COMPOUND, rec_size);
    for (size_t i = 0; i < nfields && st == DKV_OK; i++) {
        bool found = false;
        for (size_t j = 0; j < t->nfields; j++)
            found = found || strcmp(t->fields[j].name, fields[i].name) == 0;
        if (!found)
            st = dkv_err_set(err, DKV_ENOENT, "h5: table '%s' has no field '%s'", t->name, fields[i].name);
        hid_t ft = dkv_h5__native_type(fields[i].type);
        if (st == DKV_OK && H5Tinsert(mt, fields[i].name, fields[i].offset, ft) < 0)
            st = dkv_err_set(err, DKV_EINVAL, "h5: reading '%s': bad layout for field '%s'", t->name, fields[i].name);
        H5Tclose(ft);
    }
    if (st == DKV_OK) {
        hsize_t s = start, c = n;
        hid_t fs = H5Dget_space(t->ds), ms = H5Screate_simple(1, &c, NULL);
        herr_t rc = H5Sselect_hyperslab(fs, H5S_SELECT_SET, &s, NULL, &c, NULL);
        if (rc >= 0)
            rc = H5Dread(t->ds, mt, ms, fs, H5P_DEFAULT, out);
        if (rc < 0)
            st = dkv_err_set(err, DKV_EIO, "h5: table '%s': reading records failed", t->name);
        H5Sclose(ms);
        H5Sclose(fs);
    }
    H5Tclose(mt);
    return st;
}

dkv_status dkv_h5_table_read_f64(dkv_h5_table *t, const char *field, uint64_t start, uint64_t n, double *out,
                                 dkv_err *err)
{
    for (size_t j = 0; j < t->nfields; j++)
        if (strcmp(t->fields[j].name, field) == 0 && t->fields[j].type == DKV_H5_STR32)
            return dkv_err_set(err, DKV_EFORMAT, "h5: table '%s': field '%s' is a string", t->name, field);
    dkv_h5_field fd = {field, DKV_H5_F64, 0, NULL, NULL};
    return dkv_h5_table_read(t, sizeof(double), &fd, 1, start, n, out, err);
}
