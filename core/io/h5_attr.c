/* h5_attr.c - attributes on runs, their groups and tables: write, read one, walk all. */
#include "io/h5_internal.h"

#include <stdlib.h>
#include <string.h>

hid_t dkv_h5__open_obj(dkv_h5_run *run, const char *obj, bool create, dkv_err *err)
{
    if (!run) {
        dkv_err_set(err, DKV_ESTATE, "h5: no run");
        return H5I_INVALID_HID;
    }
    if (!obj || !*obj)
        return H5Oopen(run->g, ".", H5P_DEFAULT);
    if (obj[0] == '/' || strstr(obj, "..")) {
        dkv_err_set(err, DKV_EINVAL, "h5: run '%s': object path '%s' must be relative", run->name, obj);
        return H5I_INVALID_HID;
    }
    if (create) {  /* create missing groups on the path, one component at a time */
        char *p = dkv_h5__strdup(obj);
        if (!p) {
            dkv_err_set(err, DKV_ENOMEM, "h5: out of memory");
            return H5I_INVALID_HID;
        }
        for (char *s = p;; s++) {
            char c = *s;
            if (c == '/' || c == '\0') {
                *s = '\0';
                if (H5Lexists(run->g, p, H5P_DEFAULT) <= 0) {
                    hid_t g = H5Gcreate2(run->g, p, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
                    if (g < 0) {
                        dkv_err_set(err, DKV_EIO, "h5: run '%s': cannot create group '%s'", run->name, p);
                        free(p);
                        return H5I_INVALID_HID;
                    }
                    H5Gclose(g);
                }
                *s = c;
                if (c == '\0')
                    break;
            }
        }
        free(p);
    } else if (H5Lexists(run->g, obj, H5P_DEFAULT) <= 0) {
        dkv_err_set(err, DKV_ENOENT, "h5: run '%s' has no '%s'", run->name, obj);
        return H5I_INVALID_HID;
    }
    hid_t o = H5Oopen(run->g, obj, H5P_DEFAULT);
    if (o < 0)
        dkv_err_set(err, DKV_EFORMAT, "h5: run '%s': cannot open '%s'", run->name, obj);
    return o;
}

static hid_t new_str_type(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

/* Writes a scalar/1-D attribute, replacing an existing one. */
static dkv_status put(hid_t obj, const char *key, hid_t ftype, hid_t mtype, const void *buf, size_t n,
                      dkv_err *err)
{
    if (!key || !*key)
        return dkv_err_set(err, DKV_EINVAL, "h5: empty attribute name");
    if (H5Aexists(obj, key) > 0)
        H5Adelete(obj, key);
    hsize_t dims = n;
    hid_t sp = n == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &dims, NULL);
    hid_t a = H5Acreate2(obj, key, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, mtype, buf);
    if (a >= 0)
        H5Aclose(a);
    H5Sclose(sp);
    if (rc < 0)
        return dkv_err_set(err, DKV_EIO, "h5: cannot write attribute '%s'", key);
    return DKV_OK;
}

dkv_status dkv_h5__set_str(hid_t obj, const char *key, const char *value, dkv_err *err)
{
    hid_t t = new_str_type();
    const char *v = value ? value : "";
    dkv_status st = put(obj, key, t, t, &v, 0, err);
    H5Tclose(t);
    return st;
}

static dkv_status with_obj(dkv_h5_run *run, const char *obj, const char *key, hid_t ftype, hid_t mtype,
                           const void *buf, size_t n, dkv_err *err)
{
    if (!run || !run->writing)
        return dkv_err_set(err, DKV_ESTATE, "h5: attribute '%s': run is not open for writing", key ? key : "");
    hid_t o = dkv_h5__open_obj(run, obj, true, err);
    if (o < 0)
        return err ? err->code : DKV_EIO;
    dkv_status st = put(o, key, ftype, mtype, buf, n, err);
    H5Oclose(o);
    if (st != DKV_OK)
        dkv_err_prefix(err, "run '%s'%s%s", run->name, obj && *obj ? " " : "", obj && *obj ? obj : "");
    return st;
}

dkv_status dkv_h5_attr_str(dkv_h5_run *run, const char *obj, const char *key, const char *value,
                           dkv_err *err)
{
    hid_t t = new_str_type();
    const char *v = value ? value : "";
    dkv_status st = with_obj(run, obj, key, t, t, &v, 0, err);
    H5Tclose(t);
    return st;
}

dkv_status dkv_h5_attr_i64(dkv_h5_run *run, const char *obj, const char *key, int64_t value, dkv_err *err)
{
    return with_obj(run, obj, key, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, 0, err);
}

dkv_status dkv_h5_attr_u64(dkv_h5_run *run, const char *obj, const char *key, uint64_t value, dkv_err *err)
{
    if (value <= (uint64_t)INT64_MAX)
        return dkv_h5_attr_i64(run, obj, key, (int64_t)value, err);
    return dkv_h5_attr_f64(run, obj, key, (double)value, err);   /* not a negative int64 */
}

dkv_status dkv_h5_attr_f64(dkv_h5_run *run, const char *obj, const char *key, double value, dkv_err *err)
{
    return with_obj(run, obj, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, 0, err);
}

dkv_status dkv_h5_attr_f64v(dkv_h5_run *run, const char *obj, const char *key, const double *v, size_t n,
                            dkv_err *err)
{
    if (n == 0)
        return dkv_err_set(err, DKV_EINVAL, "h5: attribute '%s': empty array", key ? key : "");
    return with_obj(run, obj, key, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v, n, err);
}

/* ------------------------------------------------------------------ reading */

/* Reads attribute a into *out (strings malloc'd into *s, arrays into *v). */
static dkv_status read_attr(hid_t a, const char *key, dkv_h5_attr *out, char **s, double **v, dkv_err *err)
{
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    H5T_class_t cls = H5Tget_class(t);
    dkv_status st = DKV_OK;
    memset(out, 0, sizeof *out);
    out->key = key;
    *s = NULL;
    *v = NULL;
    if (cls == H5T_STRING && n == 1) {
        out->kind = DKV_H5_ATTR_STR;
        if (H5Tis_variable_str(t) > 0) {
            hid_t mt = new_str_type();
            char *p = NULL;
            if (H5Aread(a, mt, &p) >= 0 && p) {
                *s = dkv_h5__strdup(p);
                H5free_memory(p);
            }
            H5Tclose(mt);
        } else {
            size_t len = H5Tget_size(t);   /* from the file: bounded before it is allocated */
            *s = len > 0 && len <= DKV_H5_MAX_FIXED_STR ? calloc(len + 1, 1) : NULL;
            if (*s && H5Aread(a, t, *s) < 0) {
                free(*s);
                *s = NULL;
            }
        }
        if (!*s)
            st = dkv_err_set(err, DKV_EFORMAT, "h5: cannot read string attribute '%s'", key);
        out->s = *s;
    } else if (cls == H5T_INTEGER && n == 1) {
        out->kind = DKV_H5_ATTR_I64;
        if (H5Aread(a, H5T_NATIVE_INT64, &out->i) < 0)
            st = dkv_err_set(err, DKV_EFORMAT, "h5: cannot read attribute '%s'", key);
        out->f = (double)out->i;
    } else if (cls == H5T_FLOAT && n >= 1) {
        out->kind = n == 1 ? DKV_H5_ATTR_F64 : DKV_H5_ATTR_F64V;
        *v = malloc((size_t)n * sizeof **v);
        if (!*v || H5Aread(a, H5T_NATIVE_DOUBLE, *v) < 0)
            st = dkv_err_set(err, DKV_EFORMAT, "h5: cannot read attribute '%s'", key);
        else {
            out->v = *v;
            out->n = (size_t)n;
            out->f = (*v)[0];
        }
    } else {
        st = dkv_err_set(err, DKV_EFORMAT, "h5: attribute '%s' has a type dkv does not read", key);
    }
    H5Tclose(t);
    H5Sclose(sp);
    return st;
}

typedef struct walk {
    dkv_h5_attr_cb cb;
    void *ud;
} walk;

static herr_t walk_one(hid_t o, const char *key, const H5A_info_t *info, void *p)
{
    walk *w = p;
    (void)info;
    hid_t a = H5Aopen(o, key, H5P_DEFAULT);
    if (a < 0)
        return 0;
    dkv_h5_attr av;
    char *s;
    double *v;
    dkv_err e2 = {0};
    int stop = read_attr(a, key, &av, &s, &v, &e2) == DKV_OK && w->cb(&av, w->ud) != 0;
    free(s);
    free(v);
    H5Aclose(a);
    return stop ? 1 : 0;
}

dkv_status dkv_h5_attr_foreach(dkv_h5_run *run, const char *obj, dkv_h5_attr_cb cb, void *ud, dkv_err *err)
{
    hid_t o = dkv_h5__open_obj(run, obj, false, err);
    if (o < 0)
        return err ? err->code : DKV_ENOENT;
    walk w = {cb, ud};
    hsize_t idx = 0;
    herr_t rc = H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, walk_one, &w);
    H5Oclose(o);
    if (rc < 0)
        return dkv_err_set(err, DKV_EFORMAT, "h5: run '%s': cannot list attributes of '%s'", run->name,
                           obj && *obj ? obj : ".");
    return DKV_OK;
}

static dkv_status get_one(dkv_h5_run *run, const char *obj, const char *key, dkv_h5_attr *out, char **s,
                          double **v, dkv_err *err)
{
    hid_t o = dkv_h5__open_obj(run, obj, false, err);
    if (o < 0)
        return err ? err->code : DKV_ENOENT;
    dkv_status st;
    if (H5Aexists(o, key) <= 0) {
        st = dkv_err_set(err, DKV_ENOENT, "h5: run '%s'%s%s has no attribute '%s'", run->name,
                         obj && *obj ? " " : "", obj && *obj ? obj : "", key);
    } else {
        hid_t a = H5Aopen(o, key, H5P_DEFAULT);
        st = read_attr(a, key, out, s, v, err);
        H5Aclose(a);
    }
    H5Oclose(o);
    return st;
}

dkv_status dkv_h5_attr_get_str(dkv_h5_run *run, const char *obj, const char *key, char **out, dkv_err *err)
{
    dkv_h5_attr a;
    char *s = NULL;
    double *v = NULL;
    *out = NULL;
    dkv_status st = get_one(run, obj, key, &a, &s, &v, err);
    free(v);
    if (st == DKV_OK && a.kind != DKV_H5_ATTR_STR) {
        free(s);
        return dkv_err_set(err, DKV_EFORMAT, "h5: attribute '%s' is not a string", key);
    }
    if (st == DKV_OK)
        *out = s;
    return st;
}

dkv_status dkv_h5_attr_get_i64(dkv_h5_run *run, const char *obj, const char *key, int64_t *out, dkv_err *err)
{
    dkv_h5_attr a;
    char *s = NULL;
    double *v = NULL;
    dkv_status st = get_one(run, obj, key, &a, &s, &v, err);
    free(s);
    free(v);
    if (st == DKV_OK && a.kind != DKV_H5_ATTR_I64)
        return dkv_err_set(err, DKV_EFORMAT, "h5: attribute '%s' is not an integer", key);
    if (st == DKV_OK)
        *out = a.i;
    return st;
}

dkv_status dkv_h5_attr_get_f64(dkv_h5_run *run, const char *obj, const char *key, double *out, dkv_err *err)
{
    dkv_h5_attr a;
    char *s = NULL;
    double *v = NULL;
    dkv_status st = get_one(run, obj, key, &a, &s, &v, err);
    free(s);
    free(v);
    if (st == DKV_OK && a.kind != DKV_H5_ATTR_I64 && a.kind != DKV_H5_ATTR_F64)
        return dkv_err_set(err, DKV_EFORMAT, "h5: attribute '%s' is not a number", key);
    if (st == DKV_OK)
        *out = a.f;
    return st;
}

dkv_status dkv_h5__get_str(hid_t obj, const char *key, char **out, dkv_err *err)
{
    *out = NULL;
    if (H5Aexists(obj, key) <= 0)
        return dkv_err_set(err, DKV_ENOENT, "h5: no attribute '%s'", key);
    hid_t a = H5Aopen(obj, key, H5P_DEFAULT);
    dkv_h5_attr av;
    double *v = NULL;
    dkv_status st = read_attr(a, key, &av, out, &v, err);
    free(v);
    H5Aclose(a);
    if (st == DKV_OK && av.kind != DKV_H5_ATTR_STR) {
        free(*out);
        *out = NULL;
        return dkv_err_set(err, DKV_EFORMAT, "h5: attribute '%s' is not a string", key);
    }
    return st;
}
