/* rope.cu - rotary position embedding, rotate-half convention (LLaDA / Llama), in place. */
#include "cuda/common.cuh"

/* One block per row; thread i of the row's (head, pair) grid turns (x[i], x[i + D/2]).  The angle
 * is computed in double (as core/ref does), so positions up to the model's length lose nothing
 * before the bf16 rounding of the result. */
static __global__ void rope_kernel(dkv_bf16 *x, uint32_t ld, const uint32_t *pos, uint32_t n_heads,
                                   uint32_t head_dim, double log2_theta)
{
    uint32_t half = head_dim / 2;
    double p = pos[blockIdx.x];
    dkv_bf16 *row = x + (size_t)blockIdx.x * ld;
    for (uint32_t j = threadIdx.x; j < n_heads * half; j += blockDim.x) {
        uint32_t h = j / half, i = j % half;
        double a = p * exp2(-2.0 * i / head_dim * log2_theta);
        double sd, cd;
        sincos(a, &sd, &cd);
        float s = (float)sd, c = (float)cd;
        dkv_bf16 *v = row + (size_t)h * head_dim;
        float x1 = bf2f(v[i]), x2 = bf2f(v[i + half]);
        v[i] = f2bf(x1 * c - x2 * s);
        v[i + half] = f2bf(x2 * c + x1 * s);
    }
}

static dkv_status launch_rope(dkv_bf16 *x, uint32_t ld, const uint32_t *pos, uint32_t T, uint32_t n_heads,
                              uint32_t head_dim, float theta, cudaStream_t s, dkv_err *err)
{
    rope_kernel<<<T, 256, 0, s>>>(x, ld, pos, n_heads, head_dim, log2((double)theta));
    return dkv_launch_check("rope_kernel", err);
}

extern "C" dkv_status dkv_cuda_rope(dkv_bf16 *x, uint32_t ld, const uint32_t *pos, uint32_t T, uint32_t n_heads,
                                    uint32_t head_dim, float theta, cudaStream_t s, dkv_err *err)
{
    DKV_ARG(x && pos, "dkv_cuda_rope");
    DKV_ARG(head_dim > 0 && head_dim % 2 == 0 && n_heads > 0, "dkv_cuda_rope");
    DKV_ARG(ld >= n_heads * head_dim, "dkv_cuda_rope");
    DKV_ARG(theta > 0.0f, "dkv_cuda_rope");
    if (T == 0)
        return DKV_OK;
    return launch_rope(x, ld, pos, T, n_heads, head_dim, theta, s, err);
}
