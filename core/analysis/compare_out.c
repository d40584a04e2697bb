/* compare_out.c - a comparison's accessors, its tolerances, and writing it to a results file (compare.h). */
#include "analysis/compare_impl.h"

#include <fnmatch.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ accessors */

void dkv_cmp_free(dkv_cmp *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nd; i++) {
        free((char *)c->d[i].key);
        free((char *)c->d[i].real);
        free((char *)c->d[i].sim);
    }
    free(c->d);
    free(c->q);
    free(c->steps);
    free(c->real_file);
    free(c->real_run);
    free(c->sim_file);
    free(c->sim_run);
    free(c);
}

const dkv_cmp_info *dkv_cmp_get_info(const dkv_cmp *c)
{
    return &c->info;
}

size_t dkv_cmp_count(const dkv_cmp *c)
{
    return c->nq;
}

const dkv_cmp_quantity *dkv_cmp_at(const dkv_cmp *c, size_t i)
{
    return i < c->nq ? &c->q[i] : NULL;
}

const dkv_cmp_quantity *dkv_cmp_find(const dkv_cmp *c, const char *name)
{
    for (size_t i = 0; i < c->nq; i++)
        if (strcmp(c->q[i].name, name) == 0)
            return &c->q[i];
    return NULL;
}

size_t dkv_cmp_diff_count(const dkv_cmp *c)
{
    return c->nd;
}

const dkv_cmp_diff *dkv_cmp_diff_at(const dkv_cmp *c, size_t i)
{
    return i < c->nd ? &c->d[i] : NULL;
}

const dkv_cmp_step *dkv_cmp_steps(const dkv_cmp *c, size_t *n)
{
    *n = c->nsteps;
    return c->steps;
}

/* ------------------------------------------------------------------ tolerances */

static const char *const stat_names[] = {"mean", "median", "max", "bias", "total"};

const char *dkv_cmp_stat_name(dkv_cmp_stat s)
{
    return (unsigned)s < 5 ? stat_names[s] : "?";
}

double dkv_cmp_stat_value(const dkv_cmp_quantity *q, dkv_cmp_stat s)
{
    switch (s) {
    case DKV_CMP_STAT_MEAN: return q->mean_abs;
    case DKV_CMP_STAT_MEDIAN: return q->median_abs;
    case DKV_CMP_STAT_MAX: return q->max_abs;
    case DKV_CMP_STAT_BIAS: return fabs(q->bias);
    case DKV_CMP_STAT_TOTAL: return fabs(q->total_err);
    }
    return NAN;
}

dkv_status dkv_cmp_tol_parse(const char *arg, dkv_cmp_tol *out, dkv_err *err)
{
    memset(out, 0, sizeof *out);
    const char *eq = arg ? strrchr(arg, '=') : NULL;
    if (!eq || eq == arg)
        return dkv_err_set(err, DKV_EINVAL, "--tolerance '%s': expected QUANTITY[:STAT]=LIMIT (e.g. step.time_s=0.08)",
                           arg ? arg : "");
    const char *colon = memchr(arg, ':', (size_t)(eq - arg));
    size_t plen = (size_t)((colon ? colon : eq) - arg);
    if (plen >= sizeof out->pattern)
        return dkv_err_set(err, DKV_EINVAL, "--tolerance '%s': quantity name longer than %zu characters", arg,
                           sizeof out->pattern - 1);
    memcpy(out->pattern, arg, plen);
    out->pattern[plen] = '\0';
    out->stat = DKV_CMP_STAT_MEAN;
    if (colon) {
        size_t slen = (size_t)(eq - colon - 1);
        int found = -1;
        for (int i = 0; i < 5; i++)
            if (strlen(stat_names[i]) == slen && strncmp(colon + 1, stat_names[i], slen) == 0)
                found = i;
        if (found < 0)
            return dkv_err_set(err, DKV_EINVAL, "--tolerance '%s': unknown statistic '%.*s' (mean, median, max, bias, "
                               "total)", arg, (int)slen, colon + 1);
        out->stat = (dkv_cmp_stat)found;
    }
    char *end;
    double v = strtod(eq + 1, &end);
    if (end == eq + 1)
        return dkv_err_set(err, DKV_EINVAL, "--tolerance '%s': limit '%s' is not a number", arg, eq + 1);
    if (*end == '%')
        v /= 100, end++;
    if (*end || !(v >= 0) || isinf(v))
        return dkv_err_set(err, DKV_EINVAL, "--tolerance '%s': limit must be a fraction >= 0 (0.08) or a percentage "
                           "(8%%)", arg);
    out->limit = v;
    return DKV_OK;
}

static bool matches(const char *pattern, const char *name)
{
    return fnmatch(pattern, name, 0) == 0;
}

dkv_status dkv_cmp_check(const dkv_cmp *c, const dkv_cmp_tol *tols, size_t ntol, dkv_cmp_violation *out,
                         size_t max, size_t *n, dkv_err *err)
{
    *n = 0;
    for (size_t t = 0; t < ntol; t++) {
        size_t hits = 0;
        for (size_t i = 0; i < c->nq; i++) {
            const dkv_cmp_quantity *q = &c->q[i];
            if (!matches(tols[t].pattern, q->name))
                continue;
            hits++;
            double v = dkv_cmp_stat_value(q, tols[t].stat);
            if (!(v <= tols[t].limit)) {   /* NaN too */
                if (*n < max)
                    out[*n] = (dkv_cmp_violation){q, tols[t].stat, v, tols[t].limit};
                (*n)++;
            }
        }
        if (hits == 0) {
            char names[320] = "";
            size_t len = 0;
            const char *prev = "";
            for (size_t i = 0; i < c->nq && len + 40 < sizeof names; i++) {   /* distinct prefixes */
                const char *dot = strchr(c->q[i].name, '.');
                size_t pl = dot ? (size_t)(dot - c->q[i].name) : strlen(c->q[i].name);
                if (strncmp(prev, c->q[i].name, pl) == 0 && strlen(prev) >= pl && (prev[pl] == '.' || !prev[pl]))
                    continue;
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", c->q[i].name);
                prev = c->q[i].name;
            }
            return dkv_err_set(err, DKV_ENOENT, "--tolerance %s: no quantity of this comparison matches (e.g. %s)",
                               tols[t].pattern, names);
        }
    }
    return DKV_OK;
}

/* ------------------------------------------------------------------ writing */

typedef struct qrec {
    char quantity[DKV_H5_STR32_LEN];
    char unit[DKV_H5_STR32_LEN];
    uint8_t kind, per_step, exceeded;
    uint64_t n, n_undefined;
    double real, sim, total_err, median_abs_err, mean_abs_err, max_abs_err, bias, tolerance;
    char tolerance_stat[DKV_H5_STR32_LEN];
} qrec;

#define F(f, t, u, d) {#f, t, offsetof(qrec, f), u, d}
static const dkv_h5_field qfields[] = {
    F(quantity, DKV_H5_STR32, "", "step.*, kclass.<class>.*, run.<summary key>, ncu.<class>.*"),
    F(unit, DKV_H5_STR32, "", "unit of real and sim"),
    F(kind, DKV_H5_U8, "", "0 relative error (sim - real) / real, 1 absolute error sim - real"),
    F(per_step, DKV_H5_U8, "", "1: pairs are steps (or step x class); 0: one value per run"),
    F(n, DKV_H5_U64, "", "pairs with a defined error"),
    F(n_undefined, DKV_H5_U64, "", "pairs with real = 0 != sim, or a NaN"),
    F(real, DKV_H5_F64, "", "REAL: sum over the pairs, or its value"),
    F(sim, DKV_H5_F64, "", "SIM: sum over the pairs, or its value"),
    F(total_err, DKV_H5_F64, "", "error of the sums"),
    F(median_abs_err, DKV_H5_F64, "", "median |error| over the pairs"),
    F(mean_abs_err, DKV_H5_F64, "", "mean |error| over the pairs"),
    F(max_abs_err, DKV_H5_F64, "", "max |error| over the pairs"),
    F(bias, DKV_H5_F64, "", "mean signed error (> 0: the simulator overestimates)"),
    F(tolerance, DKV_H5_F64, "", "limit given with --tolerance (NaN: none)"),
    F(tolerance_stat, DKV_H5_STR32, "", "statistic the limit applies to (mean, median, max, bias, total)"),
    F(exceeded, DKV_H5_U8, "", "1: the statistic exceeds the limit (or is undefined)"),
};
#undef F
#define F(f, t, u, d) {#f, t, offsetof(dkv_cmp_step, f), u, d}
static const dkv_h5_field sfields[] = {
    F(index, DKV_H5_U64, "", "engine iteration (steps.index in both runs)"),
    F(same_plan, DKV_H5_U8, "",
      "1: n_items, q_tokens, logit_rows and PCIe bytes each way agree, and the step before's PCIe bytes (compared)"),
    F(real_time_s, DKV_H5_F64, "s", "REAL step time"),
    F(sim_time_s, DKV_H5_F64, "s", "SIM step time"),
    F(real_hbm_bytes, DKV_H5_F64, "bytes", "REAL HBM read + write"),
    F(sim_hbm_bytes, DKV_H5_F64, "bytes", "SIM HBM read + write"),
    F(real_pcie_bytes, DKV_H5_F64, "bytes", "REAL PCIe h2d + d2h"),
    F(sim_pcie_bytes, DKV_H5_F64, "bytes", "SIM PCIe h2d + d2h"),
};
#undef F

static void str32(char *dst, const char *s)
{
    snprintf(dst, DKV_H5_STR32_LEN, "%.*s", DKV_H5_STR32_LEN - 1, s ? s : "");   /* names are at most 31 */
}


dkv_status dkv_cmp_write(const dkv_cmp *c, dkv_h5 *out, const char *name, const dkv_cmp_tol *tols, size_t ntol,
                         const char *command, dkv_err *err)
{
    dkv_h5_run *run;
    dkv_status st = dkv_h5_run_begin(out, name, &run, err);
    if (st != DKV_OK)
        return st;
    qrec *recs = calloc(c->nq ? c->nq : 1, sizeof *recs);
    char *diff = NULL;
    size_t n_exceeded = 0;
    if (!recs) {
        st = dkv_err_set(err, DKV_ENOMEM, "compare: out of memory");
        goto done;
    }
    const dkv_cmp_info *in = &c->info;
    char buf[64], when[32];
    time_t now = time(NULL);
    struct tm tmv;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tmv));
    DKV_TRY_OR(st, dkv_h5_attr_str(run, NULL, "status", "complete", err), done);
    DKV_TRY_OR(st, dkv_h5_attr_str(run, NULL, "dkv_version", DKV_VERSION, err), done);
    DKV_TRY_OR(st, dkv_h5_attr_str(run, NULL, "command", command ? command : "", err), done);
    DKV_TRY_OR(st, dkv_h5_attr_str(run, NULL, "start_time", when, err), done);
    DKV_TRY_OR(st, dkv_h5_attr_str(run, "params", "real_file", in->real_file, err), done);
    DKV_TRY_OR(st, dkv_h5_attr_str(run, "params", "real_run", in->real_run, err), done);
    DKV_TRY_OR(st, dkv_h5_attr_str(run, "params", "sim_file", in->sim_file, err), done);
    DKV_TRY_OR(st, dkv_h5_attr_str(run, "params", "sim_run", in->sim_run, err), done);
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)in->real_workload_fp);
    DKV_TRY_OR(st, dkv_h5_attr_str(run, "params", "real_workload_fp", buf, err), done);
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)in->sim_workload_fp);
    DKV_TRY_OR(st, dkv_h5_attr_str(run, "params", "sim_workload_fp", buf, err), done);
    size_t len = 1, pos = 0;
    for (size_t i = 0; i < c->nd; i++)
        len += strlen(c->d[i].key) + strlen(c->d[i].real) + strlen(c->d[i].sim) + 24;
    if (!(diff = malloc(len))) {
        st = dkv_err_set(err, DKV_ENOMEM, "compare: out of memory");
        goto done;
    }
    diff[0] = '\0';
    for (size_t i = 0; i < c->nd; i++)
        pos += (size_t)snprintf(diff + pos, len - pos, "%s%s: %s -> %s\n", c->d[i].matters ? "" : "(ignored) ",
                                c->d[i].key, c->d[i].real, c->d[i].sim);
    DKV_TRY_OR(st, dkv_h5_attr_str(run, NULL, "config_diff", diff, err), done);
    for (size_t i = 0; i < c->nq; i++) {
        const dkv_cmp_quantity *q = &c->q[i];
        qrec *r = &recs[i];
        str32(r->quantity, q->name);
        str32(r->unit, q->unit);
        r->kind = (uint8_t)q->kind, r->per_step = q->per_step;
        r->n = q->n, r->n_undefined = q->n_undefined;
        r->real = q->real, r->sim = q->sim, r->total_err = q->total_err;
        r->median_abs_err = q->median_abs, r->mean_abs_err = q->mean_abs, r->max_abs_err = q->max_abs;
        r->bias = q->bias;
        r->tolerance = NAN;
        for (size_t t = 0; t < ntol; t++) {   /* the first exceeded tolerance, else the first matching */
            if (!matches(tols[t].pattern, q->name))
                continue;
            double v = dkv_cmp_stat_value(q, tols[t].stat);
            bool ex = !(v <= tols[t].limit);
            if (isnan(r->tolerance) || (ex && !r->exceeded)) {
                r->tolerance = tols[t].limit;
                str32(r->tolerance_stat, dkv_cmp_stat_name(tols[t].stat));
                r->exceeded = ex;
            }
        }
        n_exceeded += r->exceeded;
    }
    dkv_h5_table *t;
    DKV_TRY_OR(st, dkv_h5_table_create(run, "compare_quantities", sizeof *recs, qfields, sizeof qfields / sizeof qfields[0], &t,
                            err), done);
    DKV_TRY_OR(st, dkv_h5_table_append(t, recs, c->nq, err), done);
    dkv_h5_table_close(t);
    DKV_TRY_OR(st, dkv_h5_table_create(run, "compare_steps", sizeof *c->steps, sfields, sizeof sfields / sizeof sfields[0], &t,
                            err), done);
    DKV_TRY_OR(st, dkv_h5_table_append(t, c->steps, c->nsteps, err), done);
    dkv_h5_table_close(t);
    static const struct { const char *key; size_t off; } sums[] = {
        {"steps_real", offsetof(dkv_cmp_info, steps_real)}, {"steps_sim", offsetof(dkv_cmp_info, steps_sim)},
        {"steps_paired", offsetof(dkv_cmp_info, steps_paired)},
        {"steps_plan_mismatch", offsetof(dkv_cmp_info, steps_plan_mismatch)},
    };
    for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++)
        DKV_TRY_OR(st, dkv_h5_attr_i64(run, "summary", sums[i].key, (int64_t) * (const uint64_t *)((const char *)in + sums[i].off),
                            err), done);
    DKV_TRY_OR(st, dkv_h5_attr_i64(run, "summary", "config_diffs_matter", (int64_t)in->n_diffs_matter, err), done);
    DKV_TRY_OR(st, dkv_h5_attr_i64(run, "summary", "tolerances_exceeded", (int64_t)n_exceeded, err), done);
    DKV_TRY_OR(st, dkv_h5_attr_i64(run, "summary", "has_kernels", in->has_kernels, err), done);
    DKV_TRY_OR(st, dkv_h5_attr_i64(run, "summary", "has_ncu", in->has_ncu, err), done);
done:
    free(recs);
    free(diff);
    if (st != DKV_OK) {
        dkv_err e2 = {0};
        dkv_h5_attr_str(run, NULL, "status", "failed", &e2);
        dkv_h5_run_end(run, NULL);
        return st;
    }
    return dkv_h5_run_end(run, err);
}
