/* profile_write.c - dkv profile's driver and its writer of the profile file (docs/PROFILE_FORMAT.md).
 * Only in builds with the CUDA backend (cuda/profile.h). */
#ifdef DKV_HAVE_CUDA
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dkv_commit.h"
#include "cli/commands.h"
#include "cli/profile_write.h"
#include "cuda/profile.h"

typedef struct wctx {
    const dkv_cli_profile_args *a;
    char  name[160], date[32], tmp[4096];
    int   write_failed;
} wctx;

static void lstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else if ((unsigned char)*s < 32)
            fprintf(f, "\\%03d", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* first_use group: 0 GEMMs (qkv, o, ffn, gemm, lm_head), 1 attention, 2 the rest */
static int group(const char *t)
{
    static const char *const g[] = {"qkv", "o", "ffn", "gemm", "lm_head"};
    for (size_t i = 0; i < 5; i++)
        if (strcmp(t, g[i]) == 0)
            return 0;
    return strcmp(t, "attn") == 0 ? 1 : 2;
}

static void write_first_use(FILE *f, const dkv_prof *p)
{
    static const char *const names[] = {"gemm", "attn", "other"};
    fputs("  -- extra seconds of a shape's first call over a warm call (host clock, synchronised): the median over\n"
          "  -- the group's shapes; _max_s the largest (the very first call of the process carries context set-up)\n"
          "  first_use = {", f);
    for (int g = 0; g < 3; g++) {
        size_t n = 0;
        for (uint32_t i = 0; i < p->n_tables; i++)
            n += group(p->tables[i].name) == g ? p->tables[i].n : 0;
        double *v = malloc((n ? n : 1) * sizeof *v);
        size_t k = 0;
        for (uint32_t i = 0; v && i < p->n_tables; i++)
            for (size_t r = 0; group(p->tables[i].name) == g && r < p->tables[i].n; r++)
                v[k++] = p->tables[i].rows[r].first_s;
        if (v && k) {
            qsort(v, k, sizeof *v, cmp_d);
            fprintf(f, "%s%s_s = %.6g, %s_max_s = %.6g, %s_shapes = %zu", g ? ", " : "", names[g],
                    k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]), names[g], v[k - 1], names[g], k);
        }
        free(v);
    }
    fputs("},\n", f);
}

static void write_table(FILE *f, const dkv_prof_table *t, int mode_copy)
{
    fprintf(f, "    %s = {\n      note = ", t->name);
    lstr(f, t->note);
    fputs(",\n      fields = {", f);
    for (uint32_t i = 0; i < t->n_fields; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", t->fields[i]);
    fputs("},\n      extra = {\"p10_s\", \"p90_s\", \"first_s\"", f);
    for (int i = 0; i < 2 && t->extra[i]; i++)
        fprintf(f, ", \"%s\"", t->extra[i]);
    fputs("},\n      rows = {\n", f);
    for (int m = 0; m <= (mode_copy ? 2 : 0); m++) {
        if (m)
            fprintf(f, "        -- mode %d: the same measurements (the backend runs %s items through this kernel, "
                       "kv_tokens = the kept slots)\n", m, m == 1 ? "sparse shared" : "sparse per-head");
        for (size_t r = 0; r < t->n; r++) {
            const dkv_prof_row *w = &t->rows[r];
            fputs("        {", f);
            for (uint32_t i = 0; i < t->n_fields; i++)
                fprintf(f, "%.10g, ", mode_copy && i == t->n_fields - 1 ? (double)m : w->f[i]);
            fprintf(f, "%.6g, %u, %.6g, %.6g, %.6g", w->median_s, w->launches, w->p10_s, w->p90_s, w->first_s);
            for (int i = 0; i < 2 && t->extra[i]; i++)
                fprintf(f, ", %.6g", w->x[i]);
            fputs("},\n", f);
        }
    }
    fputs("      },\n    },\n", f);
}

static void write_copy(FILE *f, const dkv_prof *p)
{
    fputs("  -- pinned copies on the backend's copy stream (dkv_cuda_fetch h2d, dkv_cuda_offload d2h), each between two\n"
          "  -- events: alone, and while the compute stream runs a loop of the first model's gate|up GEMM (512 rows)\n"
          "  copy = {\n    fields = {\"dir\", \"bytes\"},\n", f);
    for (int c = 0; c < 2; c++) {
        fprintf(f, "    %s = {", c ? "contended" : "alone");
        for (uint32_t i = 0; i < p->n_copy; i++)
            fprintf(f, "%s{%u, %.0f, %.6g}", i ? ", " : "", p->copy[i].dir, p->copy[i].bytes,
                    c ? p->copy[i].contended_s : p->copy[i].alone_s);
        fputs("},\n", f);
    }
    if (p->compute_alone_s > 0)
        fprintf(f, "    load_gemm_alone_s = %.6g,%s", p->compute_alone_s,
                p->compute_beside_s > 0 ? "" : "\n");
    if (p->compute_beside_s > 0)
        fprintf(f, " load_gemm_beside_h2d_s = %.6g,   -- the load's GEMM beside the largest h2d copies\n",
                p->compute_beside_s);
    fputs("  },\n", f);
}

static void write_body(FILE *f, const dkv_prof *p, wctx *w)
{
    const dkv_cli_profile_args *a = w->a;
    fprintf(f, "-- A GPU profile written by `dkv profile` (docs/PROFILE_FORMAT.md, docs/GPU.md \"dkv profile\").\n"
               "-- Seconds per call are event-timed medians over `repeats` warm calls on seeded random data.\n"
               "return {\n  format = 1,\n  name = ");
    lstr(f, w->name);
    fprintf(f, ",\n  complete = %s,\n", p->complete ? "true" : "false");
    if (!p->complete) {
        fputs("  incomplete = ", f);
        lstr(f, p->incomplete[0] ? p->incomplete : "the run has not finished (the file is rewritten per section)");
        fputs(",\n", f);
    }
    fputs("  provenance = {\n    gpu = ", f);
    lstr(f, p->gpu);
    fprintf(f, ", sm = \"%s\", driver = \"%d.%d\", cuda_runtime = \"%d.%d\",\n", p->sm, p->driver / 1000,
            p->driver % 1000 / 10, p->runtime / 1000, p->runtime % 1000 / 10);
    fprintf(f, "    l2_bytes = %.0f, memory_bytes = %.0f,\n", p->l2_bytes, p->hbm_bytes);
    fprintf(f, "    dkv_version = \"%s\", dkv_commit = \"%s\", date = \"%s\",\n    command = ", DKV_VERSION,
            DKV_GIT_COMMIT, w->date);
    lstr(f, w->tmp);
    fprintf(f, ",\n    repeats = %u, warmup = %u, statistic = \"median\", measured = true, grid = \"%s\",\n",
            p->repeats, p->warmup, a->quick ? "quick" : "default");
    fputs("    models = {", f);
    for (uint32_t i = 0; i < a->n_models; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", a->model_names[i]);
    fprintf(f, "},\n    estimate_s = %.1f, wall_s = %.1f,\n  },\n  kernels = {\n", p->est_s, p->wall_s);
    for (uint32_t i = 0; i < p->n_tables; i++)
        write_table(f, &p->tables[i], strcmp(p->tables[i].name, "attn") == 0);
    fputs("  },\n", f);
    write_copy(f, p);
    write_first_use(f, p);
    fputs("  -- host enqueue seconds per launch (host clock, the stream held by a spin kernel): an elementwise kernel\n"
          "  -- (per_launch_s) and a cuBLASLt GEMM with its plan cached (per_gemm_launch_s).  base_s and per_item_s\n"
          "  -- (engine planning per step and per item) are not measured here: the backend's per-step host records\n"
          "  -- (dkv.execute) give them\n  host = {", f);
    if (p->host_launch_s > 0)
        fprintf(f, "per_launch_s = %.6g, per_gemm_launch_s = %.6g", p->host_launch_s, p->host_gemm_launch_s);
    fputs("},\n}\n", f);
}

static void write_file(void *user, const dkv_prof *p)
{
    wctx *w = user;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", w->a->out);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "dkv profile: cannot write %s\n", tmp);
        w->write_failed = 1;
        return;
    }
    write_body(f, p, w);
    if (fclose(f) != 0 || rename(tmp, w->a->out) != 0) {
        fprintf(stderr, "dkv profile: cannot write %s\n", w->a->out);
        w->write_failed = 1;
    }
}

static void say(void *user, const char *line)
{
    (void)user;
    fprintf(stderr, "%s\n", line);
}

static int parse_grid(const char *g, uint32_t *mask)
{
    *mask = 0;
    if (!g)
        return 1;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", g);
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
        int k = -1;
        for (int i = 0; i < DKV_PROF_S_N; i++)
            if (strcmp(s, dkv_prof_section_name(i)) == 0)
                k = i;
        if (k < 0) {
            fprintf(stderr, "dkv profile: --grid: unknown section '%s' (gemm, lm_head, attn, kv_store, elementwise, "
                            "select, gemm_grid, compress, copy, host)\n", s);
            return 0;
        }
        *mask |= 1u << k;
    }
    return 1;
}

int dkv_cli_profile_main(const dkv_cli_profile_args *a)
{
    dkv_prof_opts o = dkv_prof_opts_default();
    if (!parse_grid(a->grid, &o.sections))
        return DKV_EXIT_USAGE;
    o.models = a->models, o.n_models = a->n_models, o.quick = a->quick, o.deadline_s = a->deadline;
    o.repeats = a->repeats, o.warmup = a->warmup, o.device = a->device;
    double est[DKV_PROF_S_N], total = dkv_prof_estimate(&o, est);
    fprintf(a->estimate ? stdout : stderr, "dkv profile: estimated %.0f s at the H200's ceilings (%s grid, %u repeats):",
            total, a->quick ? "quick" : "default", o.repeats);
    for (int s = 0; s < DKV_PROF_S_N; s++)
        if (est[s] > 0)
            fprintf(a->estimate ? stdout : stderr, " %s %.1f", dkv_prof_section_name(s), est[s]);
    fputc('\n', a->estimate ? stdout : stderr);
    if (a->estimate)
        return DKV_EXIT_OK;
    wctx w = {.a = a};
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(w.date, sizeof w.date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    size_t n = 0;
    for (int i = 0; i < a->argc && n < sizeof w.tmp - 2; i++)
        n += (size_t)snprintf(w.tmp + n, sizeof w.tmp - n, "%s%s", i ? " " : "dkv ", a->argv[i]);
    o.progress = say, o.on_section = write_file, o.user = &w;
    dkv_prof *p = NULL;
    dkv_err err = {0};
    dkv_status st = dkv_prof_run(&o, &p, &err);
    if (p) {
        if (a->name) {
            snprintf(w.name, sizeof w.name, "%s", a->name);
        } else {   /* "NVIDIA H200" -> h200-20261201 */
            const char *g = strncmp(p->gpu, "NVIDIA ", 7) == 0 ? p->gpu + 7 : p->gpu;
            size_t k = 0;
            for (; *g && k < 100; g++)
                w.name[k++] = isalnum((unsigned char)*g) ? (char)tolower((unsigned char)*g) : '-';
            strftime(w.name + k, sizeof w.name - k, "-%Y%m%d", &tm);
        }
        write_file(&w, p);
    }
    int rc = DKV_EXIT_OK;
    if (st == DKV_ENODEV) {
        fprintf(stderr, "dkv profile: no usable GPU: %s\n", err.msg);
        rc = DKV_EXIT_ERROR;
    } else if (st != DKV_OK) {
        fprintf(stderr, "dkv profile: %s%s\n", err.msg, p ? " (what was measured is written, complete = false)" : "");
        rc = DKV_EXIT_ERROR;
    } else if (!p->complete) {
        fprintf(stderr, "dkv profile: incomplete: %s\n", p->incomplete);
        rc = DKV_EXIT_ERROR;
    }
    if (p && !w.write_failed)
        fprintf(stderr, "dkv profile: %s written (%s, %.0f s measured, %.0f s estimated)\n", a->out,
                p->complete ? "complete" : "INCOMPLETE", p->wall_s, p->est_s);
    dkv_prof_free(p);
    return w.write_failed ? DKV_EXIT_ERROR : rc;
}
#else
typedef int dkv_cli_profile_write_unused;   /* ISO C: a translation unit is not empty */
#endif
