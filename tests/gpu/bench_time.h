/* bench_time.h - the GPU benchmarks' timer: TIME_US(out, calls...) runs the calls `warm` times, then
 * `reps` times (at most 64) between two CUDA events on stream `st`, and sets out to the median in
 * microseconds.  The including file defines `st` (cudaStream_t), `reps` and `warm` (int), and includes
 * gpu_check.h (CK) first. */
#ifndef DKV_TESTS_GPU_BENCH_TIME_H
#define DKV_TESTS_GPU_BENCH_TIME_H

#include <stdlib.h>

static inline int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

#define TIME_US(out, ...)                                        \
    do {                                                         \
        float t_[64];                                            \
        cudaEvent_t a_, b_;                                      \
        CK(cudaEventCreate(&a_));                                \
        CK(cudaEventCreate(&b_));                                \
        for (int w_ = 0; w_ < warm; w_++) { __VA_ARGS__; }       \
        for (int r_ = 0; r_ < reps; r_++) {                      \
            CK(cudaEventRecord(a_, st));                         \
            __VA_ARGS__;                                         \
            CK(cudaEventRecord(b_, st));                         \
            CK(cudaEventSynchronize(b_));                        \
            CK(cudaEventElapsedTime(&t_[r_], a_, b_));           \
        }                                                        \
        qsort(t_, reps, sizeof(float), cmp_float);               \
        (out) = reps ? t_[reps / 2] * 1e3f : 0.0f;               \
        cudaEventDestroy(a_);                                    \
        cudaEventDestroy(b_);                                    \
    } while (0)

#endif
