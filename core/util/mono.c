/* mono.c - the host's monotonic clock (mono.h). */
#include "util/mono.h"

#include <time.h>

double dkv_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
