/* gemm_warm.c - the CUDA backend's GEMM warm-up row counts (gemm_warm.h). */
#include "model/gemm_warm.h"

uint32_t dkv_gemm_warm_rows(uint32_t max_T, uint32_t *rows, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t T = DKV_GEMM_WARM_STEP; T <= max_T && T <= DKV_GEMM_WARM_MAX_ROWS && n < cap; T += DKV_GEMM_WARM_STEP)
        rows[n++] = T;
    return n;
}

uint32_t dkv_gemm_warm_bucket(uint32_t T)
{
    if (T > DKV_GEMM_WARM_MAX_ROWS)
        return 0;
    return T <= DKV_GEMM_WARM_STEP ? DKV_GEMM_WARM_STEP : (T + DKV_GEMM_WARM_STEP - 1) / DKV_GEMM_WARM_STEP * DKV_GEMM_WARM_STEP;
}
