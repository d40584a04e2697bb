/* gpu_check.h - helpers of the GPU test programs: skip line, bf16 rounding, uploads with the
 * same rounded values the CPU reference sees, poisoned outputs, and the comparison report.
 *
 * Every comparison prints one line: PASS|FAIL name, max abs error, max rel error (|d| / |ref|
 * over elements with |ref| >= 1e-3 * max|ref|), relative L2 error, and the tolerance it was
 * held to: each element must satisfy |got - ref| <= atol + rtol * |ref|; NaN never passes.
 * Outputs are poisoned (0xFF bytes: bf16/fp32 NaN) before each kernel, so an unwritten element
 * fails. */
#ifndef DKV_TESTS_GPU_CHECK_H
#define DKV_TESTS_GPU_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/dkv_cuda.h"
#include "util/rng.h"

static int g_failures;
static dkv_err err;   /* filled by the entry under test (OK() prints it) */

#define CK(call)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#define OK(call)                                                                              \
    do {                                                                                      \
        dkv_status s_ = (call);                                                               \
        if (s_ != DKV_OK) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, err.msg);           \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

static inline uint16_t h_f2bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float h_bf2f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* n values N(0, scale^2) + offset, rounded to bf16 in place (what the device will see). */
static inline float *rand_bf16_values(size_t n, float scale, float offset, dkv_rng *r)
{
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        x[i] = h_bf2f(h_f2bf((float)(dkv_rng_normal(r) * scale + offset)));
    return x;
}

static inline void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

static inline dkv_bf16 *upload_bf16(const float *x, size_t n)
{
    uint16_t *h = malloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++)
        h[i] = h_f2bf(x[i]);
    dkv_bf16 *d = dev_alloc(n * 2);
    CK(cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());   /* kernels run on non-blocking streams */
    free(h);
    return d;
}

static inline void *upload(const void *x, size_t bytes)
{
    void *d = dev_alloc(bytes);
    CK(cudaMemcpy(d, x, bytes, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
    return d;
}

static inline float *download_bf16(const dkv_bf16 *d, size_t n)
{
    uint16_t *h = malloc(n * 2 + 2);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h, d, n * 2, cudaMemcpyDeviceToHost));
    float *x = malloc(n * sizeof(float) + 4);
    for (size_t i = 0; i < n; i++)
        x[i] = h_bf2f(h[i]);
    free(h);
    return x;
}

static inline void *download(const void *d, size_t bytes)
{
    void *h = malloc(bytes + 4);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    return h;
}

static inline void poison(void *d, size_t bytes)
{
    CK(cudaMemset(d, 0xff, bytes));
    CK(cudaDeviceSynchronize());
}

/* Compares got with ref over n elements; prints the report line; counts a failure. */
static inline int check(const char *name, const float *got, const float *ref, size_t n, double atol, double rtol)
{
    double max_ref = 0, max_abs = 0, max_rel = 0, num = 0, den = 0;
    size_t bad = 0, first_bad = (size_t)-1;
    for (size_t i = 0; i < n; i++)
        if (fabs(ref[i]) > max_ref)
            max_ref = fabs(ref[i]);
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (isnan(got[i]) || isnan(ref[i]))
            d = INFINITY;
        if (d > max_abs)
            max_abs = d;
        if (fabs(ref[i]) >= 1e-3 * max_ref && fabs(ref[i]) > 0 && d / fabs(ref[i]) > max_rel)
            max_rel = d / fabs(ref[i]);
        num += d * d;
        den += (double)ref[i] * ref[i];
        if (!(d <= atol + rtol * fabs(ref[i]))) {
            if (!bad)
                first_bad = i;
            bad++;
        }
    }
    double l2 = den > 0 ? sqrt(num / den) : sqrt(num);
    printf("%s %-34s n=%-8zu max_abs %.3e  max_rel %.3e  rel_l2 %.3e  (tol: atol %.1e + rtol %.1e)\n",
           bad ? "FAIL" : "PASS", name, n, max_abs, max_rel, l2, atol, rtol);
    if (bad) {
        printf("     %zu elements out of tolerance; first at %zu: got %.6g ref %.6g\n", bad, first_bad,
               got[first_bad], ref[first_bad]);
        g_failures++;
    }
    return bad == 0;
}

static inline void check_true(const char *name, int ok, const char *detail)
{
    printf("%s %-34s %s\n", ok ? "PASS" : "FAIL", name, detail);
    if (!ok)
        g_failures++;
}

/* The skip line of tests/run.sh: exit 77 when no GPU can run the kernels. */
static inline void skip_without_gpu(void)
{
    char desc[256] = "";
    if (dkv_cuda_probe(desc, sizeof desc, &err) != DKV_OK) {
        printf("SKIP: %s\n", err.msg);
        exit(77);
    }
    printf("device: %s\n", desc);
}

#endif
