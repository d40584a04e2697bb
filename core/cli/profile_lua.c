/* profile_lua.c - the profile file's text (docs/PROFILE_FORMAT.md) from a dkv_prof: what dkv profile
 * writes (core/cli/profile_write.c).  Pure formatting, no CUDA: tests/unit/test_lua_profile_write.c
 * loads what it writes. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dkv_commit.h"
#include "cli/profile_write.h"

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

/* The memory section (cuda/profile_mem.c): written only when measured. */
static void write_memory(FILE *f, const dkv_prof *p)
{
    if (!p->mem_measured)
        return;
    fputs("  -- device memory besides dkv's own allocations (cudaMemGetInfo at the profile's start, before any other\n"
          "  -- allocation): the context (total - free after cudaFree(0); on an otherwise idle GPU), the cuBLAS and\n"
          "  -- cuBLASLt handles of dkv_cuda_ctx_new less its counted 32 MiB workspace, one more cuBLAS handle with its\n"
          "  -- first GEMM (measured twice), and lazy module loading of the first launches\n  memory = {", f);
    fprintf(f, "total_bytes = %.0f, context_bytes = %.0f, libraries_bytes = %.0f,\n    blas_handle_bytes = %.0f, "
            "blas_handle_again_bytes = %.0f, first_launch_bytes = %.0f,\n    method = \"cudaMemGetInfo\" },\n",
            p->mem_total_bytes, p->mem_context_bytes, p->mem_libraries_bytes, p->mem_blas_handle_bytes,
            p->mem_blas_handle_again_bytes, p->mem_first_launch_bytes);
}

/* The attention kernel's clusters resident at once (cuda/profile_attn.c): written when measured. */
static void write_attn_waves(FILE *f, const dkv_prof *p)
{
    bool any = false;
    for (int d = 0; d < 2; d++)
        for (int g = 0; g < 2; g++) {
            if (p->attn_clusters[d][g][0] == 0)
                continue;
            if (!any)
                fputs("  -- clusters of dkv_cuda_attention_batch's kernel resident at once (cudaOccupancyMaxActiveClusters), for\n"
                      "  -- 1..8 key splits (a cluster's CTAs); group 0: the launch of items of <= 32 queries, 1: the others\n"
                      "  attn_waves = {\n", f);
            any = true;
            fprintf(f, "    {head_dim = %d, group = %d, clusters = {", d ? 128 : 64, g);
            for (int s = 0; s < 8; s++)
                fprintf(f, "%s%u", s ? ", " : "", p->attn_clusters[d][g][s]);
            fputs("}},\n", f);
        }
    if (any)
        fputs("  },\n", f);
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
    bool any = false;   /* a group written: the next one after a comma (a --grid run may lack the first ones) */
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
            fprintf(f, "%s%s_s = %.6g, %s_max_s = %.6g, %s_shapes = %zu", any ? ", " : "", names[g],
                    k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]), names[g], v[k - 1], names[g], k);
            any = true;
        }
        free(v);
    }
    fputs("},\n", f);
}

static void write_table(FILE *f, const dkv_prof_table *t, int mode_copy, int warm)
{
    bool clk = false, hs = false, pr = false;   /* the SM clock was sampled for some row (cuda/clock.c); --states;
                                                   --probe (cuda/sm_probe.h) */
    for (size_t r = 0; r < t->n; r++) {
        clk |= isfinite(t->rows[r].sm_mhz) && t->rows[r].sm_mhz > 0;
        pr |= isfinite(t->rows[r].probe_mhz) && t->rows[r].probe_mhz > 0;
        hs |= t->rows[r].cool_s > 0 && t->rows[r].hot_s > 0;   /* NAN or 0: not measured */
    }
    fprintf(f, "    %s = {\n      note = ", t->name);
    lstr(f, t->note);
    fputs(",\n      fields = {", f);
    for (uint32_t i = 0; i < t->n_fields; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", t->fields[i]);
    fputs("},\n      extra = {\"p10_s\", \"p90_s\", \"first_s\"", f);
    if (warm)
        fputs(", \"warm_s\", \"stream_s\"", f);
    for (int i = 0; i < 2 && t->extra[i]; i++)
        fprintf(f, ", \"%s\"", t->extra[i]);
    if (clk)
        fputs(", \"sm_mhz\"", f);
    if (pr)
        fputs(warm ? ", \"probe_mhz\", \"warm_probe_mhz\"" : ", \"probe_mhz\"", f);
    if (hs)
        fputs(", \"cool_s\", \"cool_mhz\", \"hot_s\", \"hot_mhz\"", f);
    fputs("},\n      rows = {\n", f);
    for (int m = 0; m <= (mode_copy ? 2 : 0); m++) {
        if (m)
            fprintf(f, "        -- mode %d: the same measurements (the backend runs %s items through this kernel, "
                       "kv_tokens = the kept slots)\n", m, m == 1 ? "sparse shared" : "sparse per-head");
        for (size_t r = 0; r < t->n; r++) {
            const dkv_prof_row *w = &t->rows[r];
            bool own_mode = mode_copy && w->f[t->n_fields - 1] != 0;   /* measured in its own mode (3: prefix) */
            if (own_mode && m)
                continue;
            fputs("        {", f);
            for (uint32_t i = 0; i < t->n_fields; i++)
                fprintf(f, "%.10g, ", mode_copy && !own_mode && i == t->n_fields - 1 ? (double)m : w->f[i]);
            fprintf(f, "%.6g, %u, %.6g, %.6g, %.6g", w->median_s, w->launches, w->p10_s, w->p90_s, w->first_s);
            if (warm)
                fprintf(f, ", %.6g, %.6g", w->warm_s, w->stream_s);
            for (int i = 0; i < 2 && t->extra[i]; i++)
                fprintf(f, ", %.6g", w->x[i]);
            if (clk)
                fprintf(f, ", %.0f", isfinite(w->sm_mhz) && w->sm_mhz > 0 ? w->sm_mhz : 0.0);
            if (pr)   /* 0: not measured */
                fprintf(f, ", %.1f", isfinite(w->probe_mhz) && w->probe_mhz > 0 ? w->probe_mhz : 0.0);
            if (pr && warm)
                fprintf(f, ", %.1f", isfinite(w->warm_probe_mhz) && w->warm_probe_mhz > 0 ? w->warm_probe_mhz : 0.0);
            if (hs) {   /* 0: a row measured without the states */
                bool ok = w->cool_s > 0 && w->hot_s > 0 && w->cool_mhz > 0 && w->hot_mhz > 0;
                fprintf(f, ", %.6g, %.0f, %.6g, %.0f", ok ? w->cool_s : 0.0, ok ? w->cool_mhz : 0.0,
                        ok ? w->hot_s : 0.0, ok ? w->hot_mhz : 0.0);
            }
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
        fprintf(f, " load_gemm_beside_h2d_s = %.6g,   -- the same GEMM while 256 MiB h2d copies run throughout\n",
                p->compute_beside_s);
    fputs("  },\n", f);
}

/* sustained (dkv profile --sustain): one record a shape; model by name */
static void write_sustained(FILE *f, const dkv_prof *p, const dkv_cli_profile_meta *w)
{
    if (!(p->sustain_s > 0))
        return;
    fprintf(f, "  -- sustained runs (--sustain): each shape's call back to back for about `seconds` after a light spin (the GPU\n"
               "  -- awake at its maximum clock; lead_s 0: none); mhz: the SMs' own clock over each of `windows` equal windows of it, in\n"
               "  -- order; nvml_mhz: NVML's median while it ran (0: not sampled).  kind gemm: the layer's q|k|v, o, gate|up\n"
               "  -- and down GEMMs at `rows` rows; attn: dkv_cuda_attention_batch of `rows` query rows against `keys` keys;\n"
               "  -- layer: the layer's kernels in order (rmsnorm, q|k|v, attention as attn's, o, rmsnorm, gate|up, SwiGLU,\n"
               "  -- down; no RoPE-store); duty (--sustain-gaps): steps of step_calls layer calls, the host idle gap_s\n"
               "  -- after each, cycle_s the wall seconds a step's start to the next's, mhz each window's steps' own\n"
               "  -- clocks (the idle left out)\n"
               "  -- (the attention section's rows).  Not costed: scripts/clock_model.py sustained writes clock.settle\n"
               "  -- from it (docs/COST_MODEL.md \"Settle clocks measured\")\n"
               "  sustained = {\n    seconds = %.6g, windows = %u, lead_s = %.6g,\n    runs = {\n", p->sustain_s,
               p->sustain_windows, p->sustain_lead_s);
    for (uint32_t i = 0; i < p->n_sustained; i++) {
        const dkv_prof_sustained *r = &p->sustained[i];
        fputs("      {model = ", f);
        lstr(f, r->model < w->n_models ? w->models[r->model] : "?");
        fprintf(f, ", kind = \"%s\", rows = %.0f, keys = %.0f, calls = %u, call_s = %.6g, nvml_mhz = %.0f, mhz = {",
                dkv_prof_sustain_kind(r->kind), r->rows, r->keys, r->calls, r->call_s,
                isfinite(r->nvml_mhz) ? r->nvml_mhz : 0.0);
        for (uint32_t k = 0; k < p->sustain_windows && k < DKV_PROF_SUSTAIN_MAX_WIN; k++)
            fprintf(f, "%s%.1f", k ? ", " : "", isfinite(r->mhz[k]) ? r->mhz[k] : 0.0);
        fputc('}', f);
        if (r->kind == DKV_PROF_SUSTAIN_DUTY)
            fprintf(f, ", gap_s = %.6g, step_calls = %u, cycle_s = %.6g", r->gap_s, r->step_calls, r->cycle_s);
        fputs("},\n", f);
    }
    fputs("    },\n  },\n", f);
}

void dkv_cli_profile_write(FILE *f, const dkv_prof *p, const dkv_cli_profile_meta *w)
{
    fprintf(f, "-- A GPU profile written by `dkv profile` (docs/PROFILE_FORMAT.md, docs/GPU.md \"dkv profile\").\n"
               "-- Seconds per call are event-timed medians over `repeats` calls on seeded random data (provenance.l2:\n"
               "-- \"flushed\": the L2 flushed before each call, outside its events).\n"
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
    if (p->flush_bytes > 0)
        fprintf(f, "    l2 = \"flushed\", l2_flush_bytes = %.0f,   -- a read of this many bytes before every timed call "
                   "(outside its events); warm_s: the same calls without it; stream_s: the same calls back to back between one pair of events\n", p->flush_bytes);
    else
        fputs("    l2 = \"warm\",   -- no flush between the timed calls (operands the L2 holds stay there)\n", f);
    fprintf(f, "    dkv_version = \"%s\", dkv_commit = \"%s\", date = \"%s\",\n    command = ", DKV_VERSION,
            DKV_GIT_COMMIT, w->date);
    lstr(f, w->command);
    fprintf(f, ",\n    repeats = %u, warmup = %u, statistic = \"median\", measured = true, grid = \"%s\",\n",
            p->repeats, p->warmup, w->quick ? "quick" : "default");
    fputs("    models = {", f);
    for (uint32_t i = 0; i < w->n_models; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", w->models[i]);
    fprintf(f, "},\n    estimate_s = %.1f, wall_s = %.1f, skipped = %u,", p->est_s, p->wall_s, p->n_skipped);
    if (p->n_skipped) {
        fputs(" skipped_first = ", f);
        lstr(f, p->skipped);
        fputc(',', f);
    }
    fputs("\n  },\n  kernels = {\n", f);
    for (uint32_t i = 0; i < p->n_tables; i++)
        write_table(f, &p->tables[i], strcmp(p->tables[i].name, "attn") == 0, p->flush_bytes > 0);
    fputs("  },\n", f);
    write_copy(f, p);
    write_first_use(f, p);
    write_attn_waves(f, p);
    fputs("  -- host enqueue seconds per launch (host clock, the stream held by a spin kernel): an elementwise kernel\n"
          "  -- (per_launch_s) and a cuBLASLt GEMM with its plan cached (per_gemm_launch_s).  base_s and per_item_s\n"
          "  -- (engine planning per step and per item) are not measured here: the backend's per-step host records\n"
          "  -- (dkv.execute) give them.  resume_s / handover_s: the GPU's idle time between two steps of one host\n"
          "  -- thread / of two threads passing the GPU over as a timeslice ticket does (event-timed, medians)\n  host = {", f);
    if (p->host_launch_s > 0)
        fprintf(f, "per_launch_s = %.6g, per_gemm_launch_s = %.6g", p->host_launch_s, p->host_gemm_launch_s);
    if (p->host_handover_s > 0)
        fprintf(f, "%sresume_s = %.6g, handover_s = %.6g", p->host_launch_s > 0 ? ", " : "", p->host_resume_s,
                p->host_handover_s);
    fputs("},\n", f);
    write_memory(f, p);
    write_sustained(f, p, w);
    fputs("}\n", f);
}

