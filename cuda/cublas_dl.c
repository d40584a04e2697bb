/* cublas_dl.c - cuBLAS and cuBLASLt, loaded when the CUDA backend first needs them (cublas_dl.h).
 *
 * dkv used to link libcublasLt and libcublas.  Loading libcublasLt (540 MB, 400,000 relocations)
 * costs every process about 0.4 s before main, whether it runs on the GPU or not: `dkv --version`
 * took 0.39-0.41 s on the 2-core CI machine, and the test suite starts dkv about 700 times.  So
 * dkv defines the 21 entry points the backend calls (the names the headers declare, checked
 * against their prototypes by the compiler), and each loads both libraries on the first call,
 * once per process (pthread_once), resolves every entry point, and calls through.
 * dkv_cuda_ctx_new calls dkv_cublas_open first, so a missing library is a clear error there
 * rather than a failed status later. */
#include "cuda/cublas_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define DKV_STR_(x) #x
#define DKV_STR(x) DKV_STR_(x)
/* libcublasLt.so.13 with CUDA 13's headers: the major version the backend was compiled against */
#define DKV_CUBLASLT_SONAME "libcublasLt.so." DKV_STR(CUBLAS_VER_MAJOR)
#define DKV_CUBLAS_SONAME "libcublas.so." DKV_STR(CUBLAS_VER_MAJOR)

/* X(library index, name): 0 cuBLASLt, 1 cuBLAS (the symbol names; cublas_v2.h maps cublasCreate to
 * cublasCreate_v2 and so on) */
#define DKV_CUBLAS_FNS(X)                                                                                         \
    X(0, cublasLtCreate) X(0, cublasLtDestroy) X(0, cublasLtMatmul) X(0, cublasLtMatmulAlgoCheck)                 \
    X(0, cublasLtMatmulAlgoGetHeuristic) X(0, cublasLtMatmulDescCreate) X(0, cublasLtMatmulDescDestroy)           \
    X(0, cublasLtMatmulDescSetAttribute) X(0, cublasLtMatmulPreferenceCreate)                                     \
    X(0, cublasLtMatmulPreferenceDestroy) X(0, cublasLtMatmulPreferenceSetAttribute)                              \
    X(0, cublasLtMatrixLayoutCreate) X(0, cublasLtMatrixLayoutDestroy) X(1, cublasCreate_v2)                      \
    X(1, cublasDestroy_v2) X(1, cublasGemmEx) X(1, cublasGemmStridedBatchedEx) X(1, cublasSetMathMode)           \
    X(1, cublasSetStream_v2) X(1, cublasSetWorkspace_v2) X(1, cublasSgemmStridedBatched)

enum {
#define DKV_FN_ENUM(lib, name) FN_##name,
    DKV_CUBLAS_FNS(DKV_FN_ENUM)
#undef DKV_FN_ENUM
    FN_COUNT
};

static const char *const fn_names[FN_COUNT] = {
#define DKV_FN_NAME(lib, name) #name,
    DKV_CUBLAS_FNS(DKV_FN_NAME)
#undef DKV_FN_NAME
};
static const int fn_lib[FN_COUNT] = {
#define DKV_FN_LIB(lib, name) lib,
    DKV_CUBLAS_FNS(DKV_FN_LIB)
#undef DKV_FN_LIB
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void          *fns[FN_COUNT];
static int            loaded;          /* set by load_default, read after pthread_once */
static char           load_msg[512];   /* why loading failed */

/* Opens the two libraries under these names and resolves every entry point into `out`; on failure
 * writes what and why into msg and closes what it opened. */
static int load_libs(const char *lt_name, const char *blas_name, void **out, char *msg, size_t msg_len)
{
    const char *names[2] = {lt_name, blas_name};
    void *h[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        h[i] = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h[i]) {
            const char *why = dlerror();
            snprintf(msg, msg_len, "cannot load %s (%s)", names[i], why ? why : "dlopen failed");
            goto fail;
        }
    }
    for (int f = 0; f < FN_COUNT; f++) {
        out[f] = dlsym(h[fn_lib[f]], fn_names[f]);
        if (!out[f]) {
            snprintf(msg, msg_len, "%s has no %s (a cuBLAS older than the headers dkv was built with?)",
                     names[fn_lib[f]], fn_names[f]);
            goto fail;
        }
    }
    return 1;   /* the handles stay open for the process's life */
fail:
    for (int i = 0; i < 2; i++)
        if (h[i])
            dlclose(h[i]);
    memset(out, 0, FN_COUNT * sizeof *out);
    return 0;
}

static void load_default(void)
{
    loaded = load_libs(DKV_CUBLASLT_SONAME, DKV_CUBLAS_SONAME, fns, load_msg, sizeof load_msg);
}

dkv_status dkv_cublas_open(dkv_err *err)
{
    pthread_once(&once, load_default);
    if (loaded)
        return DKV_OK;
    return dkv_err_set(err, DKV_ENODEV, "cuBLAS: %s; the CUDA backend needs the CUDA %d toolkit's %s and %s "
                       "(LD_LIBRARY_PATH or ld.so.conf)", load_msg, CUBLAS_VER_MAJOR, DKV_CUBLASLT_SONAME,
                       DKV_CUBLAS_SONAME);
}

dkv_status dkv_cublas_try_load(const char *lt_name, const char *blas_name, dkv_err *err)
{
    void *tmp[FN_COUNT];
    char msg[512];
    if (!load_libs(lt_name, blas_name, tmp, msg, sizeof msg))
        return dkv_err_set(err, DKV_ENODEV, "cuBLAS: %s", msg);
    return DKV_OK;   /* nothing is kept: the process's own entry points load on their first call */
}

/* The entry points.  Each one makes sure the libraries are loaded (a failed load answers
 * CUBLAS_STATUS_NOT_INITIALIZED, which every caller reports as a failed cuBLAS call) and calls the
 * library's function.  `__typeof__(&name)` is the pointer type of the header's own prototype. */
#define DKV_CALL(name, args)                                                                                      \
    do {                                                                                                          \
        pthread_once(&once, load_default);                                                                        \
        if (!loaded)                                                                                              \
            return CUBLAS_STATUS_NOT_INITIALIZED;                                                                 \
        return ((__typeof__(&name))fns[FN_##name])args;                                                           \
    } while (0)

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) { DKV_CALL(cublasLtCreate, (h)); }
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) { DKV_CALL(cublasLtDestroy, (h)); }

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,
                              const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo, void *ws,
                              size_t ws_bytes, cudaStream_t stream)
{
    DKV_CALL(cublasLtMatmul, (h, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, ws, ws_bytes,
                              stream));
}

cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
                                       cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
                                       cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
                                       cublasLtMatmulHeuristicResult_t *result)
{
    DKV_CALL(cublasLtMatmulAlgoCheck, (h, desc, Adesc, Bdesc, Cdesc, Ddesc, algo, result));
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int *returned)
{
    DKV_CALL(cublasLtMatmulAlgoGetHeuristic, (h, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requested, results,
                                              returned));
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t compute,
                                        cudaDataType_t scale)
{
    DKV_CALL(cublasLtMatmulDescCreate, (desc, compute, scale));
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) { DKV_CALL(cublasLtMatmulDescDestroy, (desc)); }

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t bytes)
{
    DKV_CALL(cublasLtMatmulDescSetAttribute, (desc, attr, buf, bytes));
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
    DKV_CALL(cublasLtMatmulPreferenceCreate, (pref));
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
    DKV_CALL(cublasLtMatmulPreferenceDestroy, (pref));
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t bytes)
{
    DKV_CALL(cublasLtMatmulPreferenceSetAttribute, (pref, attr, buf, bytes));
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld)
{
    DKV_CALL(cublasLtMatrixLayoutCreate, (layout, type, rows, cols, ld));
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout)
{
    DKV_CALL(cublasLtMatrixLayoutDestroy, (layout));
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) { DKV_CALL(cublasCreate_v2, (h)); }
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) { DKV_CALL(cublasDestroy_v2, (h)); }

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    DKV_CALL(cublasGemmEx, (h, ta, tb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, compute,
                            algo));
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
                                          long long int sA, const void *B, cudaDataType Btype, int ldb,
                                          long long int sB, const void *beta, void *C, cudaDataType Ctype, int ldc,
                                          long long int sC, int batch, cublasComputeType_t compute,
                                          cublasGemmAlgo_t algo)
{
    DKV_CALL(cublasGemmStridedBatchedEx, (h, ta, tb, m, n, k, alpha, A, Atype, lda, sA, B, Btype, ldb, sB, beta, C,
                                          Ctype, ldc, sC, batch, compute, algo));
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) { DKV_CALL(cublasSetMathMode, (h, mode)); }
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) { DKV_CALL(cublasSetStream_v2, (h, s)); }

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *ws, size_t bytes)
{
    DKV_CALL(cublasSetWorkspace_v2, (h, ws, bytes));
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long int sA,
                                         const float *B, int ldb, long long int sB, const float *beta, float *C,
                                         int ldc, long long int sC, int batch)
{
    DKV_CALL(cublasSgemmStridedBatched, (h, ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch));
}
