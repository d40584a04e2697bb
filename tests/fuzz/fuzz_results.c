/* fuzz_results.c - libFuzzer harness: a results file given to dkv info, merge, compare and calibrate.
 *
 * The input does not become the file's bytes: it is a recipe that builds a structurally valid HDF5
 * file with hostile contents (root and run attributes of every type and shape, params and summary
 * groups, tables whose fields have unexpected names, types, counts and values, config literals that
 * are nonsense), and the file then goes through what those commands call: dkv_h5_open_read, the
 * attribute and table walk of `dkv info`, dkv_cmp_runs for every pair of runs, dkv_calib_add_run
 * and dkv_calib_pair_sim and the fit, and dkv_h5_run_copy into a new file (`dkv merge`).
 * Raw HDF5 bytes are not fuzzed here: libhdf5 1.10 crashes and hangs on malformed files by itself
 * (docs/RELIABILITY.md, "Fuzzing", says what dkv checks before it calls the library). */
#include <hdf5.h>

#include "fuzz_util.h"
#include "analysis/calib.h"
#include "analysis/compare.h"
#include "io/h5.h"

typedef struct rd {
    const uint8_t *p;
    size_t n;
} rd;

static unsigned byte(rd *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

/* Up to max bytes of the input as a NUL-terminated string (stops at a NUL byte). */
static void text(rd *r, char *out, size_t max)
{
    size_t len = byte(r);
    if (len > 200)
        len = (len - 200) * 64;   /* a few long strings (config literals, scripts) */
    if (len >= max)
        len = max - 1;
    size_t i = 0;
    while (i < len && r->n > 0) {
        unsigned c = byte(r);
        if (c == 0)
            break;
        out[i++] = (char)c;
    }
    out[i] = '\0';
}

static const char *const KEYS[] = {
    "format", "format_version", "status", "config", "seed", "script", "script_path", "start_time", "end_time",
    "host", "git_commit", "dkv_version", "defines", "shard", "command", "real_file", "real_run", "sim_file",
    "sim_run", "gpu.name", "gpu.hbm_bw", "units.x", "peak_kv_bytes", "latency_p99_s", "throughput_rps", "n_items",
    "has_kernels", "has_ncu", "sim_time_s", "tokens_per_s", "x", "units.peak_kv_bytes", "doc.time_s",
    "units.time_s", "units.kind", "units.bytes", "doc.kind",
};
static const char *const FIELDS[] = {
    "step_index", "time_s", "compute_s", "kind", "bytes", "flops", "read_bytes", "write_bytes", "q_tokens",
    "logit_rows", "n_launches", "pcie_s", "pcie_h2d_bytes", "pcie_d2h_bytes", "hbm_read_bytes",
    "hbm_write_bytes", "index", "step", "request", "layer", "dur_s", "id", "name", "phase", "block", "t",
};
static const char *const TABLES[] = {"steps", "kernels", "ncu_kernels", "ncu_classes", "requests", "mem", "x"};
static const char *const RUNS[] = {"real", "sim", "a:real", "b:sim", "r.1", "compare", "x"};
static const char *const CONFIGS[] = {
    ("{gpu={name=\"h200\",hbm_bw=4.8e12,flops_bf16=9.89e14},decode={cache=\"dual\"},workload={kind=\"synth\","
     "n=4,prompt=64,gen=32},record={kernels=true},model={name=\"llada-8b\"}}"),
    "{gpu={name=\"h200\",hbm_bw=4.8e12,flops_bf16=9.89e14,kclass={1,2}},sim={gemm_eff=0.5},workload={n=4}}",
    "{workload={kind=\"trace\",file=\"x.csv\",source=\"x.csv\",count=3}}",
};

#define pick(r, arr) (arr)[byte(r) % (sizeof(arr) / sizeof((arr)[0]))]

static char scratch[8][16384];   /* strings handed to HDF5 (vlen buffers must stay alive) */

static void put_attr(rd *r, hid_t obj, const char *key)
{
    unsigned kind = byte(r) % 10;
    hid_t sp = -1, t = -1, mt = -1;
    union { double d[4]; int64_t i[4]; int32_t i32[4]; const char *s; } v;
    memset(&v, 0, sizeof v);
    for (size_t k = 0; k < sizeof v && r->n; k++)
        ((uint8_t *)&v)[k] = (uint8_t)byte(r);
    char *s = scratch[0];
    hsize_t dims[2] = {2, 2};
    switch (kind) {
    case 0: case 1:   /* variable-length string: text, a config literal, or "dkv-results" */
        if (byte(r) % 4 == 0)
            snprintf(s, sizeof scratch[0], "%s", byte(r) % 2 ? "dkv-results" : pick(r, CONFIGS));
        else
            text(r, s, sizeof scratch[0]);
        v.s = s;
        t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        mt = t;
        sp = H5Screate(H5S_SCALAR);
        break;
    case 2:           /* fixed-length string, maybe not NUL-terminated */
        text(r, s, 64);
        t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, 1 + byte(r) % 32);
        H5Tset_strpad(t, byte(r) % 2 ? H5T_STR_NULLPAD : H5T_STR_NULLTERM);
        mt = t;
        sp = H5Screate(H5S_SCALAR);
        memcpy(&v, s, sizeof v);
        break;
    case 3: t = H5T_NATIVE_INT64, sp = H5Screate(H5S_SCALAR); break;
    case 4: t = H5T_NATIVE_DOUBLE, sp = H5Screate(H5S_SCALAR); break;
    case 5: dims[0] = byte(r) % 5, t = H5T_NATIVE_DOUBLE, sp = H5Screate_simple(1, dims, NULL); break;
    case 6: dims[0] = 1 + byte(r) % 4, t = H5T_NATIVE_INT32, sp = H5Screate_simple(1, dims, NULL); break;
    case 7: t = H5T_NATIVE_DOUBLE, sp = H5Screate(H5S_NULL); break;
    case 8: t = H5T_NATIVE_DOUBLE, sp = H5Screate_simple(2, dims, NULL); break;
    default: t = H5T_NATIVE_UINT8, sp = H5Screate(H5S_SCALAR); break;
    }
    if (mt < 0)
        mt = t;
    hid_t a = H5Acreate2(obj, key, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) {
        if (kind != 7)
            H5Awrite(a, mt, kind <= 1 ? (const void *)&v.s : (const void *)&v);
        H5Aclose(a);
    }
    if (kind <= 2)
        H5Tclose(t);
    H5Sclose(sp);
}

static void put_attrs(rd *r, hid_t obj, unsigned max)
{
    unsigned n = byte(r) % (max + 1);
    for (unsigned i = 0; i < n && r->n; i++) {
        char key[64];
        if (byte(r) % 8 == 0)
            text(r, key, sizeof key);
        else
            snprintf(key, sizeof key, "%s", pick(r, KEYS));
        if (key[0] && H5Aexists(obj, key) <= 0)
            put_attr(r, obj, key);
    }
}

/* A field type: numbers of every width, strings fixed and variable, arrays, nested records, enums. */
static hid_t field_type(rd *r, int *vlen)
{
    static const hid_t *nums[] = {&H5T_NATIVE_DOUBLE_g, &H5T_NATIVE_FLOAT_g, &H5T_NATIVE_INT32_g,
                                  &H5T_NATIVE_UINT32_g, &H5T_NATIVE_UINT8_g, &H5T_NATIVE_INT64_g,
                                  &H5T_NATIVE_UINT64_g, &H5T_NATIVE_INT8_g, &H5T_NATIVE_INT16_g};
    unsigned k = byte(r) % 14;
    *vlen = 0;
    if (k < 9)
        return H5Tcopy(*nums[k]);
    hid_t t;
    hsize_t two = 2;
    switch (k) {
    case 9: t = H5Tcopy(H5T_C_S1), H5Tset_size(t, 1 + byte(r) % 40); return t;
    case 10: t = H5Tcopy(H5T_C_S1), H5Tset_size(t, H5T_VARIABLE), *vlen = 1; return t;
    case 11: return H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, &two);
    case 12:
        t = H5Tcreate(H5T_COMPOUND, 16);
        H5Tinsert(t, "a", 0, H5T_NATIVE_DOUBLE);
        H5Tinsert(t, "b", 8, H5T_NATIVE_INT64);
        return t;
    default: {
        t = H5Tenum_create(H5T_NATIVE_INT32);
        int v0 = 0, v1 = 1;
        H5Tenum_insert(t, "A", &v0);
        H5Tenum_insert(t, "B", &v1);
        return t;
    }
    }
}

static void put_table(rd *r, hid_t run, const char *name)
{
    unsigned nf = byte(r) % 9;
    hid_t ft[8];
    int vl[8];
    size_t off[8], size = 0;
    char fname[8][48];
    for (unsigned i = 0; i < nf; i++) {
        ft[i] = field_type(r, &vl[i]);
        off[i] = size;
        size += H5Tget_size(ft[i]);
        if (byte(r) % 8 == 0)
            text(r, fname[i], sizeof fname[i]);
        else
            snprintf(fname[i], sizeof fname[i], "%s", pick(r, FIELDS));
    }
    hid_t ct = H5Tcreate(H5T_COMPOUND, size ? size : 1);
    for (unsigned i = 0; i < nf; i++)
        if (fname[i][0])
            H5Tinsert(ct, fname[i], off[i], ft[i]);   /* a repeated name fails: that field is left out */
    unsigned shape = byte(r) % 8;
    hsize_t dims[2] = {byte(r) % 17, 1 + byte(r) % 3};
    hid_t sp = shape == 0 ? H5Screate(H5S_SCALAR) : shape == 1 ? H5Screate_simple(2, dims, NULL)
             : shape == 2 ? H5Screate(H5S_NULL) : H5Screate_simple(1, dims, NULL);
    hid_t t = byte(r) % 16 == 0 ? H5Tcopy(H5T_NATIVE_DOUBLE) : ct;   /* sometimes not a table at all */
    hid_t ds = H5Dcreate2(run, name, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (ds >= 0) {
        hssize_t np = H5Sget_simple_extent_npoints(sp);
        size_t rec = H5Tget_size(t), n = np > 0 ? (size_t)np : 0;
        uint8_t *buf = calloc(n ? n : 1, rec ? rec : 1);
        for (size_t i = 0; buf && i < n * rec && r->n; i++)
            buf[i] = (uint8_t)byte(r);
        for (size_t j = 0; buf && t == ct && j < n; j++)
            for (unsigned i = 0; i < nf; i++)
                if (vl[i]) {   /* a variable-length string member holds a pointer: make it a valid one */
                    char *s = scratch[1 + (j * 8 + i) % 7];
                    text(r, s, 256);
                    memcpy(buf + j * rec + off[i], &s, sizeof s);
                }
        if (buf && shape != 2)
            H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        free(buf);
        put_attrs(r, ds, 6);
        H5Dclose(ds);
    }
    if (t != ct)
        H5Tclose(t);
    H5Tclose(ct);
    H5Sclose(sp);
    for (unsigned i = 0; i < nf; i++)
        H5Tclose(ft[i]);
}

static hid_t new_group(rd *r, hid_t parent, const char *name);

/* A table with the columns compare / calibrate read (cols), mostly as f64, with small values from
 * the input (and now and then a raw 8-byte double: NaN, inf, -0, 1e308): a realistic run whose
 * numbers are hostile, so the analysis code gets past its first checks. */
static void put_known_table(rd *r, hid_t run, const char *name, const char *const *cols, unsigned nc)
{
    static const hid_t *types[] = {&H5T_NATIVE_DOUBLE_g, &H5T_NATIVE_DOUBLE_g, &H5T_NATIVE_DOUBLE_g,
                                   &H5T_NATIVE_INT64_g, &H5T_NATIVE_UINT32_g, &H5T_NATIVE_FLOAT_g,
                                   &H5T_NATIVE_UINT8_g, &H5T_NATIVE_INT32_g};
    hid_t ft = H5Tcreate(H5T_COMPOUND, nc * 8), mt = H5Tcreate(H5T_COMPOUND, nc * 8);
    for (unsigned i = 0; i < nc; i++) {
        if (byte(r) % 32 == 0)
            continue;   /* a column left out */
        H5Tinsert(ft, cols[i], i * 8, *types[byte(r) % 8]);
        H5Tinsert(mt, cols[i], i * 8, H5T_NATIVE_DOUBLE);
    }
    hsize_t n = byte(r) % 24;
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t ds = H5Tget_nmembers(ft) > 0 ? H5Dcreate2(run, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    if (ds >= 0) {
        double *v = calloc(n * nc + 1, sizeof *v);
        for (size_t i = 0; v && i < n * nc; i++) {
            unsigned b = byte(r);
            if (b == 255 && r->n >= 8) {
                memcpy(&v[i], r->p, 8);
                r->p += 8, r->n -= 8;
            } else {
                v[i] = i % nc == 0 ? (double)(i / nc) + (b == 254 ? 1 : 0) : (double)b * (b & 1 ? 1e-6 : 1e6);
            }
        }
        hid_t xfer = H5Pcreate(H5P_DATASET_XFER);   /* out-of-range values: clipped, not an error */
        if (v)
            H5Dwrite(ds, mt, H5S_ALL, H5S_ALL, xfer, v);
        H5Pclose(xfer);
        free(v);
        H5Dclose(ds);
    }
    H5Sclose(sp);
    H5Tclose(ft);
    H5Tclose(mt);
}

static const char *const STEP_COLS[] = {"index", "time_s", "compute_s", "pcie_s", "hbm_read_bytes",
                                        "hbm_write_bytes", "pcie_h2d_bytes", "pcie_d2h_bytes", "n_items",
                                        "q_tokens", "logit_rows"};
static const char *const KERNEL_COLS[] = {"step_index", "kind", "n_launches", "time_s", "flops", "read_bytes",
                                          "write_bytes"};
static const char *const NCU_COLS[] = {"kind", "n_kernels", "read_bytes", "write_bytes", "time_s"};
static const char *const SUMMARY_KEYS[] = {"sim_time_s", "busy_s", "throughput_rps", "tokens_per_s",
                                           "latency_p99_s", "hbm_read_bytes", "peak_kv_bytes", "kv_internal_frag_peak"};

/* A run as dkv writes it (config literal, status, summary, steps / kernels / ncu_classes tables),
 * with values from the input. */
static void put_known_run(rd *r, hid_t g)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    hid_t sp = H5Screate(H5S_SCALAR);
    const char *cfg = pick(r, CONFIGS), *status = byte(r) % 4 ? "complete" : "incomplete";
    hid_t a = H5Acreate2(g, "config", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, &cfg);
    H5Aclose(a);
    a = H5Acreate2(g, "status", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, &status);
    H5Aclose(a);
    hid_t sg = new_group(r, g, "summary");
    for (size_t i = 0; sg >= 0 && i < sizeof SUMMARY_KEYS / sizeof SUMMARY_KEYS[0]; i++) {
        double v = (double)byte(r) * 0.25;
        a = H5Acreate2(sg, SUMMARY_KEYS[i], H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, H5T_NATIVE_DOUBLE, &v);
        H5Aclose(a);
    }
    if (sg >= 0)
        H5Gclose(sg);
    H5Sclose(sp);
    H5Tclose(t);
    unsigned which = byte(r);
    if (which & 1)
        put_known_table(r, g, "steps", STEP_COLS, sizeof STEP_COLS / sizeof STEP_COLS[0]);
    if (which & 2)
        put_known_table(r, g, "kernels", KERNEL_COLS, sizeof KERNEL_COLS / sizeof KERNEL_COLS[0]);
    if (which & 4)
        put_known_table(r, g, "ncu_classes", NCU_COLS, sizeof NCU_COLS / sizeof NCU_COLS[0]);
}

static hid_t new_group(rd *r, hid_t parent, const char *name)
{
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    if (byte(r) % 4)
        H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    hid_t g = H5Gcreate2(parent, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
    H5Pclose(gcpl);
    return g;
}

static void build(rd *r, const char *path)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0)
        abort();
    hid_t root = H5Gopen2(f, "/", H5P_DEFAULT);
    if (byte(r) % 8) {   /* mostly the right format attribute, so the rest is reached */
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        hid_t sp = H5Screate(H5S_SCALAR), a = H5Acreate2(root, "format", t, sp, H5P_DEFAULT, H5P_DEFAULT);
        const char *v = "dkv-results";
        H5Awrite(a, t, &v);
        H5Aclose(a), H5Sclose(sp), H5Tclose(t);
    }
    put_attrs(r, root, 3);
    if (byte(r) % 8) {
        hid_t runs = new_group(r, root, "runs");
        unsigned nr = byte(r) % 5;
        for (unsigned i = 0; i < nr && r->n; i++) {
            char name[64];
            if (byte(r) % 8 == 0)
                text(r, name, sizeof name);
            else
                snprintf(name, sizeof name, "%s", pick(r, RUNS));
            if (!name[0] || H5Lexists(runs, name, H5P_DEFAULT) > 0)
                continue;
            hid_t g = byte(r) % 16 ? new_group(r, runs, name) : -1;
            if (g < 0) {   /* a run that is a dataset, not a group */
                hid_t sp = H5Screate(H5S_SCALAR);
                hid_t d = H5Dcreate2(runs, name, H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
                if (d >= 0)
                    H5Dclose(d);
                H5Sclose(sp);
                continue;
            }
            if (byte(r) % 2) {   /* half the runs look like dkv's own */
                put_known_run(r, g);
                put_attrs(r, g, 2);
                H5Gclose(g);
                continue;
            }
            put_attrs(r, g, 10);
            for (int s = 0; s < 2; s++)
                if (byte(r) % 4) {
                    hid_t sg = new_group(r, g, s ? "summary" : "params");
                    if (sg >= 0) {
                        put_attrs(r, sg, 8);
                        H5Gclose(sg);
                    }
                }
            unsigned nt = byte(r) % 4;
            for (unsigned k = 0; k < nt && r->n; k++) {
                const char *tn = pick(r, TABLES);
                if (H5Lexists(g, tn, H5P_DEFAULT) <= 0)
                    put_table(r, g, tn);
            }
            H5Gclose(g);
        }
        H5Gclose(runs);
    }
    H5Gclose(root);
    H5Fclose(f);
}

static int count_attr(const dkv_h5_attr *a, void *ud)
{
    (void)a;
    ++*(int *)ud;
    return 0;
}

static void info_walk(dkv_h5 *f)
{   /* what `dkv info` reads */
    for (size_t i = 0; i < dkv_h5_run_count(f); i++) {
        dkv_h5_run *run = NULL;
        dkv_err err = {0};
        if (dkv_h5_run_open(f, dkv_h5_run_name_at(f, i), &run, &err) != DKV_OK)
            continue;
        static const char *const strs[] = {"status", "start_time", "end_time", "host", "git_commit",
                                           "script_path", "script", "config"};
        for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++) {
            char *s = NULL;
            if (dkv_h5_attr_get_str(run, NULL, strs[k], &s, NULL) == DKV_OK && !s)
                abort();
            free(s);
        }
        int64_t seed;
        double d;
        dkv_h5_attr_get_i64(run, NULL, "seed", &seed, NULL);
        dkv_h5_attr_get_f64(run, "summary", "peak_kv_bytes", &d, NULL);
        int n = 0;
        dkv_h5_attr_foreach(run, NULL, count_attr, &n, &err);
        dkv_h5_attr_foreach(run, "params", count_attr, &n, &err);
        dkv_h5_attr_foreach(run, "summary", count_attr, &n, &err);
        for (size_t k = 0; k < dkv_h5_table_count(run); k++) {
            dkv_h5_table *t = NULL;
            if (dkv_h5_table_open(run, dkv_h5_table_name_at(run, k), &t, &err) != DKV_OK)
                continue;
            uint64_t nr = dkv_h5_table_nrecords(t);
            double col[64];
            for (size_t c = 0; c < dkv_h5_table_nfields(t); c++) {
                dkv_h5_field fd;
                if (dkv_h5_table_field(t, c, &fd, &err) != DKV_OK || !fd.name || !fd.unit || !fd.doc)
                    abort();
                dkv_h5_table_read_f64(t, fd.name, 0, nr < 64 ? nr : 64, col, &err);
                if (fd.type == DKV_H5_STR32 && nr > 0) {
                    char s[4][32];
                    dkv_h5_field one = {fd.name, DKV_H5_STR32, 0, NULL, NULL};
                    dkv_h5_table_read(t, 32, &one, 1, 0, nr < 4 ? nr : 4, s, &err);
                }
            }
            dkv_h5_table_read_f64(t, "time_s", nr, 1, col, &err);   /* out of range: an error, no read */
            dkv_h5_table_close(t);
        }
        dkv_h5_run_free(run);
    }
}

/* dkv merge OUT IN: every run copied, or the output discarded (as cmd_merge.c does); a merged file
 * must read back with as many runs as were copied. */
static void merge(dkv_h5 *f, size_t nr)
{
    const char *mpath = fuzz_path(1, ".merged.h5");
    static char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", mpath);
    unlink(tmp);   /* dkv_h5_create refuses a leftover .tmp (it may hold a killed run) */
    unlink(mpath);
    dkv_h5 *out = NULL, *back = NULL;
    dkv_err err = {0};
    if (dkv_h5_create(mpath, &out, &err) != DKV_OK)
        abort();   /* a fresh scratch file must be creatable: else this part tests nothing */
    size_t copied = 0;
    for (size_t i = 0; i < nr; i++)
        if (dkv_h5_run_copy(out, f, dkv_h5_run_name_at(f, i), &err) == DKV_OK)
            copied++;
        else if (err.msg[0] == '\0')
            abort();
    if (copied < nr) {
        dkv_h5_discard(out);
        return;
    }
    if (dkv_h5_close(out, &err) != DKV_OK)
        abort();
    if (dkv_h5_open_read(mpath, &back, &err) != DKV_OK || dkv_h5_run_count(back) != copied)
        abort();
    dkv_h5_close(back, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once) {   /* let libhdf5 keep its freed blocks: a fresh 1 MiB cache per file open costs page faults */
        H5set_free_list_limits(-1, -1, -1, -1, -1, -1);
        once = 1;
    }
    rd r = {data, size};
    const char *path = fuzz_path(0, ".h5");
    build(&r, path);
    dkv_h5 *f = NULL;
    dkv_err err = {0};
    if (dkv_h5_open_read(path, &f, &err) != DKV_OK) {
        if (f != NULL || err.msg[0] == '\0')
            abort();
        return 0;
    }
    info_walk(f);
    size_t nr = dkv_h5_run_count(f);
    for (size_t i = 0; i < nr && i < 3; i++)   /* dkv compare REAL SIM */
        for (size_t j = 0; j < nr && j < 3; j++) {
            dkv_cmp *c = NULL;
            if (dkv_cmp_runs(f, dkv_h5_run_name_at(f, i), f, dkv_h5_run_name_at(f, j), &c, &err) == DKV_OK) {
                for (size_t q = 0; q < dkv_cmp_count(c); q++)
                    if (!dkv_cmp_at(c, q))
                        abort();
                dkv_cmp_get_info(c);
            }
            dkv_cmp_free(c);
        }
    dkv_calib *cal = NULL;   /* dkv calibrate MEASURED.h5 --sim SIM.h5 */
    if (dkv_calib_new(&cal, &err) != DKV_OK)
        abort();
    for (size_t i = 0; i < nr && i < 3; i++)
        if (dkv_calib_add_run(cal, f, dkv_h5_run_name_at(f, i), &err) == DKV_OK)
            for (size_t j = 0; j < nr && j < 3; j++)
                dkv_calib_pair_sim(cal, f, dkv_h5_run_name_at(f, j), &err);
    static dkv_calib_result res;
    dkv_calib_fit(cal, &res, &err);
    dkv_calib_free(cal);
    if (nr > 0 && size > 0 && data[0] % 4 == 0)   /* one input in four: a merge costs two more file opens */
        merge(f, nr);
    dkv_h5_close(f, &err);
    return 0;
}
