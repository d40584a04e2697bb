/* cpu_kv.c - KV element formats of the CPU backend (bf16, FP8 e4m3) and the low-rank
 * approximation of offloaded KV (cuda/lowrank.h's definition, computed in double). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/backend.h"
#include "util/rng.h"

uint16_t dkv_cpu_bf16_encode(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float dkv_cpu_bf16_decode(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* e4m3: s eeee mmm, bias 7; exponent 0 is subnormal (m/8 * 2^-6); 0x7f/0xff NaN; max 448. */
float dkv_cpu_fp8_decode(uint8_t b)
{
    uint32_t e = (b >> 3) & 15u, m = b & 7u;
    float s = (b & 0x80) ? -1.0f : 1.0f;
    if (e == 15 && m == 7)
        return NAN;
    if (e == 0)
        return s * ldexpf((float)m / 8.0f, -6);
    return s * ldexpf(1.0f + (float)m / 8.0f, (int)e - 7);
}

uint8_t dkv_cpu_fp8_encode(float x)
{
    if (isnan(x))
        return 0x7f;
    uint8_t sign = signbit(x) ? 0x80 : 0;
    float a = fabsf(x);
    if (a >= 448.0f)
        return sign | 0x7e;   /* saturate (448 = e 15, m 6) */
    if (a < ldexpf(1.0f, -6)) {   /* subnormal grid: step 2^-9 */
        float q = rintf(a * 512.0f);   /* round half to even (default rounding mode) */
        return sign | (uint8_t)q;      /* q = 8 becomes the smallest normal, encoded the same */
    }
    int e;
    float f = frexpf(a, &e);          /* a = f * 2^e, f in [0.5, 1) */
    float mant = rintf((f * 2.0f - 1.0f) * 8.0f);   /* 3 mantissa bits */
    int E = e - 1 + 7;
    if (mant >= 8.0f)
        mant = 0, E++;
    if (E > 15 || (E == 15 && mant > 6))
        return sign | 0x7e;
    return sign | (uint8_t)(E << 3) | (uint8_t)mant;
}

/* Orthonormalises the r columns of Y (m x r, row-major, double) in place: Gram-Schmidt with
 * re-orthogonalisation (each column projected twice, as CholeskyQR2 re-orthogonalises).  A column
 * left with less than 1e-12 of its norm (rank deficiency: fewer distinct rows than r) is zeroed. */
static void orth(double *Y, uint32_t m, uint32_t r)
{
    for (uint32_t j = 0; j < r; j++) {
        double n0 = 0;
        for (uint32_t t = 0; t < m; t++)
            n0 += Y[(size_t)t * r + j] * Y[(size_t)t * r + j];
        for (int pass = 0; pass < 2; pass++)   /* project out the earlier columns, twice */
            for (uint32_t i = 0; i < j; i++) {
                double d = 0;
                for (uint32_t t = 0; t < m; t++)
                    d += Y[(size_t)t * r + i] * Y[(size_t)t * r + j];
                for (uint32_t t = 0; t < m; t++)
                    Y[(size_t)t * r + j] -= d * Y[(size_t)t * r + i];
            }
        double nn = 0;
        for (uint32_t t = 0; t < m; t++)
            nn += Y[(size_t)t * r + j] * Y[(size_t)t * r + j];
        /* a column (numerically) in the span of the earlier ones carries no new direction */
        double s = nn > 1e-24 * n0 && nn > 1e-300 ? 1.0 / sqrt(nn) : 0.0;
        for (uint32_t t = 0; t < m; t++)
            Y[(size_t)t * r + j] *= s;
    }
}

/* Y (m x r) = A (m x n) X (n x r) */
static void mul_ax(double *Y, const double *A, const double *X, uint32_t m, uint32_t n, uint32_t r)
{
    memset(Y, 0, (size_t)m * r * sizeof *Y);
    for (uint32_t t = 0; t < m; t++)
        for (uint32_t k = 0; k < n; k++) {
            double a = A[(size_t)t * n + k];
            for (uint32_t j = 0; j < r; j++)
                Y[(size_t)t * r + j] += a * X[(size_t)k * r + j];
        }
}

/* Z (n x r) = A^T (n x m) Q (m x r) */
static void mul_atq(double *Z, const double *A, const double *Q, uint32_t m, uint32_t n, uint32_t r)
{
    memset(Z, 0, (size_t)n * r * sizeof *Z);
    for (uint32_t t = 0; t < m; t++)
        for (uint32_t k = 0; k < n; k++) {
            double a = A[(size_t)t * n + k];
            for (uint32_t j = 0; j < r; j++)
                Z[(size_t)k * r + j] += a * Q[(size_t)t * r + j];
        }
}

dkv_status dkv_cpu_lowrank(float *out, const float *A, uint32_t m, uint32_t n, uint32_t r, uint32_t power_iters,
                           uint64_t seed, double *rel_err, dkv_err *err)
{
    uint32_t mn = m < n ? m : n;
    r = r < 1 ? 1 : r > mn ? mn : r;
    double *a = malloc((size_t)m * n * sizeof *a), *om = malloc((size_t)n * r * sizeof *om),
           *y = malloc((size_t)m * r * sizeof *y), *z = malloc((size_t)n * r * sizeof *z);
    if (!a || !om || !y || !z) {
        free(a), free(om), free(y), free(z);
        return dkv_err_set(err, DKV_ENOMEM, "cpu backend: low-rank workspace for %u x %u", m, n);
    }
    for (size_t i = 0; i < (size_t)m * n; i++)
        a[i] = A[i];
    dkv_rng rng;
    dkv_rng_seed(&rng, seed);
    for (size_t i = 0; i < (size_t)n * r; i++)
        om[i] = dkv_rng_normal(&rng);
    mul_ax(y, a, om, m, n, r);
    for (uint32_t it = 0; it < power_iters; it++) {
        orth(y, m, r);
        mul_atq(z, a, y, m, n, r);
        mul_ax(y, a, z, m, n, r);
    }
    orth(y, m, r);
    mul_atq(z, a, y, m, n, r);   /* B^T = A^T Q (n x r) */
    double num = 0, den = 0;
    for (uint32_t t = 0; t < m; t++)
        for (uint32_t k = 0; k < n; k++) {
            double s = 0;
            for (uint32_t j = 0; j < r; j++)
                s += y[(size_t)t * r + j] * z[(size_t)k * r + j];
            double d = a[(size_t)t * n + k] - s;
            num += d * d;
            den += a[(size_t)t * n + k] * a[(size_t)t * n + k];
            out[(size_t)t * n + k] = (float)s;
        }
    if (rel_err)
        *rel_err = den > 0 ? sqrt(num / den) : 0;
    free(a), free(om), free(y), free(z);
    return DKV_OK;
}
