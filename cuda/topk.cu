/* topk.cu - per-head top-k token selection for the sparse cache (and the shared-set variant):
 * one block per row sorts (score, index) pairs in shared memory (bitonic: larger score first,
 * ties to the lower index), marks the first k, and compacts the marks so the indices come out
 * ascending. */
#include <math.h>

#include "cuda/common.cuh"

#define TOPK_MAX 8192
#define TOPK_THREADS 1024

static __device__ __forceinline__ bool before(float sa, uint32_t ia, float sb, uint32_t ib)
{
    return sa > sb || (sa == sb && ia < ib);
}

/* grid (rows or 1); dynamic shared memory: P floats + P indices, P = n rounded up to 2^m. */
static __global__ void __launch_bounds__(TOPK_THREADS) topk_kernel(uint32_t *idx, const float *score, uint32_t rows,
                                                                   uint32_t n, uint32_t k, uint32_t P, uint32_t lo,
                                                                   uint32_t hi, int sum_rows)
{
    extern __shared__ float smem[];
    float *key = smem;
    uint32_t *id = reinterpret_cast<uint32_t *>(smem + P);
    __shared__ uint32_t warp_tot[TOPK_THREADS / 32];
    uint32_t r = blockIdx.x;
    for (uint32_t i = threadIdx.x; i < P; i += blockDim.x) {
        float s = -INFINITY;
        if (i < n && (i < lo || i >= hi)) {
            if (sum_rows) {
                s = 0.0f;
                for (uint32_t q = 0; q < rows; q++)
                    s += score[(size_t)q * n + i];
            } else {
                s = score[(size_t)r * n + i];
            }
        }
        key[i] = s;
        id[i] = i;
    }
    __syncthreads();
    for (uint32_t size = 2; size <= P; size <<= 1)
        for (uint32_t stride = size >> 1; stride > 0; stride >>= 1) {
            for (uint32_t i = threadIdx.x; i < P; i += blockDim.x) {
                uint32_t j = i ^ stride;
                if (j > i) {
                    bool up = (i & size) == 0;   /* this run sorts "best first" */
                    bool swap = up ? before(key[j], id[j], key[i], id[i]) : before(key[i], id[i], key[j], id[j]);
                    if (swap) {
                        float tk = key[i];
                        key[i] = key[j], key[j] = tk;
                        uint32_t ti = id[i];
                        id[i] = id[j], id[j] = ti;
                    }
                }
            }
            __syncthreads();
        }
    /* mark the chosen indices (key[] becomes a flag array), then compact in index order */
    uint32_t *flag = reinterpret_cast<uint32_t *>(key);
    uint32_t chosen[TOPK_MAX / TOPK_THREADS];
    for (uint32_t c = 0; c < TOPK_MAX / TOPK_THREADS; c++) {
        uint32_t i = threadIdx.x + c * TOPK_THREADS;
        chosen[c] = i < k ? id[i] : 0xffffffffu;
    }
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < P; i += blockDim.x)
        flag[i] = 0;
    __syncthreads();
    for (uint32_t c = 0; c < TOPK_MAX / TOPK_THREADS; c++)
        if (chosen[c] != 0xffffffffu)
            flag[chosen[c]] = 1;
    __syncthreads();
    uint32_t per = P / blockDim.x, base = threadIdx.x * per, cnt = 0;   /* P is a multiple of blockDim */
    for (uint32_t i = 0; i < per; i++)
        cnt += flag[base + i];
    uint32_t lane = threadIdx.x & 31, w = threadIdx.x >> 5, incl = cnt;
    for (int o = 1; o < 32; o <<= 1) {
        uint32_t v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= (uint32_t)o)
            incl += v;
    }
    if (lane == 31)
        warp_tot[w] = incl;
    __syncthreads();
    uint32_t off = incl - cnt;
    for (uint32_t x = 0; x < w; x++)
        off += warp_tot[x];
    uint32_t *out = idx + (size_t)r * k;
    for (uint32_t i = 0; i < per; i++)
        if (flag[base + i])
            out[off++] = base + i;
}

static dkv_status launch_topk(uint32_t *idx, const float *score, uint32_t rows, uint32_t n, uint32_t k, uint32_t lo,
                              uint32_t hi, bool sum_rows, cudaStream_t s, dkv_err *err)
{
    uint32_t P = TOPK_THREADS;
    while (P < n)
        P <<= 1;
    size_t smem = (size_t)P * (sizeof(float) + sizeof(uint32_t));
    DKV_CU(cudaFuncSetAttribute(topk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    topk_kernel<<<sum_rows ? 1 : rows, TOPK_THREADS, smem, s>>>(idx, score, rows, n, k, P, lo, hi, sum_rows);
    return dkv_launch_check("topk_kernel", err);
}

extern "C" dkv_status dkv_cuda_topk(uint32_t *idx, const float *score, uint32_t rows, uint32_t n, uint32_t k,
                                    uint32_t excl_lo, uint32_t excl_hi, bool sum_rows, cudaStream_t s, dkv_err *err)
{
    const char *fn = "dkv_cuda_topk";
    DKV_ARG(idx && score, fn);
    DKV_ARG(rows > 0 && n > 0 && n <= TOPK_MAX, fn);
    DKV_ARG(excl_lo <= excl_hi && excl_hi <= n, fn);
    DKV_ARG(k <= n - (excl_hi - excl_lo), fn);
    if (k == 0)
        return DKV_OK;
    return launch_topk(idx, score, rows, n, k, excl_lo, excl_hi, sum_rows, s, err);
}
