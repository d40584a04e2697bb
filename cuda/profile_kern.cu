/* profile_kern.cu - the device helpers of `dkv profile` (cuda/profile.c): a spin kernel that holds
 * the stream while the host enqueues the timed calls, so the events around each call measure the
 * GPU's work and not the host's enqueue; and an L2 flush (a read of a buffer larger than the L2)
 * that runs before every timed call, outside its events, so each call finds its operands cold. */
#include "cuda/common.cuh"
#include "cuda/profile_internal.h"

static __global__ void spin_kernel(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

extern "C" dkv_status dkv_prof_spin(cudaStream_t s, double seconds, dkv_err *err)
{
    DKV_ARG(seconds >= 0 && seconds < 10, "dkv_prof_spin");
    spin_kernel<<<1, 1, 0, s>>>((unsigned long long)(seconds * 1e9));
    return dkv_launch_check("spin_kernel", err);
}

/* Reads n 16-byte words (grid-stride) and writes one word only when their XOR is a value random
 * data practically never gives: the loads cannot be dropped, and the L2 is left holding clean
 * lines of buf (as after a real step's previous layers streamed their weights), not dirty ones. */
static __global__ void flush_kernel(const uint4 *__restrict__ buf, size_t n, uint4 *sink)
{
    uint4 a = make_uint4(0, 0, 0, 0);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldcg(buf + i);
        a.x ^= v.x, a.y ^= v.y, a.z ^= v.z, a.w ^= v.w;
    }
    if (a.x == 0x9e3779b9u && a.y == 0x7f4a7c15u && a.z == 0xf39cc060u && a.w == 0x5ced7a1bu)
        *sink = a;
}

extern "C" dkv_status dkv_prof_flush(cudaStream_t s, const void *buf, size_t bytes, void *sink, dkv_err *err)
{
    DKV_ARG(buf && sink && bytes % 16 == 0, "dkv_prof_flush");
    flush_kernel<<<132 * 4, 512, 0, s>>>((const uint4 *)buf, bytes / 16, (uint4 *)sink);
    return dkv_launch_check("flush_kernel", err);
}
