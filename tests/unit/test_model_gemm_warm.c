/* test_model_gemm_warm.c - core/model/gemm_warm.h: the CUDA backend's GEMM warm-up row counts and
 * the bucket a row count takes its cuBLASLt algorithm from (without CUDA). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/gemm_warm.h"

static void test_rows(void **state)
{
    (void)state;
    static uint32_t r[DKV_GEMM_WARM_N + 8];
    assert_int_equal(DKV_GEMM_WARM_N, 1024);
    assert_int_equal(dkv_gemm_warm_rows(100000, r, DKV_GEMM_WARM_N + 8), 1024);
    for (uint32_t i = 0; i < 1024; i++)
        assert_int_equal(r[i], 8 * (i + 1));   /* every multiple of 8, 8 to 8,192 */
    assert_int_equal(dkv_gemm_warm_rows(600, r, 1024), 75);
    assert_int_equal(r[74], 600);
    assert_int_equal(dkv_gemm_warm_rows(7, r, 1024), 0);
    assert_int_equal(dkv_gemm_warm_rows(100000, r, 10), 10);   /* at most cap */
    assert_int_equal(r[9], 80);
}

static void test_bucket(void **state)
{
    (void)state;
    static const uint32_t in[][2] = {{1, 8},       {8, 8},       {9, 16},      {32, 32},     {33, 40},
                                     {200, 200},   {401, 408},   {513, 520},   {969, 976},   {2048, 2048},
                                     {2049, 2056}, {3466, 3472}, {8191, 8192}, {8192, 8192}, {8193, 0}};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        assert_int_equal(dkv_gemm_warm_bucket(in[i][0]), in[i][1]);
    /* every bucket is a warm-up row count, the least one >= T */
    static uint32_t r[DKV_GEMM_WARM_N];
    uint32_t n = dkv_gemm_warm_rows(DKV_GEMM_WARM_MAX_ROWS, r, DKV_GEMM_WARM_N);
    for (uint32_t T = 1, j = 0; T <= DKV_GEMM_WARM_MAX_ROWS; T++) {
        while (r[j] < T)
            j++;
        assert_true(j < n);
        assert_int_equal(dkv_gemm_warm_bucket(T), r[j]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_bucket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
