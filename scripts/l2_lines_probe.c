/* l2_lines_probe.c - the L2 probes of cuda/bench/l2drain.cu (`rmw`: device call 123; `order`: calls 117 and 118;
 * `gemm`: calls 121 and 122; `after` and `gout`: call 129, on an H100; `pool`: call 130, on an H100)
 * through two models of the L2: the line-level model (core/cost/cost_l2_lines.c) and the shipped per-buffer replay
 * (core/cost/cost_l2.c, included whole for its static functions, nothing of it changed; as call 123's
 * probe_replay.c).  One CSV row a (set, kind, x, quantity): set,kind,x,qty,lines,replay, in MB; the quantities are the
 * tables' of scripts/l2drain.py and scripts/l2drain_gemm.py: m_wr (the stream's write-back), a_gone and b_gone (the
 * re-reads' HBM reads; b_gone of an order kind is the other half's, read first, as its `r` twin), dirty (what the
 * flush would write back), w_wr (the writer's write-back, the bound kinds).  scripts/l2_lines_compare.py sets them
 * beside the GPU's (docs/COST_MODEL.md "A line-level L2").
 *
 *   gcc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Icore -I. -Ibuild/release/gen \
 *       scripts/l2_lines_probe.c -Lbuild/release/lib -ldkv_cost -ldkv_engine -ldkv_policy -ldkv_mem -ldkv_workload \
 *       -ldkv_trace -ldkv_model -ldkv_util -lm -o /tmp/l2lp
 *   /tmp/l2lp [--line B] [--ways N] [--dirty-mb MB] [--credit-mb MB] [--keep-copy | --drop-copy] [--clean-ways K]
 *       [--probe-mb D] [--set rmw|order|gemm|after|gout|pool|all] > probes.csv
 *   (--drop-copy, --clean-ways: the model's variants; keep-copy is the model's since session 48, --keep-copy a no-op
 *   kept for the commands committed with call 129's predictions)
 *
 * Each trial starts from a fresh model after a flush (a read of twice the L2 of lines never read before); every
 * read and write is a grid-stride kernel's: one reader (writer) a line, its half a hash of the line's 4 KB segment. */
#include "core/cost/cost_l2.c"
#include "cost/cost_l2_lines.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MB 1e6
/* the probe's buffers in the replay: negative keys, apart from cost_l2.c's B_* (a key >= B_WGT is a GEMM's weight slice,
 * renamed a streamed line when the GEMM ends: keys 100-104 until session 46 made A and B written before a GEMM
 * vanish from the replay, every half gone) */
enum { KA = -100, KB, KS, KC, KY };
static const double FOOT = DKV_COST_L2_ONE_READER;   /* a one-reader read's footprint in the replay */

/* ---- the line model: a fresh L2 and an address space in which each buffer is apart */
static dkv_l2l_cfg cfg;
static uint64_t next_fresh;
static const uint64_t P_A = 1ull << 40, P_C = 2ull << 40;   /* the probe's first half, other_ */
static uint64_t P_B;                                          /* the probe's second half: P_A + its bytes */
static double D = 8;                                          /* the probe's MB (--probe-mb) */
/* l2drain.cu's x grids: at D = 8 as calls 117, 118 and 123 ran, at another D its own (and no bound kinds) */
static const double XS_ORDER8[] = {20, 24, 28, 32, 36, 40, 44}, XS_ORDER[] = {8, 12, 16, 20, 24, 28, 32, 36, 40};
static const double XS_RMW8[] = {16, 24, 32, 40, 48, 64}, XS_RMW[] = {8, 16, 24, 32, 40, 48, 56};

static dkv_l2l *lnew(void)
{
    const char *err;
    dkv_l2l *l = dkv_l2l_new(&cfg, &err);
    if (!l) {
        fprintf(stderr, "l2_lines_probe: %s\n", err);
        exit(1);
    }
    next_fresh = 4ull << 40;
    dkv_l2l_read(l, next_fresh, (uint64_t)(2 * cfg.l2_bytes), L2L_ONE);   /* the flush */
    next_fresh += 1ull << 32;
    return l;
}

static uint64_t fresh(void) { uint64_t a = next_fresh; next_fresh += 1ull << 32; return a; }

/* ---- the shipped replay, as probe_replay.c drives it */
static void rfresh(l2m *s)
{
    double cap = 62914560.0 / 2;
    memset(s, 0, sizeof *s);
    s->cap = cap, s->dcap = 2 * cap * DKV_COST_L2_DIRTY_FRAC;
    s->edge = (l2_edge){DKV_COST_L2_EDGE * cap, DKV_COST_L2_DIRTY_CREDIT * cap, 0};
    s->ep = 1;
    wread(s, B_STREAM, 2 * cap / FOOT, FOOT);
}
static double rdirty(const l2m *s) { double d = 0; for (int i = 0; i < s->n; i++) d += s->e[i].dirty; return d; }
static void kern(l2m *s) { s->ep++, s->rd = s->wr = 0; }
static void rrmw(l2m *s, int key, double b)
{
    const acc r[] = {{key, b, 0}}, w[] = {{key, b, 0}};
    walk(s, r, 1, 0, w, 1);
}

static void row(const char *set, const char *kind, double x, const char *q, double lines, double replay)
{
    printf("%s,%s,%g,%s,%.4f,%.4f\n", set, kind, x, q, lines / MB, replay / MB);
}

/* A trial's end in both models: A and B (half bytes each, hb in the replay) re-read, each model's HBM reads of each the
 * bytes gone; the rows m_wr (mw, rmw: the stream's write-back), a_gone, b_gone and dirty printed; the line model freed */
static void halves_end(dkv_l2l *l, l2m *s, uint64_t half, double hb, const char *set, const char *kind, double x,
                       double mw, double rmw)
{
    double r0 = dkv_l2l_hbm_read(l);
    dkv_l2l_read(l, P_A, half, L2L_ONE);
    double ga = dkv_l2l_hbm_read(l) - r0;
    kern(s), rd(s, KA, hb);
    double rga = s->rd;
    r0 = dkv_l2l_hbm_read(l);
    dkv_l2l_read(l, P_B, half, L2L_ONE);
    double gb = dkv_l2l_hbm_read(l) - r0;
    kern(s), rd(s, KB, hb);
    row(set, kind, x, "m_wr", mw, rmw);
    row(set, kind, x, "a_gone", ga, rga);
    row(set, kind, x, "b_gone", gb, s->rd);
    row(set, kind, x, "dirty", dkv_l2l_dirty(l), rdirty(s));
    dkv_l2l_free(l);
}

/* The stream of y bytes of lines never read (one reader a line) in both models, then the trial's end (halves_end) */
static void stream_end(dkv_l2l *l, l2m *s, double y, const char *set, const char *kind, double x)
{
    double w0 = dkv_l2l_hbm_written(l);
    dkv_l2l_read(l, fresh(), (uint64_t)y, L2L_ONE);
    kern(s), wread(s, KS, y, FOOT);
    halves_end(l, s, 4000000, 4 * MB, set, kind, x, dkv_l2l_hbm_written(l) - w0, s->wr);
}

/* rmw: A and B (4 MB each) written, or read and written in place, or written twice; a stream of x MB read, or read
 * and written in place; A and B re-read; the flush */
static void run_rmw(void)
{
    const char *kinds[] = {"plain", "rmwstream", "rmwprobe", "rmwboth", "wwprobe"};
    const double *xs = D == 8 ? XS_RMW8 : XS_RMW, hb = D / 2 * MB;
    const uint64_t half = (uint64_t)hb;
    for (int k = 0; k < 5; k++)
        for (int i = 0; i < (D == 8 ? 6 : 7); i++) {
            bool rp = k == 2 || k == 3, rs = k == 1 || k == 3, twice = k == 4;
            double x = xs[i] * MB;
            dkv_l2l *l = lnew();
            l2m s;
            rfresh(&s);
            for (int h = 0; h < 2; h++)
                for (int rep = 0; rep <= twice; rep++) {
                    uint64_t a = h ? P_B : P_A;
                    kern(&s);
                    if (rp)
                        dkv_l2l_rmw(l, a, half, L2L_ONE), rrmw(&s, KA + h, hb);
                    else
                        dkv_l2l_write(l, a, half, L2L_ONE), wr(&s, KA + h, hb);
                }
            double w0 = dkv_l2l_hbm_written(l);
            uint64_t st = fresh();
            kern(&s);
            if (rs)
                dkv_l2l_rmw(l, st, (uint64_t)x, L2L_ONE), rrmw(&s, KS, x);
            else
                dkv_l2l_read(l, st, (uint64_t)x, L2L_ONE), wread(&s, KS, x, FOOT);
            halves_end(l, &s, half, hb, "rmw", kinds[k], xs[i], dkv_l2l_hbm_written(l) - w0, s.wr);
        }
    const char *bk[] = {"bwrite", "brmw", "bre"};
    const double ds[] = {8, 16, 24, 32, 40, 48, 64};
    for (int k = 0; k < (D == 8 ? 3 : 0); k++)
        for (int i = 0; i < 7; i++) {
            dkv_l2l *l = lnew();
            l2m s;
            rfresh(&s);
            uint64_t st = fresh(), d = (uint64_t)(ds[i] * MB);
            if (k == 2)
                dkv_l2l_write(l, st, d, L2L_ONE), kern(&s), wr(&s, KS, ds[i] * MB);
            double w0 = dkv_l2l_hbm_written(l);
            kern(&s);
            if (k == 0)
                dkv_l2l_write(l, st, d, L2L_ONE), wr(&s, KS, ds[i] * MB);
            else
                dkv_l2l_rmw(l, st, d, L2L_ONE), rrmw(&s, KS, ds[i] * MB);
            row("rmw", bk[k], ds[i], "w_wr", dkv_l2l_hbm_written(l) - w0, s.wr);
            row("rmw", bk[k], ds[i], "dirty", dkv_l2l_dirty(l), rdirty(&s));
            dkv_l2l_free(l);
        }
}

/* order: A (4 MB) written dirty, or read clean (chit); A read again (rehit, chit); B written dirty, or C read clean
 * (dclean); a stream of x MB read; then A and the other half re-read, A first (the kind) or the other first (its r
 * twin: b_gone is the other half's there) */
static void run_order(void)
{
    const char *kinds[] = {"rehit", "rehit0", "dclean", "chit"};
    const double *xs = D == 8 ? XS_ORDER8 : XS_ORDER, hb = D / 2 * MB;
    const uint64_t half = (uint64_t)hb;
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < (D == 8 ? 7 : 9); i++) {
            bool clean = k == 2, chit = k == 3, hit = k == 0 || k == 3;
            double x = xs[i] * MB, out[2][4];   /* [rev][m_wr, a_gone, other_gone, dirty] lines; replay below */
            double rout[2][4];
            for (int rev = 0; rev < 2; rev++) {
                dkv_l2l *l = lnew();
                l2m s;
                rfresh(&s);
                kern(&s);
                if (chit)
                    dkv_l2l_read(l, P_A, half, L2L_ONE), wread(&s, KA, hb, FOOT);
                else
                    dkv_l2l_write(l, P_A, half, L2L_ONE), wr(&s, KA, hb);
                if (hit)
                    kern(&s), dkv_l2l_read(l, P_A, half, L2L_ONE), rd(&s, KA, hb);
                kern(&s);
                uint64_t other = clean ? P_C : P_B;
                int okey = clean ? KC : KB;
                if (clean)
                    dkv_l2l_read(l, P_C, half, L2L_ONE), wread(&s, KC, hb, FOOT);
                else
                    dkv_l2l_write(l, P_B, half, L2L_ONE), wr(&s, KB, hb);
                double w0 = dkv_l2l_hbm_written(l);
                kern(&s);
                dkv_l2l_read(l, fresh(), (uint64_t)x, L2L_ONE), wread(&s, KS, x, FOOT);
                out[rev][0] = dkv_l2l_hbm_written(l) - w0, rout[rev][0] = s.wr;
                for (int j = 0; j < 2; j++) {   /* j 0: A, 1: the other; in that order unless rev */
                    int which = rev ? 1 - j : j;
                    double r0 = dkv_l2l_hbm_read(l);
                    dkv_l2l_read(l, which ? other : P_A, half, L2L_ONE);
                    out[rev][1 + which] = dkv_l2l_hbm_read(l) - r0;
                    kern(&s), rd(&s, which ? okey : KA, hb);
                    rout[rev][1 + which] = s.rd;
                }
                out[rev][3] = dkv_l2l_dirty(l), rout[rev][3] = rdirty(&s);
                dkv_l2l_free(l);
            }
            row("order", kinds[k], xs[i], "m_wr", out[0][0], rout[0][0]);
            row("order", kinds[k], xs[i], "a_gone", out[0][1], rout[0][1]);
            row("order", kinds[k], xs[i], "b_gone", out[1][2], rout[1][2]);
            row("order", kinds[k], xs[i], "dirty", out[0][3], rout[0][3]);
        }
}

/* gemm (calls 121 and 122): A and B (4 MB each) written dirty, then a cuBLAS GEMM y[M x N] = x[M x K] W^T, K = 3,584,
 * W of x MB (N = x / 2K rounded down to 64), x written long before (not in L2), then A and B re-read.  The line model
 * runs it on the replay's own tile plan (cost_gemm.c's dkv_cost_gemm_tiles, no profile): each row group reads its
 * rows of x from every half, each column wave its share of W, every weight line read by the group's row tiles (one
 * reader a row tile, its half hashed), and writes its share of y at the wave's end; a split-K GEMM writes and reads back
 * its fp32 partials.  The replay runs its gemm_replay (no profile: no measured reads, no measured output left). */
static void lgemm(dkv_l2l *l, uint64_t X, double xb, uint64_t W, double wb, uint64_t Y, double yb, double M, double N,
                  double K)
{
    dkv_cost_gemm_plan g;
    dkv_cost_gemm_tiles(M, N, K, 132, -1, &g);
    if (g.splits > 0) {
        uint64_t P = fresh();
        double ps = g.splits * M * N * 4;
        dkv_l2l_read(l, X, (uint64_t)xb, L2L_ALL);
        dkv_l2l_read_by(l, W, (uint64_t)wb, (int)g.tiles_m);
        dkv_l2l_write(l, P, (uint64_t)ps, L2L_ONE), dkv_l2l_read(l, P, (uint64_t)ps, L2L_ONE);
        dkv_l2l_write(l, Y, (uint64_t)yb, L2L_ONE);
        return;
    }
    for (double gi = 0; gi < g.groups; gi++) {
        double rows = fmin(g.group_rows, g.tiles_m - gi * g.group_rows), share = rows / g.tiles_m;
        dkv_l2l_read(l, X + (uint64_t)(xb * gi * g.group_rows / g.tiles_m), (uint64_t)(xb * share), L2L_ALL);
        for (double c = 0; c < g.col_waves; c++) {
            double w0 = wb * c / g.col_waves, w1 = wb * (c + 1) / g.col_waves;
            dkv_l2l_read_by(l, W + (uint64_t)w0, (uint64_t)(w1 - w0), (int)rows);
            double y0 = yb * (gi * g.group_rows / g.tiles_m + share * c / g.col_waves);
            dkv_l2l_write(l, Y + (uint64_t)y0, (uint64_t)(yb * share / g.col_waves), L2L_ONE);
        }
    }
}

static void run_gemm(void)
{
    const double xs[] = {16, 24, 32, 40, 48, 64}, Ms[] = {64, 128, 192, 288, 384, 576}, K = 3584;
    char kind[24];
    for (int k = -1; k < 6; k++)   /* -1: plain, the stream a read of x MB (the gemm tables' control) */
        for (int i = 0; i < 6; i++) {
            double M = k < 0 ? 0 : Ms[k], N = floor(xs[i] * MB / (2.0 * K) / 64) * 64, wb = N * K * 2, xb = M * K * 2;
            double yb = M * N * 2;
            snprintf(kind, sizeof kind, k < 0 ? "plain" : "gemm%g", M);
            dkv_l2l *l = lnew();
            l2m s;
            rfresh(&s);
            s.n_sms = 132;
            const uint64_t half = 4000000, X = 3ull << 40, Y = 5ull << 40;
            dkv_l2l_write(l, P_A, half, L2L_ONE), dkv_l2l_write(l, P_B, half, L2L_ONE);
            kern(&s), wr(&s, KA, 4 * MB), kern(&s), wr(&s, KB, 4 * MB);
            double w0 = dkv_l2l_hbm_written(l);
            if (k < 0) {
                dkv_l2l_read(l, fresh(), (uint64_t)(xs[i] * MB), L2L_ONE);
                kern(&s), wread(&s, KS, xs[i] * MB, FOOT);
            } else {
                lgemm(l, X, xb, fresh(), wb, Y, yb, M, N, K);
                kern(&s), gemm_replay(&s, KS, xb, wb, KC, 0, KY, yb, M, N, K);
            }
            halves_end(l, &s, half, 4 * MB, "gemm", kind, xs[i], dkv_l2l_hbm_written(l) - w0, s.wr);
        }
}

/* after (l2drain after, since session 44): 96 MB of weights read (after_plain) or a GEMM of 64 or 288 rows over them,
 * then A and B (4 MB each) written dirty, a read of y MB, A and B re-read */
static void run_after(void)
{
    const double ys[] = {8, 16, 24, 32, 40, 48}, K = 3584, x = 96;
    const double N = floor(x * MB / (2.0 * K) / 64) * 64, wb = N * K * 2;
    const char *kinds[] = {"after_plain", "after_gemm64", "after_gemm288"};
    const double Ms[] = {0, 64, 288};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 6; i++) {
            double M = Ms[k], xb = M * K * 2, yb = M * N * 2, y = ys[i] * MB;
            dkv_l2l *l = lnew();
            l2m s;
            rfresh(&s);
            s.n_sms = 132;
            const uint64_t half = 4000000, X = 3ull << 40, Y = 5ull << 40;
            kern(&s);
            if (k == 0)
                dkv_l2l_read(l, fresh(), (uint64_t)(x * MB), L2L_ONE), wread(&s, KS, x * MB, FOOT);
            else
                lgemm(l, X, xb, fresh(), wb, Y, yb, M, N, K), gemm_replay(&s, KC + 2, xb, wb, KC, 0, KY, yb, M, N, K);
            dkv_l2l_write(l, P_A, half, L2L_ONE), dkv_l2l_write(l, P_B, half, L2L_ONE);
            kern(&s), wr(&s, KA, 4 * MB), kern(&s), wr(&s, KB, 4 * MB);
            stream_end(l, &s, y, "after", kinds[k], ys[i]);
        }
}

/* gout (l2drain gout, since session 46): A (4 MB) written dirty, then B (4 MB) written by a plain kernel (gout_plain) or
 * as the output of a GEMM Y[250 x 8,000] = X W^T (K = 64: gout_gemm; K = 512: gout_gemm512), kinds ending in rmw then
 * turning B in place; a read of y MB, A and B re-read.  Neither model gives a GEMM's output a place of its own. */
static void run_gout(void)
{
    const double ys[] = {16, 24, 28, 32, 36, 40, 48}, M = 250, N = 8000;
    const char *kinds[] = {"gout_plain", "gout_gemm", "gout_gemm512", "gout_plainrmw", "gout_gemmrmw"};
    for (int k = 0; k < 5; k++)
        for (int i = 0; i < 7; i++) {
            const bool gemm = k == 1 || k == 2 || k == 4, rmw = k >= 3;
            const double K = k == 2 ? 512 : 64, xb = M * K * 2, wb = N * K * 2, y = ys[i] * MB;
            dkv_l2l *l = lnew();
            l2m s;
            rfresh(&s);
            s.n_sms = 132;
            const uint64_t half = 4000000, X = 3ull << 40;
            dkv_l2l_write(l, P_A, half, L2L_ONE);
            kern(&s), wr(&s, KA, 4 * MB);
            kern(&s);
            if (gemm)
                lgemm(l, X, xb, P_C, wb, P_B, 4 * MB, M, N, K), gemm_replay(&s, KC + 2, xb, wb, KC, 0, KB, 4 * MB, M, N, K);
            else
                dkv_l2l_write(l, P_B, half, L2L_ONE), wr(&s, KB, 4 * MB);
            if (rmw)
                dkv_l2l_rmw(l, P_B, half, L2L_ONE), kern(&s), rrmw(&s, KB, 4 * MB);
            stream_end(l, &s, y, "gout", kinds[k], ys[i]);
        }
}

/* pool (l2drain pool, since session 47): A and B (4 MB each) written dirty, then y MB read contiguously (pool_plain) or
 * as the attention reads LLaDA-8B's pool (pool_kv: each token's 32 heads' 256-byte K and V rows of one layer, tokens 512
 * KB apart; the line model reads them token by token, one reader a line as any read, so pool_grid, the same bytes
 * grid-stride, is the same rows); A and B re-read.  The replay streams y MB under every kind. */
static void run_pool(void)
{
    const double ys[] = {8, 12, 16, 20, 24, 28, 32, 36, 40, 48};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 10; i++) {
            const double y = ys[i] * MB;
            dkv_l2l *l = lnew();
            l2m s;
            rfresh(&s);
            dkv_l2l_write(l, P_A, 4000000, L2L_ONE), dkv_l2l_write(l, P_B, 4000000, L2L_ONE);
            kern(&s), wr(&s, KA, 4 * MB), kern(&s), wr(&s, KB, 4 * MB);
            if (k == 0) {
                stream_end(l, &s, y, "pool", "pool_plain", ys[i]);
                continue;
            }
            const uint64_t T = (uint64_t)(y / (2 * 32 * 256)), P = fresh(), slot = 512 * 1024, lo = 12 * 16 * 1024;
            double w0 = dkv_l2l_hbm_written(l);
            for (uint64_t t = 0; t < T; t++)
                for (int c = 0; c < 64; c++)
                    dkv_l2l_read(l, P + t * slot + lo + (uint64_t)c * 256, 256, L2L_ONE);
            kern(&s), wread(&s, KS, (double)T * 64 * 256, FOOT);
            halves_end(l, &s, 4000000, 4 * MB, "pool", "pool_kv", ys[i], dkv_l2l_hbm_written(l) - w0, s.wr);
        }
}

static double num(const char *opt, const char *v)
{
    char *end;
    double d = v ? strtod(v, &end) : 0;
    if (!v || end == v || *end || !(d >= 0)) {
        fprintf(stderr, "l2_lines_probe: %s needs a number >= 0, got '%s'\n", opt, v ? v : "(nothing)");
        exit(2);
    }
    return d;
}

int main(int argc, char **argv)
{
    cfg = dkv_l2l_h200();
    const char *set = "all";
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            printf("usage: l2_lines_probe [--line B] [--ways N] [--dirty-mb MB] [--credit-mb MB]\n"
                   "                      [--keep-copy | --drop-copy] [--clean-ways K] [--probe-mb D] [--set rmw|order|gemm|after|gout|pool|all]\n"
                   "(defaults: the H200's, core/cost/cost_l2_lines.h dkv_l2l_h200: line 128, ways 64, dirty 28.8 MB,\n"
                   "credit 4.0 MB, keep-copy (a write keeps the other half's copy; --drop-copy: drops it, the default\n"
                   "until session 48), clean-ways 0 (off; K: the clean_ways variant, each set's K least recently used\n"
                   "lines kept clean); the probe 8 MB as l2drain's default, another D runs l2drain's grid for it and no\n"
                   "bound kinds; --set all: every set but pool (default); CSV set,kind,x,qty,lines,replay on stdout, MB)\n");
            return 0;
        } else if (!strcmp(o, "--line")) {
            cfg.line = (int)num(o, v), i++;
        } else if (!strcmp(o, "--ways")) {
            cfg.ways = (int)num(o, v), i++;
        } else if (!strcmp(o, "--dirty-mb")) {
            cfg.dirty_frac = num(o, v) * MB / cfg.l2_bytes, i++;
        } else if (!strcmp(o, "--credit-mb")) {
            cfg.credit = num(o, v) * MB, i++;
        } else if (!strcmp(o, "--keep-copy")) {
            cfg.keep_copy = true;
        } else if (!strcmp(o, "--drop-copy")) {
            cfg.keep_copy = false;
        } else if (!strcmp(o, "--clean-ways")) {
            cfg.clean_ways = (int)num(o, v), i++;
        } else if (!strcmp(o, "--probe-mb")) {
            D = num(o, v), i++;
            if (!(D >= 2 && D <= 32) || D != 2 * (int)(D / 2)) {
                fprintf(stderr, "l2_lines_probe: --probe-mb must be an even number from 2 to 32 (l2drain's), got %g\n", D);
                return 2;
            }
        } else if (!strcmp(o, "--set") && v && (!strcmp(v, "rmw") || !strcmp(v, "order") || !strcmp(v, "gemm") ||
                                                  !strcmp(v, "after") || !strcmp(v, "gout") || !strcmp(v, "pool") ||
                                                  !strcmp(v, "all"))) {
            set = v, i++;
        } else {
            fprintf(stderr, "l2_lines_probe: unknown option or value '%s%s%s' (--help)\n", o, v ? " " : "", v ? v : "");
            return 2;
        }
    }
    if ((!strcmp(set, "gemm") || !strcmp(set, "after") || !strcmp(set, "gout") || !strcmp(set, "pool")) && D != 8) {
        fprintf(stderr, "l2_lines_probe: --set %s runs l2drain's 8 MB probe alone (--probe-mb %g)\n", set, D);
        return 2;
    }
    const char *err;
    dkv_l2l *t = dkv_l2l_new(&cfg, &err);
    if (!t) {
        fprintf(stderr, "l2_lines_probe: %s\n", err);
        return 2;
    }
    dkv_l2l_free(t);
    P_B = P_A + (uint64_t)(D / 2 * MB);
    printf("set,kind,x,qty,lines,replay\n");
    bool all = !strcmp(set, "all");
    if (all || !strcmp(set, "rmw"))
        run_rmw();
    if (all || !strcmp(set, "order"))
        run_order();
    if ((all && D == 8) || !strcmp(set, "gemm"))   /* gemm and after: at D = 8 alone, as l2drain runs them */
        run_gemm();
    if ((all && D == 8) || !strcmp(set, "after"))
        run_after();
    if ((all && D == 8) || !strcmp(set, "gout"))
        run_gout();
    if (!strcmp(set, "pool"))   /* not in all: all's rows are the committed predictions' (call 129) */
        run_pool();
    return 0;
}
