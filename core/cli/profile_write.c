/* profile_write.c - dkv profile's driver: options to a run, the file rewritten per section (its text: profile_lua.c).
 * Only in builds with the CUDA backend (cuda/profile.h). */
#ifdef DKV_HAVE_CUDA
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/profile_write.h"
#include "cuda/profile.h"

typedef struct wctx {
    const dkv_cli_profile_args *a;
    char  name[160], date[32], tmp[4096];
    int   write_failed;
} wctx;

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
    dkv_cli_profile_meta m = {.name = w->name, .date = w->date, .command = w->tmp, .quick = w->a->quick,
                              .models = w->a->model_names, .n_models = w->a->n_models};
    dkv_cli_profile_write(f, p, &m);
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
                            "select, gemm_grid, compress, copy, host, memory, sustained)\n", s);
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
    o.repeats = a->repeats, o.warmup = a->warmup, o.device = a->device, o.l2_warm = a->l2_warm != 0;
    o.min_rows = a->min_rows;
    o.gemm_step = a->gemm_step;
    o.states = a->states;
    o.probe = a->probe;
    o.sustain_s = a->sustain_s;
    o.sustain_windows = a->sustain_windows;
    if (a->sustain_lead_s >= 0)
        o.sustain_lead_s = a->sustain_lead_s;
    for (uint32_t g = 0; g < a->n_sustain_gaps && g < DKV_PROF_SUSTAIN_MAX_GAPS; g++)
        o.sustain_gaps_s[o.n_sustain_gaps++] = a->sustain_gaps_s[g];
    size_t shapes = 0;
    double est[DKV_PROF_S_N], total = dkv_prof_estimate(&o, est, &shapes);
    fprintf(a->estimate ? stdout : stderr,
            "dkv profile: estimated %.0f s at the H200's ceilings (%s grid, %zu shapes, %u repeats):", total,
            a->quick ? "quick" : "default", shapes, o.repeats);
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
