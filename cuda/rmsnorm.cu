/* rmsnorm.cu - RMSNorm: out = in * rsqrt(mean(in^2) + eps) * w, fp32 statistics. */
#include "cuda/common.cuh"

/* One block per row; each thread keeps its first MAXV 16-byte chunks of the row in registers
 * (all of it when C <= 8 * 256 * MAXV); longer rows are read twice. */
template <int MAXV>
static __global__ void rmsnorm_kernel(dkv_bf16 *out, const dkv_bf16 *in, const dkv_bf16 *w, uint32_t C, float eps)
{
    __shared__ float partial[32];
    const bf16x8 *x = reinterpret_cast<const bf16x8 *>(in + (size_t)blockIdx.x * C);
    uint32_t nv = C / 8;
    bf16x8 keep[MAXV];
    float ss = 0;
#pragma unroll
    for (int j = 0; j < MAXV; j++) {   /* constant indices: keep[] stays in registers */
        uint32_t i = threadIdx.x + j * blockDim.x;
        if (i < nv) {
            keep[j] = x[i];
            for (int e = 0; e < 8; e++)
                ss += bf2f(keep[j].v[e]) * bf2f(keep[j].v[e]);
        }
    }
    for (uint32_t i = threadIdx.x + MAXV * blockDim.x; i < nv; i += blockDim.x) {   /* long rows */
        bf16x8 v = x[i];
        for (int e = 0; e < 8; e++)
            ss += bf2f(v.v[e]) * bf2f(v.v[e]);
    }
    ss = warp_sum(ss);
    if ((threadIdx.x & 31) == 0)
        partial[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
        float p = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0.0f;
        p = warp_sum(p);
        if (threadIdx.x == 0)
            partial[0] = rsqrtf(p / (float)C + eps);
    }
    __syncthreads();
    float r = partial[0];
    bf16x8 *o = reinterpret_cast<bf16x8 *>(out + (size_t)blockIdx.x * C);
    const bf16x8 *wv = reinterpret_cast<const bf16x8 *>(w);
#pragma unroll
    for (int j = 0; j < MAXV; j++) {
        uint32_t i = threadIdx.x + j * blockDim.x;
        if (i < nv) {
            bf16x8 g = wv[i], y;
            for (int e = 0; e < 8; e++)
                y.v[e] = f2bf(bf2f(keep[j].v[e]) * r * bf2f(g.v[e]));
            o[i] = y;
        }
    }
    for (uint32_t i = threadIdx.x + MAXV * blockDim.x; i < nv; i += blockDim.x) {
        bf16x8 v = x[i], g = wv[i], y;
        for (int e = 0; e < 8; e++)
            y.v[e] = f2bf(bf2f(v.v[e]) * r * bf2f(g.v[e]));
        o[i] = y;
    }
}

static dkv_status launch_rmsnorm(dkv_bf16 *out, const dkv_bf16 *in, const dkv_bf16 *w, uint32_t T, uint32_t C,
                                 float eps, cudaStream_t s, dkv_err *err)
{
    rmsnorm_kernel<4><<<T, 256, 0, s>>>(out, in, w, C, eps);
    return dkv_launch_check("rmsnorm_kernel", err);
}

extern "C" dkv_status dkv_cuda_rmsnorm(dkv_bf16 *out, const dkv_bf16 *in, const dkv_bf16 *w, uint32_t T, uint32_t C,
                                       float eps, cudaStream_t s, dkv_err *err)
{
    DKV_ARG(out && in && w, "dkv_cuda_rmsnorm");
    DKV_ARG(C > 0 && C % 8 == 0, "dkv_cuda_rmsnorm");
    DKV_ARG(eps >= 0.0f, "dkv_cuda_rmsnorm");
    if (T == 0)
        return DKV_OK;
    return launch_rmsnorm(out, in, w, T, C, eps, s, err);
}
