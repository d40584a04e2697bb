/* sm_probe.h - the SMs' own clock over a stretch of stream work: a small kernel writes every SM's cycle counter
 * (%clock64) and the global nanosecond timer (%globaltimer) into mapped host memory at the stretch's start and
 * again at its end; the mean over the SMs of cycles / nanoseconds between them is the clock the work ran at
 * (docs/COST_MODEL.md "The clock that follows the work": NVML's reading lags and misses a drop within a step).
 * The CUDA backend's options.clock_probe brackets each step with it; `dkv profile --probe` each row's timed calls. */
#ifndef DKV_CUDA_SM_PROBE_H
#define DKV_CUDA_SM_PROBE_H

#include <stdbool.h>

#include <cuda_runtime_api.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dkv_sm_probe dkv_sm_probe;

/* The probe for CUDA device `device` (its slots in mapped pinned host memory); *out NULL on error. */
dkv_status dkv_sm_probe_open(int device, dkv_sm_probe **out, dkv_err *err);
/* Enqueues the probe on s: at the stretch's start (end false; clears both sets of slots first, so call it when the
 * previous reading is done) or at its end. */
dkv_status dkv_sm_probe_mark(dkv_sm_probe *p, bool end, cudaStream_t s, dkv_err *err);
/* After both marks have run (s synchronized): the mean over the SMs that both reached of cycles / nanoseconds
 * between them, MHz; 0 when none did. */
double dkv_sm_probe_mhz(const dkv_sm_probe *p);
/* Frees it; NULL is a no-op. */
void dkv_sm_probe_close(dkv_sm_probe *p);

#ifdef __cplusplus
}
#endif

#endif
