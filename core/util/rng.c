/* rng.c - xoshiro256** with splitmix64 seeding. */
#include "util/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void dkv_rng_seed(dkv_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t dkv_rng_u64(dkv_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double dkv_rng_uniform(dkv_rng *r) { return (double)(dkv_rng_u64(r) >> 11) * 0x1.0p-53; }

uint64_t dkv_rng_below(dkv_rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = dkv_rng_u64(r);
    while (x >= limit);
    return x % n;
}

double dkv_rng_normal(dkv_rng *r)
{
    double u1, u2;
    do
        u1 = dkv_rng_uniform(r);
    while (u1 <= 0.0);
    u2 = dkv_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

double dkv_rng_exponential(dkv_rng *r, double rate)
{
    double u;
    do
        u = dkv_rng_uniform(r);
    while (u <= 0.0);
    return -log(u) / rate;
}

double dkv_rng_gamma(dkv_rng *r, double shape, double scale)
{
    if (shape < 1.0) {
        double u;
        do
            u = dkv_rng_uniform(r);
        while (u <= 0.0);
        return dkv_rng_gamma(r, shape + 1.0, scale) * pow(u, 1.0 / shape);
    }
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x, v;
        do {
            x = dkv_rng_normal(r);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        double u = dkv_rng_uniform(r);
        if (u < 1.0 - 0.0331 * x * x * x * x)
            return d * v * scale;
        if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
            return d * v * scale;
    }
}
