/* gemm_warm.c - the CUDA backend's GEMM warm-up row counts (gemm_warm.h). */
#include "model/gemm_warm.h"

static uint32_t next_row(uint32_t T) { return T + (T < 32 ? 8 : T < 512 ? 16 : T < 2048 ? 64 : 256); }

uint32_t dkv_gemm_warm_rows(uint32_t max_T, uint32_t *rows, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t T = 8; T <= max_T && T <= DKV_GEMM_WARM_MAX_ROWS && n < cap; T = next_row(T))
        rows[n++] = T;
    return n;
}

uint32_t dkv_gemm_warm_bucket(uint32_t T)
{
    if (T > DKV_GEMM_WARM_MAX_ROWS)
        return 0;
    uint32_t b = 8;
    while (b < T)
        b = next_row(b);
    return b;
}
