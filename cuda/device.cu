/* device.cu - probing the GPU and the device context (streams, cuBLASLt handle, workspace). */
#include <stdio.h>
#include <stdlib.h>

#include "cuda/common.cuh"
#include "cuda/cublas_dl.h"
#include "cuda/ctx_internal.h"
#include "model/devmem.h"

extern "C" dkv_status dkv_cuda_probe(char *desc, size_t desc_len, dkv_err *err)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        return dkv_err_set(err, DKV_ENODEV, "no CUDA device (%s: %s)", cudaGetErrorName(e), cudaGetErrorString(e));
    if (n == 0)
        return dkv_err_set(err, DKV_ENODEV, "no CUDA device (the driver reports 0 devices)");
    cudaDeviceProp p;
    e = cudaGetDeviceProperties(&p, 0);
    if (e != cudaSuccess)
        return dkv_err_set(err, DKV_ENODEV, "no usable CUDA device (%s)", cudaGetErrorString(e));
    if (desc && desc_len)
        snprintf(desc, desc_len, "%s, sm_%d%d, %d SMs, %.0f MiB L2, %.1f GiB", p.name, p.major, p.minor,
                 p.multiProcessorCount, p.l2CacheSize / 1048576.0, p.totalGlobalMem / 1073741824.0);
    if (p.major < 9)
        return dkv_err_set(err, DKV_ENODEV, "device 0 is sm_%d%d; dkv's kernels are built for sm_90", p.major,
                           p.minor);
    return DKV_OK;
}

extern "C" void dkv_cuda_versions(char *out, size_t out_len)
{
    int drv = 0, rt = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess)
        drv = 0;
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess)
        rt = 0;
    if (out && out_len)
        snprintf(out, out_len, "driver %d.%d, runtime %d.%d", drv / 1000, (drv % 1000) / 10, rt / 1000,
                 (rt % 1000) / 10);
}

extern "C" dkv_status dkv_cuda_ctx_new(int device, dkv_cuda_ctx **out, dkv_err *err)
{
    *out = NULL;
    dkv_cuda_ctx *c = (dkv_cuda_ctx *)calloc(1, sizeof *c);
    if (!c)
        return dkv_err_set(err, DKV_ENOMEM, "dkv_cuda_ctx_new: out of host memory");
    c->device = device;
    c->lt_ws_bytes = DKV_DEVMEM_CUBLASLT_WS_BYTES;
    dkv_status st = dkv_cublas_open(err);   /* loaded here, not when dkv starts (cublas_dl.h) */
    cublasStatus_t bs;
    if (st != DKV_OK)
        goto fail;
    DKV_CU_OR(st, cudaSetDevice(device), fail);
    DKV_CU_OR(st, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), fail);
    DKV_CU_OR(st, cudaStreamCreateWithFlags(&c->copy, cudaStreamNonBlocking), fail);
    DKV_CU_OR(st, cudaMalloc(&c->lt_ws, c->lt_ws_bytes), fail);
    bs = cublasLtCreate(&c->lt);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        st = dkv_err_set(err, DKV_EIO, "dkv_cuda_ctx_new: cublasLtCreate failed (status %d)", (int)bs);
        goto fail;
    }
    if (cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(c->blas, c->stream) != CUBLAS_STATUS_SUCCESS ||
        cublasSetWorkspace(c->blas, c->lt_ws, c->lt_ws_bytes) != CUBLAS_STATUS_SUCCESS) {
        st = dkv_err_set(err, DKV_EIO, "dkv_cuda_ctx_new: cuBLAS handle set-up failed");
        goto fail;
    }
    *out = c;
    return DKV_OK;
fail:
    dkv_cuda_ctx_free(c);
    return st;
}

extern "C" void dkv_cuda_ctx_free(dkv_cuda_ctx *c)
{
    if (!c)
        return;
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    if (c->copy)
        cudaStreamSynchronize(c->copy);
    dkv_gemm_plans_free(c);
    free(c->warm);
    if (c->lt)
        cublasLtDestroy(c->lt);
    if (c->blas)
        cublasDestroy(c->blas);
    cudaFree(c->lt_ws);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    if (c->copy)
        cudaStreamDestroy(c->copy);
    free(c);
}

extern "C" cudaStream_t dkv_cuda_ctx_stream(const dkv_cuda_ctx *c) { return c->stream; }
extern "C" cudaStream_t dkv_cuda_ctx_copy_stream(const dkv_cuda_ctx *c) { return c->copy; }
