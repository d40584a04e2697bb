/* gemm_warm.h - the CUDA backend's GEMM warm-up row counts and the bucket a row count takes its
 * cuBLASLt algorithm from (docs/COST_MODEL.md "Cold shapes").
 *
 * At begin the CUDA backend runs every GEMM class of its model once at each warm-up row count
 * (cuda/gemm.cu, dkv_cuda_gemm_warm) and keeps the algorithm cuBLASLt's heuristic chose there.  A run's
 * shape of T rows then takes the algorithm of its bucket, the least warm-up row count >= T, instead of
 * asking the heuristic again: the heuristic picks other kernels at other row counts, and a kernel not
 * loaded yet costs its lazy load (1.5-7 ms a step in device call 40's class events) at its first use.
 * The simulator charges no first use to a GEMM shape inside the warm-up's range (sim/sim.c); both take
 * the row counts from here.  Pure computation. */
#ifndef DKV_MODEL_GEMM_WARM_H
#define DKV_MODEL_GEMM_WARM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DKV_GEMM_WARM_MAX_ROWS 8192u   /* the largest warm-up row count */

/* The warm-up row counts up to min(max_T, DKV_GEMM_WARM_MAX_ROWS), ascending: 8 to 32 by 8, to 512 by
 * 16, to 2,048 by 64, to 8,192 by 256 (82 in all).  Writes at most cap of them to rows; returns how
 * many it wrote. */
uint32_t dkv_gemm_warm_rows(uint32_t max_T, uint32_t *rows, uint32_t cap);

/* The least warm-up row count >= T (8 for T <= 8); 0 when T > DKV_GEMM_WARM_MAX_ROWS. */
uint32_t dkv_gemm_warm_bucket(uint32_t T);

#ifdef __cplusplus
}
#endif

#endif
