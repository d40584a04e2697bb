/* profile_kern.cu - the device helper of `dkv profile` (cuda/profile.c): a spin kernel that holds
 * the stream while the host enqueues the timed calls, so the events around each call measure the
 * GPU's work and not the host's enqueue.  (The L2 flush before every timed call, outside its events,
 * is dkv_cuda_l2_flush, cuda/fill.cu.) */
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

