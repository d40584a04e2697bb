/* embedding.cu - token embedding: out rows = wte rows of the tokens. */
#include "cuda/common.cuh"

/* One block per token; 16-byte copies. */
static __global__ void embedding_kernel(dkv_bf16 *out, const uint32_t *tokens, const dkv_bf16 *wte, uint32_t C,
                                        uint32_t V)
{
    uint32_t t = blockIdx.x, tok = tokens[t];
    bf16x8 *o = reinterpret_cast<bf16x8 *>(out + (size_t)t * C);
    const bf16x8 *w = reinterpret_cast<const bf16x8 *>(wte + (size_t)tok * C);
    for (uint32_t i = threadIdx.x; i < C / 8; i += blockDim.x) {
        bf16x8 z = {};
        o[i] = tok < V ? w[i] : z;
    }
}

static dkv_status launch_embedding(dkv_bf16 *out, const uint32_t *tokens, const dkv_bf16 *wte, uint32_t T,
                                   uint32_t C, uint32_t V, cudaStream_t s, dkv_err *err)
{
    embedding_kernel<<<T, 128, 0, s>>>(out, tokens, wte, C, V);
    return dkv_launch_check("embedding_kernel", err);
}

extern "C" dkv_status dkv_cuda_embedding(dkv_bf16 *out, const uint32_t *tokens, const dkv_bf16 *wte, uint32_t T,
                                         uint32_t C, uint32_t V, cudaStream_t s, dkv_err *err)
{
    DKV_ARG(out && tokens && wte, "dkv_cuda_embedding");
    DKV_ARG(C % 8 == 0 && C > 0 && V > 0, "dkv_cuda_embedding");
    if (T == 0)
        return DKV_OK;
    return launch_embedding(out, tokens, wte, T, C, V, s, err);
}
