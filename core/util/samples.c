/* samples.c - a single-writer ring of timestamped samples (samples.h). */
#include "util/samples.h"

#include <math.h>

void dkv_samples_init(dkv_samples *s)
{
    atomic_store_explicit(&s->n, 0, memory_order_relaxed);
}

void dkv_samples_push(dkv_samples *s, double t, double v)
{
    uint64_t n = atomic_load_explicit(&s->n, memory_order_relaxed);
    s->t[n % DKV_SAMPLES_CAP] = t;
    s->v[n % DKV_SAMPLES_CAP] = v;
    atomic_store_explicit(&s->n, n + 1, memory_order_release);   /* publishes the pair */
}

double dkv_samples_mean(const dkv_samples *s, double t0, double t1, uint32_t *count)
{
    uint64_t n = atomic_load_explicit(&s->n, memory_order_acquire);
    uint64_t lo = n > DKV_SAMPLES_CAP / 2 ? n - DKV_SAMPLES_CAP / 2 : 0;
    double sum = 0;
    uint32_t c = 0;
    for (uint64_t i = n; i > lo; i--) {   /* newest first; the times do not decrease */
        double t = s->t[(i - 1) % DKV_SAMPLES_CAP];
        if (t < t0)
            break;
        if (t <= t1)
            sum += s->v[(i - 1) % DKV_SAMPLES_CAP], c++;
    }
    if (count)
        *count = c;
    return c ? sum / c : NAN;
}
