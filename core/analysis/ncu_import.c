/* ncu_import.c - writing Nsight Compute figures into a run of a results file (ncu.h). */
#include "analysis/ncu.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define F(T, f, t, u, d) {#f, t, offsetof(T, f), u, d}
static const dkv_h5_field kfields[] = {
    F(dkv_ncu_kernel, id, DKV_H5_U64, "", "ncu ID: launch order in the profiled process"),
    F(dkv_ncu_kernel, name, DKV_H5_STR32, "", "kernel function name (cut to 31 characters)"),
    F(dkv_ncu_kernel, kind, DKV_H5_U32, "", "kernel class as in kernels.kind; 10 unknown, 11 setup"),
    F(dkv_ncu_kernel, rule, DKV_H5_U8, "", "0 by name, 1 GEMM by launch order, 2 unmatched"),
    F(dkv_ncu_kernel, gemm, DKV_H5_U8, "", "1: a GEMM kernel (cuBLAS, CUTLASS, dkv skinny GEMM)"),
    F(dkv_ncu_kernel, read_bytes, DKV_H5_F64, "bytes", "dram__bytes_read.sum (NaN: not measured)"),
    F(dkv_ncu_kernel, write_bytes, DKV_H5_F64, "bytes", "dram__bytes_write.sum (NaN: not measured)"),
    F(dkv_ncu_kernel, time_s, DKV_H5_F64, "s", "gpu__time_duration.sum (NaN: not measured)"),
};

typedef struct crec {
    uint32_t kind;
    char name[DKV_H5_STR32_LEN];
    uint64_t n_kernels, n_incomplete;
    double read_bytes, write_bytes, time_s;
} crec;
static const dkv_h5_field cfields[] = {
    F(crec, kind, DKV_H5_U32, "", "kernel class as in kernels.kind; 10 unknown, 11 setup"),
    F(crec, name, DKV_H5_STR32, "", "class name"),
    F(crec, n_kernels, DKV_H5_U64, "", "kernels of the class"),
    F(crec, n_incomplete, DKV_H5_U64, "", "of which with a metric missing (not in the sums)"),
    F(crec, read_bytes, DKV_H5_F64, "bytes", "HBM bytes read, measured"),
    F(crec, write_bytes, DKV_H5_F64, "bytes", "HBM bytes written, measured"),
    F(crec, time_s, DKV_H5_F64, "s", "kernel time, measured"),
};
#undef F
#define NF(a) (sizeof(a) / sizeof((a)[0]))

static dkv_status write_tables(dkv_h5_run *run, const char *csv, const dkv_ncu_kernel *k, size_t n,
                               const dkv_ncu_report *rep, dkv_err *err)
{
    dkv_h5_table *t;
    dkv_status st = dkv_h5_table_create(run, "ncu_kernels", sizeof *k, kfields, NF(kfields), &t, err);
    if (st == DKV_OK)
        st = dkv_h5_table_append(t, k, n, err);
    if (st != DKV_OK)
        return st;
    dkv_h5_table_close(t);
    crec c[DKV_NCU_NTOTALS];
    size_t nc = 0;
    for (uint32_t i = 0; i < DKV_NCU_NTOTALS; i++) {
        const dkv_ncu_class_total *x = &rep->tot[i];
        if (!x->n_kernels)
            continue;
        c[nc] = (crec){x->kind, "", x->n_kernels, x->n_incomplete, x->read_bytes, x->write_bytes, x->time_s};
        snprintf(c[nc].name, sizeof c[nc].name, "%s", dkv_cmp_class_name(x->kind));
        nc++;
    }
    if ((st = dkv_h5_table_create(run, "ncu_classes", sizeof *c, cfields, NF(cfields), &t, err)) != DKV_OK ||
        (st = dkv_h5_table_append(t, c, nc, err)) != DKV_OK)
        return st;
    dkv_h5_table_close(t);
    char when[32];
    time_t now = time(NULL);
    struct tm tmv;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tmv));
    if ((st = dkv_h5_attr_str(run, "ncu_classes", "source", csv, err)) != DKV_OK ||
        (st = dkv_h5_attr_str(run, "ncu_classes", "imported", when, err)) != DKV_OK ||
        (st = dkv_h5_attr_str(run, "ncu_classes", "dkv_version", DKV_VERSION, err)) != DKV_OK)
        return st;
    return DKV_OK;
}

dkv_status dkv_ncu_import(const char *csv, const char *h5_path, const char *run, bool replace, dkv_ncu_report *rep,
                          dkv_err *err)
{
    dkv_ncu_report local;
    if (!rep)
        rep = &local;
    memset(rep, 0, sizeof *rep);
    dkv_ncu_kernel *k = NULL;
    size_t n = 0;
    dkv_status st = dkv_ncu_read(csv, &k, &n, err);
    if (st != DKV_OK)
        return st;
    dkv_ncu_totals(k, n, rep->tot);
    rep->n_kernels = n;
    for (size_t i = 0; i < n; i++) {
        rep->n_unknown += k[i].kind == DKV_CMP_NCLASS;
        bool listed = k[i].kind != DKV_CMP_NCLASS;
        for (size_t j = 0; j < rep->n_unknown_names && !listed; j++)
            listed = strcmp(rep->unknown[j], k[i].name) == 0;
        if (!listed && rep->n_unknown_names < 8)
            memcpy(rep->unknown[rep->n_unknown_names++], k[i].name, DKV_H5_STR32_LEN);
        rep->n_gemm_by_order += k[i].rule == DKV_NCU_BY_ORDER;
        rep->n_incomplete += isnan(k[i].read_bytes) || isnan(k[i].write_bytes) || isnan(k[i].time_s);
    }
    dkv_h5 *src = NULL, *dst = NULL;
    dkv_h5_run *r = NULL;
    if ((st = dkv_h5_open_read(h5_path, &src, err)) != DKV_OK)
        goto done;
    bool found = false;
    for (size_t i = 0; i < dkv_h5_run_count(src); i++)
        found |= strcmp(dkv_h5_run_name_at(src, i), run) == 0;
    if (!found) {
        st = dkv_err_set(err, DKV_ENOENT, "%s: no run '%s' (dkv info %s lists the runs)", h5_path, run, h5_path);
        goto done;
    }
    if ((st = dkv_h5_create(h5_path, &dst, err)) != DKV_OK)
        goto done;
    for (size_t i = 0; i < dkv_h5_run_count(src) && st == DKV_OK; i++)
        st = dkv_h5_run_copy(dst, src, dkv_h5_run_name_at(src, i), err);
    if (st == DKV_OK)
        st = dkv_h5_run_reopen(dst, run, &r, err);
    if (st == DKV_OK) {
        static const char *const tables[] = {"ncu_kernels", "ncu_classes"};
        for (int i = 0; i < 2 && st == DKV_OK; i++) {
            if (!dkv_h5_run_has(r, tables[i]))
                continue;
            if (!replace)
                st = dkv_err_set(err, DKV_EINVAL, "%s: run '%s' already has '%s' (pass --replace to import again)",
                                 h5_path, run, tables[i]);
            else
                st = dkv_h5_run_unlink(r, tables[i], err);
        }
    }
    if (st == DKV_OK)
        st = write_tables(r, csv, k, n, rep, err);
    if (r) {
        dkv_status st2 = dkv_h5_run_end(r, st == DKV_OK ? err : NULL);
        st = st == DKV_OK ? st2 : st;
    }
done:
    dkv_h5_close(src, NULL);   /* before the rename onto its name */
    if (dst) {
        if (st == DKV_OK)
            st = dkv_h5_close(dst, err);
        else
            dkv_h5_discard(dst);
    }
    free(k);
    return st;
}
