/* profile_select.c - the sparse selection's lookup in a profile (kv_gather: dkv_bk_scores,
 * dkv_cuda_topk, dkv_bk_pack_paged; docs/COST_MODEL.md "The sparse selection" and "Unaligned key
 * counts").  The tables are indexed by profile.c (profile_internal.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cost/profile_internal.h"

/* The top-k (cuda/topk.cu) sorts P = max(1024, 2^ceil(log2 keys)) slots per set with a bitonic
 * network of 1024 threads: (P / 1024) log2 P (log2 P + 1) / 2 compare-exchange rounds per thread,
 * here in units of P = 1024's 55.  The work is a step function of the keys: it doubles and more at
 * each power of two, where the rest of the selection grows in proportion to the keys. */
#define SEL_SORT_THREADS 1024.0
static double sort_work(double keys)
{
    double P = SEL_SORT_THREADS;
    while (P < keys)
        P *= 2;
    double lg = log2(P);
    return P / SEL_SORT_THREADS * lg * (lg + 1) / 2 / 55.0;
}

/* The measured configuration for a head configuration the profile lacks (another model's): the same
 * block rows and head_dim, the same kv_heads where measured (the number of selection sets: it fixes
 * the launch structure, kv_heads score GEMMs under GQA, the column sums', top-k's and pack's grids),
 * else the nearest in log kv_heads; then the nearest query heads in log.  Its keys into k[]. */
static bool sel_nearest(const ptab *t, double *k)
{
    double b1 = INFINITY, b2 = INFINITY, best[4];
    for (size_t i = 0; i < t->n; i++) {
        const double *g = t->key + i * t->nk;
        if (g[0] != k[0] || g[3] != k[3] || !(g[1] > 0 && g[2] > 0))
            continue;
        double d1 = fabs(log(g[2] / k[2])), d2 = fabs(log(g[1] / k[1]));
        if (d1 < b1 || (d1 == b1 && d2 < b2))
            b1 = d1, b2 = d2, memcpy(best, g, sizeof best);
    }
    if (!isfinite(b1))
        return false;
    memcpy(k, best, sizeof best);
    return true;
}

/* The key count of row i (the table's one axis). */
static double sel_keys(const ptab *t, size_t i) { return t->ax[i * t->na]; }

/* The alignment class of a key count: the largest power of two up to SEL_ALIGN that divides it (1 for
 * an odd count; SEL_ALIGN for a multiple of it or a count that is not whole).  cuBLAS picks the score
 * GEMM's kernel by the key count's alignment (measured in device call 27: an old cutlass kernel at odd
 * counts, another at 2 and 4 mod 8, nvjet from multiples of 8; docs/COST_MODEL.md "Unaligned key counts"). */
#define SEL_ALIGN 32.0
static double align_class(double keys)
{
    if (!(keys == floor(keys)))
        return SEL_ALIGN;
    double c = 1;
    while (c < SEL_ALIGN && fmod(keys, 2 * c) == 0)
        c *= 2;
    return c;
}

/* Whether row i of the group [lo, hi) is an alignment row: keys not a multiple of SEL_ALIGN, and the
 * group also holds the row at keys rounded down to a multiple of SEL_ALIGN (its partner, into
 * *partner).  Every other row is a base row. */
static bool sel_align_row(const ptab *t, size_t lo, size_t hi, size_t i, size_t *partner)
{
    double k = sel_keys(t, i), pk = k - fmod(k, SEL_ALIGN);
    if (align_class(k) == SEL_ALIGN)
        return false;
    for (size_t j = lo; j < hi && sel_keys(t, j) <= pk; j++)
        if (sel_keys(t, j) == pk) {
            if (partner)
                *partner = j;
            return true;
        }
    return false;
}

/* The sort's seconds per unit of sort_work over the base rows of [lo, hi): least squares of t = A +
 * B keys + C sort_work(keys) (the rest of the selection: fixed launches plus work in proportion to
 * the keys).  0 where the rows cannot separate it: fewer than 4 rows, a singular system (one sort
 * width), C <= 0, or a row left with no time of its own (t <= C sort_work). */
static double sel_sort_s(const ptab *t, size_t lo, size_t hi)
{
    double M[3][4] = {{0}};   /* the normal equations, augmented */
    size_t n = 0;
    for (size_t i = lo; i < hi; i++) {
        if (sel_align_row(t, lo, hi, i, NULL))
            continue;
        double x[3] = {1, sel_keys(t, i), sort_work(sel_keys(t, i))};
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 3; c++)
                M[r][c] += x[r] * x[c];
            M[r][3] += x[r] * t->sec[i];
        }
        n++;
    }
    if (n < 4)
        return 0;
    double scale = M[0][0] * M[1][1] * M[2][2];
    for (int c = 0; c < 3; c++) {   /* Gauss-Jordan with partial pivoting */
        int piv = c;
        for (int r = c + 1; r < 3; r++)
            if (fabs(M[r][c]) > fabs(M[piv][c]))
                piv = r;
        for (int j = 0; j < 4; j++) {
            double tmp = M[c][j];
            M[c][j] = M[piv][j], M[piv][j] = tmp;
        }
        if (!(fabs(M[c][c]) > 0))
            return 0;
        for (int r = 0; r < 3; r++)
            if (r != c) {
                double f = M[r][c] / M[c][c];
                for (int j = c; j < 4; j++)
                    M[r][j] -= f * M[c][j];
            }
    }
    if (!(fabs(M[0][0] * M[1][1] * M[2][2]) > 1e-12 * scale))
        return 0;   /* one sort width: the sort is not separable from the fixed part */
    double C = M[2][3] / M[2][2];
    if (!(C > 0))
        return 0;
    for (size_t i = lo; i < hi; i++)
        if (!sel_align_row(t, lo, hi, i, NULL) && !(t->sec[i] > C * sort_work(sel_keys(t, i))))
            return 0;
    return C;
}

/* Seconds of one selection of `keys` from the base rows of [lo, hi): the time less the sort,
 * interpolated in (log keys, log t) between the two base rows around `keys`, plus the sort at keys'
 * own width; a base row's own time; NAN outside the base rows' keys. */
static double sel_base(const ptab *t, size_t lo, size_t hi, double keys)
{
    size_t i0 = SIZE_MAX, i1 = SIZE_MAX;   /* the base rows nearest at or below / at or above keys */
    for (size_t i = lo; i < hi; i++) {
        if (sel_align_row(t, lo, hi, i, NULL))
            continue;
        if (sel_keys(t, i) <= keys)
            i0 = i;
        if (sel_keys(t, i) >= keys && i1 == SIZE_MAX)
            i1 = i;
    }
    if (i0 == SIZE_MAX || i1 == SIZE_MAX)
        return NAN;
    if (i0 == i1)
        return t->sec[i0];
    double C = sel_sort_s(t, lo, hi), k0 = sel_keys(t, i0), k1 = sel_keys(t, i1);
    double r0 = t->sec[i0] - C * sort_work(k0), r1 = t->sec[i1] - C * sort_work(k1);
    double w = log(keys / k0) / log(k1 / k0);
    return exp(log(r0) + w * (log(r1) - log(r0))) + C * sort_work(keys);
}

/* The unaligned factor at `keys` of alignment class c < SEL_ALIGN: the ratio t(row) / t(partner) of
 * the group's alignment rows of class c, interpolated in (log keys, log ratio) between the two around
 * `keys`, the nearest one's outside their range; 1 when the group has no row of class c. */
static double sel_align_factor(const ptab *t, size_t lo, size_t hi, double keys, double c)
{
    double k0 = NAN, r0 = NAN, k1 = NAN, r1 = NAN;
    for (size_t i = lo; i < hi; i++) {
        size_t j;
        if (align_class(sel_keys(t, i)) != c || !sel_align_row(t, lo, hi, i, &j))
            continue;
        double k = sel_keys(t, i), r = t->sec[i] / t->sec[j];
        if (k <= keys)
            k0 = k, r0 = r;
        else if (isnan(k1))
            k1 = k, r1 = r;
    }
    if (isnan(r0) || isnan(r1))
        return isnan(r0) ? (isnan(r1) ? 1 : r1) : r0;
    double w = log(keys / k0) / log(k1 / k0);
    return exp(log(r0) + w * (log(r1) - log(r0)));
}

double dkv_profile_select(const dkv_profile *p, double rows, double keys, double heads, double kv_heads,
                          double head_dim)
{
    if (!dkv_profile_has(p, DKV_PT_KV_GATHER))
        return NAN;
    const ptab *t = &p->t[DKV_PT_KV_GATHER];
    double key[4] = {rows, heads, kv_heads, head_dim};
    size_t lo, hi;
    if (!dkv_prof_key_group(t, key, &lo, &hi) && !(sel_nearest(t, key) && dkv_prof_key_group(t, key, &lo, &hi)))
        return NAN;
    for (size_t i = lo; i < hi; i++)
        if (sel_keys(t, i) == keys)
            return t->sec[i];   /* a measured row, base or alignment: its own time */
    double c = align_class(keys), s = sel_base(t, lo, hi, keys);
    return c < SEL_ALIGN ? s * sel_align_factor(t, lo, hi, keys, c) : s;
}
