/* calib_write.c - the calibrated preset file with its provenance (calib.h). */
#include "analysis/calib_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/compare.h"

static bool any_fit(const dkv_calib_result *r)
{
    bool k = false;
    for (int i = 0; i < DKV_CALIB_MAX_KCLASS; i++)
        k |= r->kclass_ok[i];
    return k || r->launch_ok || r->bw_ok || r->h2d_ok || r->d2h_ok || r->bidir_ok;
}

static void input_ref(FILE *f, const dkv_calib *c, uint32_t src)
{
    if (src == UINT32_MAX)
        fputs("-", f);
    else
        fprintf(f, "%u", src + 1);
}

static void lua_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f), fputc(*s, f);
        else if (*s == '\n')
            fputs("\\n", f);
        else if ((unsigned char)*s < 32)
            fprintf(f, "\\%03u", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* A comment line's text with newlines turned into spaces. */
static void comment_text(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
}

/* The raw numbers of the fits, as comments (kernel records, PCIe steps, bandwidth points). */
static void write_raw(FILE *f, const dkv_calib *c)
{
    fputs("--\n-- Raw numbers the fits used (input = the number above; '-' added directly):\n", f);
    fputs("--   kernel: input step kind n_launches time_s flops bytes m_tokens [sim_launches sim_roofline_s]\n", f);
    for (size_t i = 0; i < c->nk; i++) {
        const calib_kpt *p = &c->k[i];
        fputs("--   k ", f);
        input_ref(f, c, p->src);
        fprintf(f, " %llu %u %u %.9g %.9g %.9g %.9g", (unsigned long long)p->step, p->k.kind, p->k.n_launches,
                p->k.time_s, p->k.flops, p->k.bytes, p->k.m_tokens);
        if (p->paired)
            fprintf(f, " %u %.9g", p->n_sim, p->roof_s);
        fputc('\n', f);
    }
    fputs("--   pcie: input step h2d_bytes d2h_bytes pcie_s\n", f);
    for (size_t i = 0; i < c->np; i++) {
        fputs("--   p ", f);
        input_ref(f, c, c->p[i].src);
        fprintf(f, " %llu %.9g %.9g %.9g\n", (unsigned long long)c->p[i].step, c->p[i].h2d, c->p[i].d2h,
                c->p[i].time_s);
    }
    fputs("--   bandwidth: input run_bytes bytes_per_s\n", f);
    for (size_t i = 0; i < c->nb; i++) {
        fputs("--   b ", f);
        input_ref(f, c, c->b[i].src);
        fprintf(f, " %.9g %.9g\n", c->b[i].run_bytes, c->b[i].bytes_per_s);
    }
}

/* The preset itself: the base, the provenance line and every fitted field. */
static void write_lua_table(FILE *f, const dkv_calib_result *r, const char *name, const char *when, size_t nruns,
                            size_t nfiles)
{
    const char *dn[3] = {"pcie_h2d_pinned", "pcie_d2h_pinned", "pcie_bidir_pinned"};
    bool ok[3] = {r->h2d_ok, r->d2h_ok, r->bidir_ok};
    double v[3] = {r->pcie_h2d, r->pcie_d2h, r->pcie_bidir};
    fputs("return {\n  base = ", f);
    lua_string(f, r->base);
    fputs(",\n  name = ", f);
    lua_string(f, name);
    char src[256];
    snprintf(src, sizeof src, "dkv calibrate %s: fitted from %zu measured run(s) and %zu bandwidth file(s) "
             "(provenance in the comments of this file)", when, nruns, nfiles);
    fputs(",\n  source = ", f);
    lua_string(f, src);
    fputs(",\n", f);
    if (r->launch_ok)
        fprintf(f, "  launch_overhead_s = %.6g,\n", r->launch_overhead_s);
    if (r->bw_ok) {
        fputs("  bw_curve = {", f);
        for (size_t i = 0; i < r->n_curve; i++)
            fprintf(f, "%s{%.6g, %.4f}", i ? ", " : "", r->curve_run[i], r->curve_eff[i]);
        fputs("},\n", f);
    }
    for (int i = 0; i < 3; i++)
        if (ok[i])
            fprintf(f, "  %s = %.6g,\n", dn[i], v[i]);
    bool any_k = false;
    for (uint32_t i = 0; i < DKV_CALIB_MAX_KCLASS; i++) {
        if (!r->kclass_ok[i])
            continue;
        fprintf(f, "%s    %s = {scale = %.6g, launch_s = %.6g},\n", any_k ? "" : "  kclass = {\n",
                dkv_cmp_class_name(i), r->kclass_scale[i], r->kclass_launch_s[i]);
        any_k = true;
    }
    if (any_k)
        fputs("  },\n", f);
    fputs("}\n", f);
}

static void write_body(FILE *f, const dkv_calib *c, const dkv_calib_result *r, const char *name, const char *command,
                       const char *git_commit)
{
    char when[32];
    time_t now = time(NULL);
    struct tm tmv;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tmv));
    size_t nruns = 0, nfiles = 0;
    for (size_t i = 0; i < c->nin; i++)
        c->in[i].run ? nruns++ : nfiles++;
    fprintf(f, "-- %s: the %s preset with cost parameters fitted to measurements by `dkv calibrate`.\n", name, r->base);
    fputs("-- Generated: regenerate with the command below instead of editing (docs/COMPARE.md).\n--\n", f);
    fprintf(f, "-- date:     %s\n-- command:  ", when);
    comment_text(f, command ? command : "(not given)");
    fprintf(f, "\n-- dkv:      %s (git %s)\n", DKV_VERSION, git_commit ? git_commit : "unknown");
    fprintf(f, "-- base:     %s: hbm_bw %.6g B/s, flops_bf16 %.6g FLOP/s (the efficiencies below are relative to "
               "these)\n--\n", r->base, r->hbm_bw, r->flops_bf16);
    fputs("-- Fitting inputs.  Validate on OTHER workloads: `dkv compare --calibration <this file>` refuses a\n"
          "-- run whose workload fingerprint is listed here.\n", f);
    for (size_t i = 0; i < c->nin; i++) {
        const calib_input *in = &c->in[i];
        fprintf(f, "--   input %zu: ", i + 1);
        comment_text(f, in->file);
        if (in->run) {
            fputs(" run ", f);
            comment_text(f, in->run);
            fprintf(f, "  workload %016llx  ", (unsigned long long)in->workload_fp);
        } else
            fputs("  ", f);
        comment_text(f, in->desc);
        fputs(in->run && !in->pinned ? " (pageable buffers: PCIe not used)\n" : "\n", f);
    }
    fputs("--\n-- Fits:\n", f);
    if (r->launch_ok)
        fprintf(f, "--   launch_overhead_s = %.6g s from %zu elementwise records (rms relative residual "
                   "%.1f %%); streaming rate %.6g B/s = %.3f of hbm_bw (reported, not written)\n",
                r->launch_overhead_s, r->launch_n, 100 * r->launch_rms_rel, r->stream_bw, r->stream_bw / r->hbm_bw);
    else
        fprintf(f, "--   launch_overhead_s: not fitted (%s); the base value stays\n", r->launch_why);
    if (r->bw_ok) {
        fprintf(f, "--   bw_curve from %zu points (efficiency = min(1, rate / hbm_bw), non-decreasing):", r->bw_n_raw);
        for (size_t i = 0; i < r->n_curve; i++)
            fprintf(f, " %.6g:%.3f", r->curve_run[i], r->curve_eff[i]);
        fputc('\n', f);
    } else
        fprintf(f, "--   bw_curve: not fitted (%s); the base curve stays\n", r->bw_why);
    bool kc = false;
    for (int i = 0; i < DKV_CALIB_MAX_KCLASS; i++)
        kc |= r->kclass_ok[i];
    if (r->gemm_ok && kc)
        fprintf(f, "--   GEMM efficiency %.4f of flops_bf16 (compute-bound records, flops-weighted): reported only; "
                   "the kclass\n--     table below covers the GEMM classes (do not also pass cfg.sim.gemm_eff).  "
                   "By shape:\n", r->gemm_eff);
    else if (r->gemm_ok)
        fprintf(f, "--   GEMM efficiency %.4f of flops_bf16 (compute-bound records, flops-weighted): NOT a preset "
                   "field;\n--     use cfg.sim = {gemm_eff = %.4f} with this preset.  By shape:\n",
                r->gemm_eff, r->gemm_eff);
    else
        fprintf(f, "--   GEMM efficiency: not fitted (%s).  By shape:\n", r->gemm_why);
    fprintf(f, "--     %-8s %-16s %-8s %6s %8s %8s %8s\n", "class", "M rows", "bound", "n", "median", "min", "max");
    for (size_t i = 0; i < r->n_shapes; i++) {
        const dkv_calib_shape *s = &r->shapes[i];
        char m[32];
        snprintf(m, sizeof m, "[%.0f, %.0f)", s->m_lo, s->m_hi);
        fprintf(f, "--     %-8s %-16s %-8s %6zu %8.4f %8.4f %8.4f\n", dkv_cmp_class_name(s->kind), m,
                s->compute_bound ? "compute" : "memory", s->n, s->eff_median, s->eff_min, s->eff_max);
    }
    const char *dn[3] = {"pcie_h2d_pinned", "pcie_d2h_pinned", "pcie_bidir_pinned"};
    bool ok[3] = {r->h2d_ok, r->d2h_ok, r->bidir_ok};
    double v[3] = {r->pcie_h2d, r->pcie_d2h, r->pcie_bidir}, lat[3] = {r->h2d_latency_s, r->d2h_latency_s, 0};
    size_t n[3] = {r->h2d_n, r->d2h_n, r->bidir_n};
    for (int i = 0; i < 3; i++) {
        if (ok[i])
            fprintf(f, "--   %s = %.6g B/s from %zu steps%s", dn[i], v[i], n[i], i < 2 ? "" : "\n");
        else
            fprintf(f, "--   %s: not fitted (%zu steps); the base value stays\n", dn[i], n[i]);
        if (ok[i] && i < 2)
            fprintf(f, " (per-step latency %.3g s)\n", lat[i]);
    }
    if (r->pcie_why[0])
        fprintf(f, "--     (%s)\n", r->pcie_why);
    if (r->n_paired) {
        fprintf(f, "--   kclass: time = scale * roofline + launch_s * launches per class, from %zu records paired "
                   "with simulated runs:\n", r->n_paired);
        for (uint32_t i = 0; i < DKV_CALIB_MAX_KCLASS; i++) {
            if (r->kclass_ok[i])
                fprintf(f, "--     %-12s scale %.4f  launch_s %.4g  (%zu records, rms relative residual %.1f %%)\n",
                        dkv_cmp_class_name(i), r->kclass_scale[i], r->kclass_launch_s[i], r->kclass_n[i],
                        100 * r->kclass_rms_rel[i]);
            else if (r->kclass_why[i][0])
                fprintf(f, "--     %-12s not fitted: %s\n", dkv_cmp_class_name(i), r->kclass_why[i]);
        }
    } else
        fputs("--   kclass: not fitted (no measured run paired with a simulated one: dkv calibrate --sim)\n", f);
    write_raw(f, c);
    write_lua_table(f, r, name, when, nruns, nfiles);
}

dkv_status dkv_calib_write_preset(const dkv_calib *c, const dkv_calib_result *r, const char *path, const char *name,
                                  const char *command, const char *git_commit, dkv_err *err)
{
    if (!any_fit(r))
        return dkv_err_set(err, DKV_EINVAL, "calibrate: nothing could be fitted (launch: %s; bw_curve: %s; pcie: %s): "
                           "no preset written", r->launch_why, r->bw_why, r->pcie_why[0] ? r->pcie_why : "no data");
    if (!name || !*name)
        return dkv_err_set(err, DKV_EINVAL, "calibrate: the preset needs a name");
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
            return dkv_err_set(err, DKV_EINVAL, "calibrate: preset name '%s' must use a-z 0-9 - _ . (presets.h)", name);
    size_t len = strlen(path) + 5;
    char *tmp = malloc(len);
    if (!tmp)
        return dkv_err_set(err, DKV_ENOMEM, "calibrate: out of memory");
    snprintf(tmp, len, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        dkv_status st = dkv_err_set(err, DKV_EIO, "%s: cannot create (%s)", tmp, strerror(errno));
        free(tmp);
        return st;
    }
    write_body(f, c, r, name, command, git_commit);
    dkv_status st = DKV_OK;
    if (ferror(f) | (fclose(f) != 0))
        st = dkv_err_set(err, DKV_EIO, "%s: write failed", tmp);
    else if (rename(tmp, path) != 0)
        st = dkv_err_set(err, DKV_EIO, "cannot rename %s to %s (%s)", tmp, path, strerror(errno));
    if (st != DKV_OK)
        remove(tmp);
    free(tmp);
    return st;
}
