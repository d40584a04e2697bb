/* cost_l2_edge.c - the L2 replay's soft edge (cost_l2_edge.h; docs/COST_MODEL.md "The soft edge").
 *
 * With the ramp r(u) = clip(u / W, 0, 1) and its start A0 = T - W / 2, a clean line of age a leaves with probability
 * r(a - A0) and a dirty one with r(a - credit - A0).  An entry spans the ages (lo, hi] (the bytes newer than its
 * newest and oldest line), so the share of it that leaves is the ramp's integral over that span divided by its bytes.
 * The bytes removed, removed(T), fall with T and are piecewise quadratic in it (the pieces' ends are the entries'
 * ends, shifted by W / 2 and the credit): the threshold is solved by Newton's steps kept inside a bracket (the slope
 * is the ramp's value at the spans' ends), started from the previous solve's distance below the list's bytes. */
#include "cost/cost_l2_edge.h"

#include <math.h>
#include <stddef.h>

/* The ramp's value at u = age - A0, and its integral from -inf to a. */
static double ramp(double u, double W) { return u <= 0 ? 0 : u >= W ? 1 : u / W; }

static double ramp_int(double a, double A0, double W)
{
    if (a <= A0)
        return 0;
    if (a <= A0 + W)
        return (a - A0) * (a - A0) / (2 * W);
    return W / 2 + (a - A0 - W);
}

/* The bytes the ramp around T removes from e[0 .. n-2] (*slope: their derivative in T).  With apply, removes them:
 * the clean and dirty parts of each entry at their own ages, the dirty bytes added to *written. */
static double removed(const l2_edge *ed, l2_ent *e, int n, double tot, double T, bool apply, double *written,
                      double *slope)
{
    double W = ed->width, cr = ed->credit, A0 = T - W / 2, hi = tot, gone = 0, dg = 0;
    for (int i = 0; i < n - 1 && hi > A0; i++) {   /* from the oldest; lines no older than A0 stay */
        l2_ent *x = &e[i];
        double h = hi, lo = hi - x->res;
        hi = lo;
        if (x->res <= 0)
            continue;
        double clean = x->res - x->dirty;
        double fc = (ramp_int(h, A0, W) - ramp_int(lo, A0, W)) / x->res;
        double fd = (ramp_int(h - cr, A0, W) - ramp_int(lo - cr, A0, W)) / x->res;
        double dc = clean * (fc < 1 ? fc : 1), dd = x->dirty * (fd < 1 ? fd : 1);
        gone += dc + dd;
        dg -= (clean * (ramp(h - A0, W) - ramp(lo - A0, W)) +
               x->dirty * (ramp(h - cr - A0, W) - ramp(lo - cr - A0, W))) / x->res;
        if (apply)
            *written += dd, x->dirty -= dd, x->res -= dc + dd;
    }
    if (slope)
        *slope = dg;
    return gone;
}

double l2_edge_evict(l2_edge *ed, l2_ent *e, int n, double tot, double need, double *written)
{
    double W = ed->width;
    if (!(W > 0) || !(need > 0) || n <= 1)
        return 0;
    double older = 0;   /* removed(lo) below: every entry but the newest; removed(hi): nothing */
    for (int i = 0; i < n - 1; i++)
        older += e[i].res;
    if (older < need)
        return 0;
    double lo = -W - ed->credit, hi = tot + W, slope;
    double tol = 1e-7 * tot, T = tot - ed->gap;
    if (!(T > lo && T < hi))
        T = (lo + hi) / 2;
    for (int it = 0; it < 60; it++) {
        double f = removed(ed, e, n, tot, T, false, NULL, &slope) - need;
        if (fabs(f) <= tol || hi - lo <= tol)
            break;
        if (f > 0)
            lo = T;
        else
            hi = T;
        double t = slope < 0 ? T - f / slope : (lo + hi) / 2;
        T = t > lo && t < hi ? t : (lo + hi) / 2;
    }
    ed->gap = tot - T;
    return removed(ed, e, n, tot, T, true, written, NULL);
}
