/* lengths.c - length distributions (fixed, uniform, lognormal, empirical) and length tables. */
#include "workload/workload_impl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct dkv_lengths {
    uint32_t *v;
    size_t    n;
};

dkv_len_dist dkv_len_fixed(uint32_t value)
{
    dkv_len_dist d = {.kind = DKV_LEN_FIXED, .value = value};
    return d;
}

dkv_len_dist dkv_len_uniform(uint32_t lo, uint32_t hi)
{
    dkv_len_dist d = {.kind = DKV_LEN_UNIFORM, .lo = lo, .hi = hi};
    return d;
}

dkv_len_dist dkv_len_lognormal(double mu, double sigma)
{
    dkv_len_dist d = {.kind = DKV_LEN_LOGNORMAL, .mu = mu, .sigma = sigma};
    return d;
}

dkv_status dkv_len_lognormal_mean_median(double mean, double median, dkv_len_dist *out, dkv_err *err)
{
    if (!(median > 0) || !(mean >= median) || !isfinite(mean))
        return dkv_err_set(err, DKV_EINVAL,
                           "lognormal: needs mean >= median > 0 (got mean %g, median %g)", mean, median);
    *out = dkv_len_lognormal(log(median), sqrt(2.0 * log(mean / median)));
    return DKV_OK;
}

dkv_len_dist dkv_len_empirical(const dkv_lengths *table)
{
    dkv_len_dist d = {.kind = DKV_LEN_EMPIRICAL, .table = table};
    return d;
}

dkv_status dkv_len_dist_validate(const dkv_len_dist *d, const char *what, dkv_err *err)
{
    what = what ? what : "length";
    if (d->max && d->min > d->max)
        return dkv_err_set(err, DKV_EINVAL, "%s: field 'min' (%u) exceeds 'max' (%u)", what, d->min, d->max);
    switch (d->kind) {
    case DKV_LEN_FIXED:
        if (d->value == 0) return dkv_err_set(err, DKV_EINVAL, "%s: field 'value' must be > 0", what);
        return DKV_OK;
    case DKV_LEN_UNIFORM:
        if (d->lo == 0 || d->lo > d->hi)
            return dkv_err_set(err, DKV_EINVAL, "%s: uniform needs 0 < lo <= hi (got lo %u, hi %u) (field lo)", what,
                               d->lo, d->hi);
        return DKV_OK;
    case DKV_LEN_LOGNORMAL:
        if (!isfinite(d->mu) || !(d->sigma >= 0) || !isfinite(d->sigma))
            return dkv_err_set(err, DKV_EINVAL, "%s: lognormal needs finite mu and sigma >= 0 (field sigma)", what);
        return DKV_OK;
    case DKV_LEN_EMPIRICAL:
        if (!d->table || d->table->n == 0)
            return dkv_err_set(err, DKV_EINVAL, "%s: empirical distribution has no table (field table)", what);
        return DKV_OK;
    }
    return dkv_err_set(err, DKV_EINVAL, "%s: unknown distribution kind %d (field kind)", what, (int)d->kind);
}

uint32_t dkv_len_draw(const dkv_len_dist *d, dkv_rng *r)
{
    double v = 1;
    switch (d->kind) {
    case DKV_LEN_FIXED: v = d->value; break;
    case DKV_LEN_UNIFORM: v = d->lo + (double)dkv_rng_below(r, (uint64_t)d->hi - d->lo + 1); break;
    case DKV_LEN_LOGNORMAL: v = round(exp(d->mu + d->sigma * dkv_rng_normal(r))); break;
    case DKV_LEN_EMPIRICAL: v = d->table->v[dkv_rng_below(r, d->table->n)]; break;
    }
    if (d->min && v < d->min) v = d->min;
    if (d->max && v > d->max) v = d->max;
    if (v < 1) v = 1;
    if (v > UINT32_MAX) v = UINT32_MAX;
    return (uint32_t)v;
}

/* ------------------------------------------------------------------ tables */

static dkv_status table_new(size_t n, dkv_lengths **out, dkv_err *err)
{
    dkv_lengths *t = calloc(1, sizeof *t);
    if (t) t->v = malloc((n ? n : 1) * sizeof *t->v);
    if (!t || !t->v) {
        dkv_lengths_free(t);
        return dkv_err_set(err, DKV_ENOMEM, "lengths: out of memory");
    }
    *out = t;
    return DKV_OK;
}

dkv_status dkv_lengths_from_array(const uint32_t *v, size_t n, dkv_lengths **out, dkv_err *err)
{
    *out = NULL;
    if (n == 0) return dkv_err_set(err, DKV_EINVAL, "lengths: table is empty");
    dkv_lengths *t;
    dkv_status rc = table_new(n, &t, err);
    if (rc != DKV_OK) return rc;
    memcpy(t->v, v, n * sizeof *v);
    t->n = n;
    *out = t;
    return DKV_OK;
}

dkv_status dkv_lengths_from_workload(const dkv_workload *w, dkv_len_column col, dkv_lengths **out, dkv_err *err)
{
    *out = NULL;
    size_t n = dkv_workload_count(w);
    if (n == 0) return dkv_err_set(err, DKV_EINVAL, "lengths: workload '%s' is empty", dkv_workload_source(w));
    dkv_lengths *t;
    dkv_status rc = table_new(n, &t, err);
    if (rc != DKV_OK) return rc;
    for (size_t i = 0; i < n; i++) {
        const dkv_request *r = dkv_workload_get(w, i);
        uint32_t v = col == DKV_COL_PROMPT ? r->prompt_tokens : r->gen_tokens;
        t->v[t->n++] = v ? v : 1;
    }
    *out = t;
    return DKV_OK;
}

dkv_status dkv_lengths_load(const char *path, dkv_lengths **out, dkv_err *err)
{
    *out = NULL;
    char *buf;
    size_t len;
    dkv_status rc = dkv_wl_slurp(path, 0, &buf, &len, err);
    if (rc != DKV_OK) return rc;
    size_t cap = 1024;
    dkv_lengths *t;
    rc = table_new(cap, &t, err);
    if (rc != DKV_OK) {
        free(buf);
        return rc;
    }
    char *p = buf;
    unsigned long line = 0;
    while (*p) {
        char *eol = strchr(p, '\n');
        char *next = eol ? eol + 1 : p + strlen(p);
        if (eol) *eol = '\0';
        line++;
        char *s = p;
        while (isspace((unsigned char)*s)) s++;
        char *e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
        p = next;
        if (*s == '\0' || *s == '#') continue;
        errno = 0;
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (*s == '-' || end == s || *end != '\0' || errno || v == 0 || v > UINT32_MAX) {
            rc = dkv_err_set(err, DKV_EFORMAT, "%s:%lu: expected a positive integer, got '%.40s' (field length)", path,
                             line, s);
            break;
        }
        if (t->n == cap) {
            uint32_t *nv = realloc(t->v, cap * 2 * sizeof *nv);
            if (!nv) {
                rc = dkv_err_set(err, DKV_ENOMEM, "%s: out of memory", path);
                break;
            }
            t->v = nv;
            cap *= 2;
        }
        t->v[t->n++] = (uint32_t)v;
    }
    free(buf);
    if (rc == DKV_OK && t->n == 0) rc = dkv_err_set(err, DKV_EFORMAT, "%s: no lengths in the file", path);
    if (rc != DKV_OK) {
        dkv_lengths_free(t);
        return rc;
    }
    *out = t;
    return DKV_OK;
}

size_t dkv_lengths_count(const dkv_lengths *t) { return t ? t->n : 0; }
uint32_t dkv_lengths_at(const dkv_lengths *t, size_t i) { return t && i < t->n ? t->v[i] : 0; }

void dkv_lengths_free(dkv_lengths *t)
{
    if (!t) return;
    free(t->v);
    free(t);
}
