/* profile_clock.c - the SM clock beside `dkv profile`'s timed calls (docs/COST_MODEL.md "Clocks by kind
 * of work": the profile's GEMM rows run power-capped near 1,515 MHz, its attention rows at 1,980 MHz,
 * so a row's time belongs with the clock it was measured at).  NVML is loaded at run time from the
 * driver (libnvidia-ml.so.1): no build dependency, and without it no clock is recorded.  Only the
 * four entries used are declared here, with the types of NVML's C API (nvmlReturn_t and
 * nvmlClockType_t are ints; nvmlDevice_t is an opaque pointer; NVML_SUCCESS 0, NVML_CLOCK_SM 1). */
#include <dlfcn.h>
#include <math.h>
#include <string.h>

#include "cuda/profile_internal.h"

typedef int (*nvml_void_fn)(void);
typedef int (*nvml_pci_fn)(const char *bus_id, void **dev);
typedef int (*nvml_clock_fn)(void *dev, int type, unsigned int *mhz);

/* dlsym's object pointer as a function pointer (copied, not cast: ISO C has no such conversion) */
static void sym(void *lib, const char *name, void *fn, size_t size)
{
    void *p = dlsym(lib, name);
    memcpy(fn, &p, size);
}

void pr_clock_open(prof_ctx *P, int device)
{
    char bus[32];
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess)
        return;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
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
        return;
    }
    if (by_pci(bus, &dev) != 0 || !dev) {
        shutdown();
        dlclose(lib);
        return;
    }
    P->nvml_lib = lib, P->nvml_dev = dev, P->nvml_clock = clock, P->nvml_shutdown = shutdown;
    pr_say(P, "profile: SM clock sampled beside the timed calls (NVML, GPU %s)", bus);
}

double pr_clock_mhz(prof_ctx *P)
{
    unsigned int mhz = 0;
    if (!P->nvml_dev)
        return NAN;
    return P->nvml_clock(P->nvml_dev, 1, &mhz) == 0 && mhz > 0 ? (double)mhz : NAN;
}

void pr_clock_close(prof_ctx *P)
{
    if (!P->nvml_lib)
        return;
    P->nvml_shutdown();
    dlclose(P->nvml_lib);
    P->nvml_lib = P->nvml_dev = NULL;
}
