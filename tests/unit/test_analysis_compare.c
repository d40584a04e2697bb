/* test_analysis_compare.c - analysis/compare.h on synthetic pairs of results files written with the io API:
 * identical runs compare to zero error, a 10 % bias is reported as 10 %, random per-step errors
 * give the statistics computed here directly, tolerances fail when exceeded, configuration
 * differences are found, steps with different plans are left out, Nsight Compute class totals
 * are compared with the simulator's, the comparison is written and reads back, and the
 * configuration-literal flattener handles what dkv writes and reports malformed input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "io/h5.h"
#include "util/rng.h"
#include "test_tmpdir.h"

#define NSTEPS 40

typedef struct srec {
    uint64_t index;
    double time_s, compute_s, pcie_s;
    uint64_t hbm_read_bytes, hbm_write_bytes, pcie_h2d_bytes, pcie_d2h_bytes;
    uint32_t n_items;
    uint64_t q_tokens, logit_rows;
} srec;

#define F(T, f, t) {#f, t, offsetof(T, f), "", NULL}
static const dkv_h5_field SFIELDS[] = {
    F(srec, index, DKV_H5_U64),          F(srec, time_s, DKV_H5_F64),          F(srec, compute_s, DKV_H5_F64),
    F(srec, pcie_s, DKV_H5_F64),         F(srec, hbm_read_bytes, DKV_H5_U64),  F(srec, hbm_write_bytes, DKV_H5_U64),
    F(srec, pcie_h2d_bytes, DKV_H5_U64), F(srec, pcie_d2h_bytes, DKV_H5_U64),  F(srec, n_items, DKV_H5_U32),
    F(srec, q_tokens, DKV_H5_U64),       F(srec, logit_rows, DKV_H5_U64),
};

typedef struct krec {
    uint64_t step_index;
    uint32_t kind, layer, n_launches;
    double time_s, flops;
    uint64_t read_bytes, write_bytes;
} krec;
static const dkv_h5_field KFIELDS[] = {
    F(krec, step_index, DKV_H5_U64), F(krec, kind, DKV_H5_U32),       F(krec, layer, DKV_H5_U32),
    F(krec, n_launches, DKV_H5_U32), F(krec, time_s, DKV_H5_F64),     F(krec, flops, DKV_H5_F64),
    F(krec, read_bytes, DKV_H5_U64), F(krec, write_bytes, DKV_H5_U64),
};

typedef struct nrec {
    uint32_t kind;
    uint64_t n_kernels;
    double read_bytes, write_bytes, time_s;
} nrec;
static const dkv_h5_field NFIELDS[] = {
    F(nrec, kind, DKV_H5_U32), F(nrec, n_kernels, DKV_H5_U64), F(nrec, read_bytes, DKV_H5_F64),
    F(nrec, write_bytes, DKV_H5_F64), F(nrec, time_s, DKV_H5_F64),
};
#undef F

/* How a synthetic run departs from the reference one. */
typedef struct syn {
    double time_scale, bytes_scale;   /* per step, all steps (HBM bytes) */
    double pcie_scale;                /* the even steps' fetch: 4 MB x pcie_scale */
    const double *step_err;           /* optional: time_s *= 1 + step_err[i] */
    double frag_add;                  /* added to the fragmentation summaries */
    const char *cache, *gpu;          /* config: decode.cache, gpu.name */
    int mismatch_step;                /* >= 0: that step has another q_tokens */
    int offload_step;                 /* >= 0: that step offloads 8 MB (D2H) */
    bool ncu;                         /* an ncu_classes table (bytes x ncu_scale) */
    double ncu_scale;
} syn;

static const syn BASE = {1, 1, 1, NULL, 0, "dual", "h200", -1, -1, false, 1};

static void write_file(const char *path, const char *name, const syn *o)
{
    dkv_err err = {0};
    dkv_h5 *f;
    dkv_h5_run *run;
    dkv_h5_table *t;
    assert_int_equal(dkv_h5_create(path, &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_begin(f, name, &run, &err), DKV_OK);
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "{decode = {block_len = 32, cache = \"%s\"}, gpu = {bw_curve = {{32.0, 0.12}, {64.0, 1.0}}, name = \"%s\"},"
             " record = {kernels = true}, seed = 1, workload = {kind = \"fixed\", n = 4, prompt = 64, source = \"x\"}}",
             o->cache, o->gpu);
    assert_int_equal(dkv_h5_attr_str(run, NULL, "config", cfg, &err), DKV_OK);
    srec s[NSTEPS];
    krec k[NSTEPS * 6];
    size_t nk = 0;
    for (int i = 0; i < NSTEPS; i++) {
        double ts = o->time_scale * (o->step_err ? 1 + o->step_err[i] : 1), bs = o->bytes_scale;
        s[i] = (srec){.index = (uint64_t)i, .time_s = 1e-3 * (1 + i % 5) * ts, .compute_s = 0.9e-3 * (1 + i % 5) * ts,
                      .pcie_s = i % 2 ? 0 : 2e-4 * ts, .hbm_read_bytes = (uint64_t)(1e6 * (i + 1) * bs),
                      .hbm_write_bytes = (uint64_t)(2e5 * (i + 1) * bs),
                      .pcie_h2d_bytes = i % 2 ? 0 : (uint64_t)(4e6 * o->pcie_scale),
                      .pcie_d2h_bytes = i == o->offload_step ? (uint64_t)8e6 : 0,
                      .n_items = 2, .q_tokens = i == o->mismatch_step ? 65 : 64, .logit_rows = 32};
        static const uint32_t kinds[3] = {0, 1, 3};
        for (int c = 0; c < 3; c++)
            for (uint32_t l = 0; l < 2; l++)   /* two records per class and step: summed */
                k[nk++] = (krec){(uint64_t)i, kinds[c], l, 1, 1e-4 * (c + 1) * ts, 1e9,
                                 (uint64_t)(1e5 * (c + 1) * (l + 1) * bs), (uint64_t)(1e4 * (c + 1) * bs)};
    }
    assert_int_equal(dkv_h5_table_create(run, "steps", sizeof *s, SFIELDS, sizeof SFIELDS / sizeof *SFIELDS, &t,
                                         &err), DKV_OK);
    assert_int_equal(dkv_h5_table_append(t, s, NSTEPS, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_create(run, "kernels", sizeof *k, KFIELDS, sizeof KFIELDS / sizeof *KFIELDS, &t,
                                         &err), DKV_OK);
    assert_int_equal(dkv_h5_table_append(t, k, nk, &err), DKV_OK);
    if (o->ncu) {
        /* measured: the kernels totals x ncu_scale, plus an unknown kernel that is not compared */
        nrec n[4] = {{0, 80, 0, 0, 0}, {1, 80, 0, 0, 0}, {3, 160, 0, 0, 0}, {10, 3, 1e9, 1e9, 1}};
        for (int c = 0; c < 3; c++) {
            double per_step_read = 1e5 * (c + 1) * 3, per_step_write = 1e4 * (c + 1) * 2;
            n[c].read_bytes = per_step_read * NSTEPS * o->ncu_scale;
            n[c].write_bytes = per_step_write * NSTEPS * o->ncu_scale;
            n[c].time_s = 2e-4 * (c + 1) * NSTEPS;
        }
        assert_int_equal(dkv_h5_table_create(run, "ncu_classes", sizeof *n, NFIELDS, sizeof NFIELDS / sizeof *NFIELDS,
                                             &t, &err), DKV_OK);
        assert_int_equal(dkv_h5_table_append(t, n, 4, &err), DKV_OK);
    }
    assert_int_equal(dkv_h5_attr_f64(run, "summary", "tokens_per_s", 1000 / o->time_scale, &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_i64(run, "summary", "peak_kv_bytes", (int64_t)(4e6 * o->bytes_scale), &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_f64(run, "summary", "kv_external_frag_peak", 0.25 + o->frag_add, &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_f64(run, "summary", "kv_internal_frag_peak", 0.03 + o->frag_add, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_end(run, &err), DKV_OK);
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);
}

/* The scratch folder and the files written in it (test_tmpdir.h). */
typedef test_files fx;
enum { REAL, SIM, OUT };

static int setup(void **state)
{
    static const char *const names[] = {"real.h5", "sim.h5", "out.h5"};
    return test_files_setup(state, "cmp", names, 3);
}

static int teardown(void **state)
{
    return test_files_teardown(state);
}

/* Compares the run "r" of the two files. */
static dkv_cmp *compare(const fx *x, const syn *real, const syn *sim)
{
    write_file(x->path[REAL], "r", real);
    write_file(x->path[SIM], "r", sim);
    dkv_err err = {0};
    dkv_h5 *a, *b;
    dkv_cmp *c = NULL;
    assert_int_equal(dkv_h5_open_read(x->path[REAL], &a, &err), DKV_OK);
    assert_int_equal(dkv_h5_open_read(x->path[SIM], &b, &err), DKV_OK);
    dkv_status st = dkv_cmp_runs(a, "r", b, "r", &c, &err);
    if (st != DKV_OK)
        fail_msg("dkv_cmp_runs: %s", err.msg);
    dkv_h5_close(a, NULL);
    dkv_h5_close(b, NULL);
    return c;
}

static const dkv_cmp_quantity *get(const dkv_cmp *c, const char *name)
{
    const dkv_cmp_quantity *q = dkv_cmp_find(c, name);
    if (!q)
        fail_msg("quantity %s missing", name);
    return q;
}

static void test_identical_zero_error(void **state)
{
    dkv_cmp *c = compare(*state, &BASE, &BASE);
    const dkv_cmp_info *in = dkv_cmp_get_info(c);
    assert_int_equal(in->steps_paired, NSTEPS);
    assert_int_equal(in->steps_plan_mismatch, 0);
    assert_true(in->has_kernels);
    assert_false(in->has_ncu || in->real_has_ncu);
    assert_int_equal(dkv_cmp_diff_count(c), 0);
    assert_true(in->real_workload_fp != 0 && in->real_workload_fp == in->sim_workload_fp);
    assert_true(dkv_cmp_count(c) >= 15);
    for (size_t i = 0; i < dkv_cmp_count(c); i++) {
        const dkv_cmp_quantity *q = dkv_cmp_at(c, i);
        if (q->mean_abs != 0 || q->max_abs != 0 || q->bias != 0 || q->total_err != 0)
            fail_msg("%s: errors %g %g %g %g", q->name, q->mean_abs, q->max_abs, q->bias, q->total_err);
    }
    assert_int_equal(get(c, "step.time_s")->n, NSTEPS);
    assert_int_equal(get(c, "step.pcie_h2d_bytes")->n, NSTEPS / 2);   /* pairs of zeros are skipped */
    assert_int_equal(get(c, "step.pcie_d2h_bytes")->n, 0);            /* all zero: agreed, error 0 */
    assert_int_equal(get(c, "kclass.attn.time_s")->n, NSTEPS);
    assert_null(dkv_cmp_find(c, "kclass.o_proj.time_s"));           /* a class neither ran */
    dkv_cmp_free(c);
}

static void test_known_bias(void **state)
{
    syn sim = BASE;
    sim.time_scale = 1.10;
    sim.bytes_scale = 1.10;
    sim.frag_add = 0.02;
    dkv_cmp *c = compare(*state, &BASE, &sim);
    assert_int_equal(dkv_cmp_get_info(c)->steps_plan_mismatch, 0);
    assert_int_equal(get(c, "step.time_s")->n, NSTEPS);
    const char *rel[] = {"step.time_s", "step.compute_s", "step.hbm_bytes", "kclass.ffn.time_s",
                         "kclass.qkv.bytes", "run.peak_kv_bytes"};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        const dkv_cmp_quantity *q = get(c, rel[i]);
        assert_int_equal(q->kind, DKV_CMP_RELATIVE);
        assert_float_equal(q->bias, 0.10, 1e-6);
        assert_float_equal(q->mean_abs, 0.10, 1e-6);
        assert_float_equal(q->median_abs, 0.10, 1e-6);
        assert_float_equal(q->max_abs, 0.10, 1e-6);
        assert_float_equal(q->total_err, 0.10, 1e-6);
        assert_float_equal(q->sim / q->real, 1.10, 1e-6);
    }
    const dkv_cmp_quantity *tp = get(c, "run.tokens_per_s");   /* slower: fewer tokens per second */
    assert_float_equal(tp->bias, 1 / 1.1 - 1, 1e-9);
    const dkv_cmp_quantity *fr = get(c, "run.kv_external_frag_peak");
    assert_int_equal(fr->kind, DKV_CMP_ABSOLUTE);
    assert_float_equal(fr->bias, 0.02, 1e-12);   /* 2 percentage points, not 8 % of 0.25 */
    dkv_cmp_free(c);
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void test_random_step_errors(void **state)
{
    double e[NSTEPS], a[NSTEPS], sum = 0, sabs = 0, mx = 0;
    dkv_rng g;
    dkv_rng_seed(&g, 61);
    for (int i = 0; i < NSTEPS; i++) {
        e[i] = -0.2 + 0.6 * dkv_rng_uniform(&g);
        a[i] = fabs(e[i]);
        sum += e[i], sabs += a[i], mx = fmax(mx, a[i]);
    }
    qsort(a, NSTEPS, sizeof *a, dcmp);
    syn sim = BASE;
    sim.step_err = e;
    dkv_cmp *c = compare(*state, &BASE, &sim);
    const dkv_cmp_quantity *q = get(c, "step.time_s");
    assert_float_equal(q->bias, sum / NSTEPS, 1e-9);
    assert_float_equal(q->mean_abs, sabs / NSTEPS, 1e-9);
    assert_float_equal(q->max_abs, mx, 1e-9);
    assert_float_equal(q->median_abs, 0.5 * (a[NSTEPS / 2 - 1] + a[NSTEPS / 2]), 1e-9);
    assert_true(q->median_abs < q->max_abs);
    assert_float_equal(get(c, "step.hbm_bytes")->max_abs, 0, 0);   /* bytes untouched */
    dkv_cmp_free(c);
}

static void test_tolerances(void **state)
{
    dkv_err err = {0};
    dkv_cmp_tol t[4];
    assert_int_equal(dkv_cmp_tol_parse("step.time_s=0.08", &t[0], &err), DKV_OK);
    assert_string_equal(t[0].pattern, "step.time_s");
    assert_int_equal(t[0].stat, DKV_CMP_STAT_MEAN);
    assert_float_equal(t[0].limit, 0.08, 0);
    assert_int_equal(dkv_cmp_tol_parse("kclass.*.bytes:max=5%", &t[1], &err), DKV_OK);
    assert_int_equal(t[1].stat, DKV_CMP_STAT_MAX);
    assert_float_equal(t[1].limit, 0.05, 1e-15);
    assert_int_equal(dkv_cmp_tol_parse("run.kv_external_frag_peak:bias=0.01", &t[2], &err), DKV_OK);
    assert_int_equal(dkv_cmp_tol_parse("step.time_s:p90=1", &t[3], &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "unknown statistic 'p90'"));
    assert_int_equal(dkv_cmp_tol_parse("step.time_s", &t[3], &err), DKV_EINVAL);
    assert_int_equal(dkv_cmp_tol_parse("step.time_s=-1", &t[3], &err), DKV_EINVAL);
    assert_int_equal(dkv_cmp_tol_parse("step.time_s=abc", &t[3], &err), DKV_EINVAL);

    syn sim = BASE;
    sim.time_scale = 1.10;
    sim.frag_add = 0.02;
    dkv_cmp *c = compare(*state, &BASE, &sim);
    dkv_cmp_violation v[8];
    size_t n;
    assert_int_equal(dkv_cmp_check(c, t, 3, v, 8, &n, &err), DKV_OK);
    /* step.time_s 10 % > 8 %; the bytes are exact; the fragmentation is 2 pp > 1 pp */
    assert_int_equal(n, 2);
    assert_string_equal(v[0].q->name, "step.time_s");
    assert_float_equal(v[0].value, 0.10, 1e-6);
    assert_float_equal(v[0].limit, 0.08, 0);
    assert_string_equal(v[1].q->name, "run.kv_external_frag_peak");
    dkv_cmp_tol loose;
    assert_int_equal(dkv_cmp_tol_parse("step.*=0.15", &loose, &err), DKV_OK);
    assert_int_equal(dkv_cmp_check(c, &loose, 1, v, 8, &n, &err), DKV_OK);
    assert_int_equal(n, 0);
    dkv_cmp_tol none;
    assert_int_equal(dkv_cmp_tol_parse("step.latency=0.1", &none, &err), DKV_OK);
    assert_int_equal(dkv_cmp_check(c, &none, 1, v, 8, &n, &err), DKV_ENOENT);
    assert_non_null(strstr(err.msg, "step.latency"));
    dkv_cmp_free(c);
}

static void test_config_differences(void **state)
{
    syn sim = BASE;
    sim.cache = "prefix";
    sim.gpu = "a100-80g";
    dkv_cmp *c = compare(*state, &BASE, &sim);
    const dkv_cmp_info *in = dkv_cmp_get_info(c);
    assert_int_equal(dkv_cmp_diff_count(c), 2);
    assert_int_equal(in->n_diffs_matter, 1);
    bool cache = false, gpu = false;
    for (size_t i = 0; i < dkv_cmp_diff_count(c); i++) {
        const dkv_cmp_diff *d = dkv_cmp_diff_at(c, i);
        if (strcmp(d->key, "decode.cache") == 0)
            cache = d->matters && strcmp(d->real, "dual") == 0 && strcmp(d->sim, "prefix") == 0;
        if (strcmp(d->key, "gpu.name") == 0)
            gpu = !d->matters;
    }
    assert_true(cache && gpu);
    assert_true(in->real_workload_fp == in->sim_workload_fp);   /* same workload, other cache mode */
    assert_true(in->real_config_fp != in->sim_config_fp);
    dkv_cmp_free(c);
}

static void test_plan_mismatch(void **state)
{
    syn sim = BASE;
    sim.mismatch_step = 7;
    sim.time_scale = 2;
    dkv_cmp *c = compare(*state, &BASE, &sim);
    assert_int_equal(dkv_cmp_get_info(c)->steps_plan_mismatch, 1);
    assert_int_equal(get(c, "step.time_s")->n, NSTEPS - 1);
    assert_int_equal(get(c, "kclass.attn.time_s")->n, NSTEPS - 1);
    size_t n;
    const dkv_cmp_step *s = dkv_cmp_steps(c, &n);
    assert_int_equal(n, NSTEPS);
    assert_int_equal(s[7].same_plan, 0);
    assert_int_equal(s[8].same_plan, 1);
    assert_float_equal(s[8].sim_time_s / s[8].real_time_s, 2, 1e-12);
    dkv_cmp_free(c);
}

/* A step waits for the copies the step before it left: after a step whose offload differs, the next
 * step (same batch, same copies of its own) is left out too; the one after it is compared again. */
static void test_previous_copies(void **state)
{
    syn sim = BASE;
    sim.offload_step = 12;
    dkv_cmp *c = compare(*state, &BASE, &sim);
    assert_int_equal(dkv_cmp_get_info(c)->steps_plan_mismatch, 2);
    assert_int_equal(get(c, "step.time_s")->n, NSTEPS - 2);
    size_t n;
    const dkv_cmp_step *s = dkv_cmp_steps(c, &n);
    assert_int_equal(n, NSTEPS);
    assert_int_equal(s[11].same_plan, 1);
    assert_int_equal(s[12].same_plan, 0);
    assert_int_equal(s[13].same_plan, 0);
    assert_int_equal(s[14].same_plan, 1);
    dkv_cmp_free(c);
    syn fetch = BASE;   /* PCIe bytes are part of a step's plan: the even steps (a fetch of 4 MB against 4.4 MB) are */
    fetch.pcie_scale = 1.10;   /* other plans, and the odd ones (no copies) follow one: all left out */
    c = compare(*state, &BASE, &fetch);
    assert_int_equal(dkv_cmp_get_info(c)->steps_plan_mismatch, NSTEPS);
    assert_int_equal(get(c, "step.time_s")->n, 0);
    dkv_cmp_free(c);
    syn both = BASE;   /* the same offload on both sides: every step compared */
    both.offload_step = 12;
    c = compare(*state, &both, &both);
    assert_int_equal(dkv_cmp_get_info(c)->steps_plan_mismatch, 0);
    assert_int_equal(get(c, "step.time_s")->n, NSTEPS);
    dkv_cmp_free(c);
}

static void test_ncu_classes(void **state)
{
    syn real = BASE;
    real.ncu = true;
    real.ncu_scale = 1 / 0.95;   /* the simulator counts 5 % fewer bytes than measured */
    dkv_cmp *c = compare(*state, &real, &BASE);
    assert_true(dkv_cmp_get_info(c)->has_ncu && dkv_cmp_get_info(c)->real_has_ncu);
    const char *names[] = {"ncu.qkv.bytes", "ncu.attn.read_bytes", "ncu.ffn.write_bytes", "ncu.all.bytes"};
    for (size_t i = 0; i < 4; i++)
        assert_float_equal(get(c, names[i])->total_err, -0.05, 1e-9);
    assert_float_equal(get(c, "ncu.attn.time_s")->total_err, 0, 1e-9);   /* 2e-4 s per step in both */
    assert_null(dkv_cmp_find(c, "ncu.unknown.bytes"));
    dkv_cmp_tol t;
    dkv_err err = {0};
    dkv_cmp_violation v[16];
    size_t n;
    assert_int_equal(dkv_cmp_tol_parse("ncu.*.bytes:total=4%", &t, &err), DKV_OK);
    assert_int_equal(dkv_cmp_check(c, &t, 1, v, 16, &n, &err), DKV_OK);
    assert_int_equal(n, 4);   /* qkv, attn, ffn, all */
    dkv_cmp_free(c);
}

static void test_write_reads_back(void **state)
{
    fx *x = *state;
    syn sim = BASE;
    sim.time_scale = 1.10;
    dkv_cmp *c = compare(x, &BASE, &sim);
    dkv_err err = {0};
    dkv_cmp_tol t;
    assert_int_equal(dkv_cmp_tol_parse("step.time_s=0.05", &t, &err), DKV_OK);
    dkv_h5 *o;
    assert_int_equal(dkv_h5_create(x->path[OUT], &o, &err), DKV_OK);
    assert_int_equal(dkv_cmp_write(c, o, "compare:r", &t, 1, "dkv compare a b", &err), DKV_OK);
    assert_int_equal(dkv_h5_close(o, &err), DKV_OK);
    assert_int_equal(dkv_h5_open_read(x->path[OUT], &o, &err), DKV_OK);
    dkv_h5_run *run;
    assert_int_equal(dkv_h5_run_open(o, "compare:r", &run, &err), DKV_OK);
    int64_t v;
    assert_int_equal(dkv_h5_attr_get_i64(run, "summary", "steps_paired", &v, &err), DKV_OK);
    assert_int_equal(v, NSTEPS);
    assert_int_equal(dkv_h5_attr_get_i64(run, "summary", "tolerances_exceeded", &v, &err), DKV_OK);
    assert_int_equal(v, 1);
    dkv_h5_table *tq;
    assert_int_equal(dkv_h5_table_open(run, "compare_quantities", &tq, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_nrecords(tq), dkv_cmp_count(c));
    double bias[64], tol[64];
    size_t nq = dkv_cmp_count(c);
    assert_true(nq <= 64);
    assert_int_equal(dkv_h5_table_read_f64(tq, "bias", 0, nq, bias, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_read_f64(tq, "tolerance", 0, nq, tol, &err), DKV_OK);
    assert_float_equal(bias[0], 0.10, 1e-6);   /* step.time_s first */
    assert_float_equal(tol[0], 0.05, 0);
    assert_true(isnan(tol[1]));
    dkv_h5_table_close(tq);
    assert_int_equal(dkv_h5_table_open(run, "compare_steps", &tq, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_nrecords(tq), NSTEPS);
    dkv_h5_table_close(tq);
    dkv_h5_run_free(run);
    dkv_h5_close(o, NULL);
    dkv_cmp_free(c);
}

static void test_missing_run_and_table(void **state)
{
    fx *x = *state;
    write_file(x->path[REAL], "r", &BASE);
    dkv_err err = {0};
    dkv_h5 *a;
    dkv_cmp *c = NULL;
    assert_int_equal(dkv_h5_open_read(x->path[REAL], &a, &err), DKV_OK);
    assert_int_not_equal(dkv_cmp_runs(a, "r", a, "nope", &c, &err), DKV_OK);
    assert_non_null(strstr(err.msg, "nope"));
    assert_null(c);
    dkv_h5_close(a, NULL);
    /* a run without a steps table */
    dkv_h5 *f;
    dkv_h5_run *run;
    assert_int_equal(dkv_h5_create(x->path[SIM], &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_begin(f, "r", &run, &err), DKV_OK);
    assert_int_equal(dkv_h5_attr_f64(run, "summary", "tokens_per_s", 1, &err), DKV_OK);
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);
    dkv_h5 *b;
    assert_int_equal(dkv_h5_open_read(x->path[REAL], &a, &err), DKV_OK);
    assert_int_equal(dkv_h5_open_read(x->path[SIM], &b, &err), DKV_OK);
    assert_int_equal(dkv_cmp_runs(a, "r", b, "r", &c, &err), DKV_ENOENT);
    assert_non_null(strstr(err.msg, "no 'steps' table"));
    dkv_h5_close(a, NULL);
    dkv_h5_close(b, NULL);
}

static void test_flatten(void **state)
{
    (void)state;
    const char *lit = "{[1] = 7, cost_per_hour = 0.5, gpu = {bw_curve = {{32.0, 0.12}, {64.0, 1.0}}, name = \"h\\\"2\\n\"},"
                      " x = {(0/0), math.huge, -math.huge, true, nil, -1e-05}, [\"odd key\"] = \"\\065b\"}";
    dkv_cfg_kv *kv;
    size_t n;
    dkv_err err = {0};
    assert_int_equal(dkv_cfg_flatten(lit, &kv, &n, &err), DKV_OK);
    assert_int_equal(n, 14);
    assert_string_equal(kv[0].key, "[1]");
    assert_float_equal(kv[0].num, 7, 0);
    assert_string_equal(kv[2].key, "gpu.bw_curve[1][1]");
    assert_string_equal(kv[2].value, "32.0");
    assert_string_equal(kv[5].key, "gpu.bw_curve[2][2]");
    assert_string_equal(kv[6].key, "gpu.name");
    assert_string_equal(kv[6].value, "h\"2\n");
    assert_true(kv[7].is_num && isnan(kv[7].num));
    assert_true(isinf(kv[8].num) && kv[8].num > 0 && isinf(kv[9].num) && kv[9].num < 0);
    assert_false(kv[10].is_num);
    assert_string_equal(kv[10].value, "true");
    assert_float_equal(kv[12].num, -1e-05, 0);
    assert_string_equal(kv[12].key, "x[6]");
    dkv_cfg_kv_free(kv, n);
    assert_int_equal(dkv_cfg_flatten("{odd key = \"Ab\"}", &kv, &n, &err), DKV_EFORMAT);
    assert_int_equal(dkv_cfg_flatten("{a = {1, 2}", &kv, &n, &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "byte 11"));
    assert_int_equal(dkv_cfg_flatten("{a = \"x}", &kv, &n, &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "unterminated string"));
    assert_int_equal(dkv_cfg_flatten("{a = 1} x", &kv, &n, &err), DKV_EFORMAT);
    assert_true(dkv_cfg_key_matters("decode.cache") && dkv_cfg_key_matters("gpux"));
    assert_false(dkv_cfg_key_matters("gpu.name") || dkv_cfg_key_matters("record") ||
                 dkv_cfg_key_matters("sim.gemm_eff") || dkv_cfg_key_matters("cost_per_hour") ||
                 dkv_cfg_key_matters("scheduler.step_host_s") || dkv_cfg_key_matters("scheduler.handover_s") ||
                 dkv_cfg_key_matters("scheduler.step_release_s"));
    assert_true(dkv_cfg_key_matters("scheduler.kind") && dkv_cfg_key_matters("scheduler.max_num_seqs"));
    /* the workload fingerprint ignores everything but workload.* (and workload.source) */
    uint64_t a = dkv_cmp_workload_fingerprint("{gpu = 1, workload = {n = 4, source = \"a\"}}");
    uint64_t b = dkv_cmp_workload_fingerprint("{gpu = 2, workload = {n = 4, source = \"b\"}}");
    uint64_t d = dkv_cmp_workload_fingerprint("{gpu = 2, workload = {n = 5, source = \"b\"}}");
    assert_true(a != 0 && a == b && a != d);
    assert_int_equal(dkv_cmp_workload_fingerprint("{"), 0);
    assert_string_equal(dkv_cmp_class_name(1), "attn");
    assert_string_equal(dkv_cmp_class_name(9), "compress");
    assert_string_equal(dkv_cmp_class_name(10), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_identical_zero_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_known_bias, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_step_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tolerances, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_differences, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plan_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_previous_copies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ncu_classes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_reads_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_run_and_table, setup, teardown),
        cmocka_unit_test(test_flatten),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
