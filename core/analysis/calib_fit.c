/* calib_fit.c - the fits of a calibration (calib.h documents the models). */
#include "analysis/calib_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_QKV = 0, K_ATTN, K_O, K_FFN, K_LM, K_STORE, K_GATHER, K_REORDER, K_ELEM };

static bool is_stream_class(uint32_t k)
{
    return k == K_ELEM;   /* kv_store writes short runs (the bw_curve), not a stream */
}

static bool is_gemm_class(uint32_t k)
{
    return k == K_QKV || k == K_O || k == K_FFN || k == K_LM;
}

/* Least squares y = A * x1 + B * x2 with relative residuals (weights 1 / y^2): the normal
 * equations' sums. */
typedef struct ls2 {
    double a11, a12, a22, b1, b2;
    size_t n;
} ls2;

static void ls2_add(ls2 *s, double x1, double x2, double y)
{
    double w = 1 / (y * y);
    s->a11 += w * x1 * x1, s->a12 += w * x1 * x2, s->a22 += w * x2 * x2;
    s->b1 += w * x1 * y, s->b2 += w * x2 * y;
    s->n++;
}

/* Solves for A >= 0 (a negative A becomes 0 and B is refitted alone).  Returns false when x1 and x2
 * vary together (not separable); then A = 0 and B is the x2-only fit (NaN when x2 is always 0). */
static bool ls2_solve(const ls2 *s, double *A, double *B)
{
    double det = s->a11 * s->a22 - s->a12 * s->a12;
    bool sep = s->a11 > 0 && s->a22 > 0 && det > 1e-9 * s->a11 * s->a22;
    *A = 0;
    *B = s->a22 > 0 ? s->b2 / s->a22 : NAN;
    if (sep) {
        double a = (s->b1 * s->a22 - s->b2 * s->a12) / det;
        if (a >= 0)
            *A = a, *B = (s->a11 * s->b2 - s->a12 * s->b1) / det;
    }
    return sep;
}

/* time = n * L + bytes * u, weighted by 1 / time^2 (relative residuals). */
static void fit_launch(const dkv_calib *c, dkv_calib_result *r)
{
    ls2 s = {0};
    for (size_t i = 0; i < c->nk; i++) {
        const dkv_calib_kernel *k = &c->k[i].k;
        if (is_stream_class(k->kind) && k->time_s > 0 && k->bytes >= 0)
            ls2_add(&s, k->n_launches, k->bytes, k->time_s);
    }
    size_t n = s.n;
    r->launch_n = n;
    if (n < 2) {
        snprintf(r->launch_why, sizeof r->launch_why, "%zu elementwise records (need 2 or more)", n);
        return;
    }
    double L, u;
    if (!ls2_solve(&s, &L, &u)) {
        snprintf(r->launch_why, sizeof r->launch_why, "launches and bytes vary together in the %zu records: "
                 "overhead and bandwidth are not separable (use workloads of different sizes)", n);
        return;
    }
    if (!(u > 0)) {
        snprintf(r->launch_why, sizeof r->launch_why, "the bytes term came out %g s/byte (not positive): the records "
                 "are not memory-bound", u);
        return;
    }
    double ss = 0;
    for (size_t i = 0; i < c->nk; i++) {
        const dkv_calib_kernel *k = &c->k[i].k;
        if (!is_stream_class(k->kind) || !(k->time_s > 0) || !(k->bytes >= 0))
            continue;
        double e = (k->n_launches * L + k->bytes * u - k->time_s) / k->time_s;
        ss += e * e;
    }
    r->launch_ok = true;
    r->launch_overhead_s = L;
    r->stream_bw = 1 / u;
    r->launch_rms_rel = sqrt(ss / (double)n);
}

typedef struct bwp {
    double run, eff;
    size_t w;
} bwp;

static int bwp_cmp(const void *a, const void *b)
{
    double x = ((const bwp *)a)->run, y = ((const bwp *)b)->run;
    return x < y ? -1 : x > y;
}

static void fit_curve(const dkv_calib *c, dkv_calib_result *r)
{
    r->bw_n_raw = c->nb;
    if (c->nb < 2) {
        snprintf(r->bw_why, sizeof r->bw_why, "%zu bandwidth points (need 2 or more: cuda/bench/bwcurve.cu output)",
                 c->nb);
        return;
    }
    bwp *p = malloc(c->nb * sizeof *p);
    if (!p) {
        snprintf(r->bw_why, sizeof r->bw_why, "out of memory");
        return;
    }
    for (size_t i = 0; i < c->nb; i++)
        p[i] = (bwp){c->b[i].run_bytes, fmin(1.0, c->b[i].bytes_per_s / c->hbm_bw), 1};
    qsort(p, c->nb, sizeof *p, bwp_cmp);
    size_t m = 0;   /* average equal run lengths */
    for (size_t i = 0; i < c->nb; i++) {
        if (m && p[m - 1].run == p[i].run) {
            p[m - 1].eff = (p[m - 1].eff * (double)p[m - 1].w + p[i].eff) / (double)(p[m - 1].w + 1);
            p[m - 1].w++;
        } else
            p[m++] = p[i];
    }
    /* pool adjacent violators: non-decreasing efficiency in run length */
    size_t top = 0;
    for (size_t i = 0; i < m; i++) {
        p[top] = p[i];
        top++;
        while (top >= 2 && p[top - 2].eff > p[top - 1].eff) {
            bwp *a = &p[top - 2], *b = &p[top - 1];
            double w = (double)(a->w + b->w);
            a->eff = (a->eff * (double)a->w + b->eff * (double)b->w) / w;
            a->w += b->w;   /* the pooled block keeps its first run length */
            top--;
        }
    }
    if (top < 2) {
        snprintf(r->bw_why, sizeof r->bw_why, "the points pool into one (the rate does not grow with run length)");
        free(p);
        return;
    }
    size_t n = top < DKV_CALIB_MAX_CURVE ? top : DKV_CALIB_MAX_CURVE;
    for (size_t i = 0; i < n; i++) {   /* evenly spread over the points when there are too many */
        size_t j = n == top ? i : (size_t)llround((double)i * (double)(top - 1) / (double)(n - 1));
        r->curve_run[i] = p[j].run;
        r->curve_eff[i] = p[j].eff > 0 ? p[j].eff : 1e-6;
    }
    r->n_curve = n;
    r->bw_ok = true;
    free(p);
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void fit_gemm(const dkv_calib *c, dkv_calib_result *r)
{
    double L = r->launch_ok ? r->launch_overhead_s : c->base_launch_s;
    double sum_tf = 0, sum_t = 0;
    size_t n = 0, n_compute = 0;
    /* groups: (class, log2 bucket, bound) */
    typedef struct grp { uint32_t kind; int b; bool cb; double *e; size_t n, cap; } grp;
    grp g[DKV_CALIB_MAX_SHAPES];
    size_t ng = 0, dropped = 0;
    for (size_t i = 0; i < c->nk; i++) {
        const dkv_calib_kernel *k = &c->k[i].k;
        if (!is_gemm_class(k->kind) || !(k->time_s > 0) || !(k->m_tokens >= 1))
            continue;
        double t = k->time_s - k->n_launches * L;
        if (!(t > 0)) {
            dropped++;
            continue;
        }
        double tf = k->flops / c->flops_bf16, tm = k->bytes / c->hbm_bw;
        bool cb = tf >= tm;
        double eff = cb ? tf / t : tm / t;
        if (cb)
            sum_tf += tf, sum_t += t, n_compute++;
        n++;
        int b = (int)floor(log2(k->m_tokens));
        size_t j = 0;
        while (j < ng && !(g[j].kind == k->kind && g[j].b == b && g[j].cb == cb))
            j++;
        if (j == ng) {
            if (ng == DKV_CALIB_MAX_SHAPES)
                continue;
            g[ng++] = (grp){k->kind, b, cb, NULL, 0, 0};
        }
        if (g[j].n == g[j].cap) {
            size_t cap = g[j].cap ? 2 * g[j].cap : 16;
            double *e = realloc(g[j].e, cap * sizeof *e);
            if (!e)
                continue;
            g[j].e = e;
            g[j].cap = cap;
        }
        g[j].e[g[j].n++] = eff;
    }
    r->gemm_n = n;
    r->n_shapes = 0;
    for (size_t j = 0; j < ng; j++) {
        if (!g[j].n) {
            free(g[j].e);
            continue;
        }
        qsort(g[j].e, g[j].n, sizeof *g[j].e, dcmp);
        dkv_calib_shape *s = &r->shapes[r->n_shapes++];
        s->kind = g[j].kind;
        s->m_lo = ldexp(1.0, g[j].b);
        s->m_hi = ldexp(1.0, g[j].b + 1);
        s->compute_bound = g[j].cb;
        s->n = g[j].n;
        s->eff_median = g[j].n % 2 ? g[j].e[g[j].n / 2] : 0.5 * (g[j].e[g[j].n / 2 - 1] + g[j].e[g[j].n / 2]);
        s->eff_min = g[j].e[0];
        s->eff_max = g[j].e[g[j].n - 1];
        free(g[j].e);
    }
    if (n_compute < 2) {
        snprintf(r->gemm_why, sizeof r->gemm_why, "%zu compute-bound GEMM records of %zu (need 2 or more; small M is "
                 "memory-bound)%s", n_compute, n, dropped ? "; some were shorter than their launch overhead" : "");
        return;
    }
    r->gemm_ok = true;
    r->gemm_eff = sum_tf / sum_t;
}

/* Least squares y = a + x / R; a >= 0.  Returns false with fewer than 2 points. */
static bool fit_rate(const double *x, const double *y, size_t n, double *rate, double *lat)
{
    if (n < 2)
        return false;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++)
        sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
    double d = (double)n * sxx - sx * sx, b = d > 1e-12 * (double)n * sxx ? ((double)n * sxy - sx * sy) / d : 0;
    double a = (sy - b * sx) / (double)n;
    if (!(b > 0) || a < 0) {   /* one size only, or a negative latency: a plain ratio */
        b = sy / sx;
        a = 0;
    }
    *rate = 1 / b;
    *lat = a;
    return *rate > 0 && isfinite(*rate);
}

static void fit_pcie(const dkv_calib *c, dkv_calib_result *r)
{
    double *x = malloc((c->np ? c->np : 1) * sizeof *x), *y = malloc((c->np ? c->np : 1) * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        snprintf(r->pcie_why, sizeof r->pcie_why, "out of memory");
        return;
    }
    for (int dir = 0; dir < 3; dir++) {
        size_t n = 0;
        for (size_t i = 0; i < c->np; i++) {
            const calib_ppt *p = &c->p[i];
            bool take = dir == 0 ? p->h2d > 0 && p->d2h == 0 : dir == 1 ? p->d2h > 0 && p->h2d == 0
                                                                        : p->h2d > 0 && p->d2h > 0;
            if (take)
                x[n] = p->h2d + p->d2h, y[n] = p->time_s, n++;
        }
        double rate = 0, lat = 0;
        if (dir == 2) {
            double sx = 0, sy = 0;
            for (size_t i = 0; i < n; i++)
                sx += x[i], sy += y[i];
            r->bidir_n = n;
            if ((r->bidir_ok = n >= 2 && sy > 0))
                r->pcie_bidir = sx / sy;
        } else if (dir == 0) {
            r->h2d_n = n;
            if ((r->h2d_ok = fit_rate(x, y, n, &rate, &lat)))
                r->pcie_h2d = rate, r->h2d_latency_s = lat;
        } else {
            r->d2h_n = n;
            if ((r->d2h_ok = fit_rate(x, y, n, &rate, &lat)))
                r->pcie_d2h = rate, r->d2h_latency_s = lat;
        }
    }
    free(x);
    free(y);
    if (!r->h2d_ok || !r->d2h_ok || !r->bidir_ok)
        snprintf(r->pcie_why, sizeof r->pcie_why, "steps with pinned PCIe traffic: %zu h2d only, %zu d2h only, %zu "
                 "both (2 or more needed for each rate)%s", r->h2d_n, r->d2h_n, r->bidir_n,
                 c->skipped_unpinned ? "; steps of runs with pageable buffers left out" : "");
}

/* Per class: time = a * n_sim + b * roof over the paired records, relative residuals. */
static void fit_kclass(const dkv_calib *c, dkv_calib_result *r)
{
    for (size_t i = 0; i < c->nk; i++)
        r->n_paired += c->k[i].paired;
    for (uint32_t cl = 0; cl < DKV_CALIB_MAX_KCLASS; cl++) {
        ls2 s = {0};
        size_t unpaired = 0;
        for (size_t i = 0; i < c->nk; i++) {
            const calib_kpt *p = &c->k[i];
            if (!p->paired || p->k.kind != cl || !(p->k.time_s > 0))
                continue;
            if (p->n_sim == 0)
                unpaired++;
            else
                ls2_add(&s, p->n_sim, p->roof_s, p->k.time_s);
        }
        size_t n = s.n;
        r->kclass_n[cl] = n;
        r->kclass_unpaired[cl] = unpaired;
        if (n == 0 && unpaired == 0)
            continue;
        char *why = r->kclass_why[cl];
        size_t wl = sizeof r->kclass_why[cl];
        if (n < 2) {
            snprintf(why, wl, "%zu paired records (need 2 or more)%s", n,
                     unpaired ? "; the simulator costs none of this class's measured steps" : "");
            continue;
        }
        if (!(s.a22 > 0)) {
            snprintf(why, wl, "the simulator's roofline time is 0 in every record");
            continue;
        }
        double A, B;
        ls2_solve(&s, &A, &B);   /* not separable (launches and roofline vary together): the scale alone */
        if (!(B > 0)) {
            snprintf(why, wl, "the roofline term came out %.3g (not positive)", B);
            continue;
        }
        double ss = 0;
        for (size_t i = 0; i < c->nk; i++) {
            const calib_kpt *p = &c->k[i];
            if (!p->paired || p->k.kind != cl || !(p->k.time_s > 0) || p->n_sim == 0)
                continue;
            double e = (A * p->n_sim + B * p->roof_s - p->k.time_s) / p->k.time_s;
            ss += e * e;
        }
        r->kclass_ok[cl] = true;
        r->kclass_launch_s[cl] = A;
        r->kclass_scale[cl] = B;
        r->kclass_rms_rel[cl] = sqrt(ss / (double)n);
    }
}

dkv_status dkv_calib_fit(const dkv_calib *c, dkv_calib_result *r, dkv_err *err)
{
    memset(r, 0, sizeof *r);
    if (!c->have_base)
        return dkv_err_set(err, DKV_EINVAL, "calibrate: no base preset (add a measured run, or set the base)");
    snprintf(r->base, sizeof r->base, "%s", c->base);
    r->hbm_bw = c->hbm_bw;
    r->flops_bf16 = c->flops_bf16;
    fit_launch(c, r);
    fit_curve(c, r);
    fit_gemm(c, r);
    fit_pcie(c, r);
    fit_kclass(c, r);
    return DKV_OK;
}
