/* kv_pack.cu - packs the retained tokens of each KV head contiguously: [head, token, feature]. */
#include "cuda/common.cuh"

/* grid (kk, n_kv_heads); threads move 16-byte pieces of K then V. */
static __global__ void kv_pack_kernel(dkv_bf16 *k_out, dkv_bf16 *v_out, const dkv_bf16 *k, const dkv_bf16 *v,
                                      uint32_t ld, const uint32_t *idx, uint32_t D, uint32_t kk, int shared)
{
    uint32_t j = blockIdx.x, g = blockIdx.y, per = D / 8;
    uint32_t t = idx[(shared ? 0 : (size_t)g * kk) + j];
    for (uint32_t i = threadIdx.x; i < 2 * per; i += blockDim.x) {
        uint32_t isv = i >= per, c = i % per;
        const bf16x8 *src = reinterpret_cast<const bf16x8 *>((isv ? v : k) + (size_t)t * ld + (size_t)g * D) + c;
        bf16x8 *dst = reinterpret_cast<bf16x8 *>((isv ? v_out : k_out) + ((size_t)g * kk + j) * D) + c;
        *dst = *src;
    }
}

static dkv_status launch_kv_pack(dkv_bf16 *k_out, dkv_bf16 *v_out, const dkv_bf16 *k, const dkv_bf16 *v, uint32_t ld,
                                 const uint32_t *idx, uint32_t Hkv, uint32_t D, uint32_t kk, bool shared,
                                 cudaStream_t s, dkv_err *err)
{
    kv_pack_kernel<<<dim3(kk, Hkv), 32, 0, s>>>(k_out, v_out, k, v, ld, idx, D, kk, shared);
    return dkv_launch_check("kv_pack_kernel", err);
}

extern "C" dkv_status dkv_cuda_kv_pack(dkv_bf16 *k_out, dkv_bf16 *v_out, const dkv_bf16 *k, const dkv_bf16 *v,
                                       uint32_t ld, const uint32_t *idx, uint32_t n_kv_heads, uint32_t head_dim,
                                       uint32_t kk, bool shared, cudaStream_t s, dkv_err *err)
{
    const char *fn = "dkv_cuda_kv_pack";
    DKV_ARG(k_out && v_out && k && v && idx, fn);
    DKV_ARG(n_kv_heads > 0 && n_kv_heads <= 65535 && head_dim % 8 == 0 && head_dim > 0, fn);
    DKV_ARG(ld % 8 == 0 && ld >= n_kv_heads * head_dim, fn);
    if (kk == 0)
        return DKV_OK;
    return launch_kv_pack(k_out, v_out, k, v, ld, idx, n_kv_heads, head_dim, kk, shared, s, err);
}
