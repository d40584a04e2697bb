/* cost_l2_edge.c - the L2 replay's soft edge (cost_l2_edge.h; docs/COST_MODEL.md "The soft edge").
 *
 * With the ramp r(u) = clip(u / W, 0, 1) and its start A0 = T - W / 2, a clean line of age a leaves with probability
 * r(a - A0) and a dirty one with r(a - credit - A0).  An entry spans the ages (lo, hi] (the bytes newer than its
 * newest and oldest line), so the share of it that leaves is the ramp's integral over that span divided by its bytes.
 * The bytes removed, removed(T), fall with T and are piecewise quadratic in it (the pieces' ends are the entries'
 * ends, shifted by W / 2 and the credit): the threshold is solved by steps to the root of the local quadratic (the
 * slope is the ramp's value at the spans' ends, the curvature its slope there), kept inside a bracket, started from
 * the previous solve's distance below the list's bytes; the last evaluation's removals are the ones applied. */
#include "cost/cost_l2_edge.h"

#include <math.h>
#include <stddef.h>

/* The ramp at u = age - A0: its integral from -inf (r[0]), its value (r[1]) and its slope times W (r[2]). */
static inline void ramp(double u, double W, double r[3])
{
    r[0] = u <= 0 ? 0 : u <= W ? u * u / (2 * W) : W / 2 + (u - W);
    r[1] = u <= 0 ? 0 : u >= W ? 1 : u / W;
    r[2] = u > 0 && u < W ? 1 : 0;
}

/* The bytes the ramp around T removes from e[0 .. n-2], their first and second derivatives in T (d[0], d[1]), and
 * each entry's clean and dirty bytes removed (rm[2 i], rm[2 i + 1]; *nrm entries, the oldest first).  An entry's
 * newer end is the next entry's older end, so the ramp is evaluated once per end and carried to the next entry. */
static double removed(const l2_edge *ed, const l2_ent *e, int n, double tot, double T, double d[2], double *rm,
                      int *nrm)
{
    double W = ed->width, cr = ed->credit, A0 = T - W / 2, hi = tot, gone = 0, d1 = 0, d2 = 0;
    double ch[3], dh[3];   /* the ramp at the current span's older end: clean at its age, dirty credit younger */
    ramp(hi - A0, W, ch), ramp(hi - cr - A0, W, dh);
    int i = 0;
    for (; i < n - 1 && hi > A0; i++) {   /* from the oldest; lines no older than A0 stay */
        const l2_ent *x = &e[i];
        double lo = hi - x->res, cl[3], dl[3];
        hi = lo;
        ramp(lo - A0, W, cl), ramp(lo - cr - A0, W, dl);
        rm[2 * i] = rm[2 * i + 1] = 0;
        if (x->res > 0) {
            double inv = 1 / x->res, clean = (x->res - x->dirty) * inv, dirty = x->dirty * inv;
            double fc = ch[0] - cl[0], fd = dh[0] - dl[0];
            double dc = clean * (fc < x->res ? fc : x->res), dd = dirty * (fd < x->res ? fd : x->res);
            rm[2 * i] = dc, rm[2 * i + 1] = dd, gone += dc + dd;
            d1 -= clean * (ch[1] - cl[1]) + dirty * (dh[1] - dl[1]);
            d2 += clean * (ch[2] - cl[2]) + dirty * (dh[2] - dl[2]);
        }
        for (int k = 0; k < 3; k++)
            ch[k] = cl[k], dh[k] = dl[k];
    }
    *nrm = i;
    d[0] = d1, d[1] = d2 / W;
    return gone;
}

double l2_edge_evict(l2_edge *ed, l2_ent *e, int n, double tot, double need, double *written)
{
    double W = ed->width;
    if (!(W > 0) || !(need > 0) || n <= 1 || n > L2_EDGE_MAX)
        return 0;
    double older = 0;   /* removed(lo) below: every entry but the newest; removed(hi): nothing */
    for (int i = 0; i < n - 1; i++)
        older += e[i].res;
    if (older < need)
        return 0;
    double lo = -W - ed->credit, hi = tot + W, d[2], rm[2 * L2_EDGE_MAX], gone = 0;
    double tol = 1e-7 * tot, T = tot - ed->gap;
    int nrm = 0;
    if (!(T > lo && T < hi))
        T = (lo + hi) / 2;
    for (int it = 0; it < 60; it++) {
        gone = removed(ed, e, n, tot, T, d, rm, &nrm);
        double f = gone - need;
        if (fabs(f) <= tol || hi - lo <= tol)
            break;
        if (f > 0)
            lo = T;
        else
            hi = T;
        /* removed(T) is quadratic between the spans' ends: the root of its local quadratic (Newton's step where it
         * is linear), kept inside the bracket, else halving */
        double disc = d[0] * d[0] - 2 * d[1] * f, t = (lo + hi) / 2;
        if (d[0] < 0 && disc >= 0)
            t = T - 2 * f / (d[0] - sqrt(disc));
        T = t > lo && t < hi ? t : (lo + hi) / 2;
    }
    ed->gap = tot - T;
    for (int i = 0; i < nrm; i++) {
        double dc = rm[2 * i], dd = rm[2 * i + 1];
        *written += dd, e[i].dirty -= dd, e[i].res -= dc + dd;
    }
    return gone;
}
