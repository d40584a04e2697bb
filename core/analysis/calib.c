/* calib.c - measurements for calibration (runs, bwcurve text) and the fits (calib.h). */
#include "analysis/calib_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "util/file.h"

/* kernel classes (engine/backend.h numbering) */
enum { K_QKV = 0, K_ATTN, K_O, K_FFN, K_LM, K_STORE, K_GATHER, K_REORDER, K_ELEM };

/* Grows *arr (element size sz) to hold n + 1 elements. */
static bool grow(void **arr, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? 2 * *cap : 256;
    void *p = realloc(*arr, nc * sz);
    if (!p)
        return false;
    *arr = p;
    *cap = nc;
    return true;
}

dkv_status dkv_calib_new(dkv_calib **out, dkv_err *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? DKV_OK : dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
}

void dkv_calib_free(dkv_calib *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nin; i++) {
        free(c->in[i].file);
        free(c->in[i].run);
        free(c->in[i].desc);
    }
    free(c->in);
    free(c->k);
    free(c->p);
    free(c->b);
    free(c);
}

dkv_status dkv_calib_set_base(dkv_calib *c, const char *name, double hbm_bw, double flops_bf16, dkv_err *err)
{
    if (!name || !*name || strlen(name) >= sizeof c->base || !(hbm_bw > 0) || !(flops_bf16 > 0))
        return dkv_err_set(err, DKV_EINVAL, "calibrate: base preset needs a name, hbm_bw > 0 and flops_bf16 > 0");
    if (c->have_base && strcmp(c->base, name) != 0)
        return dkv_err_set(err, DKV_EINVAL, "calibrate: measurements of gpu '%s' and '%s' cannot be fitted together",
                           c->base, name);
    snprintf(c->base, sizeof c->base, "%s", name);
    c->hbm_bw = hbm_bw;
    c->flops_bf16 = flops_bf16;
    c->have_base = true;
    return DKV_OK;
}

dkv_status dkv_calib_add_kernel(dkv_calib *c, const dkv_calib_kernel *k, dkv_err *err)
{
    if (!grow((void **)&c->k, &c->capk, c->nk, sizeof *c->k))
        return dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
    c->k[c->nk++] = (calib_kpt){.k = *k, .src = UINT32_MAX};
    return DKV_OK;
}

dkv_status dkv_calib_add_kernel_pair(dkv_calib *c, const dkv_calib_kernel *k, uint32_t n_sim, double roof_s,
                                     dkv_err *err)
{
    dkv_status st = dkv_calib_add_kernel(c, k, err);
    if (st == DKV_OK) {
        calib_kpt *p = &c->k[c->nk - 1];
        p->paired = true, p->n_sim = n_sim, p->roof_s = roof_s;
    }
    return st;
}

dkv_status dkv_calib_add_pcie(dkv_calib *c, double h2d, double d2h, double time_s, dkv_err *err)
{
    if (!grow((void **)&c->p, &c->capp, c->np, sizeof *c->p))
        return dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
    c->p[c->np++] = (calib_ppt){h2d, d2h, time_s, UINT32_MAX, 0};
    return DKV_OK;
}

dkv_status dkv_calib_add_bw(dkv_calib *c, double run_bytes, double bytes_per_s, dkv_err *err)
{
    if (!(run_bytes > 0) || !(bytes_per_s > 0))
        return dkv_err_set(err, DKV_EINVAL, "calibrate: a bandwidth point needs run_bytes > 0 and a rate > 0");
    if (!grow((void **)&c->b, &c->capb, c->nb, sizeof *c->b))
        return dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
    c->b[c->nb++] = (calib_bpt){run_bytes, bytes_per_s, UINT32_MAX};
    return DKV_OK;
}

static dkv_status add_input(dkv_calib *c, const char *file, const char *run, uint64_t fp, const char *desc,
                            bool pinned, dkv_err *err)
{
    if (!grow((void **)&c->in, &c->capin, c->nin, sizeof *c->in))
        return dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
    calib_input *in = &c->in[c->nin];
    in->file = strdup(file);
    in->run = run ? strdup(run) : NULL;
    in->desc = strdup(desc ? desc : "");
    in->workload_fp = fp;
    in->pinned = pinned;
    if (!in->file || (run && !in->run) || !in->desc) {
        free(in->file);
        free(in->run);
        free(in->desc);
        return dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
    }
    c->nin++;
    return DKV_OK;
}

/* ------------------------------------------------------------------ reading a run */

/* Column `field` of an open table as doubles (NULL when the field is missing). */
static double *col(dkv_h5_table *t, const char *field, uint64_t n, dkv_err *err, dkv_status *st)
{
    bool found = false;
    for (size_t i = 0; i < dkv_h5_table_nfields(t); i++) {
        dkv_h5_field f;
        if (dkv_h5_table_field(t, i, &f, NULL) == DKV_OK && strcmp(f.name, field) == 0)
            found = true;
    }
    if (!found || *st != DKV_OK)
        return NULL;
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        *st = dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
        return NULL;
    }
    if (n && (*st = dkv_h5_table_read_f64(t, field, 0, n, v, err)) != DKV_OK) {
        free(v);
        return NULL;
    }
    return v;
}

static const char *leaf(const dkv_cfg_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    return NULL;
}

static const double *sidx;
static int by_index(const void *a, const void *b)
{
    double x = sidx[*(const size_t *)a], y = sidx[*(const size_t *)b];
    return x < y ? -1 : x > y;
}

/* Opens run `name` of f with its resolved config, flattened.  On error nothing stays open. */
static dkv_status open_run(dkv_h5 *f, const char *name, dkv_h5_run **run, char **cfg, dkv_cfg_kv **kv, size_t *nkv,
                           dkv_err *err)
{
    const char *file = dkv_h5_path(f);
    dkv_status st = dkv_h5_run_open(f, name, run, err);
    if (st != DKV_OK)
        return st;
    if (dkv_h5_attr_get_str(*run, NULL, "config", cfg, NULL) != DKV_OK || !*cfg)
        st = dkv_err_set(err, DKV_EFORMAT, "%s: run '%s' has no config attribute (a dkv.save run is needed)", file,
                         name);
    else if ((st = dkv_cfg_flatten(*cfg, kv, nkv, err)) != DKV_OK)
        dkv_err_prefix(err, "%s: run '%s'", file, name);
    if (st != DKV_OK) {
        dkv_cfg_kv_free(*kv, *nkv);
        *kv = NULL;
        *nkv = 0;
        free(*cfg);
        *cfg = NULL;
        dkv_h5_run_free(*run);
        *run = NULL;
    }
    return st;
}

/* "model=... workload.kind=... n=... prompt=... gen=... decode.cache=..." from a run's config. */
static void describe_run(const dkv_cfg_kv *kv, size_t nkv, char *desc, size_t size)
{
    snprintf(desc, size, "model=%s workload.kind=%s n=%s prompt=%s gen=%s decode.cache=%s",
             leaf(kv, nkv, "model.name") ? leaf(kv, nkv, "model.name") : "?",
             leaf(kv, nkv, "workload.kind") ? leaf(kv, nkv, "workload.kind") : "?",
             leaf(kv, nkv, "workload.n") ? leaf(kv, nkv, "workload.n") : leaf(kv, nkv, "workload.count") ? leaf(kv, nkv, "workload.count") : "?",
             leaf(kv, nkv, "workload.prompt") ? leaf(kv, nkv, "workload.prompt") : "-",
             leaf(kv, nkv, "workload.gen") ? leaf(kv, nkv, "workload.gen") : "-",
             leaf(kv, nkv, "decode.cache") ? leaf(kv, nkv, "decode.cache") : "?");
}

/* The steps with PCIe copies of one run (pinned buffers only: pageable ones are counted). */
static dkv_status add_pcie_points(dkv_calib *c, const double *h2d, const double *d2h, const double *pcie,
                                  const double *index, uint64_t ns, bool pinned, uint32_t src, dkv_err *err)
{
    for (uint64_t i = 0; i < ns; i++) {
        double h = h2d[i], d = d2h[i], t = pcie[i];
        if (!(h + d > 0) || !(t > 0))
            continue;
        if (!pinned) {
            c->skipped_unpinned++;
            continue;
        }
        if (!grow((void **)&c->p, &c->capp, c->np, sizeof *c->p))
            return dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
        c->p[c->np++] = (calib_ppt){h, d, t, src, (uint64_t)index[i]};
    }
    return DKV_OK;
}

dkv_status dkv_calib_add_run(dkv_calib *c, dkv_h5 *f, const char *name, dkv_err *err)
{
    const char *file = dkv_h5_path(f);
    dkv_h5_run *run = NULL;
    dkv_h5_table *ts = NULL, *tk = NULL;
    char *cfg = NULL;
    dkv_cfg_kv *kv = NULL;
    size_t nkv = 0, *order = NULL;
    enum { S_INDEX, S_Q, S_LOGIT, S_H2D, S_D2H, S_PCIE, S_N };
    enum { KS_STEP, KS_KIND, KS_LAUNCH, KS_TIME, KS_FLOPS, KS_READ, KS_WRITE, KS_N };
    static const char *const scol[S_N] = {"index", "q_tokens", "logit_rows", "pcie_h2d_bytes", "pcie_d2h_bytes",
                                          "pcie_s"};
    static const char *const kcol[KS_N] = {"step_index", "kind", "n_launches", "time_s", "flops", "read_bytes",
                                           "write_bytes"};
    double *s[S_N] = {0}, *k[KS_N] = {0};
    dkv_status st = open_run(f, name, &run, &cfg, &kv, &nkv, err);
    if (st != DKV_OK)
        return st;
    const char *gname = leaf(kv, nkv, "gpu.name"), *bw = leaf(kv, nkv, "gpu.hbm_bw"),
               *fl = leaf(kv, nkv, "gpu.flops_bf16"), *lo = leaf(kv, nkv, "gpu.launch_overhead_s"),
               *pin = leaf(kv, nkv, "policies.offload.pinned");
    if (!gname || !bw || !fl) {
        st = dkv_err_set(err, DKV_EFORMAT, "%s: run '%s': config lacks gpu.name, gpu.hbm_bw or gpu.flops_bf16", file,
                         name);
        goto done;
    }
    if ((st = dkv_calib_set_base(c, gname, strtod(bw, NULL), strtod(fl, NULL), err)) != DKV_OK) {
        dkv_err_prefix(err, "%s: run '%s'", file, name);
        goto done;
    }
    if (lo)
        c->base_launch_s = strtod(lo, NULL);
    bool pinned = !pin || strcmp(pin, "true") == 0;
    if (dkv_h5_table_open(run, "steps", &ts, NULL) != DKV_OK) {
        st = dkv_err_set(err, DKV_ENOENT, "%s: run '%s' has no steps table", file, name);
        goto done;
    }
    if (dkv_h5_table_open(run, "kernels", &tk, NULL) != DKV_OK) {
        st = dkv_err_set(err, DKV_ENOENT, "%s: run '%s' has no kernels table (run it with record = {kernels = true})",
                         file, name);
        goto done;
    }
    uint64_t ns = dkv_h5_table_nrecords(ts), nk = dkv_h5_table_nrecords(tk);
    for (int i = 0; i < S_N; i++)
        s[i] = col(ts, scol[i], ns, err, &st);
    for (int i = 0; i < KS_N; i++)
        k[i] = col(tk, kcol[i], nk, err, &st);
    if (st != DKV_OK)
        goto done;
    for (int i = 0; i < KS_N; i++)
        if (!k[i]) {
            st = dkv_err_set(err, DKV_EFORMAT, "%s: run '%s': kernels table has no field '%s'", file, name, kcol[i]);
            goto done;
        }
    if (!s[S_INDEX] || !s[S_Q]) {
        st = dkv_err_set(err, DKV_EFORMAT, "%s: run '%s': steps table has no index or q_tokens", file, name);
        goto done;
    }
    char desc[256];
    describe_run(kv, nkv, desc, sizeof desc);
    if ((st = add_input(c, file, name, dkv_cmp_workload_fingerprint(cfg), desc, pinned, err)) != DKV_OK)
        goto done;
    uint32_t src = (uint32_t)(c->nin - 1);
    if (!(order = malloc((ns ? ns : 1) * sizeof *order))) {
        st = dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
        goto done;
    }
    for (uint64_t i = 0; i < ns; i++)
        order[i] = i;
    sidx = s[S_INDEX];
    qsort(order, ns, sizeof *order, by_index);
    for (uint64_t i = 0; i < nk; i++) {
        if (isnan(k[KS_TIME][i]))
            continue;   /* class_timing = false */
        size_t lo2 = 0, hi = ns;   /* the step of the record */
        while (lo2 < hi) {
            size_t mid = (lo2 + hi) / 2;
            if (s[S_INDEX][order[mid]] < k[KS_STEP][i])
                lo2 = mid + 1;
            else
                hi = mid;
        }
        double m = NAN;
        if (lo2 < ns && s[S_INDEX][order[lo2]] == k[KS_STEP][i])
            m = (uint32_t)k[KS_KIND][i] == K_LM && s[S_LOGIT] ? s[S_LOGIT][order[lo2]] : s[S_Q][order[lo2]];
        if (!grow((void **)&c->k, &c->capk, c->nk, sizeof *c->k)) {
            st = dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
            goto done;
        }
        c->k[c->nk++] = (calib_kpt){.k = {(uint32_t)k[KS_KIND][i], (uint32_t)k[KS_LAUNCH][i], k[KS_TIME][i],
                                          k[KS_FLOPS][i], k[KS_READ][i] + k[KS_WRITE][i], m},
                                    .src = src, .step = (uint64_t)k[KS_STEP][i]};
    }
    if (s[S_H2D] && s[S_D2H] && s[S_PCIE])
        st = add_pcie_points(c, s[S_H2D], s[S_D2H], s[S_PCIE], s[S_INDEX], ns, pinned, src, err);
done:
    for (int i = 0; i < S_N; i++)
        free(s[i]);
    for (int i = 0; i < KS_N; i++)
        free(k[i]);
    free(order);
    dkv_cfg_kv_free(kv, nkv);
    free(cfg);
    dkv_h5_table_close(ts);
    dkv_h5_table_close(tk);
    dkv_h5_run_free(run);
    return st;
}

dkv_status dkv_calib_add_bwcurve(dkv_calib *c, const char *path, dkv_err *err)
{
    FILE *fp;
    dkv_status ost = dkv_fopen_input(path, &fp, err);
    if (ost != DKV_OK)
        return ost;
    char line[512];
    long lineno = 0;
    size_t added = 0;
    dkv_status st = DKV_OK;
    size_t first = c->nb;
    while (st == DKV_OK && fgets(line, sizeof line, fp)) {
        lineno++;
        if (strncmp(line, "run ", 4) != 0)
            continue;
        double run, gbps;
        char extra;
        if (sscanf(line + 4, "%lf %lf %c", &run, &gbps, &extra) != 2 || !(run > 0) || !(gbps > 0)) {
            st = dkv_err_set(err, DKV_EFORMAT, "%s:%ld: expected 'run <bytes> <GB/s>' (bwcurve.cu output)", path,
                             lineno);
            break;
        }
        if ((st = dkv_calib_add_bw(c, run, gbps * 1e9, err)) == DKV_OK)
            added++;
    }
    fclose(fp);
    if (st == DKV_OK && added == 0)
        st = dkv_err_set(err, DKV_EFORMAT, "%s: no 'run <bytes> <GB/s>' lines (is it cuda/bench/bwcurve.cu output?)",
                         path);
    if (st == DKV_OK)
        st = add_input(c, path, NULL, 0, "cuda/bench/bwcurve.cu output", true, err);
    if (st != DKV_OK) {
        c->nb = first;
        return st;
    }
    for (size_t i = first; i < c->nb; i++)
        c->b[i].src = (uint32_t)(c->nin - 1);
    return DKV_OK;
}

/* ------------------------------------------------------------------ pairing with a simulated run */

typedef struct simrec {
    uint64_t key;    /* step * 64 + kind */
    uint32_t n;
    double t;
} simrec;

static int simrec_cmp(const void *a, const void *b)
{
    uint64_t x = ((const simrec *)a)->key, y = ((const simrec *)b)->key;
    return x < y ? -1 : x > y;
}

/* Whether the sorted records hold any record of `step` (keys step * 64 + kind). */
static bool has_step(const simrec *sr, size_t n, uint64_t step)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {   /* the first key >= step * 64 */
        size_t mid = (lo + hi) / 2;
        if (sr[mid].key < step * 64)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && sr[lo].key / 64 == step;
}

dkv_status dkv_calib_pair_sim(dkv_calib *c, dkv_h5 *f, const char *name, dkv_err *err)
{
    const char *file = dkv_h5_path(f);
    if (c->nin == 0 || !c->in[c->nin - 1].run)
        return dkv_err_set(err, DKV_EINVAL, "calibrate: %s: run '%s': pair a simulated run right after its measured run",
                           file, name);
    uint32_t src = (uint32_t)(c->nin - 1);
    dkv_h5_run *run = NULL;
    dkv_h5_table *tk = NULL;
    char *cfg = NULL;
    dkv_cfg_kv *kv = NULL;
    size_t nkv = 0;
    simrec *sr = NULL;
    enum { P_STEP, P_KIND, P_LAUNCH, P_TIME, P_N };
    static const char *const pcol[P_N] = {"step_index", "kind", "n_launches", "time_s"};
    double *k[P_N] = {0};
    dkv_status st = open_run(f, name, &run, &cfg, &kv, &nkv, err);
    if (st != DKV_OK)
        return st;
    for (size_t i = 0; i < nkv; i++)
        if (strncmp(kv[i].key, "gpu.kclass.", 11) == 0) {
            st = dkv_err_set(err, DKV_EINVAL, "%s: run '%s' was simulated with a calibrated preset (%s): pair runs "
                             "simulated under an uncalibrated one", file, name, kv[i].key);
            goto done;
        }
    const char *ge = leaf(kv, nkv, "sim.gemm_eff"), *ae = leaf(kv, nkv, "sim.attn_eff");
    if ((ge && strtod(ge, NULL) != 1.0 && strtod(ge, NULL) != 0.0) ||
        (ae && strtod(ae, NULL) != 1.0 && strtod(ae, NULL) != 0.0)) {
        st = dkv_err_set(err, DKV_EINVAL, "%s: run '%s' was simulated with sim.gemm_eff %s / sim.attn_eff %s: pair "
                         "runs simulated at efficiency 1", file, name, ge ? ge : "-", ae ? ae : "-");
        goto done;
    }
    const char *lo = leaf(kv, nkv, "sim.launch_overhead_s");
    double L0 = lo && strtod(lo, NULL) >= 0 ? strtod(lo, NULL) : NAN;
    if (isnan(L0)) {
        const char *gl = leaf(kv, nkv, "gpu.launch_overhead_s");
        if (!gl) {
            st = dkv_err_set(err, DKV_EFORMAT, "%s: run '%s': config lacks gpu.launch_overhead_s", file, name);
            goto done;
        }
        L0 = strtod(gl, NULL);
    }
    if (dkv_h5_table_open(run, "kernels", &tk, NULL) != DKV_OK) {
        st = dkv_err_set(err, DKV_ENOENT, "%s: run '%s' has no kernels table (simulate it with record = {kernels = "
                         "true})", file, name);
        goto done;
    }
    uint64_t nk = dkv_h5_table_nrecords(tk);
    for (int i = 0; i < P_N; i++) {
        k[i] = col(tk, pcol[i], nk, err, &st);
        if (st == DKV_OK && !k[i])
            st = dkv_err_set(err, DKV_EFORMAT, "%s: run '%s': kernels table has no field '%s'", file, name, pcol[i]);
    }
    if (st != DKV_OK)
        goto done;
    if (!(sr = malloc((nk ? nk : 1) * sizeof *sr))) {
        st = dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
        goto done;
    }
    for (uint64_t i = 0; i < nk; i++)
        sr[i] = (simrec){(uint64_t)k[P_STEP][i] * 64 + (uint64_t)k[P_KIND][i], (uint32_t)k[P_LAUNCH][i], k[P_TIME][i]};
    qsort(sr, nk, sizeof *sr, simrec_cmp);
    size_t paired = 0, mine = 0, steps_missing = 0;
    for (size_t i = 0; i < c->nk; i++) {
        calib_kpt *p = &c->k[i];
        if (p->src != src)
            continue;
        mine++;
        simrec key = {p->step * 64 + p->k.kind, 0, 0};
        simrec *hit = bsearch(&key, sr, nk, sizeof *sr, simrec_cmp);
        p->paired = true;
        if (hit) {
            p->n_sim = hit->n;
            p->roof_s = hit->t - hit->n * L0 > 0 ? hit->t - hit->n * L0 : 0;
            paired++;
        } else {   /* a class the simulator does not cost in this step: nothing explains its time */
            p->n_sim = 0;
            p->roof_s = 0;
            steps_missing += !has_step(sr, nk, p->step);
        }
    }
    if (steps_missing) {
        for (size_t i = 0; i < c->nk; i++)
            if (c->k[i].src == src)
                c->k[i].paired = false;
        st = dkv_err_set(err, DKV_EINVAL, "%s: run '%s': %zu of %zu measured records are in steps the simulated run "
                         "lacks: the runs do not run the same plan", file, name, steps_missing, mine);
    }
done:
    for (int i = 0; i < P_N; i++)
        free(k[i]);
    free(sr);
    dkv_cfg_kv_free(kv, nkv);
    free(cfg);
    dkv_h5_table_close(tk);
    dkv_h5_run_free(run);
    return st;
}
