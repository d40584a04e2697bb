/* info_brief.c - `dkv info --brief` (one line per run: the parameters that differ between runs
 * and the headline metrics) and `dkv info --json` (every run's attributes, params, flat config,
 * summary and table sizes as one JSON document).  See info.h. */
#include "cli/info.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"

/* ------------------------------------------------------------------ collected attributes */

typedef struct kv {
    char *key;
    dkv_h5_attr_kind kind;
    char *s;           /* STR; for the others: the value printed (%.17g, integers exact) */
    int64_t i;
    double *v;         /* F64 and F64V: n values */
    size_t n;
} kv;

typedef struct kvlist {
    kv *a;
    size_t n, cap;
} kvlist;

typedef struct brun {
    char *name;
    kvlist attrs, params, config, summary, units;   /* units: of the summary keys */
    char **tables;
    uint64_t *nrec;
    size_t ntables;
} brun;

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static int collect(const dkv_h5_attr *a, void *ud)
{
    kvlist *l = ud;
    if (strncmp(a->key, "units.", 6) == 0 || strcmp(a->key, "script") == 0 || strcmp(a->key, "config") == 0)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        kv *na = realloc(l->a, cap * sizeof *na);
        if (!na)
            return 1;
        l->a = na;
        l->cap = cap;
    }
    kv *e = &l->a[l->n];
    memset(e, 0, sizeof *e);
    e->kind = a->kind;
    e->key = dupstr(a->key);
    char buf[64];
    if (a->kind == DKV_H5_ATTR_STR) {
        e->s = dupstr(a->s);
    } else if (a->kind == DKV_H5_ATTR_I64) {
        e->i = a->i;
        snprintf(buf, sizeof buf, "%" PRId64, a->i);
        e->s = dupstr(buf);
    } else {
        e->n = a->kind == DKV_H5_ATTR_F64 ? 1 : a->n;
        e->v = malloc(e->n * sizeof *e->v);
        if (e->v)
            memcpy(e->v, a->kind == DKV_H5_ATTR_F64 ? &a->f : a->v, e->n * sizeof *e->v);
        if (a->kind == DKV_H5_ATTR_F64)
            snprintf(buf, sizeof buf, "%.17g", a->f);
        else
            snprintf(buf, sizeof buf, "[%zu values, first %.17g]", a->n, a->n ? a->v[0] : 0.0);
        e->s = dupstr(buf);
    }
    if (!e->key || !e->s || (e->n && !e->v)) {
        free(e->key);
        free(e->s);
        free(e->v);
        return 1;
    }
    l->n++;
    return 0;
}

/* units.<key> attributes of the summary, as key -> unit */
static int collect_units(const dkv_h5_attr *a, void *ud)
{
    if (strncmp(a->key, "units.", 6) != 0 || a->kind != DKV_H5_ATTR_STR)
        return 0;
    dkv_h5_attr b = *a;
    b.key = a->key + 6;
    return collect(&b, ud);
}

static void kvlist_free(kvlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->a[i].key);
        free(l->a[i].s);
        free(l->a[i].v);
    }
    free(l->a);
}

static const kv *kv_find(const kvlist *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->a[i].key, key) == 0)
            return &l->a[i];
    return NULL;
}

static void brun_free(brun *r)
{
    free(r->name);
    kvlist_free(&r->attrs);
    kvlist_free(&r->params);
    kvlist_free(&r->config);
    kvlist_free(&r->summary);
    kvlist_free(&r->units);
    for (size_t i = 0; i < r->ntables; i++)
        free(r->tables[i]);
    free(r->tables);
    free(r->nrec);
}

static dkv_status brun_read(dkv_h5 *f, const char *name, brun *r, dkv_err *err)
{
    memset(r, 0, sizeof *r);
    dkv_h5_run *run;
    dkv_status st = dkv_h5_run_open(f, name, &run, err);
    if (st != DKV_OK)
        return st;
    r->name = dupstr(name);
    struct { const char *obj; kvlist *l; } groups[] = {
        {NULL, &r->attrs}, {"params", &r->params}, {"config", &r->config}, {"summary", &r->summary}};
    for (size_t g = 0; g < 4; g++)
        dkv_h5_attr_foreach(run, groups[g].obj, collect, groups[g].l, NULL);  /* a missing group: none */
    dkv_h5_attr_foreach(run, "summary", collect_units, &r->units, NULL);
    r->ntables = dkv_h5_table_count(run);
    r->tables = calloc(r->ntables ? r->ntables : 1, sizeof *r->tables);
    r->nrec = calloc(r->ntables ? r->ntables : 1, sizeof *r->nrec);
    for (size_t i = 0; r->tables && r->nrec && i < r->ntables; i++) {
        dkv_h5_table *t;
        r->tables[i] = dupstr(dkv_h5_table_name_at(run, i));
        if (r->tables[i] && dkv_h5_table_open(run, r->tables[i], &t, NULL) == DKV_OK) {
            r->nrec[i] = dkv_h5_table_nrecords(t);
            dkv_h5_table_close(t);
        }
    }
    dkv_h5_run_free(run);
    if (!r->name || !r->tables || !r->nrec)
        return dkv_err_set(err, DKV_ENOMEM, "out of memory reading run '%s'", name);
    return DKV_OK;
}

/* ------------------------------------------------------------------ the parameters that differ */

/* The value of parameter key in run r: config first, then params, then run attributes.  An
 * empty string (a run without a preset or device) counts as no value. */
static const kv *param_of(const brun *r, const char *key)
{
    const kv *e = kv_find(&r->config, key);
    if (!e)
        e = kv_find(&r->params, key);
    if (!e && strcmp(key, "seed") != 0)   /* the run attribute seed is provenance; cfg.seed counts */
        e = kv_find(&r->attrs, key);
    return e && e->kind == DKV_H5_ATTR_STR && !*e->s ? NULL : e;
}

/* run attributes that are bookkeeping, not parameters (backend has its own column) */
static const char *const NOT_PARAMS[] = {"backend", "status", "dkv_version", "git_commit", "script_path", "defines",
                                         "host", "start_time", "end_time", "shard", "build", "driver",
                                         "workload.count", "workload.skipped", "workload.source",
                                         NULL};
static const char *const PREFERRED[] = {"model", "gpu", "scheduler.kind", "decode.cache", "mem.kind",
                                        "instances.placement", "policies.offload.mode",
                                        "policies.retention.set", NULL};

static int in_list(const char *const *l, const char *k)
{
    for (int i = 0; l[i]; i++)
        if (strcmp(l[i], k) == 0)
            return i;
    return -1;
}

static int ends_with(const char *s, const char *t)
{
    size_t a = strlen(s), b = strlen(t);
    return a >= b && strcmp(s + a - b, t) == 0;
}

static int rank_of(const char *k)
{
    int p = in_list(PREFERRED, k);
    if (p >= 0)
        return p;
    if (ends_with(k, ".name") || ends_with(k, ".kind") || ends_with(k, ".mode") || ends_with(k, "_preset"))
        return 100;
    return 200;
}

/* 1 when the runs' values of key a fix their values of key b (missing values count as one value). */
static int determines(const brun *runs, size_t n, const char *a, const char *b)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            const kv *ai = param_of(&runs[i], a), *aj = param_of(&runs[j], a);
            if (!ai || !aj || strcmp(ai->s, aj->s) != 0)
                continue;
            const kv *bi = param_of(&runs[i], b), *bj = param_of(&runs[j], b);
            if (!bi != !bj || (bi && strcmp(bi->s, bj->s) != 0))
                return 0;
        }
    return 1;
}

static int varies(const brun *runs, size_t n, const char *key)
{
    const kv *first = NULL;
    for (size_t i = 0; i < n; i++) {
        const kv *e = param_of(&runs[i], key);
        if (!e)
            continue;   /* a run without the key (another kind of run) is not a value */
        if (!first)
            first = e;
        else if (strcmp(first->s, e->s) != 0)
            return 1;
    }
    return 0;
}

static int cmp_rank(const void *pa, const void *pb)
{
    const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
    int ra = rank_of(a), rb = rank_of(b);
    return ra != rb ? ra - rb : strcmp(a, b);
}

/* The parameter keys that differ between runs, a preset or kind before the values it implies;
 * *out is malloc'ed (borrowed strings), *nout its length. */
static dkv_status differing(const brun *runs, size_t n, const char ***out, size_t *nout, dkv_err *err)
{
    size_t cap = 64, nc = 0;
    const char **cand = malloc(cap * sizeof *cand);
    for (size_t i = 0; cand && i < n; i++) {
        const kvlist *ls[3] = {&runs[i].config, &runs[i].params, &runs[i].attrs};
        for (int l = 0; l < 3; l++)
            for (size_t k = 0; cand && k < ls[l]->n; k++) {
                const char *key = ls[l]->a[k].key;
                int dup = in_list(NOT_PARAMS, key) >= 0;
                for (size_t c = 0; !dup && c < nc; c++)
                    dup = strcmp(cand[c], key) == 0;
                if (dup || !varies(runs, n, key))
                    continue;
                if (nc == cap) {
                    const char **nx = realloc(cand, (cap *= 2) * sizeof *cand);
                    if (!nx) {
                        free(cand);
                        cand = NULL;
                        break;
                    }
                    cand = nx;
                }
                cand[nc++] = key;
            }
    }
    if (!cand)
        return dkv_err_set(err, DKV_ENOMEM, "out of memory");
    qsort(cand, nc, sizeof *cand, cmp_rank);
    size_t kept = 0;
    for (size_t c = 0; c < nc; c++) {
        int implied = 0;
        for (size_t k = 0; !implied && k < kept; k++)
            implied = determines(runs, n, cand[k], cand[c]);
        if (!implied)
            cand[kept++] = cand[c];
    }
    *out = cand;
    *nout = kept;
    return DKV_OK;
}

/* ------------------------------------------------------------------ brief lines */

typedef struct metric {
    const char *key, *head;
    double scale;
    const char *fmt;
} metric;

static const metric METRICS[] = {
    {"tokens_per_s", "tok/s", 1, "%9.1f"},          {"throughput_rps", "req/s", 1, "%8.3f"},
    {"latency_p99_s", "p99_s", 1, "%8.3f"},         {"peak_kv_bytes", "peakKV_GiB", 1.0 / 1073741824.0, "%10.2f"},
    {"kv_external_frag_at_peak", "frag", 1, "%6.3f"},
};
#define NMETRICS (sizeof METRICS / sizeof METRICS[0])
#define MAX_PARAM_COLS 6

static double summary_f(const brun *r, const char *key, int *ok)
{
    const kv *e = kv_find(&r->summary, key);
    *ok = e && (e->kind == DKV_H5_ATTR_I64 || e->kind == DKV_H5_ATTR_F64);
    return !*ok ? NAN : e->kind == DKV_H5_ATTR_I64 ? (double)e->i : e->v[0];
}

/* The value as shown in a column: floats with 6 significant digits, the rest as stored. */
static const char *shown(const kv *e, char *buf, size_t n)
{
    if (!e)
        return "-";
    if (e->kind != DKV_H5_ATTR_F64)
        return e->s;
    snprintf(buf, n, "%.6g", e->v[0]);
    return buf;
}

/* A column heading: the key's last two components ("offload.t1" for policies.offload.t1). */
static const char *heading(const char *key)
{
    const char *last = strrchr(key, '.');
    if (!last)
        return key;
    for (const char *p = last - 1; p > key; p--)
        if (*p == '.')
            return p + 1;
    return key;
}

static int width_of(const char *s, int w)
{
    int n = (int)strlen(s);
    return n > w ? n : w;
}

static void print_brief(const char *file, const brun *runs, size_t n, const char **diff, size_t nd,
                        const char *only)
{
    size_t np = nd < MAX_PARAM_COLS ? nd : MAX_PARAM_COLS;
    int wname = 3, wb = 7, wp[MAX_PARAM_COLS];
    for (size_t i = 0; i < n; i++) {
        wname = width_of(runs[i].name, wname);
        const kv *b = kv_find(&runs[i].attrs, "backend");
        wb = width_of(b ? b->s : "-", wb);
    }
    char buf[64];
    for (size_t p = 0; p < np; p++) {
        wp[p] = width_of(heading(diff[p]), 1);
        for (size_t i = 0; i < n; i++)
            wp[p] = width_of(shown(param_of(&runs[i], diff[p]), buf, sizeof buf), wp[p]);
        if (wp[p] > 24)
            wp[p] = 24;
    }
    printf("%s: %zu run%s; differing:", file, n, n == 1 ? "" : "s");
    for (size_t p = 0; p < nd; p++)
        printf("%s %s", p ? "," : "", diff[p]);
    printf(nd ? "" : " none");
    if (nd > np)
        printf(" (first %zu shown; --json has all)", np);
    printf("\n%-*s %-*s", wname, "run", wb, "backend");
    for (size_t p = 0; p < np; p++)
        printf(" %-*.*s", wp[p], wp[p], heading(diff[p]));
    for (size_t m = 0; m < NMETRICS; m++)
        printf(" %*s", m == 3 ? 10 : m == 4 ? 6 : m == 0 ? 9 : 8, METRICS[m].head);
    printf("  done\n");
    for (size_t i = 0; i < n; i++) {
        if (only && strcmp(only, runs[i].name) != 0)
            continue;
        const kv *b = kv_find(&runs[i].attrs, "backend");
        printf("%-*s %-*s", wname, runs[i].name, wb, b ? b->s : "-");
        for (size_t p = 0; p < np; p++) {
            printf(" %-*.*s", wp[p], wp[p], shown(param_of(&runs[i], diff[p]), buf, sizeof buf));
        }
        for (size_t m = 0; m < NMETRICS; m++) {
            int ok;
            double v = summary_f(&runs[i], METRICS[m].key, &ok);
            int w = m == 3 ? 10 : m == 4 ? 6 : m == 0 ? 9 : 8;
            if (ok) {
                printf(" ");
                printf(METRICS[m].fmt, v * METRICS[m].scale);
            } else {
                printf(" %*s", w, "-");
            }
        }
        int ok1, ok2;
        double done = summary_f(&runs[i], "n_done", &ok1), all = summary_f(&runs[i], "n_requests", &ok2);
        if (ok1 && ok2)
            printf("  %.0f/%.0f\n", done, all);
        else
            printf("  -\n");
    }
}

/* ------------------------------------------------------------------ JSON */

static void json_str(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", stdout);
        else if (*p == '\t')
            fputs("\\t", stdout);
        else if (*p < 32)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void json_num(double v)
{
    if (isfinite(v))
        printf("%.17g", v);
    else
        fputs("null", stdout);   /* JSON has no NaN or infinity */
}

static void json_value(const kv *e)
{
    switch (e->kind) {
    case DKV_H5_ATTR_STR: json_str(e->s); break;
    case DKV_H5_ATTR_I64: printf("%" PRId64, e->i); break;
    case DKV_H5_ATTR_F64: json_num(e->v[0]); break;
    case DKV_H5_ATTR_F64V:
        putchar('[');
        for (size_t i = 0; i < e->n; i++) {
            if (i)
                putchar(',');
            json_num(e->v[i]);
        }
        putchar(']');
        break;
    }
}

/* {"key": value, ...}; keys NULL: all of l, else only those of keys (nkeys) that l has */
static void json_object(const kvlist *l, const char *const *keys, size_t nkeys)
{
    putchar('{');
    int first = 1;
    size_t n = keys ? nkeys : l->n;
    for (size_t i = 0; i < n; i++) {
        const kv *e = keys ? kv_find(l, keys[i]) : &l->a[i];
        if (!e)
            continue;
        printf(first ? "" : ", ");
        first = 0;
        json_str(e->key);
        fputs(": ", stdout);
        json_value(e);
    }
    putchar('}');
}

static void print_json(const char *file, const brun *runs, size_t n, const char **diff, size_t nd,
                       const char *only, int brief)
{
    const char *mkeys[NMETRICS + 2];
    for (size_t m = 0; m < NMETRICS; m++)
        mkeys[m] = METRICS[m].key;
    mkeys[NMETRICS] = "n_done";
    mkeys[NMETRICS + 1] = "n_requests";
    fputs("{\"file\": ", stdout);
    json_str(file);
    fputs(", \"differing\": [", stdout);
    for (size_t p = 0; p < nd; p++) {
        printf(p ? ", " : "");
        json_str(diff[p]);
    }
    fputs("],\n \"runs\": [", stdout);
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        const brun *r = &runs[i];
        if (only && strcmp(only, r->name) != 0)
            continue;
        printf(first ? "\n  {\"name\": " : ",\n  {\"name\": ");
        first = 0;
        json_str(r->name);
        fputs(", \"attributes\": ", stdout);
        json_object(&r->attrs, NULL, 0);
        fputs(",\n   \"params\": ", stdout);
        json_object(&r->params, NULL, 0);
        fputs(",\n   \"config\": ", stdout);
        json_object(&r->config, brief ? diff : NULL, nd);
        fputs(",\n   \"summary\": ", stdout);
        json_object(&r->summary, brief ? mkeys : NULL, NMETRICS + 2);
        fputs(",\n   \"units\": ", stdout);
        json_object(&r->units, brief ? mkeys : NULL, NMETRICS + 2);
        fputs(",\n   \"tables\": {", stdout);
        for (size_t t = 0; t < r->ntables; t++) {
            printf(t ? ", " : "");
            json_str(r->tables[t] ? r->tables[t] : "?");
            printf(": %" PRIu64, r->nrec[t]);
        }
        fputs("}}", stdout);
    }
    fputs("\n]}\n", stdout);
}

/* ------------------------------------------------------------------ entry */

int dkv_info_brief(const char *file, const char *only, int json, int brief)
{
    dkv_err err = {0};
    dkv_h5 *f;
    if (dkv_h5_open_read(file, &f, &err) != DKV_OK) {
        fprintf(stderr, "dkv info: %s\n", err.msg);
        return DKV_EXIT_ERROR;
    }
    size_t n = dkv_h5_run_count(f);
    brun *runs = calloc(n ? n : 1, sizeof *runs);
    int rc = runs ? DKV_EXIT_OK : DKV_EXIT_ERROR, found = !only;
    size_t nr = 0;
    for (size_t i = 0; runs && i < n; i++) {
        const char *name = dkv_h5_run_name_at(f, i);
        found |= only && strcmp(only, name) == 0;
        if (brun_read(f, name, &runs[nr], &err) != DKV_OK) {
            fprintf(stderr, "dkv info: %s: %s\n", file, err.msg);
            brun_free(&runs[nr]);
            rc = DKV_EXIT_ERROR;
            continue;
        }
        nr++;
    }
    dkv_h5_close(f, NULL);
    const char **diff = NULL;
    size_t nd = 0;
    if (!found) {
        fprintf(stderr, "dkv info: %s has no run '%s'\n", file, only);
        rc = DKV_EXIT_ERROR;
    } else if (runs && differing(runs, nr, &diff, &nd, &err) != DKV_OK) {
        fprintf(stderr, "dkv info: %s\n", err.msg);
        rc = DKV_EXIT_ERROR;
    } else if (json) {
        print_json(file, runs, nr, diff, nd, only, brief);
    } else {
        print_brief(file, runs, nr, diff, nd, only);
    }
    free(diff);
    for (size_t i = 0; i < nr; i++)
        brun_free(&runs[i]);
    free(runs);
    return rc;
}
