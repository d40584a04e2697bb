/* compare.c - pairing a measured run with a simulated one: steps, kernel classes, summaries,
 * Nsight Compute class totals, configuration differences (compare.h). */
#include "analysis/compare_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ accumulating errors */

typedef struct acc {
    double *e;
    size_t n, cap;
    uint64_t undef, zeros;   /* pairs with a NaN or real = 0 != sim; skipped pairs of two zeros */
    double real, sim;
    bool oom;
} acc;

/* Adds one pair.  skip_zero: pairs where both are 0 carry no information (per-step traffic). */
static void acc_add(acc *a, double r, double s, dkv_cmp_kind k, bool skip_zero)
{
    if (isnan(r) || isnan(s)) {
        a->undef++;
        return;
    }
    double e;
    if (k == DKV_CMP_ABSOLUTE)
        e = s - r;
    else if (r == 0 && s == 0) {
        if (skip_zero) {
            a->zeros++;
            return;
        }
        e = 0;
    } else if (r == 0) {
        a->undef++;
        return;
    } else
        e = (s - r) / fabs(r);
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        double *ne = realloc(a->e, cap * sizeof *ne);
        if (!ne) {
            a->oom = true;
            return;
        }
        a->e = ne;
        a->cap = cap;
    }
    a->e[a->n++] = e;
    a->real += r;
    a->sim += s;
}

static int dcmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

/* Turns an accumulator into quantity `name` of c (frees the accumulator's array). */
static dkv_status acc_finish(dkv_cmp *c, acc *a, const char *name, const char *unit, dkv_cmp_kind k, bool per_step,
                             dkv_err *err)
{
    if (a->oom) {
        free(a->e);
        return dkv_err_set(err, DKV_ENOMEM, "compare: out of memory");
    }
    if (c->nq == c->capq) {
        size_t cap = c->capq ? 2 * c->capq : 64;
        dkv_cmp_quantity *nq = realloc(c->q, cap * sizeof *nq);
        if (!nq) {
            free(a->e);
            return dkv_err_set(err, DKV_ENOMEM, "compare: out of memory");
        }
        c->q = nq;
        c->capq = cap;
    }
    dkv_cmp_quantity *q = &c->q[c->nq++];
    memset(q, 0, sizeof *q);
    snprintf(q->name, sizeof q->name, "%s", name);
    q->unit = unit;
    q->kind = k;
    q->per_step = per_step;
    q->n = a->n;
    q->n_undefined = a->undef;
    q->real = a->real;
    q->sim = a->sim;
    if (k == DKV_CMP_ABSOLUTE)
        q->total_err = a->n ? a->sim - a->real : NAN;
    else
        q->total_err = a->n == 0 ? NAN : a->real != 0 ? (a->sim - a->real) / fabs(a->real) : a->sim == 0 ? 0 : NAN;
    if (a->n == 0 && a->zeros && !a->undef) {   /* every pair agreed on zero */
        q->total_err = q->median_abs = q->mean_abs = q->max_abs = q->bias = 0;
    } else if (a->n == 0) {
        q->median_abs = q->mean_abs = q->max_abs = q->bias = NAN;
    } else {
        double sum = 0, sabs = 0, mx = 0;
        for (size_t i = 0; i < a->n; i++) {
            sum += a->e[i];
            a->e[i] = fabs(a->e[i]);
            sabs += a->e[i];
            mx = a->e[i] > mx ? a->e[i] : mx;
        }
        qsort(a->e, a->n, sizeof *a->e, dcmp);
        q->median_abs = a->n % 2 ? a->e[a->n / 2] : 0.5 * (a->e[a->n / 2 - 1] + a->e[a->n / 2]);
        q->mean_abs = sabs / (double)a->n;
        q->max_abs = mx;
        q->bias = sum / (double)a->n;
    }
    free(a->e);
    memset(a, 0, sizeof *a);
    return DKV_OK;
}

/* ------------------------------------------------------------------ reading columns */

/* Reads column `field` of table `name` in run as n doubles (malloc'd into *out).  A missing
 * table gives *out = NULL, *n = 0 and DKV_OK when !required; a missing field gives *out = NULL
 * (optional) or DKV_EFORMAT (required). */
static dkv_status column(dkv_h5_run *run, const char *file, const char *rname, const char *name, const char *field,
                         bool required, double **out, uint64_t *n, dkv_err *err)
{
    *out = NULL;
    *n = 0;
    dkv_h5_table *t;
    dkv_err e2 = {0};
    if (dkv_h5_table_open(run, name, &t, &e2) != DKV_OK)
        return required ? dkv_err_set(err, DKV_ENOENT, "%s: run '%s' has no '%s' table", file, rname, name) : DKV_OK;
    uint64_t nr = dkv_h5_table_nrecords(t);
    bool found = false;
    for (size_t i = 0; i < dkv_h5_table_nfields(t); i++) {
        dkv_h5_field f;
        if (dkv_h5_table_field(t, i, &f, NULL) == DKV_OK && strcmp(f.name, field) == 0)
            found = true;
    }
    dkv_status st = DKV_OK;
    if (!found) {
        if (required)
            st = dkv_err_set(err, DKV_EFORMAT, "%s: run '%s', table '%s' has no field '%s'", file, rname, name, field);
        dkv_h5_table_close(t);
        return st;
    }
    double *v = malloc((nr ? nr : 1) * sizeof *v);
    if (!v)
        st = dkv_err_set(err, DKV_ENOMEM, "compare: out of memory reading %s/%s", name, field);
    else if (nr)
        st = dkv_h5_table_read_f64(t, field, 0, nr, v, err);
    dkv_h5_table_close(t);
    if (st != DKV_OK) {
        free(v);
        return st;
    }
    *out = v;
    *n = nr;
    return DKV_OK;
}

/* ------------------------------------------------------------------ one side */

enum { SC_INDEX, SC_TIME, SC_COMPUTE, SC_PCIE_S, SC_HBM_R, SC_HBM_W, SC_H2D, SC_D2H, SC_ITEMS, SC_Q, SC_LOGIT, SC_N };
static const char *const step_cols[SC_N] = {"index", "time_s", "compute_s", "pcie_s", "hbm_read_bytes",
                                            "hbm_write_bytes", "pcie_h2d_bytes", "pcie_d2h_bytes", "n_items",
                                            "q_tokens", "logit_rows"};

typedef struct kagg {   /* one (step, class) aggregate of a kernels table */
    double step, kind, time_s, read, write;
} kagg;

typedef struct side {
    const char *file, *name;
    dkv_h5_run *run;
    double *sc[SC_N];
    uint64_t nsteps;
    size_t *order;       /* step rows sorted by index */
    kagg *k;             /* sorted by (step, kind), one per pair */
    size_t nk;
    bool has_kernels;
    double *ncu[5];      /* kind, n_kernels, read_bytes, write_bytes, time_s */
    uint64_t nncu;
    char *config;
} side;

static void side_free(side *s)
{
    for (int i = 0; i < SC_N; i++)
        free(s->sc[i]);
    for (int i = 0; i < 5; i++)
        free(s->ncu[i]);
    free(s->order);
    free(s->k);
    free(s->config);
    dkv_h5_run_free(s->run);
}

static const double *sort_key;
static int by_key(const void *pa, const void *pb)
{
    double a = sort_key[*(const size_t *)pa], b = sort_key[*(const size_t *)pb];
    return a < b ? -1 : a > b;
}

static int kagg_cmp(const void *pa, const void *pb)
{
    const kagg *a = pa, *b = pb;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    return a->kind < b->kind ? -1 : a->kind > b->kind;
}

static dkv_status load_kernels(side *s, dkv_err *err)
{
    static const char *const cols[5] = {"step_index", "kind", "time_s", "read_bytes", "write_bytes"};
    double *c[5] = {0};
    uint64_t n = 0, n0 = 0;
    dkv_status st = DKV_OK;
    for (int i = 0; i < 5 && st == DKV_OK; i++) {
        st = column(s->run, s->file, s->name, "kernels", cols[i], i == 1, &c[i], &n, err);
        if (i == 0)
            n0 = n;
        if (st == DKV_OK && i == 0 && !c[0])
            return DKV_OK;   /* no kernels table */
    }
    if (st == DKV_OK && (s->k = malloc((n0 ? n0 : 1) * sizeof *s->k)) == NULL)
        st = dkv_err_set(err, DKV_ENOMEM, "compare: out of memory");
    if (st == DKV_OK) {
        for (uint64_t i = 0; i < n0; i++)
            s->k[i] = (kagg){c[0][i], c[1][i], c[2] ? c[2][i] : NAN, c[3] ? c[3][i] : NAN, c[4] ? c[4][i] : NAN};
        qsort(s->k, n0, sizeof *s->k, kagg_cmp);
        size_t m = 0;   /* sum records of one (step, class): per-layer records, several launches */
        for (uint64_t i = 0; i < n0; i++) {
            if (m && s->k[m - 1].step == s->k[i].step && s->k[m - 1].kind == s->k[i].kind) {
                s->k[m - 1].time_s += s->k[i].time_s;
                s->k[m - 1].read += s->k[i].read;
                s->k[m - 1].write += s->k[i].write;
            } else
                s->k[m++] = s->k[i];
        }
        s->nk = m;
        s->has_kernels = true;
    }
    for (int i = 0; i < 5; i++)
        free(c[i]);
    return st;
}

static dkv_status load_side(side *s, dkv_h5 *f, const char *name, dkv_err *err)
{
    s->file = dkv_h5_path(f);
    s->name = name;
    dkv_status st = dkv_h5_run_open(f, name, &s->run, err);
    if (st != DKV_OK)
        return st;
    uint64_t n;
    for (int i = 0; i < SC_N; i++) {
        st = column(s->run, s->file, name, "steps", step_cols[i], i <= SC_TIME, &s->sc[i], &n, err);
        if (st != DKV_OK)
            return st;
        if (i == 0)
            s->nsteps = n;
    }
    s->order = malloc((s->nsteps ? s->nsteps : 1) * sizeof *s->order);
    if (!s->order)
        return dkv_err_set(err, DKV_ENOMEM, "compare: out of memory");
    for (uint64_t i = 0; i < s->nsteps; i++)
        s->order[i] = i;
    sort_key = s->sc[SC_INDEX];
    qsort(s->order, s->nsteps, sizeof *s->order, by_key);
    if ((st = load_kernels(s, err)) != DKV_OK)
        return st;
    static const char *const ncols[5] = {"kind", "n_kernels", "read_bytes", "write_bytes", "time_s"};
    for (int i = 0; i < 5; i++) {
        st = column(s->run, s->file, name, "ncu_classes", ncols[i], false, &s->ncu[i], &n, err);
        if (st != DKV_OK)
            return st;
        if (i == 0)
            s->nncu = n;
    }
    if (s->ncu[0] && (!s->ncu[2] || !s->ncu[3] || !s->ncu[4]))
        return dkv_err_set(err, DKV_EFORMAT, "%s: run '%s', table 'ncu_classes' lacks read_bytes, write_bytes or "
                           "time_s", s->file, name);
    dkv_err e2 = {0};
    if (dkv_h5_attr_get_str(s->run, NULL, "config", &s->config, &e2) != DKV_OK)
        s->config = NULL;
    return DKV_OK;
}

static double col(const side *s, int c, size_t row)
{
    return s->sc[c] ? s->sc[c][row] : NAN;
}

/* ------------------------------------------------------------------ the parts */

/* Two steps are the same plan when their batches (items, query rows, logit rows) and their
 * transfer orders (PCIe bytes each way) agree: a step of the same batch that fetches or offloads
 * other blocks is another plan (arrivals over time can shift an admission by one step, and the
 * copies of every later step with it).  A step also waits for the copies the step before it left
 * on the copy stream (the backend's offloads run past the kernels that precede them; the
 * simulator carries them as its copy backlog, sim/sim.c stream_times), so the previous steps'
 * copies (oa, ob: their rows in a and b, SIZE_MAX where a side has none) must agree too. */
static bool copies_of(const side *s, size_t row, double *h2d, double *d2h)
{
    *h2d = row != SIZE_MAX && s->sc[SC_H2D] ? s->sc[SC_H2D][row] : 0;
    *d2h = row != SIZE_MAX && s->sc[SC_D2H] ? s->sc[SC_D2H][row] : 0;
    return s->sc[SC_H2D] || s->sc[SC_D2H];
}

static bool same_plan(const side *a, size_t ra, size_t oa, const side *b, size_t rb, size_t ob)
{
    static const int keys[] = {SC_ITEMS, SC_Q, SC_LOGIT, SC_H2D, SC_D2H};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        int c = keys[k];
        if (a->sc[c] && b->sc[c] && a->sc[c][ra] != b->sc[c][rb])
            return false;
    }
    double ah, ad, bh, bd;
    if (copies_of(a, oa, &ah, &ad) && copies_of(b, ob, &bh, &bd) && (ah != bh || ad != bd))
        return false;
    return true;
}

static dkv_status compare_steps(dkv_cmp *c, const side *R, const side *S, dkv_err *err)
{
    enum { Q_TIME, Q_COMPUTE, Q_PCIE_S, Q_HBM_R, Q_HBM_W, Q_HBM, Q_H2D, Q_D2H, Q_PCIE, Q_N };
    static const char *const names[Q_N] = {"step.time_s", "step.compute_s", "step.pcie_s", "step.hbm_read_bytes",
                                           "step.hbm_write_bytes", "step.hbm_bytes", "step.pcie_h2d_bytes",
                                           "step.pcie_d2h_bytes", "step.pcie_bytes"};
    static const char *const units[Q_N] = {"s", "s", "s", "bytes", "bytes", "bytes", "bytes", "bytes", "bytes"};
    acc a[Q_N] = {0};
    size_t cap = R->nsteps < S->nsteps ? R->nsteps : S->nsteps;
    c->steps = malloc((cap ? cap : 1) * sizeof *c->steps);
    if (!c->steps)
        return dkv_err_set(err, DKV_ENOMEM, "compare: out of memory");
    size_t i = 0, j = 0;
    while (i < R->nsteps && j < S->nsteps) {
        size_t ri = R->order[i], sj = S->order[j];
        double xr = R->sc[SC_INDEX][ri], xs = S->sc[SC_INDEX][sj];
        if (xr < xs) {
            i++;
            continue;
        }
        if (xs < xr) {
            j++;
            continue;
        }
        size_t oi = i ? R->order[i - 1] : SIZE_MAX, oj = j ? S->order[j - 1] : SIZE_MAX;   /* the steps before */
        i++, j++;
        bool same = same_plan(R, ri, oi, S, sj, oj);
        dkv_cmp_step *p = &c->steps[c->nsteps++];
        double rv[Q_N], sv[Q_N];
        const int src[] = {SC_TIME, SC_COMPUTE, SC_PCIE_S, SC_HBM_R, SC_HBM_W};
        for (int q = 0; q <= Q_HBM_W; q++)
            rv[q] = col(R, src[q], ri), sv[q] = col(S, src[q], sj);
        rv[Q_HBM] = rv[Q_HBM_R] + rv[Q_HBM_W], sv[Q_HBM] = sv[Q_HBM_R] + sv[Q_HBM_W];
        rv[Q_H2D] = col(R, SC_H2D, ri), sv[Q_H2D] = col(S, SC_H2D, sj);
        rv[Q_D2H] = col(R, SC_D2H, ri), sv[Q_D2H] = col(S, SC_D2H, sj);
        rv[Q_PCIE] = rv[Q_H2D] + rv[Q_D2H], sv[Q_PCIE] = sv[Q_H2D] + sv[Q_D2H];
        *p = (dkv_cmp_step){(uint64_t)xr, same, rv[Q_TIME], sv[Q_TIME], rv[Q_HBM], sv[Q_HBM], rv[Q_PCIE], sv[Q_PCIE]};
        if (!same) {
            c->info.steps_plan_mismatch++;
            continue;
        }
        for (int q = 0; q < Q_N; q++)
            acc_add(&a[q], rv[q], sv[q], DKV_CMP_RELATIVE, true);
    }
    c->info.steps_paired = c->nsteps;
    dkv_status st = DKV_OK;
    for (int q = 0; q < Q_N; q++) {
        static const int need[Q_N] = {SC_TIME, SC_COMPUTE, SC_PCIE_S, SC_HBM_R, SC_HBM_W, SC_HBM_R, SC_H2D, SC_D2H,
                                      SC_H2D};
        bool present = R->sc[need[q]] && S->sc[need[q]];
        if (st == DKV_OK && present)
            st = acc_finish(c, &a[q], names[q], units[q], DKV_CMP_RELATIVE, true, err);
        else
            free(a[q].e);
    }
    return st;
}

static bool step_compared(const dkv_cmp *c, double index)
{
    size_t lo = 0, hi = c->nsteps;   /* steps are in index order */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((double)c->steps[mid].index < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->nsteps && (double)c->steps[lo].index == index && c->steps[lo].same_plan;
}

/* Per kernel class and step: time and HBM bytes, over the compared steps. */
static dkv_status compare_kernels(dkv_cmp *c, const side *R, const side *S, dkv_err *err)
{
    if (!R->has_kernels || !S->has_kernels)
        return DKV_OK;
    c->info.has_kernels = true;
    acc t[DKV_CMP_NCLASS] = {0}, b[DKV_CMP_NCLASS] = {0};
    bool seen[DKV_CMP_NCLASS] = {0};
    size_t i = 0, j = 0;
    while (i < R->nk || j < S->nk) {
        int o = i >= R->nk ? 1 : j >= S->nk ? -1 : kagg_cmp(&R->k[i], &S->k[j]);
        kagg zero = {0}, r = o <= 0 ? R->k[i] : zero, s = o >= 0 ? S->k[j] : zero;
        if (o < 0)
            s.step = r.step, s.kind = r.kind;   /* a class one side did not launch: zero there */
        else if (o > 0)
            r.step = s.step, r.kind = s.kind;
        i += o <= 0, j += o >= 0;
        if (r.kind < 0 || r.kind >= DKV_CMP_NCLASS || !step_compared(c, r.step))
            continue;
        int k = (int)r.kind;
        seen[k] = true;
        acc_add(&t[k], r.time_s, s.time_s, DKV_CMP_RELATIVE, true);
        acc_add(&b[k], r.read + r.write, s.read + s.write, DKV_CMP_RELATIVE, true);
    }
    dkv_status st = DKV_OK;
    for (int k = 0; k < DKV_CMP_NCLASS; k++) {
        char name[48];
        if (st == DKV_OK && seen[k]) {
            snprintf(name, sizeof name, "kclass.%s.time_s", dkv_cmp_class_name((uint32_t)k));
            st = acc_finish(c, &t[k], name, "s", DKV_CMP_RELATIVE, true, err);
            snprintf(name, sizeof name, "kclass.%s.bytes", dkv_cmp_class_name((uint32_t)k));
            if (st == DKV_OK)
                st = acc_finish(c, &b[k], name, "bytes", DKV_CMP_RELATIVE, true, err);
        }
        free(t[k].e);
        free(b[k].e);
    }
    return st;
}

/* Measured (ncu) class totals of REAL against SIM's kernels totals over every step. */
static dkv_status compare_ncu(dkv_cmp *c, const side *R, const side *S, dkv_err *err)
{
    c->info.real_has_ncu = R->ncu[0] != NULL;
    if (!R->ncu[0] || !S->has_kernels)
        return DKV_OK;
    c->info.has_ncu = true;
    double m[DKV_CMP_NCLASS + 1][3] = {{0}}, p[DKV_CMP_NCLASS + 1][3] = {{0}};   /* read, write, time */
    bool seen[DKV_CMP_NCLASS] = {0};
    for (uint64_t i = 0; i < R->nncu; i++) {
        double k = R->ncu[0][i];
        if (k < 0 || k >= DKV_CMP_NCLASS)
            continue;   /* unknown and setup kernels are not in the simulator's classes */
        int ki = (int)k;
        seen[ki] = true;
        m[ki][0] += R->ncu[2][i], m[ki][1] += R->ncu[3][i], m[ki][2] += R->ncu[4][i];
    }
    for (size_t i = 0; i < S->nk; i++) {
        double k = S->k[i].kind;
        if (k < 0 || k >= DKV_CMP_NCLASS)
            continue;
        int ki = (int)k;
        seen[ki] = true;
        p[ki][0] += S->k[i].read, p[ki][1] += S->k[i].write, p[ki][2] += S->k[i].time_s;
    }
    for (int k = 0; k < DKV_CMP_NCLASS; k++)
        for (int f = 0; f < 3; f++)
            m[DKV_CMP_NCLASS][f] += m[k][f], p[DKV_CMP_NCLASS][f] += p[k][f];
    static const char *const what[4] = {"read_bytes", "write_bytes", "bytes", "time_s"};
    static const char *const unit[4] = {"bytes", "bytes", "bytes", "s"};
    for (int k = 0; k <= DKV_CMP_NCLASS; k++) {
        if (k < DKV_CMP_NCLASS && !seen[k])
            continue;
        for (int f = 0; f < 4; f++) {
            double mv[4] = {m[k][0], m[k][1], m[k][0] + m[k][1], m[k][2]};
            double pv[4] = {p[k][0], p[k][1], p[k][0] + p[k][1], p[k][2]};
            acc a = {0};
            acc_add(&a, mv[f], pv[f], DKV_CMP_RELATIVE, false);
            char name[48];
            snprintf(name, sizeof name, "ncu.%s.%s", k == DKV_CMP_NCLASS ? "all" : dkv_cmp_class_name((uint32_t)k),
                     what[f]);
            dkv_status st = acc_finish(c, &a, name, unit[f], DKV_CMP_RELATIVE, false, err);
            if (st != DKV_OK)
                return st;
        }
    }
    return DKV_OK;
}

static dkv_status compare_summary(dkv_cmp *c, const side *R, const side *S, dkv_err *err)
{
    static const struct { const char *key, *unit; dkv_cmp_kind kind; } keys[] = {
        {"sim_time_s", "s", DKV_CMP_RELATIVE}, {"busy_s", "s", DKV_CMP_RELATIVE},
        {"throughput_rps", "requests/s", DKV_CMP_RELATIVE}, {"tokens_per_s", "tokens/s", DKV_CMP_RELATIVE},
        {"latency_mean_s", "s", DKV_CMP_RELATIVE}, {"latency_p50_s", "s", DKV_CMP_RELATIVE},
        {"latency_p99_s", "s", DKV_CMP_RELATIVE}, {"hbm_read_bytes", "bytes", DKV_CMP_RELATIVE},
        {"hbm_write_bytes", "bytes", DKV_CMP_RELATIVE}, {"pcie_h2d_bytes", "bytes", DKV_CMP_RELATIVE},
        {"pcie_d2h_bytes", "bytes", DKV_CMP_RELATIVE}, {"peak_weights_bytes", "bytes", DKV_CMP_RELATIVE},
        {"peak_kv_bytes", "bytes", DKV_CMP_RELATIVE}, {"peak_activation_bytes", "bytes", DKV_CMP_RELATIVE},
        {"peak_logits_bytes", "bytes", DKV_CMP_RELATIVE}, {"peak_staging_bytes", "bytes", DKV_CMP_RELATIVE},
        {"peak_host_bytes", "bytes", DKV_CMP_RELATIVE}, {"peak_allocated", "bytes", DKV_CMP_RELATIVE},
        {"peak_reserved", "bytes", DKV_CMP_RELATIVE}, {"kv_internal_frag_peak", "", DKV_CMP_ABSOLUTE},
        {"kv_external_frag_peak", "", DKV_CMP_ABSOLUTE}, {"kv_external_frag_at_peak", "", DKV_CMP_ABSOLUTE},
        {"kv_internal_frag_mean", "", DKV_CMP_ABSOLUTE}, {"kv_external_frag_mean", "", DKV_CMP_ABSOLUTE},
        {"dev_internal_frag_peak", "", DKV_CMP_ABSOLUTE}, {"dev_external_frag_peak", "", DKV_CMP_ABSOLUTE},
        {"block_reuse_rate", "", DKV_CMP_ABSOLUTE},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        double r, s;
        dkv_err e2 = {0};
        if (dkv_h5_attr_get_f64(R->run, "summary", keys[i].key, &r, &e2) != DKV_OK ||
            dkv_h5_attr_get_f64(S->run, "summary", keys[i].key, &s, &e2) != DKV_OK)
            continue;
        acc a = {0};
        acc_add(&a, r, s, keys[i].kind, false);
        char name[48];
        snprintf(name, sizeof name, "run.%s", keys[i].key);
        dkv_status st = acc_finish(c, &a, name, keys[i].unit, keys[i].kind, false, err);
        if (st != DKV_OK)
            return st;
    }
    return DKV_OK;
}

/* ------------------------------------------------------------------ the whole */

static char *dup(const char *s)
{
    return strdup(s ? s : "");
}

dkv_status dkv_cmp_runs(dkv_h5 *real, const char *real_run, dkv_h5 *sim, const char *sim_run, dkv_cmp **out,
                        dkv_err *err)
{
    *out = NULL;
    dkv_cmp *c = calloc(1, sizeof *c);
    side R = {0}, S = {0};
    if (!c)
        return dkv_err_set(err, DKV_ENOMEM, "compare: out of memory");
    dkv_status st = load_side(&R, real, real_run, err);
    if (st == DKV_OK)
        st = load_side(&S, sim, sim_run, err);
    if (st == DKV_OK) {
        c->real_file = dup(R.file), c->real_run = dup(real_run), c->sim_file = dup(S.file), c->sim_run = dup(sim_run);
        if (!c->real_file || !c->real_run || !c->sim_file || !c->sim_run)
            st = dkv_err_set(err, DKV_ENOMEM, "compare: out of memory");
        c->info.real_file = c->real_file, c->info.real_run = c->real_run;
        c->info.sim_file = c->sim_file, c->info.sim_run = c->sim_run;
        c->info.steps_real = R.nsteps;
        c->info.steps_sim = S.nsteps;
    }
    if (st == DKV_OK)
        st = dkv_cmp__config(c, R.file, R.name, R.config, S.file, S.name, S.config, err);
    if (st == DKV_OK)
        st = compare_steps(c, &R, &S, err);
    if (st == DKV_OK)
        st = compare_kernels(c, &R, &S, err);
    if (st == DKV_OK)
        st = compare_summary(c, &R, &S, err);
    if (st == DKV_OK)
        st = compare_ncu(c, &R, &S, err);
    side_free(&R);
    side_free(&S);
    if (st != DKV_OK) {
        dkv_cmp_free(c);
        return st;
    }
    *out = c;
    return DKV_OK;
}
