/* cmd_info.c - `dkv info FILE.h5 [--run NAME] [--script]`: describes a results file. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/info.h"
#include "io/h5.h"

static void info_usage(FILE *out)
{
    fputs("usage: dkv info FILE.h5 [--run NAME] [--script | --brief] [--json]\n"
          "\n"
          "Lists the runs of a results file with their provenance, parameters, summaries and tables.\n"
          "  --run NAME   only this run\n"
          "  --script     also print the script text each run was made by\n"
          "  --brief      one line per run: the parameters that differ between the file's runs and\n"
          "               the headline metrics (tok/s, req/s, P99 latency, peak KV, fragmentation, done)\n"
          "  --json       one JSON document: every run's attributes, params, flat config, summary with\n"
          "               units, table sizes (with --brief: differing config keys and headline metrics)\n",
          out);
}

typedef struct pctx {
    const char *indent;
    int skip_units;
    int count;
    dkv_h5_run *run;    /* to look up units.<key> beside the value */
    const char *obj;
} pctx;

static void print_unit(const pctx *c, const char *key)
{
    char ukey[300], *u = NULL;
    snprintf(ukey, sizeof ukey, "units.%s", key);
    if (c->run && dkv_h5_attr_get_str(c->run, c->obj, ukey, &u, NULL) == DKV_OK && u && *u)
        printf(" %s", u);
    free(u);
}

static int print_attr(const dkv_h5_attr *a, void *ud)
{
    pctx *c = ud;
    if (c->skip_units && strncmp(a->key, "units.", 6) == 0)
        return 0;
    printf("%s%-28s ", c->indent, a->key);
    switch (a->kind) {
    case DKV_H5_ATTR_STR:
        if (strchr(a->s, '\n') || strlen(a->s) > 100)
            printf("\"%.60s...\" (%zu chars)\n", a->s, strlen(a->s));
        else
            printf("\"%s\"\n", a->s);
        break;
    case DKV_H5_ATTR_I64:
        printf("%" PRId64, a->i);
        print_unit(c, a->key);
        printf("\n");
        break;
    case DKV_H5_ATTR_F64:
        printf("%.6g", a->f);
        print_unit(c, a->key);
        printf("\n");
        break;
    case DKV_H5_ATTR_F64V:
        printf("[");
        for (size_t i = 0; i < a->n && i < 8; i++)
            printf("%s%.6g", i ? ", " : "", a->v[i]);
        printf("%s] (%zu values)\n", a->n > 8 ? ", ..." : "", a->n);
        break;
    }
    c->count++;
    return 0;
}

static void print_run(dkv_h5_run *run, int show_script)
{
    dkv_err err = {0};
    char *status = NULL, *start = NULL, *end = NULL, *host = NULL, *commit = NULL, *script = NULL, *path = NULL;
    int64_t seed = 0;
    dkv_h5_attr_get_str(run, NULL, "status", &status, NULL);
    dkv_h5_attr_get_str(run, NULL, "start_time", &start, NULL);
    dkv_h5_attr_get_str(run, NULL, "end_time", &end, NULL);
    dkv_h5_attr_get_str(run, NULL, "host", &host, NULL);
    dkv_h5_attr_get_str(run, NULL, "git_commit", &commit, NULL);
    dkv_h5_attr_get_str(run, NULL, "script_path", &path, NULL);
    dkv_h5_attr_get_str(run, NULL, "script", &script, NULL);
    dkv_h5_attr_get_i64(run, NULL, "seed", &seed, NULL);
    printf("\nrun %s  [%s]\n", dkv_h5_run_name(run), status ? status : "?");
    printf("  %s .. %s  host %s  git %s  seed %" PRId64 "  script %s\n", start ? start : "?", end ? end : "?",
           host ? host : "?", commit ? commit : "?", seed, path ? path : "?");
    char *backend = NULL, *device = NULL, *driver = NULL;
    if (dkv_h5_attr_get_str(run, NULL, "backend", &backend, NULL) == DKV_OK) {
        dkv_h5_attr_get_str(run, NULL, "device", &device, NULL);
        dkv_h5_attr_get_str(run, NULL, "driver", &driver, NULL);
        printf("  backend %s%s%s%s%s\n", backend, device && *device ? "  device " : "", device ? device : "",
               driver && *driver ? "  " : "", driver ? driver : "");
    }
    free(backend);
    free(device);
    free(driver);
    pctx c = {"    ", 1, 0, run, "params"};
    printf("  params:\n");
    if (dkv_h5_attr_foreach(run, "params", print_attr, &c, &err) != DKV_OK || c.count == 0)
        printf("    (none)\n");
    c.count = 0;
    c.obj = "summary";
    printf("  summary:\n");
    if (dkv_h5_attr_foreach(run, "summary", print_attr, &c, &err) != DKV_OK || c.count == 0)
        printf("    (none)\n");
    size_t nt = dkv_h5_table_count(run);
    for (size_t i = 0; i < nt; i++) {
        dkv_h5_table *t;
        const char *tn = dkv_h5_table_name_at(run, i);
        if (dkv_h5_table_open(run, tn, &t, &err) != DKV_OK) {
            printf("  table %s: unreadable (%s)\n", tn, err.msg);
            continue;
        }
        printf("  table %s: %" PRIu64 " records\n", tn, dkv_h5_table_nrecords(t));
        for (size_t k = 0; k < dkv_h5_table_nfields(t); k++) {
            dkv_h5_field f;
            dkv_h5_table_field(t, k, &f, NULL);
            printf("    %-24s %-5s %-10s %s\n", f.name, dkv_h5_type_name(f.type), f.unit && *f.unit ? f.unit : "-",
                   f.doc ? f.doc : "");
        }
        dkv_h5_table_close(t);
    }
    if (show_script && script)
        printf("  script:\n%s\n", script);
    free(status);
    free(start);
    free(end);
    free(host);
    free(commit);
    free(script);
    free(path);
}

int dkv_cmd_info(int argc, char **argv)
{
    const char *file = NULL, *only = NULL;
    int show_script = 0, brief = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            info_usage(stdout);
            return DKV_EXIT_OK;
        } else if (strcmp(argv[i], "--run") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--script") == 0) {
            show_script = 1;
        } else if (strcmp(argv[i], "--brief") == 0) {
            brief = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "dkv info: unknown option '%s' (try dkv info --help)\n", argv[i]);
            return DKV_EXIT_USAGE;
        } else if (!file) {
            file = argv[i];
        } else {
            fprintf(stderr, "dkv info: one file at a time ('%s')\n", argv[i]);
            return DKV_EXIT_USAGE;
        }
    }
    if (!file) {
        info_usage(stderr);
        return DKV_EXIT_USAGE;
    }
    if (show_script && (brief || json)) {
        fprintf(stderr, "dkv info: --script prints the full listing; it does not go with --brief or --json\n");
        return DKV_EXIT_USAGE;
    }
    if (brief || json)
        return dkv_info_brief(file, only, json, brief);
    dkv_err err = {0};
    dkv_h5 *f;
    if (dkv_h5_open_read(file, &f, &err) != DKV_OK) {
        fprintf(stderr, "dkv info: %s\n", err.msg);
        return DKV_EXIT_ERROR;
    }
    size_t n = dkv_h5_run_count(f);
    printf("%s: %zu run%s\n", file, n, n == 1 ? "" : "s");
    int rc = DKV_EXIT_OK, found = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = dkv_h5_run_name_at(f, i);
        if (only && strcmp(only, name) != 0)
            continue;
        found = 1;
        dkv_h5_run *run;
        if (dkv_h5_run_open(f, name, &run, &err) != DKV_OK) {
            fprintf(stderr, "dkv info: %s\n", err.msg);
            rc = DKV_EXIT_ERROR;
            continue;
        }
        print_run(run, show_script);
        dkv_h5_run_free(run);
    }
    if (only && !found) {
        fprintf(stderr, "dkv info: %s has no run '%s'\n", file, only);
        rc = DKV_EXIT_ERROR;
    }
    dkv_h5_close(f, NULL);
    return rc;
}
