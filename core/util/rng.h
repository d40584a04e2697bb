/* rng.h - seeded pseudo-random numbers (xoshiro256**, seeded through splitmix64).
 * Every random draw in dkv goes through one of these, from a seed recorded in the results,
 * so a run is reproducible bit for bit. */
#ifndef DKV_UTIL_RNG_H
#define DKV_UTIL_RNG_H

#include <stdint.h>

typedef struct dkv_rng {
    uint64_t s[4];
} dkv_rng;

void     dkv_rng_seed(dkv_rng *r, uint64_t seed);
uint64_t dkv_rng_u64(dkv_rng *r);
double   dkv_rng_uniform(dkv_rng *r);                 /* [0, 1) */
uint64_t dkv_rng_below(dkv_rng *r, uint64_t n);       /* [0, n), n > 0, unbiased */
double   dkv_rng_normal(dkv_rng *r);                  /* N(0, 1) */
double   dkv_rng_exponential(dkv_rng *r, double rate);/* mean 1/rate */
double   dkv_rng_gamma(dkv_rng *r, double shape, double scale); /* Marsaglia-Tsang */

#endif
