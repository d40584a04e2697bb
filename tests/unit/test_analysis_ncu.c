/* test_analysis_ncu.c - analysis/ncu.h on CSV files written here in the shape `ncu --csv` prints: parsing
 * (program output before the header, quoting, thousands separators, unit conversion), the
 * kernel classes (dkv kernels by name, cuBLAS/CUTLASS GEMMs by launch order, a split-K
 * reduction, unknown and setup kernels: the weights' fill and the L2 flush diagnostic, which the GEMM after
 * it does not see), per-class totals, errors naming file:line, and the
 * import into a run of a results file (other runs kept, re-import refused unless replaced). */
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

#include "analysis/ncu.h"
#include "test_tmpdir.h"

/* The scratch folder and the files written in it (test_tmpdir.h). */
typedef test_files fx;
enum { CSV, H5 };

static int setup(void **state)
{
    static const char *const names[] = {"ncu.csv", "r.h5"};
    return test_files_setup(state, "ncu", names, 2);
}

static int teardown(void **state)
{
    return test_files_teardown(state);
}

#define HEADER                                                                                                       \
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","    \
    "\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"

/* One kernel's three metric rows. */
static void kernel(FILE *f, int id, const char *name, const char *rd_unit, const char *rd, const char *wr_unit,
                   const char *wr, const char *t_unit, const char *t)
{
    const char *m[3][3] = {{"dram__bytes_read.sum", rd_unit, rd}, {"dram__bytes_write.sum", wr_unit, wr},
                           {"gpu__time_duration.sum", t_unit, t}};
    for (int i = 0; i < 3; i++)
        fprintf(f, "\"%d\",\"4242\",\"dkv\",\"127.0.0.1\",\"%s\",\"1\",\"7\",\"(128, 1, 1)\",\"(132, 1, 1)\",\"0\","
                   "\"9.0\",\"Command line profiler metrics\",\"%s\",\"%s\",\"%s\"\n",
                id, name, m[i][0], m[i][1], m[i][2]);
}

/* One step of a one-layer model: what cuda/backend_fwd.c launches, with cuBLAS kernel names. */
static const struct { const char *name; uint32_t kind; uint8_t rule; } STEP[] = {
    {"void fill_random_kernel<__nv_bfloat16>(__nv_bfloat16 *, unsigned long, unsigned long)", 11, 0},
    {"reset_kernel(dkv_bk_item *, unsigned int, unsigned int)", 8, 0},
    {"embedding_kernel(__nv_bfloat16 *, const unsigned int *, const __nv_bfloat16 *, unsigned int)", 8, 0},
    {"rmsnorm_kernel(__nv_bfloat16 *, const __nv_bfloat16 *, const __nv_bfloat16 *, unsigned int, float)", 8, 0},
    {"nvjet_tst_128x64_64x8_1x1_v_bz_TNN", 0, 1},                                   /* QKV */
    {"void rope_store_kernel<128>(rope_store_params)", 5, 0},
    {"void flash_kernel<128, 4, 2>(attn_params)", 1, 0},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1", 2, 1},   /* O */
    {"rmsnorm_kernel(__nv_bfloat16 *, const __nv_bfloat16 *, const __nv_bfloat16 *, unsigned int, float)", 8, 0},
    {"flush_kernel(const uint4 *, unsigned long, uint4 *)", 11, 0},   /* the l2_flush diagnostic: setup, skipped */
    {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(Params)", 3, 1},
    {"swiglu_kernel(__nv_bfloat16 *, const __nv_bfloat16 *, const __nv_bfloat16 *, unsigned int, unsigned int)", 8, 0},
    {"void gemmSN_TN_kernel<float, 128, 16, 2, 4, 8, 9, false>(cublasGemmSmallNParams)", 3, 1},   /* FFN down */
    {"void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>(Params)", 3, 1},   /* its reduction */
    {"mystery_kernel(int)", 10, 2},
    {"rmsnorm_kernel(__nv_bfloat16 *, const __nv_bfloat16 *, const __nv_bfloat16 *, unsigned int, float)", 8, 0},
    {"nvjet_tst_256x128_64x4_2x1_v_bz_TNT", 4, 1},                                   /* LM head */
    {"argmax_conf_kernel(unsigned int *, float *, const __nv_bfloat16 *, unsigned int, unsigned int)", 4, 0},
    {"unmask_kernel(dkv_bk_item *, unsigned int, const unsigned int *, const float *, unsigned int)", 8, 0},
    /* a Refresh layer: selection scores (GQA: one GEMM per KV-head group), then dense attention:
     * scores GEMM, softmax, P.V GEMM, then the O GEMM */
    {"rmsnorm_kernel(__nv_bfloat16 *, const __nv_bfloat16 *, const __nv_bfloat16 *, unsigned int, float)", 8, 0},
    {"void skinny_gemm_kernel<4>(sg_params)", 0, 1},
    {"rope_kernel(__nv_bfloat16 *, unsigned int, const unsigned int *, unsigned int, unsigned int, float)", 8, 0},
    {"sm90_xmma_gemm_bf16bf16_f32f32_f32_nt_n_batched", 6, 1},
    {"sm90_xmma_gemm_bf16bf16_f32f32_f32_nt_n_batched", 6, 1},
    {"row_stats_kernel(const float *, float *, unsigned int, unsigned int)", 6, 0},
    {"void topk_kernel<256>(topk_params)", 6, 0},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize64x64x64_batched", 1, 1},   /* S = Q K^T */
    {"softmax_rows_kernel(__nv_bfloat16 *, const float *, unsigned int)", 1, 0},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize64x64x64_batched", 1, 1},   /* P V */
    {"nvjet_tst_64x64_64x8_1x1_v_bz_TNN", 2, 1},                                    /* O */
    /* the low-rank projection of a compress order: conversions around cuBLAS GEMMs */
    {"bf16_to_f32_kernel(const __nv_bfloat16 *, float *, unsigned long)", 9, 0},
    {"void gemm_kernel<float>(cublasGemmParams)", 9, 1},
    {"void gemm_kernel<float>(cublasGemmParams)", 9, 1},
    {"cholinv_kernel(float *, unsigned int)", 9, 0},
};
#define NSTEP (sizeof STEP / sizeof STEP[0])

static void write_csv(const char *path, const char *extra_line)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("dkv run: starting\n==PROF== Connected to process 4242 (/usr/bin/dkv)\n"
          "==PROF== Profiling \"flash_kernel\" - 0: 0%....50%....100% - 3 passes\nsome, program, output\n", f);
    fputs(HEADER, f);
    for (size_t i = 0; i < NSTEP; i++) {
        if (i == 5)
            fputs("==WARNING== a warning ncu prints between rows\n\n", f);
        /* kernel i: (i+1) Kbyte read, (i+1) * 0.5 Mbyte written, (i+1) usecond */
        char rd[32], wr[32], t[32];
        snprintf(rd, sizeof rd, "%zu", i + 1);
        snprintf(wr, sizeof wr, "%.1f", 0.5 * (double)(i + 1));
        snprintf(t, sizeof t, "%zu", i + 1);
        kernel(f, (int)i, STEP[i].name, "Kbyte", rd, "Mbyte", wr, "usecond", t);
    }
    /* units and separators: 1,234,567 byte read, 2 Gbyte written, 1,500 nsecond */
    kernel(f, (int)NSTEP, "kv_reorder_kernel(kv_reorder_params)", "byte", "1,234,567", "Gbyte", "2", "nsecond",
           "1,500");
    if (extra_line)
        fputs(extra_line, f);
    fclose(f);
}

static void test_parse_and_classify(void **state)
{
    fx *x = *state;
    write_csv(x->path[CSV], NULL);
    dkv_ncu_kernel *k;
    size_t n;
    dkv_err err = {0};
    assert_int_equal(dkv_ncu_read(x->path[CSV], &k, &n, &err), DKV_OK);
    assert_int_equal(n, NSTEP + 1);
    for (size_t i = 0; i < NSTEP; i++) {
        assert_int_equal(k[i].id, i);
        if (k[i].kind != STEP[i].kind || k[i].rule != STEP[i].rule)
            fail_msg("kernel %zu (%s): class %u rule %u, expected %u rule %u", i, k[i].name, k[i].kind, k[i].rule,
                     STEP[i].kind, STEP[i].rule);
        assert_float_equal(k[i].read_bytes, 1e3 * (double)(i + 1), 1e-6);
        assert_float_equal(k[i].write_bytes, 0.5e6 * (double)(i + 1), 1e-6);
        assert_float_equal(k[i].time_s, 1e-6 * (double)(i + 1), 1e-15);
    }
    assert_string_equal(k[6].name, "flash_kernel");
    assert_string_equal(k[9].name, "flush_kernel");
    assert_string_equal(k[10].name, "Kernel2");
    assert_int_equal(k[10].gemm, 1);
    assert_int_equal(k[6].gemm, 0);
    dkv_ncu_kernel *r = &k[NSTEP];
    assert_string_equal(r->name, "kv_reorder_kernel");
    assert_int_equal(r->kind, 7);
    assert_float_equal(r->read_bytes, 1234567, 0);
    assert_float_equal(r->write_bytes, 2e9, 0);
    assert_float_equal(r->time_s, 1.5e-6, 1e-18);

    dkv_ncu_class_total tot[DKV_NCU_NTOTALS];
    dkv_ncu_totals(k, n, tot);
    double rd[DKV_NCU_NTOTALS] = {0};
    uint64_t cnt[DKV_NCU_NTOTALS] = {0};
    for (size_t i = 0; i < NSTEP; i++)
        rd[STEP[i].kind] += 1e3 * (double)(i + 1), cnt[STEP[i].kind]++;
    for (int c = 0; c < DKV_NCU_NTOTALS; c++) {
        assert_int_equal(tot[c].kind, c);
        assert_int_equal(tot[c].n_kernels, cnt[c] + (c == 7));
        assert_float_equal(tot[c].read_bytes, rd[c] + (c == 7 ? 1234567 : 0), 1e-6);
    }
    free(k);
}

static void test_base_names(void **state)
{
    (void)state;
    char b[32];
    dkv_ncu_base_name("void flash_kernel<128, 4>(attn_params)", b, sizeof b);
    assert_string_equal(b, "flash_kernel");
    dkv_ncu_base_name("void cutlass::Kernel2<cutlass::gemm::kernel::GemmUniversal<A, B>>(Params)", b, sizeof b);
    assert_string_equal(b, "Kernel2");
    dkv_ncu_base_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1", b, sizeof b);
    assert_int_equal(strlen(b), 31);   /* cut */
    assert_int_equal(strncmp(b, "sm90_xmma_gemm_", 15), 0);
    dkv_ncu_base_name("(anonymous namespace)::k(int)", b, sizeof b);
    assert_string_equal(b, "k");
    dkv_ncu_base_name("plain", b, sizeof b);
    assert_string_equal(b, "plain");
}

static void expect_error(fx *x, const char *extra, const char *needle)
{
    write_csv(x->path[CSV], extra);
    dkv_ncu_kernel *k = NULL;
    size_t n = 7;
    dkv_err err = {0};
    assert_int_equal(dkv_ncu_read(x->path[CSV], &k, &n, &err), DKV_EFORMAT);
    assert_null(k);
    assert_int_equal(n, 0);
    if (!strstr(err.msg, needle) || !strstr(err.msg, x->path[CSV]))
        fail_msg("error '%s' lacks '%s'", err.msg, needle);
}

static void test_malformed(void **state)
{
    fx *x = *state;
    /* the file has 4 lines before the header, 1 header, 2 extra lines, 3 rows per kernel */
    char where[32];
    snprintf(where, sizeof where, ":%zu: ", 4 + 1 + 2 + 3 * (NSTEP + 1) + 1);
    expect_error(x, "\"99\",\"4242\",\"dkv\"\n", where);
    expect_error(x, "\"99\",\"4242\",\"dkv\"\n", "3 fields, the header has 15");
    expect_error(x, "\"99\",\"4242\",\"dkv\",\"h\",\"k(int)\",\"1\",\"7\",\"(1,1,1)\",\"(1,1,1)\",\"0\",\"9.0\",\"S\","
                    "\"gpu__time_duration.sum\",\"fortnight\",\"3\"\n", "unknown unit 'fortnight'");
    expect_error(x, "\"99\",\"4242\",\"dkv\",\"h\",\"k(int)\",\"1\",\"7\",\"(1,1,1)\",\"(1,1,1)\",\"0\",\"9.0\",\"S\","
                    "\"dram__bytes_read.sum\",\"byte\",\"12x\"\n", "is not a number");
    expect_error(x, "\"99\",\"4242\",\"dkv\",\"h\",\"k(int)\",\"1\",\"7\",\"(1,1,1)\",\"(1,1,1)\",\"0\",\"9.0\",\"S,"
                    "\"dram__bytes_read.sum\",\"byte\",\"12\n", "quoted field");
    /* no header at all */
    FILE *f = fopen(x->path[CSV], "w");
    fputs("==PROF== Disconnected\nno csv here\n", f);
    fclose(f);
    dkv_ncu_kernel *k;
    size_t n;
    dkv_err err = {0};
    assert_int_equal(dkv_ncu_read(x->path[CSV], &k, &n, &err), DKV_EFORMAT);
    assert_non_null(strstr(err.msg, "no ncu CSV header"));
    assert_int_equal(dkv_ncu_read("/nonexistent/ncu.csv", &k, &n, &err), DKV_ENOENT);
    /* issue 12 defect 11: a header whose first field is not exactly "ID" ("ID""" is ID") left the ID
     * column at -1, and every row read f[-1]; an ID of 1e79 was cast to uint64 (undefined) */
    f = fopen(x->path[CSV], "w");
    fputs("\"ID\"\"\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
          "\"0\",\"k(int)\",\"dram__bytes_read.sum\",\"byte\",\"12\"\n", f);
    fclose(f);
    k = NULL;
    assert_int_equal(dkv_ncu_read(x->path[CSV], &k, &n, &err), DKV_EFORMAT);
    assert_null(k);
    if (!strstr(err.msg, ":1: CSV header without \"ID\""))
        fail_msg("error '%s' does not name the missing ID column", err.msg);
    const char *ids[] = {"1e79", "18446744073709551616", "inf", "-1", "1.5"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        f = fopen(x->path[CSV], "w");
        fprintf(f, "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
                   "\"%s\",\"k(int)\",\"dram__bytes_read.sum\",\"byte\",\"12\"\n", ids[i]);
        fclose(f);
        assert_int_equal(dkv_ncu_read(x->path[CSV], &k, &n, &err), DKV_EFORMAT);
        if (!strstr(err.msg, ":2: ID '") || !strstr(err.msg, ids[i]) || !strstr(err.msg, "not a launch number"))
            fail_msg("error '%s' for ID %s", err.msg, ids[i]);
    }
    /* n/a is a missing value, not an error; the kernel counts as incomplete */
    write_csv(x->path[CSV], "\"99\",\"4242\",\"dkv\",\"h\",\"rope_kernel(int)\",\"1\",\"7\",\"(1,1,1)\",\"(1,1,1)\",\"0\","
                      "\"9.0\",\"S\",\"dram__bytes_read.sum\",\"byte\",\"n/a\"\n");
    assert_int_equal(dkv_ncu_read(x->path[CSV], &k, &n, &err), DKV_OK);
    assert_true(isnan(k[n - 1].read_bytes) && isnan(k[n - 1].time_s));
    dkv_ncu_class_total tot[DKV_NCU_NTOTALS];
    dkv_ncu_totals(k, n, tot);
    assert_int_equal(tot[8].n_incomplete, 1);
    free(k);
}

static void write_results(const char *path)
{
    dkv_err err = {0};
    dkv_h5 *f;
    dkv_h5_run *run;
    assert_int_equal(dkv_h5_create(path, &f, &err), DKV_OK);
    const char *names[] = {"first", "h200:dual", "last"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(dkv_h5_run_begin(f, names[i], &run, &err), DKV_OK);
        assert_int_equal(dkv_h5_attr_i64(run, "summary", "n_done", 10 + i, &err), DKV_OK);
        assert_int_equal(dkv_h5_run_end(run, &err), DKV_OK);
    }
    assert_int_equal(dkv_h5_close(f, &err), DKV_OK);
}

static void test_import(void **state)
{
    fx *x = *state;
    write_csv(x->path[CSV], NULL);
    write_results(x->path[H5]);
    dkv_err err = {0};
    dkv_ncu_report rep;
    assert_int_equal(dkv_ncu_import(x->path[CSV], x->path[H5], "h200:dual", false, &rep, &err), DKV_OK);
    assert_int_equal(rep.n_kernels, NSTEP + 1);
    assert_int_equal(rep.n_unknown, 1);
    assert_int_equal(rep.n_unknown_names, 1);
    assert_string_equal(rep.unknown[0], "mystery_kernel");
    assert_int_equal(rep.n_gemm_by_order, 14);
    dkv_h5 *f;
    assert_int_equal(dkv_h5_open_read(x->path[H5], &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_count(f), 3);   /* every run kept, in order */
    assert_string_equal(dkv_h5_run_name_at(f, 0), "first");
    assert_string_equal(dkv_h5_run_name_at(f, 2), "last");
    dkv_h5_run *run;
    assert_int_equal(dkv_h5_run_open(f, "h200:dual", &run, &err), DKV_OK);
    int64_t v;
    assert_int_equal(dkv_h5_attr_get_i64(run, "summary", "n_done", &v, &err), DKV_OK);
    assert_int_equal(v, 11);
    dkv_h5_table *t;
    assert_int_equal(dkv_h5_table_open(run, "ncu_kernels", &t, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_nrecords(t), NSTEP + 1);
    dkv_h5_table_close(t);
    assert_int_equal(dkv_h5_table_open(run, "ncu_classes", &t, &err), DKV_OK);
    uint64_t nc = dkv_h5_table_nrecords(t);
    double kind[DKV_NCU_NTOTALS], rd[DKV_NCU_NTOTALS];
    assert_true(nc <= DKV_NCU_NTOTALS);
    assert_int_equal(dkv_h5_table_read_f64(t, "kind", 0, nc, kind, &err), DKV_OK);
    assert_int_equal(dkv_h5_table_read_f64(t, "read_bytes", 0, nc, rd, &err), DKV_OK);
    for (uint64_t i = 0; i < nc; i++)
        assert_float_equal(rd[i], rep.tot[(int)kind[i]].read_bytes, 0);
    dkv_h5_table_close(t);
    char *src;
    assert_int_equal(dkv_h5_attr_get_str(run, "ncu_classes", "source", &src, &err), DKV_OK);
    assert_string_equal(src, x->path[CSV]);
    free(src);
    dkv_h5_run_free(run);
    dkv_h5_close(f, NULL);

    /* again: refused without replace (file unchanged, no temporary left), accepted with it */
    assert_int_equal(dkv_ncu_import(x->path[CSV], x->path[H5], "h200:dual", false, &rep, &err), DKV_EINVAL);
    assert_non_null(strstr(err.msg, "already has 'ncu_kernels'"));
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s.tmp", x->path[H5]);
    struct stat sb;
    assert_int_not_equal(stat(tmp, &sb), 0);
    assert_int_equal(dkv_ncu_import(x->path[CSV], x->path[H5], "h200:dual", true, &rep, &err), DKV_OK);
    assert_int_equal(dkv_ncu_import(x->path[CSV], x->path[H5], "nope", false, &rep, &err), DKV_ENOENT);
    assert_non_null(strstr(err.msg, "no run 'nope'"));
    assert_int_not_equal(stat(tmp, &sb), 0);
    assert_int_equal(dkv_h5_open_read(x->path[H5], &f, &err), DKV_OK);
    assert_int_equal(dkv_h5_run_count(f), 3);
    dkv_h5_close(f, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_parse_and_classify, setup, teardown),
        cmocka_unit_test(test_base_names),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
