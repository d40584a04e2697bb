/* gemm_warm.h - the CUDA backend's GEMM warm-up row counts and the bucket a row count takes its
 * cuBLASLt algorithm from (docs/COST_MODEL.md "Cold shapes", "Bucket algorithms").
 *
 * At begin the CUDA backend asks cuBLASLt's heuristic for every GEMM class of its model at each warm-up
 * row count, keeps the algorithm it chose there, and runs each distinct algorithm once (cuda/gemm.cu,
 * dkv_cuda_gemm_warm), so its kernel is loaded.  A run's shape of T rows then takes the algorithm of its
 * bucket, the least warm-up row count >= T, instead of asking the heuristic again: the heuristic picks
 * other kernels at other row counts, and a kernel not loaded yet costs its lazy load (1.5-7 ms a step in
 * device call 40's class events) at its first use.  The row counts are every multiple of 8: a bucket
 * further away costs more (device call 47, tests/gpu/bench_gemm_bucket.c: LLaDA-8B's GEMMs at 13 row
 * counts of real steps, the algorithm of T rounded up to a multiple of 8 runs +0.5 % slower than the
 * heuristic's own on average, at most +7.2 %; of 16 +3.9 %, up to +45 %; the grid before, by 16 to 512,
 * 64 to 2,048 and 256 to 8,192, +6.1 %, up to +42 %).
 * The simulator charges no first use to a GEMM shape inside the warm-up's range (sim/sim.c); both take
 * the row counts from here.  Pure computation. */
#ifndef DKV_MODEL_GEMM_WARM_H
#define DKV_MODEL_GEMM_WARM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DKV_GEMM_WARM_MAX_ROWS 8192u   /* the largest warm-up row count */
#define DKV_GEMM_WARM_STEP     8u      /* the warm-up row counts are its multiples */
#define DKV_GEMM_WARM_N        (DKV_GEMM_WARM_MAX_ROWS / DKV_GEMM_WARM_STEP)   /* 1,024 of them */

/* The warm-up row counts up to min(max_T, DKV_GEMM_WARM_MAX_ROWS), ascending: 8, 16, ..., 8,192 (1,024
 * in all).  Writes at most cap of them to rows; returns how many it wrote. */
uint32_t dkv_gemm_warm_rows(uint32_t max_T, uint32_t *rows, uint32_t cap);

/* The least warm-up row count >= T (T rounded up to a multiple of 8; 8 for T <= 8); 0 when
 * T > DKV_GEMM_WARM_MAX_ROWS. */
uint32_t dkv_gemm_warm_bucket(uint32_t T);

#ifdef __cplusplus
}
#endif

#endif
