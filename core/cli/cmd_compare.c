/* cmd_compare.c - `dkv compare REAL.h5 SIM.h5`: a hardware run against a simulated run of the same
 * script (analysis/compare.h; docs/COMPARE.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "analysis/compare.h"
#include "lua/dkv_lua.h"
#include "io/h5.h"

#define MAX_TOL 64
#define MAX_PAIRS 256

static void help(void)
{
    puts("usage: dkv compare REAL.h5 SIM.h5 [--run NAME | --real-run NAME --sim-run NAME]\n"
         "                   [--tolerance QUANTITY[:STAT]=LIMIT ...] [-o OUT.h5] [--calibration PRESET.lua]\n"
         "\n"
         "Pairs a hardware run (dkv.execute, saved with dkv.save) with a simulated run (dkv.simulate) of the\n"
         "same script and configuration, step by step (steps.index) and in summary, and prints per quantity\n"
         "the relative error (sim - real) / real: of the totals, median / mean / max of |error| over the\n"
         "steps, and the signed bias.  Fragmentations and block_reuse_rate get absolute errors (pp).\n"
         "\n"
         "  --run NAME           the run of both files (default: every run name the two files share; or the\n"
         "                       only run of each file)\n"
         "  --real-run, --sim-run  runs of different names\n"
         "  --tolerance Q=LIMIT  fail (exit 1) when the error of quantity Q exceeds LIMIT (0.08 or 8%);\n"
         "                       Q may use '*' (ncu.*.bytes); STAT is mean (default), median, max, bias, total\n"
         "  -o OUT.h5            write each comparison as run compare:<name> of OUT.h5 (a new file, or an\n"
         "                       HDF5 file it replaces; any other file there is refused)\n"
         "  --calibration P.lua  fail (exit 1) when REAL's workload was used to fit preset P (validation must\n"
         "                       use other workloads)\n"
         "\n"
         "quantities: step.time_s, step.compute_s, step.pcie_s, step.hbm_{read,write}_bytes, step.hbm_bytes,\n"
         "step.pcie_{h2d,d2h}_bytes, step.pcie_bytes; kclass.<class>.{time_s,bytes} (both runs with\n"
         "record.kernels); run.<summary key> (throughput, latency, traffic, peak_*_bytes, *frag*);\n"
         "ncu.<class>.{read_bytes,write_bytes,bytes,time_s} (REAL imported with dkv ncu-import).\n"
         "exit status: 0 within tolerances, 1 a tolerance exceeded or an error, 2 usage error");
}

static void pct(char *buf, size_t n, double v, dkv_cmp_kind k, bool sign)
{
    if (isnan(v))
        snprintf(buf, n, "%s", "-");
    else if (k == DKV_CMP_ABSOLUTE)
        snprintf(buf, n, sign ? "%+.2fpp" : "%.2fpp", 100 * v);
    else
        snprintf(buf, n, sign ? "%+.2f%%" : "%.2f%%", 100 * v);
}

typedef struct step_err {
    uint64_t index;
    double real, sim, err;
} step_err;

static int by_abs_err(const void *a, const void *b)
{
    double x = fabs(((const step_err *)a)->err), y = fabs(((const step_err *)b)->err);
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The paired steps with the largest step-latency errors: where a mean error comes from (one cold
 * step, or every step). */
static void print_worst_steps(const dkv_cmp *c)
{
    size_t n = 0, m = 0;
    const dkv_cmp_step *st = dkv_cmp_steps(c, &n);
    step_err *e = n ? malloc(n * sizeof *e) : NULL;
    if (!e)
        return;
    for (size_t i = 0; i < n; i++)
        if (st[i].same_plan && st[i].real_time_s > 0)
            e[m++] = (step_err){st[i].index, st[i].real_time_s, st[i].sim_time_s,
                                (st[i].sim_time_s - st[i].real_time_s) / st[i].real_time_s};
    if (m >= 2) {
        qsort(e, m, sizeof *e, by_abs_err);
        printf("largest step.time_s errors:");
        for (size_t i = 0; i < m && i < 3; i++)
            printf("%s step %llu real %.4g s sim %.4g s %+.1f%%", i ? ";" : "", (unsigned long long)e[i].index,
                   e[i].real, e[i].sim, 100 * e[i].err);
        putchar('\n');
    }
    free(e);
}

static void print_cmp(const dkv_cmp *c)
{
    const dkv_cmp_info *in = dkv_cmp_get_info(c);
    printf("REAL %s run '%s'  vs  SIM %s run '%s'\n", in->real_file, in->real_run, in->sim_file, in->sim_run);
    printf("workload %016llx%s; config: %zu difference(s) that matter, %zu ignored (gpu, sim, record, cost)\n",
           (unsigned long long)in->real_workload_fp,
           in->real_workload_fp == in->sim_workload_fp ? " (same in both)" : " (SIM differs!)", in->n_diffs_matter,
           dkv_cmp_diff_count(c) - in->n_diffs_matter);
    size_t shown = 0;
    for (size_t i = 0; i < dkv_cmp_diff_count(c); i++) {
        const dkv_cmp_diff *d = dkv_cmp_diff_at(c, i);
        if (d->matters && shown++ < 20)
            printf("  differs: %s: %s (real) vs %s (sim)\n", d->key, d->real, d->sim);
    }
    if (shown > 20)
        printf("  ... and %zu more\n", shown - 20);
    printf("steps: real %llu, sim %llu, paired %llu, different plans %llu (not compared)\n",
           (unsigned long long)in->steps_real, (unsigned long long)in->steps_sim,
           (unsigned long long)in->steps_paired, (unsigned long long)in->steps_plan_mismatch);
    printf("%-29s %-10s %6s %11s %11s %9s %9s %9s %9s %9s\n", "quantity", "unit", "n", "real", "sim", "total",
           "median", "mean", "max", "bias");
    for (size_t i = 0; i < dkv_cmp_count(c); i++) {
        const dkv_cmp_quantity *q = dkv_cmp_at(c, i);
        char t[16], md[16], mn[16], mx[16], b[16];
        pct(t, sizeof t, q->total_err, q->kind, true);
        pct(md, sizeof md, q->median_abs, q->kind, false);
        pct(mn, sizeof mn, q->mean_abs, q->kind, false);
        pct(mx, sizeof mx, q->max_abs, q->kind, false);
        pct(b, sizeof b, q->bias, q->kind, true);
        printf("%-29s %-10s %6llu %11.4g %11.4g %9s %9s %9s %9s %9s%s\n", q->name, q->unit, (unsigned long long)q->n,
               q->real, q->sim, t, md, mn, mx, b, q->n_undefined ? " (+undefined pairs)" : "");
    }
    print_worst_steps(c);
    if (in->real_has_ncu && !in->has_ncu)
        puts("note: REAL has ncu_classes but SIM has no kernels table: no ncu.* comparison (record.kernels = true)");
    else if (!in->has_ncu)
        puts("note: REAL has no ncu_classes table: HBM bytes of a dkv.execute run are the cost model's counts, not "
             "measurements (import Nsight Compute figures with dkv ncu-import)");
    if (!in->has_kernels)
        puts("note: no per-class comparison (both runs need record.kernels = true)");
}

/* The calibration preset must be one `dkv calibrate` wrote: a GPU preset file that loads and
 * passes the preset checks, with its "Fitting inputs" provenance (the workload fingerprints). */
static int validate_calibration(const char *preset)
{
    char root[4096];
    dkv_cli_find_root(root, sizeof root);
    dkv_lua_config cfg = dkv_lua_config_default();
    cfg.root = root;
    dkv_lua *s = NULL;
    dkv_err err = {0};
    if (dkv_lua_new(&cfg, &s, &err) != DKV_OK || dkv_lua_check_gpu_file(s, preset, NULL, &err) != DKV_OK) {
        fprintf(stderr, "dkv compare: --calibration: %s\n", err.msg);
        dkv_lua_close(s, NULL);
        return DKV_EXIT_ERROR;
    }
    dkv_lua_close(s, NULL);
    FILE *fp = fopen(preset, "rb");
    char line[1024];
    int inputs = 0, section = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        section |= strncmp(line, "-- Fitting inputs.", 18) == 0;
        inputs += section && strncmp(line, "--   input ", 11) == 0;
    }
    if (fp)
        fclose(fp);
    if (!section || inputs == 0) {
        fprintf(stderr, "dkv compare: --calibration: %s is a GPU preset but %s: not a preset written by dkv "
                        "calibrate, so its fitting workloads cannot be checked\n",
                preset, !section ? "has no '-- Fitting inputs.' section" : "lists no fitting input");
        return DKV_EXIT_ERROR;
    }
    return DKV_EXIT_OK;
}

/* Fails when REAL's workload fingerprint appears in the calibration preset's provenance. */
static int check_calibration(const char *preset, const dkv_cmp *c)
{
    FILE *fp = fopen(preset, "rb");
    if (!fp) {
        fprintf(stderr, "dkv compare: cannot open %s\n", preset);
        return DKV_EXIT_ERROR;
    }
    char line[1024], fp_hex[20];
    snprintf(fp_hex, sizeof fp_hex, "%016llx", (unsigned long long)dkv_cmp_get_info(c)->real_workload_fp);
    int lineno = 0, rc = DKV_EXIT_OK;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        if (strstr(line, fp_hex)) {
            fprintf(stderr, "dkv compare: %s:%d: workload %s of run '%s' was used to fit this preset: validate on "
                    "workloads not used for calibration\n", preset, lineno, fp_hex, dkv_cmp_get_info(c)->real_run);
            rc = DKV_EXIT_ERROR;
            break;
        }
    }
    fclose(fp);
    return rc;
}

static int pair_runs(dkv_h5 *a, dkv_h5 *b, const char *run, const char *rrun, const char *srun, const char **ra,
                     const char **sb, size_t *n)
{
    *n = 0;
    if (run || rrun || srun) {
        ra[0] = rrun ? rrun : run;
        sb[0] = srun ? srun : run;
        if (!ra[0] || !sb[0]) {
            fprintf(stderr, "dkv compare: --real-run and --sim-run go together (or use --run)\n");
            return DKV_EXIT_USAGE;
        }
        *n = 1;
        return DKV_EXIT_OK;
    }
    for (size_t i = 0; i < dkv_h5_run_count(a) && *n < MAX_PAIRS; i++) {
        const char *x = dkv_h5_run_name_at(a, i);
        for (size_t j = 0; j < dkv_h5_run_count(b); j++)
            if (strcmp(x, dkv_h5_run_name_at(b, j)) == 0 && strncmp(x, "compare:", 8) != 0) {
                ra[*n] = sb[*n] = x;
                (*n)++;
            }
    }
    if (*n == 0 && dkv_h5_run_count(a) == 1 && dkv_h5_run_count(b) == 1) {
        ra[0] = dkv_h5_run_name_at(a, 0);
        sb[0] = dkv_h5_run_name_at(b, 0);
        *n = 1;
    }
    if (*n == 0) {
        fprintf(stderr, "dkv compare: the files share no run name; name the runs with --run or --real-run/--sim-run "
                "(dkv info FILE lists them)\n");
        return DKV_EXIT_USAGE;
    }
    return DKV_EXIT_OK;
}

/* "dkv compare ARGS..." for the provenance of the written runs. */
static void command_line(int argc, char **argv, char *command, size_t size)
{
    size_t cl = 0;
    command[0] = '\0';
    for (int i = 0; i < argc && cl + 2 < size; i++)
        cl += (size_t)snprintf(command + cl, size - cl, "%s%s", i ? " " : "dkv ", argv[i]);
}

/* The tolerances against one comparison: each one exceeded printed (the first 32), *nv counts
 * them; a status other than DKV_OK when the tolerances cannot be checked (message printed). */
static dkv_status check_tolerances(const dkv_cmp *c, const char *run, const dkv_cmp_tol *tols, size_t ntol,
                                   size_t *nv_out)
{
    dkv_cmp_violation v[32];
    size_t nv = 0;
    dkv_err err = {0};
    dkv_status st = dkv_cmp_check(c, tols, ntol, v, 32, &nv, &err);
    if (st != DKV_OK)
        fprintf(stderr, "dkv compare: %s\n", err.msg);
    for (size_t i = 0; i < nv && i < 32; i++) {
        char val[16], lim[16];
        pct(val, sizeof val, v[i].value, v[i].q->kind, false);
        pct(lim, sizeof lim, v[i].limit, v[i].q->kind, false);
        fprintf(stderr, "dkv compare: tolerance exceeded (%s): %s %s error %s > limit %s\n", run, v[i].q->name,
                dkv_cmp_stat_name(v[i].stat), val, lim);
    }
    if (nv > 32)
        fprintf(stderr, "dkv compare: ... %zu tolerances exceeded in all\n", nv);
    *nv_out = nv;
    return st;
}

/* -o: not an input, and nothing there that is not a results file (a folder, notes: refused, never replaced). */
static bool output_ok(const char *out, const char *const files[2])
{
    dkv_err err = {0};
    if (strcmp(out, files[0]) == 0 || strcmp(out, files[1]) == 0) {
        fprintf(stderr, "dkv compare: -o %s is an input file; write the comparison to a new file\n", out);
        return false;
    }
    if (dkv_h5_output_ok(out, &err) != DKV_OK) {
        fprintf(stderr, "dkv compare: -o %s\n", err.msg);
        return false;
    }
    return true;
}

int dkv_cmd_compare(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *run = NULL, *rrun = NULL, *srun = NULL, *out = NULL, *calib = NULL;
    dkv_cmp_tol tols[MAX_TOL];
    size_t ntol = 0, nfiles = 0;
    dkv_err err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help();
            return DKV_EXIT_OK;
        } else if ((strcmp(a, "--run") == 0 || strcmp(a, "--real-run") == 0 || strcmp(a, "--sim-run") == 0 ||
                    strcmp(a, "-o") == 0 || strcmp(a, "--calibration") == 0 || strcmp(a, "--tolerance") == 0)) {
            if (!has_val) {
                fprintf(stderr, "dkv compare: %s needs a value (try dkv compare --help)\n", a);
                return DKV_EXIT_USAGE;
            }
            const char *v = argv[++i];
            if (strcmp(a, "--run") == 0)
                run = v;
            else if (strcmp(a, "--real-run") == 0)
                rrun = v;
            else if (strcmp(a, "--sim-run") == 0)
                srun = v;
            else if (strcmp(a, "-o") == 0)
                out = v;
            else if (strcmp(a, "--calibration") == 0)
                calib = v;
            else {
                if (ntol == MAX_TOL) {
                    fprintf(stderr, "dkv compare: at most %d --tolerance options\n", MAX_TOL);
                    return DKV_EXIT_USAGE;
                }
                if (dkv_cmp_tol_parse(v, &tols[ntol++], &err) != DKV_OK) {
                    fprintf(stderr, "dkv compare: %s\n", err.msg);
                    return DKV_EXIT_USAGE;
                }
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dkv compare: unknown option '%s' (try dkv compare --help)\n", a);
            return DKV_EXIT_USAGE;
        } else if (nfiles < 2) {
            files[nfiles++] = a;
        } else {
            fprintf(stderr, "dkv compare: too many files ('%s'): give REAL.h5 and SIM.h5\n", a);
            return DKV_EXIT_USAGE;
        }
    }
    if (nfiles != 2) {
        fprintf(stderr, "usage: dkv compare REAL.h5 SIM.h5 [--run NAME] [--tolerance Q=LIMIT ...] [-o OUT.h5]\n");
        return DKV_EXIT_USAGE;
    }
    if (calib && validate_calibration(calib) != DKV_EXIT_OK) {   /* before any work */
        return DKV_EXIT_ERROR;
    }
    if (out && !output_ok(out, files))
        return DKV_EXIT_USAGE;
    char command[2048];
    command_line(argc, argv, command, sizeof command);
    dkv_h5 *fr = NULL, *fs = NULL, *fo = NULL;
    int rc = DKV_EXIT_OK;
    if (dkv_h5_open_read(files[0], &fr, &err) != DKV_OK || dkv_h5_open_read(files[1], &fs, &err) != DKV_OK) {
        fprintf(stderr, "dkv compare: %s\n", err.msg);
        dkv_h5_close(fr, NULL);
        return DKV_EXIT_ERROR;
    }
    const char *ra[MAX_PAIRS], *sb[MAX_PAIRS];
    size_t npairs;
    rc = pair_runs(fr, fs, run, rrun, srun, ra, sb, &npairs);
    if (rc == DKV_EXIT_OK && out && dkv_h5_create(out, &fo, &err) != DKV_OK) {
        fprintf(stderr, "dkv compare: %s\n", err.msg);
        rc = DKV_EXIT_ERROR;
    }
    size_t exceeded = 0;
    for (size_t p = 0; p < npairs && rc == DKV_EXIT_OK; p++) {
        dkv_cmp *c = NULL;
        if (dkv_cmp_runs(fr, ra[p], fs, sb[p], &c, &err) != DKV_OK) {
            fprintf(stderr, "dkv compare: %s\n", err.msg);
            rc = DKV_EXIT_ERROR;
            break;
        }
        if (p)
            putchar('\n');
        print_cmp(c);
        size_t nv = 0;
        if (check_tolerances(c, ra[p], tols, ntol, &nv) != DKV_OK)
            rc = DKV_EXIT_USAGE;
        exceeded += nv;
        if (rc == DKV_EXIT_OK && calib)
            rc = check_calibration(calib, c);
        if (rc == DKV_EXIT_OK && fo) {
            char name[256];
            snprintf(name, sizeof name, "compare:%s", ra[p]);
            if (dkv_cmp_write(c, fo, name, tols, ntol, command, &err) != DKV_OK) {
                fprintf(stderr, "dkv compare: %s\n", err.msg);
                rc = DKV_EXIT_ERROR;
            }
        }
        dkv_cmp_free(c);
    }
    if (fo) {
        if (rc == DKV_EXIT_OK && dkv_h5_close(fo, &err) != DKV_OK) {
            fprintf(stderr, "dkv compare: %s\n", err.msg);
            rc = DKV_EXIT_ERROR;
        } else if (rc != DKV_EXIT_OK)
            dkv_h5_discard(fo);
        else
            printf("wrote %s\n", out);
    }
    dkv_h5_close(fr, NULL);
    dkv_h5_close(fs, NULL);
    if (rc == DKV_EXIT_OK && exceeded)
        rc = DKV_EXIT_ERROR;
    return rc;
}
