/* common.cuh - what the cuda/*.cu files share: bf16 access, error checks, a launch check. */
#ifndef DKV_CUDA_COMMON_CUH
#define DKV_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "cuda/dkv_cuda.h"

/* A CUDA runtime call inside an entry or launcher: DKV_CU (dkv_cuda.h). */

/* Argument check inside an entry: the message names the call and the condition. */
#define DKV_ARG(cond, fn)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return dkv_err_set(err, DKV_EINVAL, "%s: invalid argument: %s must hold", fn, #cond);  \
    } while (0)

/* After a launch: the launch configuration errors show here (kernel faults show later). */
static inline dkv_status dkv_launch_check(const char *kernel, dkv_err *err)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return dkv_err_set(err, DKV_EIO, "launch of %s failed: %s (%s)", kernel, cudaGetErrorName(e),
                           cudaGetErrorString(e));
    return DKV_OK;
}

static __device__ __forceinline__ float bf2f(dkv_bf16 h)
{
    return __uint_as_float((unsigned)h << 16);
}

static __device__ __forceinline__ dkv_bf16 f2bf(float f)
{
    __nv_bfloat16 b = __float2bfloat16_rn(f);
    return *reinterpret_cast<dkv_bf16 *>(&b);
}

/* 8 bf16 values in one 16-byte access. */
struct __align__(16) bf16x8 {
    dkv_bf16 v[8];
};

static __device__ __forceinline__ float warp_sum(float x)
{
    for (int o = 16; o > 0; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

static __device__ __forceinline__ float warp_max(float x)
{
    for (int o = 16; o > 0; o >>= 1)
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

/* The largest x of the thread block (blockDim.x a multiple of 32, at most 1024), returned to every
 * thread; red: blockDim.x / 32 floats of shared memory, free again only after a __syncthreads. */
static __device__ __forceinline__ float block_max(float x, float *red)
{
    x = warp_max(x);
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = x;
    __syncthreads();
    x = red[0];
    for (uint32_t w = 1; w < blockDim.x / 32; w++)
        x = fmaxf(x, red[w]);
    return x;
}

#endif
