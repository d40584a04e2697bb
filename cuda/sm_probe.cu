/* sm_probe.cu - the SMs' own clock over a stretch of stream work (sm_probe.h). */
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#include "common.cuh"
#include "cuda/sm_probe.h"

#define PROBE_SMS 512   /* SM ids the probe has slots for */

struct dkv_sm_probe {
    unsigned long long *h, *d;   /* 2 x PROBE_SMS x (clock64, globaltimer): the start, then the end */
    uint32_t n_sms;              /* multiprocessors (each mark launches 2 x n_sms one-warp blocks) */
};

/* Each block's first thread writes its SM's cycle counter and the global timer into the SM's slot: slots[2 smid] =
 * %clock64, slots[2 smid + 1] = %globaltimer (a block on an SM id past PROBE_SMS writes nothing). */
static __global__ void sm_probe_kernel(unsigned long long *slots)
{
    if (threadIdx.x != 0)
        return;
    unsigned int sm;
    unsigned long long t;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    unsigned long long c = clock64();
    if (sm < PROBE_SMS)
        slots[2 * sm] = c, slots[2 * sm + 1] = t;
}

extern "C" dkv_status dkv_sm_probe_open(int device, dkv_sm_probe **out, dkv_err *err)
{
    *out = NULL;
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0 ||
        sms > PROBE_SMS)
        return dkv_err_set(err, DKV_EIO, "clock probe: device %d has %d multiprocessors (1 to %d)", device, sms,
                           PROBE_SMS);
    dkv_sm_probe *p = (dkv_sm_probe *)calloc(1, sizeof *p);
    if (!p)
        return dkv_err_set(err, DKV_ENOMEM, "clock probe: out of host memory");
    void *h = NULL, *d = NULL;
    if (cudaHostAlloc(&h, 4 * PROBE_SMS * sizeof(unsigned long long), cudaHostAllocMapped) != cudaSuccess) {
        free(p);
        return dkv_err_set(err, DKV_EIO, "clock probe: no mapped host memory for %d multiprocessors", sms);
    }
    if (cudaHostGetDevicePointer(&d, h, 0) != cudaSuccess) {
        cudaFreeHost(h);
        free(p);
        return dkv_err_set(err, DKV_EIO, "clock probe: cudaHostGetDevicePointer failed");
    }
    p->h = (unsigned long long *)h, p->d = (unsigned long long *)d, p->n_sms = (uint32_t)sms;
    *out = p;
    return DKV_OK;
}

extern "C" dkv_status dkv_sm_probe_mark(dkv_sm_probe *p, bool end, cudaStream_t s, dkv_err *err)
{
    if (!end)
        memset(p->h, 0, 4 * PROBE_SMS * sizeof(unsigned long long));
    sm_probe_kernel<<<2 * p->n_sms, 32, 0, s>>>(p->d + (end ? 2 * PROBE_SMS : 0));
    return dkv_launch_check("sm_probe_kernel", err);
}

extern "C" double dkv_sm_probe_mhz(const dkv_sm_probe *p)
{
    const volatile unsigned long long *a = p->h, *z = p->h + 2 * PROBE_SMS;
    double sum = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < PROBE_SMS; i++) {
        unsigned long long c0 = a[2 * i], t0 = a[2 * i + 1], c1 = z[2 * i], t1 = z[2 * i + 1];
        if (t0 && t1 && t1 > t0 && c1 > c0)
            sum += (double)(c1 - c0) * 1e3 / (double)(t1 - t0), n++;
    }
    return n ? sum / n : 0;
}

extern "C" void dkv_sm_probe_close(dkv_sm_probe *p)
{
    if (!p)
        return;
    cudaFreeHost(p->h);
    free(p);
}
