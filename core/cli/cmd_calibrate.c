/* cmd_calibrate.c - `dkv calibrate MEASURED.h5... [--bwcurve FILE] -o PRESET.lua`: fits a GPU
 * preset's launch overhead, bandwidth curve, GEMM efficiency and PCIe rates to measured runs
 * (analysis/calib.h; docs/COMPARE.md "Calibration"). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "dkv_commit.h"
#include "analysis/calib.h"
#include "analysis/compare.h"
#include "io/h5.h"

#define MAX_ARGS 256

static void help(void)
{
    puts("usage: dkv calibrate MEASURED.h5 ... [--run NAME ...] [--bwcurve FILE ...] [--sim SIM.h5 ...]\n"
         "                     [-o PRESET.lua] [--name NAME]\n"
         "\n"
         "Fits the base GPU preset's launch overhead, bandwidth curve (by access-run length), GEMM efficiency by\n"
         "shape and pinned PCIe rates to measured runs: dkv.execute results saved with record.kernels = true,\n"
         "and the output of cuda/bench/bwcurve.cu for the curve.  A measured run NAME:real paired with the\n"
         "simulated run NAME:sim of the same plan in a --sim file (the first that has it) also fits\n"
         "each kernel class's time = scale * roofline + launch_s * launches (the preset's kclass table).\n"
         "Prints the fits; with -o writes a preset file `base = \"<gpu of the runs>\"` with the fitted\n"
         "fields only, and its provenance (date, command, inputs with workload fingerprints, every raw\n"
         "number) in comments.  Nothing is written when nothing could be fitted.\n"
         "Validate the preset on other workloads: dkv compare --calibration PRESET.lua.\n"
         "\n"
         "  --run NAME      use only runs of this name (repeatable; default: every run but compare:* ones)\n"
         "  --bwcurve FILE  the text cuda/bench/bwcurve.cu printed (lines 'run <bytes> <GB/s>')\n"
         "  --sim SIM.h5    simulated runs NAME:sim to pair with the measured NAME:real (repeatable; simulate\n"
         "                  them under an uncalibrated preset, with record = {kernels = true})\n"
         "  -o PRESET.lua   write the preset (e.g. datasets/presets/gpu/h200-calibrated.lua)\n"
         "  --name NAME     the preset's name (default: PRESET's file name without .lua)\n"
         "exit status: 0 fitted (and written), 1 error or nothing to fit, 2 usage error");
}

static bool selected(const char *run, const char *const *runs, int nruns)
{
    if (nruns == 0)
        return strncmp(run, "compare:", 8) != 0;
    for (int i = 0; i < nruns; i++)
        if (strcmp(run, runs[i]) == 0)
            return true;
    return false;
}

static void print_result(const dkv_calib_result *r)
{
    printf("base %s: hbm_bw %.6g B/s, flops_bf16 %.6g FLOP/s\n", r->base, r->hbm_bw, r->flops_bf16);
    if (r->launch_ok)
        printf("launch_overhead_s  %.4g s (%zu records, rms relative residual %.1f%%; streaming %.4g B/s = %.3f of "
               "hbm_bw)\n", r->launch_overhead_s, r->launch_n, 100 * r->launch_rms_rel, r->stream_bw,
               r->stream_bw / r->hbm_bw);
    else
        printf("launch_overhead_s  not fitted: %s\n", r->launch_why);
    if (r->bw_ok) {
        printf("bw_curve           %zu points from %zu:", r->n_curve, r->bw_n_raw);
        for (size_t i = 0; i < r->n_curve; i++)
            printf(" %.6g:%.3f", r->curve_run[i], r->curve_eff[i]);
        putchar('\n');
    } else
        printf("bw_curve           not fitted: %s\n", r->bw_why);
    if (r->gemm_ok)
        printf("gemm_eff           %.4f (cfg.sim.gemm_eff; %zu GEMM records, %zu shapes)\n", r->gemm_eff, r->gemm_n,
               r->n_shapes);
    else
        printf("gemm_eff           not fitted: %s\n", r->gemm_why);
    for (size_t i = 0; i < r->n_shapes; i++) {
        const dkv_calib_shape *s = &r->shapes[i];
        printf("  %-8s M [%6.0f, %6.0f) %-7s n %5zu  median %.4f  min %.4f  max %.4f\n", dkv_cmp_class_name(s->kind),
               s->m_lo, s->m_hi, s->compute_bound ? "compute" : "memory", s->n, s->eff_median, s->eff_min, s->eff_max);
    }
    if (r->h2d_ok)
        printf("pcie_h2d_pinned    %.4g B/s (%zu steps, latency %.3g s)\n", r->pcie_h2d, r->h2d_n, r->h2d_latency_s);
    if (r->d2h_ok)
        printf("pcie_d2h_pinned    %.4g B/s (%zu steps, latency %.3g s)\n", r->pcie_d2h, r->d2h_n, r->d2h_latency_s);
    if (r->bidir_ok)
        printf("pcie_bidir_pinned  %.4g B/s (%zu steps)\n", r->pcie_bidir, r->bidir_n);
    if (r->pcie_why[0])
        printf("pcie               %s\n", r->pcie_why);
    if (!r->n_paired)
        printf("kclass             not fitted: no measured NAME:real run paired with a simulated NAME:sim\n");
    else
        printf("kclass             %zu records paired with simulated runs: time = scale * roofline + launch_s * "
               "launches\n", r->n_paired);
    for (uint32_t i = 0; r->n_paired && i < DKV_CALIB_MAX_KCLASS; i++) {
        if (r->kclass_ok[i])
            printf("  %-12s scale %7.4f  launch_s %9.4g s  n %5zu  rms relative residual %5.1f%%%s\n",
                   dkv_cmp_class_name(i), r->kclass_scale[i], r->kclass_launch_s[i], r->kclass_n[i],
                   100 * r->kclass_rms_rel[i], r->kclass_unpaired[i] ? "  (some steps unpaired)" : "");
        else if (r->kclass_why[i][0])
            printf("  %-12s not fitted: %s\n", dkv_cmp_class_name(i), r->kclass_why[i]);
    }
}

/* The simulated twin of a measured run NAME:real: NAME:sim in the --sim files (the first that has it).
 * Returns DKV_OK when paired or when there is nothing to pair. */
static dkv_status pair(dkv_calib *c, const char *run, dkv_h5 **sims, int ns, size_t *n_paired, dkv_err *err)
{
    size_t len = strlen(run);
    if (len < 5 || strcmp(run + len - 5, ":real") != 0)
        return DKV_OK;
    char twin[512];
    snprintf(twin, sizeof twin, "%.*s:sim", (int)(len - 5), run);
    for (int i = 0; i < ns; i++) {
        dkv_h5 *f = sims[i];
        for (size_t k = 0; k < dkv_h5_run_count(f); k++)
            if (strcmp(dkv_h5_run_name_at(f, k), twin) == 0) {
                (*n_paired)++;
                return dkv_calib_pair_sim(c, f, twin, err);
            }
    }
    return DKV_OK;
}

/* The measured runs of files (those --run selects) into c, each paired with its simulated twin
 * in the --sim files when there is one.  An exit code; messages printed. */
static int add_runs(dkv_calib *c, const char *const *files, int nf, const char *const *runs, int nr,
                    const char *const *simf, int nsf, size_t *used, size_t *n_paired, dkv_err *errp)
{
    dkv_err err = {0};
    int rc = DKV_EXIT_OK;
    dkv_h5 *sims[MAX_ARGS];
    int ns = 0;
    for (int i = 0; i < nsf && rc == DKV_EXIT_OK; i++) {
        if (dkv_h5_open_read(simf[i], &sims[ns], &err) != DKV_OK) {
            fprintf(stderr, "dkv calibrate: --sim %s\n", err.msg);
            rc = DKV_EXIT_ERROR;
        } else
            ns++;
    }
    for (int i = 0; i < nf && rc == DKV_EXIT_OK; i++) {
        dkv_h5 *f;
        if (dkv_h5_open_read(files[i], &f, &err) != DKV_OK) {
            fprintf(stderr, "dkv calibrate: %s\n", err.msg);
            rc = DKV_EXIT_ERROR;
            break;
        }
        for (size_t k = 0; k < dkv_h5_run_count(f) && rc == DKV_EXIT_OK; k++) {
            const char *run = dkv_h5_run_name_at(f, k);
            if (!selected(run, runs, nr))
                continue;
            if (dkv_calib_add_run(c, f, run, &err) != DKV_OK || pair(c, run, sims, ns, n_paired, &err) != DKV_OK) {
                fprintf(stderr, "dkv calibrate: %s\n", err.msg);
                rc = DKV_EXIT_ERROR;
            }
            (*used)++;
        }
        dkv_h5_close(f, NULL);
    }
    for (int i = 0; i < ns; i++)
        dkv_h5_close(sims[i], NULL);
    *errp = err;
    return rc;
}

int dkv_cmd_calibrate(int argc, char **argv)
{
    const char *files[MAX_ARGS], *runs[MAX_ARGS], *bw[MAX_ARGS], *simf[MAX_ARGS], *out = NULL, *name = NULL;
    int nf = 0, nr = 0, nb = 0, nsf = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help();
            return DKV_EXIT_OK;
        }
        bool opt = strcmp(a, "--run") == 0 || strcmp(a, "--bwcurve") == 0 || strcmp(a, "-o") == 0 ||
                   strcmp(a, "--name") == 0 || strcmp(a, "--sim") == 0;
        if (opt) {
            if (i + 1 >= argc) {
                fprintf(stderr, "dkv calibrate: %s needs a value\n", a);
                return DKV_EXIT_USAGE;
            }
            const char *v = argv[++i];
            if (strcmp(a, "-o") == 0)
                out = v;
            else if (strcmp(a, "--name") == 0)
                name = v;
            else if (strcmp(a, "--sim") == 0) {
                if (nsf >= MAX_ARGS) {
                    fprintf(stderr, "dkv calibrate: too many --sim options\n");
                    return DKV_EXIT_USAGE;
                }
                simf[nsf++] = v;
            } else if ((a[2] == 'r' ? nr : nb) >= MAX_ARGS) {
                fprintf(stderr, "dkv calibrate: too many %s options\n", a);
                return DKV_EXIT_USAGE;
            } else if (a[2] == 'r')
                runs[nr++] = v;
            else
                bw[nb++] = v;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dkv calibrate: unknown option '%s' (try dkv calibrate --help)\n", a);
            return DKV_EXIT_USAGE;
        } else if (nf < MAX_ARGS) {
            files[nf++] = a;
        }
    }
    if (nf == 0 && nb == 0) {
        fprintf(stderr, "usage: dkv calibrate MEASURED.h5 ... [--bwcurve FILE] [-o PRESET.lua] (try --help)\n");
        return DKV_EXIT_USAGE;
    }
    char pname[128];
    if (out && !name) {
        const char *b = strrchr(out, '/');
        b = b ? b + 1 : out;
        size_t n = strlen(b);
        if (n > 4 && strcmp(b + n - 4, ".lua") == 0)
            n -= 4;
        snprintf(pname, sizeof pname, "%.*s", (int)n, b);
        name = pname;
    }
    dkv_err err = {0};
    dkv_calib *c;
    if (dkv_calib_new(&c, &err) != DKV_OK) {
        fprintf(stderr, "dkv calibrate: %s\n", err.msg);
        return DKV_EXIT_ERROR;
    }
    int rc = DKV_EXIT_OK;
    size_t used = 0, n_paired = 0;
    rc = add_runs(c, files, nf, runs, nr, simf, nsf, &used, &n_paired, &err);
    for (int i = 0; i < nb && rc == DKV_EXIT_OK; i++)
        if (dkv_calib_add_bwcurve(c, bw[i], &err) != DKV_OK) {
            fprintf(stderr, "dkv calibrate: %s\n", err.msg);
            rc = DKV_EXIT_ERROR;
        }
    if (rc == DKV_EXIT_OK && nf && !used) {
        fprintf(stderr, "dkv calibrate: no run selected in the given files%s\n", nr ? " (check --run)" : "");
        rc = DKV_EXIT_ERROR;
    }
    dkv_calib_result res;
    if (rc == DKV_EXIT_OK && dkv_calib_fit(c, &res, &err) != DKV_OK) {
        fprintf(stderr, "dkv calibrate: %s\n", err.msg);
        rc = DKV_EXIT_ERROR;
    }
    if (rc == DKV_EXIT_OK) {
        printf("%zu run(s) (%zu paired with a simulated run), %d bandwidth file(s)\n", used, n_paired, nb);
        print_result(&res);
    }
    if (rc == DKV_EXIT_OK && out) {
        char command[2048];
        size_t cl = 0;
        command[0] = '\0';
        for (int i = 0; i < argc && cl + 2 < sizeof command; i++)
            cl += (size_t)snprintf(command + cl, sizeof command - cl, "%s%s", i ? " " : "dkv ", argv[i]);
        if (dkv_calib_write_preset(c, &res, out, name, command, DKV_GIT_COMMIT, &err) != DKV_OK) {
            fprintf(stderr, "dkv calibrate: %s\n", err.msg);
            rc = DKV_EXIT_ERROR;
        } else
            printf("wrote %s (preset '%s', base '%s')\n", out, name, res.base);
    }
    dkv_calib_free(c);
    return rc;
}
