/* cublas_dl.h - cuBLAS and cuBLASLt loaded at their first use (cublas_dl.c), not linked: a dkv process
 * that never touches the GPU does not pay for loading them (0.4 s each start).  The backend calls the
 * libraries' functions by their usual names; these two entry points report why they cannot load. */
#ifndef DKV_CUDA_CUBLAS_DL_H
#define DKV_CUDA_CUBLAS_DL_H

/* cublasLt.h declares cublasLtLoggerForceDisable() without a prototype, which C's -Wstrict-prototypes flags */
#ifndef __cplusplus
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#endif
#include <cublasLt.h>
#ifndef __cplusplus
#pragma GCC diagnostic pop
#endif
#include <cublas_v2.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads libcublasLt.so.N and libcublas.so.N (N: the headers' CUBLAS_VER_MAJOR) once per process and
 * resolves every function the backend calls.  DKV_ENODEV with the loader's reason when either is
 * missing or lacks one of them; every later call then answers the same. */
dkv_status dkv_cublas_open(dkv_err *err);

/* The same load under other file names, kept nowhere (tests: the error a missing library gives). */
dkv_status dkv_cublas_try_load(const char *lt_name, const char *blas_name, dkv_err *err);

#ifdef __cplusplus
}
#endif

#endif
