/* swiglu.cu - SiLU-gated product: out = SiLU(gate) * up (LLaDA: act(ff_proj(x)) * up_proj(x)). */
#include "cuda/common.cuh"

static __global__ void swiglu_kernel(dkv_bf16 *out, const dkv_bf16 *gate, const dkv_bf16 *up, uint32_t ld_in,
                                     uint32_t T, uint32_t F)
{
    uint32_t nv = F / 8;
    size_t total = (size_t)T * nv;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        size_t t = i / nv, c = i % nv;
        bf16x8 g = *reinterpret_cast<const bf16x8 *>(gate + t * ld_in + c * 8);
        bf16x8 u = *reinterpret_cast<const bf16x8 *>(up + t * ld_in + c * 8), y;
        for (int e = 0; e < 8; e++) {
            float a = bf2f(g.v[e]);
            y.v[e] = f2bf(a / (1.0f + __expf(-a)) * bf2f(u.v[e]));
        }
        *reinterpret_cast<bf16x8 *>(out + t * F + c * 8) = y;
    }
}

static dkv_status launch_swiglu(dkv_bf16 *out, const dkv_bf16 *gate, const dkv_bf16 *up, uint32_t ld_in, uint32_t T,
                                uint32_t F, cudaStream_t s, dkv_err *err)
{
    size_t blocks = ((size_t)T * F / 8 + 255) / 256;
    swiglu_kernel<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256, 0, s>>>(out, gate, up, ld_in, T, F);
    return dkv_launch_check("swiglu_kernel", err);
}

extern "C" dkv_status dkv_cuda_swiglu(dkv_bf16 *out, const dkv_bf16 *gate, const dkv_bf16 *up, uint32_t ld_in,
                                      uint32_t T, uint32_t F, cudaStream_t s, dkv_err *err)
{
    DKV_ARG(out && gate && up, "dkv_cuda_swiglu");
    DKV_ARG(F > 0 && F % 8 == 0 && ld_in % 8 == 0 && ld_in >= F, "dkv_cuda_swiglu");
    if (T == 0)
        return DKV_OK;
    return launch_swiglu(out, gate, up, ld_in, T, F, s, err);
}
