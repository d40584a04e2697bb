/* clock.c - the SM clock through NVML (clock.h).  Only the four entries used are declared here, with
 * the types of NVML's C API (nvmlReturn_t and nvmlClockType_t are ints; nvmlDevice_t is an opaque
 * pointer; NVML_SUCCESS 0, NVML_CLOCK_SM 1). */
#include "cuda/clock.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/mono.h"
#include "util/samples.h"

typedef int (*nvml_void_fn)(void);
typedef int (*nvml_pci_fn)(const char *bus_id, void **dev);
typedef int (*nvml_clock_fn)(void *dev, int type, unsigned int *mhz);

struct dkv_cuda_clock {
    void         *lib, *dev;
    nvml_clock_fn clock;
    nvml_void_fn  shutdown;
    pthread_t     thread;
    bool          running;
    atomic_bool   stop;
    double        period_s;
    dkv_samples   ring;
};

/* dlsym's object pointer as a function pointer (copied, not cast: ISO C has no such conversion) */
static void sym(void *lib, const char *name, void *fn, size_t size)
{
    void *p = dlsym(lib, name);
    memcpy(fn, &p, size);
}

dkv_cuda_clock *dkv_cuda_clock_open(int device)
{
    char bus[32];
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess)
        return NULL;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return NULL;
    nvml_void_fn init = NULL, shutdown = NULL;
    nvml_pci_fn by_pci = NULL;
    nvml_clock_fn clock = NULL;
    sym(lib, "nvmlInit_v2", &init, sizeof init);
    sym(lib, "nvmlShutdown", &shutdown, sizeof shutdown);
    sym(lib, "nvmlDeviceGetHandleByPciBusId_v2", &by_pci, sizeof by_pci);
    sym(lib, "nvmlDeviceGetClockInfo", &clock, sizeof clock);
    void *dev = NULL;
    if (!init || !shutdown || !by_pci || !clock || init() != 0) {
        dlclose(lib);
        return NULL;
    }
    dkv_cuda_clock *c = NULL;
    if (by_pci(bus, &dev) != 0 || !dev || !(c = calloc(1, sizeof *c))) {
        shutdown();
        dlclose(lib);
        return NULL;
    }
    c->lib = lib, c->dev = dev, c->clock = clock, c->shutdown = shutdown;
    dkv_samples_init(&c->ring);
    atomic_init(&c->stop, false);
    return c;
}

double dkv_cuda_clock_mhz(dkv_cuda_clock *c)
{
    unsigned int mhz = 0;
    if (!c)
        return NAN;
    return c->clock(c->dev, 1, &mhz) == 0 && mhz > 0 ? (double)mhz : NAN;
}

static void *sampler(void *arg)
{
    dkv_cuda_clock *c = arg;
    struct timespec gap = {(time_t)c->period_s, (long)(fmod(c->period_s, 1.0) * 1e9)};
    while (!atomic_load(&c->stop)) {
        double v = dkv_cuda_clock_mhz(c);
        if (!isnan(v))
            dkv_samples_push(&c->ring, dkv_mono_s(), v);
        nanosleep(&gap, NULL);
    }
    return NULL;
}

dkv_status dkv_cuda_clock_sample(dkv_cuda_clock *c, double period_s, dkv_err *err)
{
    if (!c || c->running)
        return DKV_OK;
    if (!(period_s > 0 && period_s <= 1))
        return dkv_err_set(err, DKV_EINVAL, "SM clock: sampling period %g s is not in (0, 1]", period_s);
    c->period_s = period_s;
    if (pthread_create(&c->thread, NULL, sampler, c) != 0)
        return dkv_err_set(err, DKV_EIO, "SM clock: cannot start the sampling thread");
    c->running = true;
    return DKV_OK;
}

double dkv_cuda_clock_mean(const dkv_cuda_clock *c, double t0, double t1)
{
    return c && c->running ? dkv_samples_mean(&c->ring, t0, t1, NULL) : NAN;
}

void dkv_cuda_clock_close(dkv_cuda_clock *c)
{
    if (!c)
        return;
    if (c->running) {
        atomic_store(&c->stop, true);
        pthread_join(c->thread, NULL);
    }
    c->shutdown();
    dlclose(c->lib);
    free(c);
}
