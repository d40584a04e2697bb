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
    uint32_t r[128];
    assert_int_equal(dkv_gemm_warm_rows(100000, r, 128), 82);
    assert_int_equal(r[0], 8);
    assert_int_equal(r[3], 32);
    assert_int_equal(r[4], 48);     /* by 16 from 32 */
    assert_int_equal(r[34], 576);   /* by 64 from 512 */
    assert_int_equal(r[81], 8192);
    for (int i = 1; i < 82; i++)
        assert_true(r[i] > r[i - 1]);
    assert_int_equal(dkv_gemm_warm_rows(600, r, 128), 35);
    assert_int_equal(dkv_gemm_warm_rows(7, r, 128), 0);
    assert_int_equal(dkv_gemm_warm_rows(100000, r, 10), 10);   /* at most cap */
    assert_int_equal(r[9], 128);
}

static void test_bucket(void **state)
{
    (void)state;
    static const uint32_t in[][2] = {{1, 8},       {8, 8},       {9, 16},      {32, 32},     {33, 48},
                                     {200, 208},   {512, 512},   {513, 576},   {969, 1024},  {2048, 2048},
                                     {2049, 2304}, {3466, 3584}, {8191, 8192}, {8192, 8192}, {8193, 0}};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        assert_int_equal(dkv_gemm_warm_bucket(in[i][0]), in[i][1]);
    /* every bucket is a warm-up row count, the least one >= T */
    uint32_t r[128], n = dkv_gemm_warm_rows(DKV_GEMM_WARM_MAX_ROWS, r, 128);
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
