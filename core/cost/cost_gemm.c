/* cost_gemm.c - cuBLAS's GEMM tiling as the L2 replay models it (cost.h, dkv_cost_gemm_tiles; cost_l2.c's
 * gemm_replay walks the plan it gives; docs/COST_MODEL.md "HBM bytes with an L2"). */
#include "cost/cost.h"

#include <math.h>
#include <string.h>

/* cuBLAS's GEMM tiles (docs/COST_MODEL.md "HBM bytes with an L2", from the kernel names Nsight
 * Compute recorded, nvjet_sm90_tst_<weight rows>x<token rows>_...): token rows per tile 32 or 64
 * for up to 64 rows, else the rows split evenly into tiles of at most 192 (multiples of 16);
 * 128 weight rows per tile (the commonest choice; 64-384 were seen), up to TILE_W_WIDE at few rows. */
#define TILE_W 128.0
#define TILE_T_MAX 192.0
#define TILE_W_WIDE 384.0

void dkv_cost_gemm_tiles(double M, double N, double K, double n_sms, double splitk, dkv_cost_gemm_plan *g)
{
    memset(g, 0, sizeof *g);
    g->tile_rows = M <= 32 ? 32 : M <= 64 ? 64 : ceil(M / ceil(M / TILE_T_MAX) / 16) * 16;
    g->tiles_m = ceil(M / g->tile_rows), g->tiles_n = ceil(N / TILE_W);
    double tiles = g->tiles_m * g->tiles_n;
    if (n_sms < 1)
        n_sms = 1;
    /* few tiles: a K-heavy GEMM (K >= 2 N: the down projection) splits K over the SMs; others
     * narrow the tiles (down to 64 weight x 32 token rows) and split K only when even those are
     * at most n_sms / 2 (the O projection at 32 rows: 64 tiles, 2 splits; at 64-288 rows 128
     * tiles, no split).  Where cuBLASLt's own count is known (splitk >= 1) it decides instead: the
     * rule gets the count wrong at some shapes (LLaDA-8B's down projection at 128 rows: 4 against 2) */
    double narrow = ceil(N / 64) * ceil(M / 32), few = K >= 2 * N ? tiles : narrow;
    if (splitk >= 1 ? splitk > 1 : few <= n_sms / 2) {
        g->splits = splitk >= 1 ? splitk : floor(n_sms / few), g->groups = g->col_waves = 1;
        g->group_rows = g->tiles_m, g->group_cols = g->tiles_n;
        return;
    }
    g->group_rows = fmin(g->tiles_m, fmax(1, floor(DKV_COST_GEMM_GROUP_ROWS / g->tile_rows)));
    /* one group (at most DKV_COST_GEMM_GROUP_ROWS rows): cuBLAS picks tile widths that fill the
     * waves (qkv at 288 rows: 192 x 160, 128 tiles, one wave), so the waves are the 128-row tiles
     * over the SMs, rounded; several groups: each group's 128-row column tiles over its CTAs */
    g->groups = ceil(g->tiles_m / g->group_rows);
    double per = floor(n_sms / g->group_rows);
    g->col_waves = g->groups > 1 ? ceil(g->tiles_n / per) : fmax(1, floor(tiles / n_sms + 0.5));
    /* at most 64 token rows cuBLAS widens the weight tiles, up to TILE_W_WIDE rows, to run one wave
     * when that fits the SMs (Dream-7B's gate|up at 32 and 64 rows: 384 x 32 and 320 x 64 tiles, 99 and
     * 119 of them; not the LM head: 330 tiles of 384 rows exceed the SMs) */
    if (M <= 64 && g->groups == 1 && ceil(N / TILE_W_WIDE) * g->tiles_m <= n_sms)
        g->col_waves = 1;
    g->group_cols = g->tiles_n / g->col_waves;
}
