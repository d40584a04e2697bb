/* test_analysis_calib.c - analysis/calib.h fitted to synthetic measurements with a known answer: launch
 * overhead and streaming rate, GEMM efficiency by shape, a monotone bandwidth curve, PCIe
 * rates and latency; what cannot be fitted is said and not written; the preset file carries
 * the provenance (inputs with workload fingerprints, raw numbers); runs are read from files
 * written with the io API, and the bwcurve.cu text is parsed with file:line errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/calib.h"
#include "analysis/compare.h"
#include "util/rng.h"
#include "test_tmpdir.h"

#define HBM 4.0e12
#define PEAK 8.0e14

/* The scratch folder and the files written in it (test_tmpdir.h). */
typedef test_files fx;
enum { PRESET, H5, TXT };

static int setup(void **state)
{
    static const char *const names[] = {"h200-cal.lua", "m.h5", "bw.txt"};
    return test_files_setup(state, "calib", names, 3);
}

static int teardown(void **state)
{
    return test_files_teardown(state);
}

/* Elementwise records with time = n * L + bytes / B exactly, n and bytes drawn independently. */
static void add_stream(dkv_calib *c, double L, double B, size_t n, uint64_t seed)
{
    dkv_rng g;
    dkv_rng_seed(&g, seed);
    dkv_err err = {0};
    for (size_t i = 0; i < n; i++) {
        dkv_calib_kernel k = {.kind = 8, .n_launches = 10 + (uint32_t)dkv_rng_below(&g, 200)};
        k.bytes = 1e6 * (1 + 500 * dkv_rng_uniform(&g));
        k.time_s = k.n_launches * L + k.bytes / B;
        assert_int_equal(dkv_calib_add_kernel(c, &k, &err), DKV_OK);
    }
}

static void test_launch_and_stream(void **state)
{
    (void)state;
    dkv_calib *c;
    dkv_err err = {0};
    assert_int_equal(dkv_calib_new(&c, &err), DKV_OK);
    dkv_calib_result r;
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_EINVAL);   /* no base */
    assert_int_equal(dkv_calib_set_base(c, "h200", HBM, PEAK, &err), DKV_OK);
    assert_int_equal(dkv_calib_set_base(c, "a100", HBM, PEAK, &err), DKV_EINVAL);
    add_stream(c, 5e-6, 3.6e12, 200, 7);
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_true(r.launch_ok);
    assert_int_equal(r.launch_n, 200);
    assert_float_equal(r.launch_overhead_s / 5e-6, 1, 1e-9);
    assert_float_equal(r.stream_bw / 3.6e12, 1, 1e-9);
    assert_true(r.launch_rms_rel < 1e-9);
    assert_false(r.bw_ok || r.gemm_ok || r.h2d_ok);
    assert_non_null(strstr(r.bw_why, "0 bandwidth points"));
    dkv_calib_free(c);

    /* bytes proportional to launches: not separable, not fitted */
    assert_int_equal(dkv_calib_new(&c, &err), DKV_OK);
    assert_int_equal(dkv_calib_set_base(c, "h200", HBM, PEAK, &err), DKV_OK);
    for (int i = 1; i <= 20; i++) {
        dkv_calib_kernel k = {.kind = 8, .n_launches = (uint32_t)i, .bytes = 1e6 * i, .time_s = i * 5e-6 + 1e6 * i / HBM};
        assert_int_equal(dkv_calib_add_kernel(c, &k, &err), DKV_OK);
    }
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_false(r.launch_ok);
    assert_non_null(strstr(r.launch_why, "not separable"));
    dkv_calib_free(c);
}

static void test_gemm_by_shape(void **state)
{
    (void)state;
    dkv_calib *c;
    dkv_err err = {0};
    assert_int_equal(dkv_calib_new(&c, &err), DKV_OK);
    assert_int_equal(dkv_calib_set_base(c, "h200", HBM, PEAK, &err), DKV_OK);
    add_stream(c, 4e-6, HBM, 50, 3);
    /* compute-bound: M = 4096 rows at 65 % of peak, M = 600 at 55 %; memory-bound: M = 32 at 80 % of hbm_bw */
    const struct { double m, eff, flops, bytes; } cases[] = {
        {4096, 0.65, 4096 * 2.0 * 4096 * 12288, 2.0 * 4096 * 12288}, {600, 0.55, 600 * 2.0 * 4096 * 12288, 2.0 * 4096 * 12288},
        {32, 0.80, 32 * 2.0 * 4096 * 12288, 2.0 * 4096 * 12288},
    };
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 10; i++) {
            double tf = cases[j].flops / PEAK, tm = cases[j].bytes / HBM;
            bool cb = tf >= tm;
            dkv_calib_kernel k = {.kind = 3, .n_launches = 64, .flops = cases[j].flops, .bytes = cases[j].bytes,
                                  .m_tokens = cases[j].m + i};
            k.time_s = (cb ? tf : tm) / cases[j].eff + 64 * 4e-6;
            assert_int_equal(dkv_calib_add_kernel(c, &k, &err), DKV_OK);
        }
    dkv_calib_result r;
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_true(r.launch_ok && r.gemm_ok);
    assert_int_equal(r.gemm_n, 30);
    assert_int_equal(r.n_shapes, 3);
    /* flops-weighted: total flops / total time of the compute-bound records */
    double tf1 = cases[0].flops / PEAK, tf2 = cases[1].flops / PEAK;
    assert_float_equal(r.gemm_eff, (tf1 + tf2) / (tf1 / 0.65 + tf2 / 0.55), 1e-6);
    for (size_t i = 0; i < r.n_shapes; i++) {
        const dkv_calib_shape *s = &r.shapes[i];
        assert_int_equal(s->kind, 3);
        assert_int_equal(s->n, 10);
        double want = s->m_lo == 4096 ? 0.65 : s->m_lo == 512 ? 0.55 : s->m_lo == 32 ? 0.80 : -1;
        assert_float_equal(s->eff_median, want, 1e-6);
        assert_true(s->compute_bound == (s->m_lo != 32));
        assert_float_equal(s->m_hi, 2 * s->m_lo, 0);
    }
    dkv_calib_free(c);
}

static void test_bw_curve(void **state)
{
    (void)state;
    dkv_calib *c;
    dkv_err err = {0};
    assert_int_equal(dkv_calib_new(&c, &err), DKV_OK);
    assert_int_equal(dkv_calib_set_base(c, "h200", HBM, PEAK, &err), DKV_OK);
    /* 16 B .. 256 KiB: rising, a dip at 1 KiB (0.93 < 0.95), above hbm_bw at the end (capped at 1) */
    const double gbps[] = {560, 1120, 2240, 3600, 3760, 3800, 3720, 3880, 3880, 3880, 3960, 3960, 3970, 3990, 4400};
    for (int i = 0; i < 15; i++)
        assert_int_equal(dkv_calib_add_bw(c, 16.0 * (1 << i), gbps[i] * 1e9, &err), DKV_OK);
    assert_int_equal(dkv_calib_add_bw(c, 64, 2260e9, &err), DKV_OK);   /* a repeat: averaged */
    assert_int_equal(dkv_calib_add_bw(c, 0, 1e9, &err), DKV_EINVAL);
    dkv_calib_result r;
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_true(r.bw_ok);
    assert_int_equal(r.bw_n_raw, 16);
    assert_int_equal(r.n_curve, 14);   /* 15 run lengths, the dip pooled with the point before */
    for (size_t i = 1; i < r.n_curve; i++) {
        assert_true(r.curve_run[i] > r.curve_run[i - 1]);
        assert_true(r.curve_eff[i] >= r.curve_eff[i - 1]);
    }
    assert_float_equal(r.curve_run[0], 16, 0);
    assert_float_equal(r.curve_eff[0], 560e9 / HBM, 1e-12);
    assert_float_equal(r.curve_eff[2], 0.5 * (2240e9 + 2260e9) / HBM, 1e-12);
    assert_float_equal(r.curve_run[5], 512, 0);   /* 512 B and 1 KiB pooled: (0.95 + 0.93) / 2 */
    assert_float_equal(r.curve_eff[5], 0.5 * (3800e9 + 3720e9) / HBM, 1e-12);
    assert_float_equal(r.curve_eff[r.n_curve - 1], 1.0, 0);
    dkv_calib_free(c);

    /* a dip over several points pools them all: 0.5, (0.9 + 0.6 + 0.55) / 3, 1.0 */
    assert_int_equal(dkv_calib_new(&c, &err), DKV_OK);
    assert_int_equal(dkv_calib_set_base(c, "h200", HBM, PEAK, &err), DKV_OK);
    const double e5[] = {0.5, 0.9, 0.6, 0.55, 1.0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(dkv_calib_add_bw(c, 100.0 * (i + 1), e5[i] * HBM, &err), DKV_OK);
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_int_equal(r.n_curve, 3);
    assert_float_equal(r.curve_eff[1], (0.9 + 0.6 + 0.55) / 3, 1e-12);
    assert_float_equal(r.curve_run[1], 200, 0);
    assert_float_equal(r.curve_run[2], 500, 0);
    dkv_calib_free(c);

    /* more points than a preset holds: 16 kept, first and last among them */
    assert_int_equal(dkv_calib_new(&c, &err), DKV_OK);
    assert_int_equal(dkv_calib_set_base(c, "h200", HBM, PEAK, &err), DKV_OK);
    for (int i = 0; i < 40; i++)
        assert_int_equal(dkv_calib_add_bw(c, 8.0 * (i + 1), HBM * (i + 1) / 40.0, &err), DKV_OK);
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_int_equal(r.n_curve, DKV_CALIB_MAX_CURVE);
    assert_float_equal(r.curve_run[0], 8, 0);
    assert_float_equal(r.curve_run[15], 320, 0);
    dkv_calib_free(c);
}

static void test_pcie(void **state)
{
    (void)state;
    dkv_calib *c;
    dkv_err err = {0};
    assert_int_equal(dkv_calib_new(&c, &err), DKV_OK);
    assert_int_equal(dkv_calib_set_base(c, "h200", HBM, PEAK, &err), DKV_OK);
    for (int i = 1; i <= 12; i++) {
        double b = 1e7 * i;
        assert_int_equal(dkv_calib_add_pcie(c, b, 0, 2e-5 + b / 52e9, &err), DKV_OK);
        assert_int_equal(dkv_calib_add_pcie(c, 0, b, 1e-5 + b / 48e9, &err), DKV_OK);
        assert_int_equal(dkv_calib_add_pcie(c, b, b, 2 * b / 90e9, &err), DKV_OK);
    }
    dkv_calib_result r;
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_true(r.h2d_ok && r.d2h_ok && r.bidir_ok);
    assert_float_equal(r.pcie_h2d / 52e9, 1, 1e-9);
    assert_float_equal(r.h2d_latency_s, 2e-5, 1e-12);
    assert_float_equal(r.pcie_d2h / 48e9, 1, 1e-9);
    assert_float_equal(r.d2h_latency_s, 1e-5, 1e-12);
    assert_float_equal(r.pcie_bidir / 90e9, 1, 1e-9);
    assert_int_equal(r.h2d_n, 12);
    assert_false(r.launch_ok);
    dkv_calib_free(c);
}

typedef struct srec {
    uint64_t index, q_tokens, logit_rows, pcie_h2d_bytes, pcie_d2h_bytes;
    double pcie_s;
} srec;
typedef struct krec {
    uint64_t step_index;
    uint32_t kind, n_launches;
    double time_s, flops;
    uint64_t read_bytes, write_bytes;
} krec;

/* Extra gpu config text and the number of steps written (the pairing test varies them). */
static const char *g_gpu_extra = "";
static int g_nsteps = 8;

/* A measured run: elementwise records (L = 5 us, B = 3.9e12), one FFN GEMM at 70 % per step,
 * steps with h2d copies at 50 GB/s. */
static void write_run(dkv_h5 *f, const char *name, const char *gpu, int n_req, bool kernels)
{
    dkv_err err = {0};
    dkv_h5_run *run;
    assert_int_equal(dkv_h5_run_begin(f, name, &run, &err), DKV_OK);
    char cfg[600];
    snprintf(cfg, sizeof cfg, "{decode = {cache = \"dual\"}, gpu = {flops_bf16 = 8e14, hbm_bw = 4e12, "
             "launch_overhead_s = 4e-06, name = \"%s\"%s}, model = {name = \"llada-8b\"}, policies = {offload = "
             "{pinned = true}}, workload = {kind = \"fixed\", n = %d, prompt = 512}}", gpu, g_gpu_extra, n_req);
    assert_int_equal(dkv_h5_attr_str(run, NULL, "config", cfg, &err), DKV_OK);
    srec s[8];
    krec k[16];
    for (int i = 0; i < 8; i++) {
        double b = 2e7 * (i + 1);
        s[i] = (srec){(uint64_t)(7 - i), 512 * (uint64_t)(i + 1), 32, (uint64_t)b, 0, 1e-5 + b / 50e9};
        uint64_t step = 7 - (uint64_t)i;
        double bytes = 1e7 * (1 + i * i), flops = 2.0 * 512 * (i + 1) * 4096 * 24576;
        k[2 * i] = (krec){step, 8, 100 + 37 * (uint32_t)i, (100 + 37 * i) * 5e-6 + bytes / 3.9e12, 0,
                          (uint64_t)(bytes / 2), (uint64_t)(bytes / 2)};
        k[2 * i + 1] = (krec){step, 3, 64, flops / 8e14 / 0.7 + 64 * 5e-6, flops, 1000, 1000};
    }
#define F(T, f, t) {#f, t, offsetof(T, f), "", NULL}
    static const dkv_h5_field sf[] = {F(srec, index, DKV_H5_U64), F(srec, q_tokens, DKV_H5_U64),
                                      F(srec, logit_rows, DKV_H5_U64), F(srec, pcie_h2d_bytes, DKV_H5_U64),
                                      F(srec, pcie_d2h_bytes, DKV_H5_U64), F(srec, pcie_s, DKV_H5_F64)};
    static const dkv_h5_field kf[] = {F(krec, step_index, DKV_H5_U64), F(krec, kind, DKV_H5_U32),
                                      F(krec, n_launches, DKV_H5_U32), F(krec, time_s, DKV_H5_F64),
                                      F(krec, flops, DKV_H5_F64), F(krec, read_bytes, DKV_H5_U64),
                                      F(krec, write_bytes, DKV_H5_U64)};
#undef F
    dkv_h5_table *t;
    assert_int_equal(dkv_h5_table_create(run, "steps", sizeof *s, sf, 6, &t, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_append(t, s + (8 - g_nsteps), (size_t)g_nsteps, &err), DKV_OK);
    if (kernels) {   /* steps 7 - i for i < 8; with fewer steps the highest step indices are dropped */
        assert_int_equal(dkv_h5_table_create(run, "kernels", sizeof *k, kf, 7, &t, &err), DKV_OK);
        assert_int_equal(dkv_h5_table_append(t, k + 2 * (8 - g_nsteps), 2 * (size_t)g_nsteps, &err), DKV_OK);
    }
    assert_int_equal(dkv_h5_run_end(run, &err), DKV_OK);
}

static void test_runs_and_preset(void **state)
{
    fx *x = *state;
    dkv_err err = {0};
    dkv_h5 *f;
    assert_int_equal(dkv_h5_create(x->path[H5], &f, &err), DKV_OK);
    write_run(f, "fit:a", "h200", 4, true);
    write_run(f, "fit:b", "h200", 9, true);
    write_run(f, "nokernels", "h200", 4, false);
    write_run(f, "other-gpu", "a100-80g", 4, true);
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);
    FILE *t = fopen(x->path[TXT], "w");
    fputs("# run_bytes read_GBps\nrun      16    560.0\nrun     256   3760.0\nrun    4096   3880.0\n"
          "contiguous_ref 4400.0\nattn llada T=768 layout=tmajor ...\n", t);
    fclose(t);

    dkv_calib *c;
    assert_int_equal(dkv_calib_new(&c, &err), DKV_OK);
    dkv_calib_result r;
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_EINVAL);
    assert_int_equal(dkv_h5_open_read(x->path[H5], &f, &err), DKV_OK);
    assert_int_equal(dkv_calib_add_run(c, f, "nokernels", &err), DKV_ENOENT);
    assert_non_null(strstr(err.msg, "record = {kernels = true}"));
    assert_int_equal(dkv_calib_add_run(c, f, "fit:a", &err), DKV_OK);
    assert_int_equal(dkv_calib_add_run(c, f, "fit:b", &err), DKV_OK);
    assert_int_equal(dkv_calib_add_run(c, f, "other-gpu", &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "a100-80g"));
    dkv_h5_close(f, NULL);
    assert_int_equal(dkv_calib_add_bwcurve(c, x->path[TXT], &err), DKV_OK);
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_string_equal(r.base, "h200");
    assert_float_equal(r.hbm_bw, 4e12, 0);
    assert_true(r.launch_ok);
    assert_float_equal(r.launch_overhead_s / 5e-6, 1, 1e-6);
    assert_float_equal(r.stream_bw / 3.9e12, 1, 1e-6);
    assert_true(r.gemm_ok);
    assert_float_equal(r.gemm_eff, 0.7, 1e-6);
    assert_int_equal(r.n_shapes, 4);   /* M = 512 .. 4096: buckets [512,1024), [1024,2048), [2048,4096), [4096,8192) */
    assert_true(r.h2d_ok && !r.d2h_ok && !r.bidir_ok);
    assert_float_equal(r.pcie_h2d / 50e9, 1, 1e-9);
    assert_true(r.bw_ok);
    assert_int_equal(r.n_curve, 3);
    assert_float_equal(r.curve_eff[1], 3760e9 / 4e12, 1e-12);

    assert_int_equal(dkv_calib_write_preset(c, &r, x->path[PRESET], "h200-cal", "dkv calibrate m.h5", "abc123", &err),
                     DKV_OK);
    FILE *p = fopen(x->path[PRESET], "r");
    assert_non_null(p);
    char line[512];
    int raw_k = 0, raw_p = 0, raw_b = 0;
    bool base = false, name = false, launch = false, curve = false, h2d = false, d2h = false, fp = false,
         date = false, cmd = false;
    char want_fp[20];
    snprintf(want_fp, sizeof want_fp, "%016llx",
             (unsigned long long)dkv_cmp_workload_fingerprint("{workload = {kind = \"fixed\", n = 4, prompt = 512}}"));
    while (fgets(line, sizeof line, p)) {
        raw_k += strncmp(line, "--   k ", 7) == 0;
        raw_p += strncmp(line, "--   p ", 7) == 0;
        raw_b += strncmp(line, "--   b ", 7) == 0;
        base |= strcmp(line, "  base = \"h200\",\n") == 0;
        name |= strcmp(line, "  name = \"h200-cal\",\n") == 0;
        launch |= strncmp(line, "  launch_overhead_s = 5e-06,", 28) == 0;
        curve |= strncmp(line, "  bw_curve = {{16, 0.1400}, {256, 0.9400}, {4096, 0.9700}},", 59) == 0;
        h2d |= strncmp(line, "  pcie_h2d_pinned = 5e+10,", 26) == 0;
        d2h |= strstr(line, "pcie_d2h_pinned = ") != NULL;
        fp |= strstr(line, want_fp) != NULL && strstr(line, "run fit:a") != NULL;
        date |= strncmp(line, "-- date:     20", 15) == 0;
        cmd |= strcmp(line, "-- command:  dkv calibrate m.h5\n") == 0;
    }
    fclose(p);
    assert_int_equal(raw_k, 32);
    assert_int_equal(raw_p, 16);
    assert_int_equal(raw_b, 3);
    assert_true(base && name && launch && curve && h2d && fp && date && cmd);
    assert_false(d2h);   /* not fitted: not written */
    dkv_calib_free(c);
}

/* Per-class fit: time = a * n_sim + b * roof recovered exactly; unpaired and too-few records said. */
static void test_kclass_fit(void **state)
{
    (void)state;
    dkv_calib *c;
    dkv_err err = {0};
    assert_int_equal(dkv_calib_new(&c, &err), DKV_OK);
    assert_int_equal(dkv_calib_set_base(c, "h200", HBM, PEAK, &err), DKV_OK);
    dkv_rng g;
    dkv_rng_seed(&g, 11);
    for (int i = 0; i < 40; i++) {   /* attention: 12 us per launch, 2.5x its roofline */
        uint32_t n = 10 + (uint32_t)dkv_rng_below(&g, 200);
        double roof = 1e-4 * (1 + 20 * dkv_rng_uniform(&g));
        dkv_calib_kernel k = {.kind = 1, .n_launches = n, .time_s = 12e-6 * n + 2.5 * roof};
        assert_int_equal(dkv_calib_add_kernel_pair(c, &k, n, roof, &err), DKV_OK);
    }
    dkv_calib_kernel one = {.kind = 3, .n_launches = 64, .time_s = 1e-3};
    assert_int_equal(dkv_calib_add_kernel_pair(c, &one, 64, 8e-4, &err), DKV_OK);
    dkv_calib_kernel lone = {.kind = 6, .n_launches = 5, .time_s = 2e-4};   /* the simulator has none */
    assert_int_equal(dkv_calib_add_kernel_pair(c, &lone, 0, 0, &err), DKV_OK);
    assert_int_equal(dkv_calib_add_kernel_pair(c, &lone, 0, 0, &err), DKV_OK);
    dkv_calib_result r;
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_int_equal(r.n_paired, 43);
    assert_true(r.kclass_ok[1]);
    assert_int_equal(r.kclass_n[1], 40);
    assert_float_equal(r.kclass_launch_s[1] / 12e-6, 1, 1e-9);
    assert_float_equal(r.kclass_scale[1], 2.5, 1e-9);
    assert_true(r.kclass_rms_rel[1] < 1e-9);
    assert_false(r.kclass_ok[3]);
    assert_non_null(strstr(r.kclass_why[3], "1 paired records"));
    assert_false(r.kclass_ok[6]);
    assert_int_equal(r.kclass_unpaired[6], 2);
    assert_non_null(strstr(r.kclass_why[6], "costs none"));
    assert_false(r.kclass_ok[0]);
    assert_int_equal(r.kclass_why[0][0], '\0');   /* no records: nothing to say */
    dkv_calib_free(c);
}

/* A measured run paired with its simulated twin from a file: identical records fit scale 1 and the
 * simulated run's launch overhead; the preset gets a kclass table; bad twins are refused. */
static void test_kclass_pair_runs(void **state)
{
    fx *x = *state;
    dkv_err err = {0};
    dkv_h5 *f, *s;
    char sim[128];
    snprintf(sim, sizeof sim, "%s/sim.h5", x->dir);
    assert_int_equal(dkv_h5_create(x->path[H5], &f, &err), DKV_OK);
    write_run(f, "p:real", "h200", 4, true);
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);
    assert_int_equal(dkv_h5_create(sim, &s, &err), DKV_OK);
    write_run(s, "p:sim", "h200", 4, true);
    g_gpu_extra = ", kclass = {attn = {launch_s = 1e-05, scale = 2.0}}";
    write_run(s, "cal:sim", "h200", 4, true);
    g_gpu_extra = "";
    g_nsteps = 5;
    write_run(s, "short:sim", "h200", 4, true);
    g_nsteps = 8;
    assert_int_equal(dkv_h5_close(s, &err), DKV_OK);

    dkv_calib *c;
    assert_int_equal(dkv_calib_new(&c, &err), DKV_OK);
    assert_int_equal(dkv_h5_open_read(x->path[H5], &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_open_read(sim, &s, &err), DKV_OK);
    assert_int_equal(dkv_calib_pair_sim(c, s, "p:sim", &err), DKV_EINVAL);   /* nothing to pair with yet */
    assert_non_null(strstr(err.msg, "right after its measured run"));
    assert_int_equal(dkv_calib_add_run(c, f, "p:real", &err), DKV_OK);
    assert_int_equal(dkv_calib_pair_sim(c, s, "cal:sim", &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "calibrated preset (gpu.kclass.attn"));
    assert_int_equal(dkv_calib_pair_sim(c, s, "short:sim", &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "6 of 16 measured records are in steps the simulated run lacks"));
    assert_int_equal(dkv_calib_pair_sim(c, s, "p:sim", &err), DKV_OK);
    dkv_h5_close(s, NULL);
    dkv_h5_close(f, NULL);
    dkv_calib_result r;
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_int_equal(r.n_paired, 16);
    for (int k = 3; k <= 8; k += 5) {   /* FFN (3) and elementwise (8) */
        assert_true(r.kclass_ok[k]);
        assert_float_equal(r.kclass_scale[k], 1.0, 1e-9);
        assert_float_equal(r.kclass_launch_s[k] / 4e-6, 1.0, 1e-6);
    }
    assert_int_equal(dkv_calib_write_preset(c, &r, x->path[PRESET], "h200-cal", "dkv calibrate --sim", NULL, &err), DKV_OK);
    FILE *p = fopen(x->path[PRESET], "r");
    assert_non_null(p);
    char line[512];
    bool table = false, ffn = false, el = false;
    int raw = 0;
    while (fgets(line, sizeof line, p)) {
        table |= strcmp(line, "  kclass = {\n") == 0;
        ffn |= strcmp(line, "    ffn = {scale = 1, launch_s = 4e-06},\n") == 0;
        el |= strcmp(line, "    elementwise = {scale = 1, launch_s = 4e-06},\n") == 0;
        unsigned st, kind, n, ns;
        double t, fl, by, m, roof;
        raw += sscanf(line, "--   k 1 %u %u %u %lf %lf %lf %lf %u %lf", &st, &kind, &n, &t, &fl, &by, &m, &ns, &roof) == 9;
    }
    fclose(p);
    assert_true(table && ffn && el);
    assert_int_equal(raw, 16);
    dkv_calib_free(c);
}

static void test_nothing_fitted_nothing_written(void **state)
{
    fx *x = *state;
    dkv_calib *c;
    dkv_err err = {0};
    assert_int_equal(dkv_calib_new(&c, &err), DKV_OK);
    assert_int_equal(dkv_calib_set_base(c, "h200", HBM, PEAK, &err), DKV_OK);
    dkv_calib_kernel k = {.kind = 8, .n_launches = 3, .bytes = 1e6, .time_s = 1e-5};
    assert_int_equal(dkv_calib_add_kernel(c, &k, &err), DKV_OK);   /* one point: not enough */
    dkv_calib_result r;
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_false(r.launch_ok);
    assert_int_equal(dkv_calib_write_preset(c, &r, x->path[PRESET], "h200-cal", "cmd", NULL, &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "no preset written"));
    struct stat sb;
    assert_int_not_equal(stat(x->path[PRESET], &sb), 0);
    /* a bad bwcurve file */
    FILE *t = fopen(x->path[TXT], "w");
    fputs("# run_bytes read_GBps\nrun 16 560.0\nrun abc 3.0\n", t);
    fclose(t);
    assert_int_equal(dkv_calib_add_bwcurve(c, x->path[TXT], &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, ":3: "));
    t = fopen(x->path[TXT], "w");
    fputs("nothing here\n", t);
    fclose(t);
    assert_int_equal(dkv_calib_add_bwcurve(c, x->path[TXT], &err), DKV_EFORMAT);
    assert_int_equal(dkv_calib_fit(c, &r, &err), DKV_OK);
    assert_int_equal(r.bw_n_raw, 0);   /* the failed file added nothing */
    dkv_calib_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_and_stream),
        cmocka_unit_test(test_gemm_by_shape),
        cmocka_unit_test(test_bw_curve),
        cmocka_unit_test(test_pcie),
        cmocka_unit_test_setup_teardown(test_runs_and_preset, setup, teardown),
        cmocka_unit_test(test_kclass_fit),
        cmocka_unit_test_setup_teardown(test_kclass_pair_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_fitted_nothing_written, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
