/* clock.h - the SM clock through NVML, loaded at run time from the driver (libnvidia-ml.so.1): no
 * build dependency, and without it no clock (docs/COST_MODEL.md "Clocks by kind of work": a kernel's
 * time belongs with the clock it ran at).  `dkv profile` reads it beside each row's calls; the CUDA
 * backend (options.sm_clock) samples it on a thread and records each step's mean. */
#ifndef DKV_CUDA_CLOCK_H
#define DKV_CUDA_CLOCK_H

#include "util/status.h"

typedef struct dkv_cuda_clock dkv_cuda_clock;

/* The clock of CUDA device `device`; NULL when NVML or the device is not there (no clock). */
dkv_cuda_clock *dkv_cuda_clock_open(int device);
/* The current SM clock in MHz; NAN when it cannot be read. */
double dkv_cuda_clock_mhz(dkv_cuda_clock *c);
/* Starts a thread reading the clock every period_s seconds into a ring (util/samples.h), each
 * sample at the time it was read (util/mono.h, the clock of the backends' step times). */
dkv_status dkv_cuda_clock_sample(dkv_cuda_clock *c, double period_s, dkv_err *err);
/* The mean of the samples read in [t0, t1] (dkv_mono_s seconds); NAN when none. */
double dkv_cuda_clock_mean(const dkv_cuda_clock *c, double t0, double t1);
/* Stops the thread (if any) and closes NVML; NULL is a no-op. */
void dkv_cuda_clock_close(dkv_cuda_clock *c);

#endif
