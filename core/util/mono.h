/* mono.h - the host's monotonic clock in seconds (CLOCK_MONOTONIC): one clock for every host time dkv
 * measures, so the step times the backends record and the SM clock samples (cuda/clock.c) compare. */
#ifndef DKV_UTIL_MONO_H
#define DKV_UTIL_MONO_H

double dkv_mono_s(void);

#endif
