/* probe_replay.c - the replay's L2 (core/cost/cost_l2.c, included whole for its static functions; nothing of it is
 * changed) through the kernels of `cuda/bench/l2drain.cu rmw` (device call 123), so that each probe kind's Nsight
 * Compute figures (l2drain_rmw_tables.md) stand beside what the shipped replay gives for the same kernels
 * (session 42, docs/COST_MODEL.md "The soft edge").  Each trial starts after the flush (a clean read of twice the
 * replay's capacity); the probe's halves A, B (4 MB each) are written (plain, rmwstream), read and written in place
 * (rmwprobe, rmwboth: a walk reading and writing the same bytes, as the RoPE) or written twice (wwprobe); the stream of
 * x MB is a read (its bytes weighing FOOT, argument 1: 0.725 for one reader a line, DKV_COST_L2_ONE_READER) or read
 * and written in place; then A and B are re-read (A gone, B gone: their HBM reads) and the dirty bytes left are what
 * the flush would write back.  The dirty bound kinds: one writer of D MB after the flush (bwrite: a write; brmw: read
 * and written in place; bre: written, then read and written in place).
 *
 *   gcc -std=c11 -O1 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Icore -I. -Ibuild/release/gen \
 *       datasets/hw/2026-12-04/call123/probe_replay.c -Lbuild/release/lib -ldkv_cost -ldkv_engine -ldkv_policy \
 *       -ldkv_mem -ldkv_workload -ldkv_trace -ldkv_model -ldkv_util -lm -o /tmp/probe_replay
 *   /tmp/probe_replay 0.725 > datasets/hw/2026-12-04/call123/probe_replay.md      (after scons mode=release) */
#include "core/cost/cost_l2.c"
#include <stdio.h>
#include <stdlib.h>
#define MB 1e6
enum { KA = 100, KB, KS, KF };
static double foot = 1;
static void fresh(l2m *s, double cap)
{
    memset(s, 0, sizeof *s);
    s->cap = cap, s->dcap = 2 * cap * DKV_COST_L2_DIRTY_FRAC;
    s->edge = (l2_edge){DKV_COST_L2_EDGE * cap, DKV_COST_L2_DIRTY_CREDIT * cap, 0};
    s->ep = 1;
    wread(s, B_STREAM, 2 * cap / foot, foot);   /* the flush: a read of more than the L2, clean */
}
static double dirty(const l2m *s) { double d = 0; for (int i = 0; i < s->n; i++) d += s->e[i].dirty; return d; }
static void kern(l2m *s) { s->ep++, s->rd = s->wr = 0; }
static void rmw(l2m *s, int key, double b)
{
    const acc r[] = {{key, b, 0}}, w[] = {{key, b, 0}};
    walk(s, r, 1, 0, w, 1);
}
int main(int argc, char **argv)
{
    double cap = 62914560.0 / 2;
    foot = argc > 1 ? atof(argv[1]) : 1;   /* the footprint of a one-reader read (the plain stream, the flush) */
    printf("footprint of a plain read's bytes: %.3f\n| kind | x MB | stream wr MB | A gone | B gone | A+B gone | still dirty |\n|---|---|---|---|---|---|---|\n", foot);
    const char *kinds[] = {"plain", "rmwstream", "rmwprobe", "rmwboth", "wwprobe"};
    const double xs[] = {16, 24, 32, 40, 48, 64};
    for (int k = 0; k < 5; k++)
        for (int i = 0; i < 6; i++) {
            l2m s;
            fresh(&s, cap);
            bool rp = k == 2 || k == 3, rs = k == 1 || k == 3, twice = k == 4;
            for (int h = 0; h < 2; h++)
                for (int rep = 0; rep <= twice; rep++) {
                    kern(&s);
                    if (rp) rmw(&s, KA + h, 4 * MB); else wr(&s, KA + h, 4 * MB);
                }
            kern(&s);
            if (rs) rmw(&s, KS, xs[i] * MB); else wread(&s, KS, xs[i] * MB, foot);
            double swr = s.wr;
            kern(&s); rd(&s, KA, 4 * MB); double ga = s.rd;
            kern(&s); rd(&s, KB, 4 * MB); double gb = s.rd;
            printf("| %s | %.0f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", kinds[k], xs[i], swr / MB, ga / MB, gb / MB,
                   (ga + gb) / MB, dirty(&s) / MB);
        }
    printf("\n| kind | D MB | writer wr MB | still dirty |\n|---|---|---|---|\n");
    const char *bk[] = {"bwrite", "brmw", "bre"};
    const double ds[] = {8, 16, 24, 32, 40, 48, 64};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 7; i++) {
            l2m s;
            fresh(&s, cap);
            if (k == 2) { kern(&s); wr(&s, KS, ds[i] * MB); }
            kern(&s);
            if (k == 0) wr(&s, KS, ds[i] * MB); else rmw(&s, KS, ds[i] * MB);
            printf("| %s | %.0f | %.3f | %.3f |\n", bk[k], ds[i], s.wr / MB, dirty(&s) / MB);
        }
    return 0;
}
