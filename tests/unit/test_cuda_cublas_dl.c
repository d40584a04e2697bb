/* test_cuda_cublas_dl.c - cuda/cublas_dl.c: cuBLAS and cuBLASLt loaded at first use (no GPU needed).
 *
 * The libraries are found and every entry point the backend calls resolves (the toolkit this build
 * compiled against is installed wherever the CUDA backend is built); host-only cuBLASLt calls go
 * through the loaded library (a descriptor and a layout created and destroyed); a library that is not
 * there, or one that lacks an entry point, is an error naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cuda/cublas_dl.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define LT "libcublasLt.so." STR(CUBLAS_VER_MAJOR)
#define BLAS "libcublas.so." STR(CUBLAS_VER_MAJOR)

static void test_loads_and_calls_through(void **state)
{
    (void)state;
    dkv_err err = {0};
    assert_int_equal(dkv_cublas_try_load(LT, BLAS, &err), DKV_OK);
    assert_int_equal(dkv_cublas_open(&err), DKV_OK);
    /* host-side cuBLASLt objects: the calls reach the library (a stub that did not would answer
     * CUBLAS_STATUS_NOT_INITIALIZED or crash) */
    cublasLtMatmulDesc_t d = NULL;
    assert_int_equal(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
    assert_non_null(d);
    cublasOperation_t t = CUBLAS_OP_T;
    assert_int_equal(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t),
                     CUBLAS_STATUS_SUCCESS);
    /* the library checks the attribute's size: a wrong one is refused by cuBLASLt itself */
    assert_int_not_equal(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, 1), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasLtMatmulDescDestroy(d), CUBLAS_STATUS_SUCCESS);
    cublasLtMatrixLayout_t l = NULL;
    assert_int_equal(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, 64, 32, 64), CUBLAS_STATUS_SUCCESS);
    assert_non_null(l);
    assert_int_equal(cublasLtMatrixLayoutDestroy(l), CUBLAS_STATUS_SUCCESS);
}

static void test_missing_library_is_named(void **state)
{
    (void)state;
    dkv_err err = {0};
    assert_int_equal(dkv_cublas_try_load("libdkv-test-no-such-cublasLt.so.1", BLAS, &err), DKV_ENODEV);
    assert_non_null(strstr(err.msg, "cannot load libdkv-test-no-such-cublasLt.so.1"));
    memset(&err, 0, sizeof err);
    assert_int_equal(dkv_cublas_try_load(LT, "libdkv-test-no-such-cublas.so.1", &err), DKV_ENODEV);
    assert_non_null(strstr(err.msg, "cannot load libdkv-test-no-such-cublas.so.1"));
}

static void test_missing_entry_point_is_named(void **state)
{
    (void)state;
    dkv_err err = {0};
    /* cuBLASLt given as cuBLAS: it has no cublasCreate_v2 */
    assert_int_equal(dkv_cublas_try_load(LT, LT, &err), DKV_ENODEV);
    assert_non_null(strstr(err.msg, LT " has no cublasCreate_v2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loads_and_calls_through),
        cmocka_unit_test(test_missing_library_is_named),
        cmocka_unit_test(test_missing_entry_point_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
