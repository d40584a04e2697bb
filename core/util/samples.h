/* samples.h - a ring of timestamped samples, written by one thread and read by others (the SM clock
 * sampled beside a run's steps: cuda/clock.c writes, the CUDA backend reads each step's mean).
 * The writer never waits; a reader sees every sample published before its call.  Pure computation:
 * the caller supplies the times (seconds on one clock) and the values. */
#ifndef DKV_UTIL_SAMPLES_H
#define DKV_UTIL_SAMPLES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define DKV_SAMPLES_CAP 8192u   /* samples kept (a power of two): 8 s at one per millisecond */

typedef struct dkv_samples {
    double            t[DKV_SAMPLES_CAP];   /* time of sample i % CAP */
    double            v[DKV_SAMPLES_CAP];
    _Atomic uint64_t  n;                    /* samples published so far */
} dkv_samples;

void dkv_samples_init(dkv_samples *s);
/* Appends (t, v); t not before the previous sample's.  One writer at a time. */
void dkv_samples_push(dkv_samples *s, double t, double v);
/* The mean of the samples with t0 <= t <= t1, over the newest CAP / 2 (older ones may be being
 * overwritten); *count (optional) how many.  NAN when none. */
double dkv_samples_mean(const dkv_samples *s, double t0, double t1, uint32_t *count);

#endif
