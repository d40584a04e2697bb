/* profile.c - a measured GPU profile: tables, checks, and lookups (log-space; GEMMs linear) (see profile.h). */
#include "cost/profile.h"

#include "cost/profile_internal.h"
#include "engine/engine.h"   /* dkv_percentile */
#include "model/gemm_warm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What each table serves: exact keys, interpolated axes (innermost first), fields kept but not
 * used by the lookup. */
typedef struct tspec {
    const char *name;
    const char *keys[MAX_KEYS + 1];
    const char *axes[MAX_AXES + 1];
    const char *ignored[2];
    bool copy;   /* copy rows: fields, seconds (no launch count, no extras) */
    bool lin;    /* the first axis is a batch (rows, bytes): beyond its largest measured value the work
                    scales linearly (a full GPU), so the time is extrapolated in proportion */
    bool warm;   /* costed from the warm column (warm_s) when the profile has one: in a real step the
                    class's operands are either L2-hot (produced by the kernel before it: elementwise,
                    KV store, the selection's scratch) or larger than the L2 and streamed either way
                    (the qkv / ffn / LM-head weights), so only the state the flush leaves differs;
                    the flushed median stays for operands that fit in the L2 but are evicted between
                    uses in a step (o weights, attention's cached KV, compression, the generic grid's
                    small shapes).  docs/COST_MODEL.md "Which column" */
    bool drain;  /* with warm_s and stream_s: costed from stream_s plus the table's drain, the median
                    over its rows of warm_s - stream_s (>= 0).  Copies of one GEMM back to back hide
                    that per-call time; a step's GEMM after another kernel does not (session 17:
                    docs/COST_MODEL.md "The GEMMs' drain") */
} tspec;

static const tspec specs[DKV_PT_N] = {
    [DKV_PT_QKV] = {"qkv", {"n", "k"}, {"m"}, {NULL}, false, true, true, true},
    [DKV_PT_O] = {"o", {"n", "k"}, {"m"}, {NULL}, false, true},
    [DKV_PT_FFN] = {"ffn", {"n", "k"}, {"m"}, {NULL}, false, true, true, true},
    [DKV_PT_GEMM] = {"gemm", {NULL}, {"m", "k", "n"}, {NULL}, false, true},
    [DKV_PT_LM_HEAD] = {"lm_head", {"n", "k"}, {"m"}, {NULL}, false, true, true, true},
    [DKV_PT_ATTN] = {"attn", {"heads", "kv_heads", "head_dim", "mode"}, {"q_rows", "kv_tokens"}, {NULL}, false, true},
    [DKV_PT_KV_STORE] = {"kv_store", {"heads", "kv_heads", "head_dim"}, {"rows"}, {NULL}, false, true, true},
    [DKV_PT_KV_GATHER] = {"kv_gather", {"rows", "heads", "kv_heads", "head_dim"}, {"keys"}, {"keep"}, false, false, true},
    [DKV_PT_ELEMENTWISE] = {"elementwise", {"kind", "cols"}, {"rows"}, {NULL}, false, true, true},
    [DKV_PT_COMPRESS] = {"compress", {"cols", "rank"}, {"rows"}, {NULL}, false, true},
    [DKV_PT_DECOMPRESS] = {"decompress", {"cols", "rank"}, {"rows"}, {NULL}, false, true},
    [DKV_PT_COPY_ALONE] = {"copy.alone", {"dir"}, {"bytes"}, {NULL}, true, true},
    [DKV_PT_COPY_CONTENDED] = {"copy.contended", {"dir"}, {"bytes"}, {NULL}, true, true},
};

/* "kernels.qkv", "copy.alone": how an error names a table */
static const char *label(dkv_prof_tab t)
{
    static char buf[DKV_PT_N][32];
    if (!buf[t][0])
        snprintf(buf[t], sizeof buf[t], "%s%s", specs[t].copy ? "" : "kernels.", specs[t].name);
    return buf[t];
}

const char *dkv_prof_tab_name(dkv_prof_tab t)
{
    return (unsigned)t < DKV_PT_N ? specs[t].name : NULL;
}

int dkv_prof_tab_find(const char *name)
{
    for (int t = 0; t < DKV_PT_COPY_ALONE; t++)
        if (strcmp(specs[t].name, name) == 0)
            return t;
    return -1;
}

const char *const *dkv_prof_tab_fields(dkv_prof_tab t)
{
    static const char *lists[DKV_PT_N][MAX_KEYS + MAX_AXES + 3];
    if ((unsigned)t >= DKV_PT_N)
        return NULL;
    const char **l = lists[t];
    if (!l[0]) {
        size_t n = 0;
        for (int i = 0; specs[t].keys[i]; i++)
            l[n++] = specs[t].keys[i];
        for (int i = 0; specs[t].axes[i]; i++)
            l[n++] = specs[t].axes[i];
        for (int i = 0; specs[t].ignored[i]; i++)
            l[n++] = specs[t].ignored[i];
        l[n] = NULL;
    }
    return l;
}

dkv_status dkv_profile_new(const dkv_profile_info *info, dkv_profile **out, dkv_err *err)
{
    dkv_profile *p = calloc(1, sizeof *p);
    if (!p)
        return dkv_err_set(err, DKV_ENOMEM, "profile: out of host memory");
    if (info)
        p->info = *info;
    *out = p;
    return DKV_OK;
}

static void tab_clear(ptab *t)
{
    free(t->raw);
    free(t->key);
    free(t->ax);
    free(t->lax);
    free(t->sec);
    free(t->lsec);
    free(t->grp);
    memset(t, 0, sizeof *t);
}

void dkv_profile_free(dkv_profile *p)
{
    if (!p)
        return;
    for (int i = 0; i < DKV_PT_N; i++)
        tab_clear(&p->t[i]);
    free(p);
}

const dkv_profile_info *dkv_profile_get_info(const dkv_profile *p) { return &p->info; }

double dkv_profile_gemm_splitk(const dkv_profile_info *in, double M, double N, double K)
{
    if (!in || !(M >= 1) || M > DKV_GEMM_WARM_MAX_ROWS)
        return 0;
    double b = dkv_gemm_warm_bucket((uint32_t)ceil(M));
    for (uint32_t i = 0; i < in->splitk_n; i++) {
        if (in->splitk_nk[i][0] != N || in->splitk_nk[i][1] != K)
            continue;
        double v = 0;
        for (uint32_t j = 0; j < in->splitk_pts[i] && in->splitk_rows[i][j] <= b; j++)
            v = in->splitk_val[i][j];
        return v;
    }
    return 0;
}

double dkv_profile_gemm_reads(const dkv_profile_info *in, double M, double N, double K, double *bucket)
{
    *bucket = 0;
    if (!in || !(M >= 1) || M > DKV_GEMM_WARM_MAX_ROWS)
        return 0;
    uint32_t b = dkv_gemm_warm_bucket((uint32_t)ceil(M)), j = b / DKV_GEMM_WARM_STEP - 1;
    for (uint32_t i = 0; i < in->reads_n; i++) {
        if (in->reads_nk[i][0] != N || in->reads_nk[i][1] != K)
            continue;
        if (j >= DKV_PROFILE_READS_PTS || !(in->reads_bytes[i][j] > 0))
            return 0;
        *bucket = b;
        return in->reads_bytes[i][j];
    }
    return 0;
}

/* The measurement of shape (N, K) in a block by rows (gemm_left, gemm_store) at the row count nearest M's warm-up
 * bucket, at most DKV_PROFILE_LEFT_NEAR rows away (the larger of two as near); -1 when there is none. */
static double nearest_rows(uint32_t n, const double (*nk)[2], const float (*bytes)[DKV_PROFILE_READS_PTS],
                           const uint8_t (*has)[DKV_PROFILE_READS_PTS], double M, double N, double K, double *rows)
{
    *rows = 0;
    if (!(M >= 1) || M > DKV_GEMM_WARM_MAX_ROWS)
        return -1;
    int j = (int)(dkv_gemm_warm_bucket((uint32_t)ceil(M)) / DKV_GEMM_WARM_STEP) - 1;
    for (uint32_t i = 0; i < n; i++) {
        if (nk[i][0] != N || nk[i][1] != K)
            continue;
        for (int d = 0; d <= (int)(DKV_PROFILE_LEFT_NEAR / DKV_GEMM_WARM_STEP); d++)
            for (int s = 1; s >= -1; s -= 2) {   /* j + d before j - d */
                int x = j + s * d;
                if (x >= 0 && x < (int)DKV_PROFILE_READS_PTS && has[i][x]) {
                    *rows = (double)(x + 1) * DKV_GEMM_WARM_STEP;
                    return bytes[i][x];
                }
            }
        return -1;
    }
    return -1;
}

double dkv_profile_gemm_left(const dkv_profile_info *in, double M, double N, double K, double *rows)
{
    *rows = 0;
    return in ? nearest_rows(in->left_n, in->left_nk, in->left_bytes, in->left_has, M, N, K, rows) : -1;
}

double dkv_profile_gemm_store(const dkv_profile_info *in, double M, double N, double K, double *rows)
{
    *rows = 0;
    return in ? nearest_rows(in->store_n, in->store_nk, in->store_bytes, in->store_has, M, N, K, rows) : -1;
}

double dkv_profile_gemm_step(const dkv_profile_info *in, double M, double N, double K)
{
    /* every GEMM lookup asks: a profile without the block answers first */
    if (!in || in->steps_n == 0 || !(M >= 1) || M > DKV_GEMM_WARM_MAX_ROWS)
        return 1;
    int j = (int)(dkv_gemm_warm_bucket((uint32_t)ceil(M)) / DKV_GEMM_WARM_STEP) - 1;
    for (uint32_t i = 0; i < in->steps_n; i++) {
        if (in->steps_nk[i][0] != N || in->steps_nk[i][1] != K)
            continue;
        const uint8_t *has = in->steps_has[i];
        const float *r = in->steps_ratio[i];
        if (has[j])
            return r[j];
        int lo = j, hi = j;
        while (lo >= 0 && !has[lo])
            lo--;
        while (hi < (int)DKV_PROFILE_READS_PTS && !has[hi])
            hi++;
        if (lo < 0 || hi >= (int)DKV_PROFILE_READS_PTS)
            return 1;
        return r[lo] + (r[hi] - r[lo]) * (double)(j - lo) / (double)(hi - lo);
    }
    return 1;
}

bool dkv_profile_has(const dkv_profile *p, dkv_prof_tab t)
{
    return p && (unsigned)t < DKV_PT_N && p->t[t].present && p->t[t].n > 0;
}

size_t dkv_profile_rows(const dkv_profile *p, dkv_prof_tab t)
{
    return dkv_profile_has(p, t) ? p->t[t].n : 0;
}

static int field_col(const ptab *t, const char *name)
{
    for (uint32_t i = 0; i < t->n_fields; i++)
        if (strcmp(t->fields[i], name) == 0)
            return (int)i;
    return -1;
}

static bool listed(const char *const *l, const char *name)
{
    for (; *l; l++)
        if (strcmp(*l, name) == 0)
            return true;
    return false;
}

dkv_status dkv_profile_table_add(dkv_profile *p, dkv_prof_tab id, const char *const *fields, uint32_t n_fields,
                                 uint32_t n_extra, const double *rows, size_t n_rows, const char *where,
                                 dkv_err *err)
{
    if ((unsigned)id >= DKV_PT_N)
        return dkv_err_set(err, DKV_EINVAL, "%s: unknown profile table %d", where, (int)id);
    const tspec *s = &specs[id];
    ptab *t = &p->t[id];
    const char *const *want = dkv_prof_tab_fields(id);
    if (t->present)
        return dkv_err_set(err, DKV_EINVAL, "%s: %s: given twice", where, label(id));
    if (n_fields > DKV_PROF_FIELDS)
        return dkv_err_set(err, DKV_EINVAL, "%s: %s.fields: %u fields (at most %d)", where, label(id), n_fields,
                           DKV_PROF_FIELDS);
    for (uint32_t i = 0; i < n_fields; i++) {
        if (!listed(want, fields[i]))
            return dkv_err_set(err, DKV_EINVAL, "%s: %s.fields: unknown field '%s'", where, label(id), fields[i]);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(fields[i], fields[j]) == 0)
                return dkv_err_set(err, DKV_EINVAL, "%s: %s.fields: '%s' listed twice", where, label(id), fields[i]);
        snprintf(t->fields[i], sizeof t->fields[i], "%s", fields[i]);
    }
    t->n_fields = n_fields;
    for (const char *const *w = want; *w; w++)
        if (field_col(t, *w) < 0)
            return dkv_err_set(err, DKV_EINVAL, "%s: %s.fields: lacks '%s' (needs %s)", where, label(id), *w,
                               s->copy ? "dir, bytes" : "the fields of docs/PROFILE_FORMAT.md");
    if (s->copy && n_extra)
        return dkv_err_set(err, DKV_EINVAL, "%s: %s: copy rows take no extra columns", where, label(id));
    t->n_extra = n_extra;
    t->width = n_fields + (s->copy ? 1 : 2) + n_extra;
    t->n = n_rows;
    t->raw = malloc((n_rows ? n_rows : 1) * t->width * sizeof *t->raw);
    if (!t->raw)
        return dkv_err_set(err, DKV_ENOMEM, "%s: %s: out of host memory", where, label(id));
    memcpy(t->raw, rows, n_rows * t->width * sizeof *rows);
    for (size_t r = 0; r < n_rows; r++) {
        const double *row = t->raw + r * t->width;
        for (uint32_t c = 0; c < n_fields + 1; c++) {
            bool sec = c == n_fields;
            if (!isfinite(row[c]) || (sec ? !(row[c] > 0) : row[c] < 0))
                return dkv_err_set(err, DKV_EINVAL, "%s: %s.rows[%zu]: %s %s (got %.17g)", where, label(id), r + 1,
                                   sec ? "seconds" : t->fields[c], sec ? "must be > 0" : "must be finite and >= 0",
                                   row[c]);
        }
        if (!s->copy && !(row[n_fields + 1] >= 1 && row[n_fields + 1] == floor(row[n_fields + 1])))
            return dkv_err_set(err, DKV_EINVAL, "%s: %s.rows[%zu]: launches must be a whole number >= 1 (got %.17g)",
                               where, label(id), r + 1, row[n_fields + 1]);
    }
    t->warm_col = t->stream_col = -1;
    t->present = true;
    return DKV_OK;
}

/* Table id's extra column `extra` as a seconds column called `name` (warm_s, stream_s): present, after
 * warm_s when need_warm, every value > 0; its absolute index into *col. */
static dkv_status seconds_col(dkv_profile *p, dkv_prof_tab id, uint32_t extra, const char *name, bool need_warm,
                              const char *where, int *col, dkv_err *err)
{
    ptab *t = (unsigned)id < DKV_PT_N ? &p->t[id] : NULL;
    if (!t || !t->present || specs[id].copy || extra >= t->n_extra)
        return dkv_err_set(err, DKV_EINVAL, "%s: %s: no extra column %u to take %s from", where,
                           t ? label(id) : "?", extra + 1, name);
    if (need_warm && t->warm_col < 0)
        return dkv_err_set(err, DKV_EINVAL, "%s: %s: %s needs a warm_s column before it", where, label(id), name);
    *col = (int)(t->n_fields + 2 + extra);
    for (size_t r = 0; r < t->n; r++) {
        double v = t->raw[r * t->width + *col];
        if (!(isfinite(v) && v > 0))
            return dkv_err_set(err, DKV_EINVAL, "%s: %s.rows[%zu]: %s must be > 0 (got %.17g)", where, label(id),
                               r + 1, name, v);
    }
    return DKV_OK;
}

dkv_status dkv_profile_table_warm(dkv_profile *p, dkv_prof_tab id, uint32_t extra, const char *where, dkv_err *err)
{
    int col;
    dkv_status st = seconds_col(p, id, extra, "warm_s", false, where, &col, err);
    if (st == DKV_OK)
        p->t[id].warm_col = col;
    return st;
}

dkv_status dkv_profile_table_stream(dkv_profile *p, dkv_prof_tab id, uint32_t extra, const char *where, dkv_err *err)
{
    int col;
    dkv_status st = seconds_col(p, id, extra, "stream_s", true, where, &col, err);
    if (st == DKV_OK)
        p->t[id].stream_col = col;
    return st;
}

bool dkv_profile_uses_warm(dkv_prof_tab id) { return (unsigned)id < DKV_PT_N && specs[id].warm; }

/* Seconds per call of one row (docs/COST_MODEL.md "Which column"): the warm or flushed column by
 * specs[].warm.  A warm table with stream_s is costed from it (its calls back to back, without the
 * events' drain: a step runs its kernels back to back).  A flushed table keeps its flushed median:
 * the overlap stream_s shows is that of identical calls whose operands the previous call left in the
 * L2, which a kernel that starts from HBM in a step does not get (session 14: the median less that
 * overlap, the rule since call 11, put the in-step attention and O projection 10-16 % short). */
static double row_seconds(const ptab *t, const tspec *s, const double *row)
{
    double flushed = row[t->n_fields];
    if (t->warm_col < 0 || !s->warm)
        return flushed;
    return t->stream_col < 0 ? row[t->warm_col] : row[t->stream_col] + t->drain_s;
}

/* A drain table's per-call drain (specs[].drain): the median over its rows of warm_s - stream_s, at
 * least 0; 0 for other tables and tables without both columns. */
static dkv_status table_drain(const ptab *t, const tspec *s, const char *where, dkv_prof_tab id, double *out,
                              dkv_err *err)
{
    *out = 0;
    if (!s->drain || t->warm_col < 0 || t->stream_col < 0 || t->n == 0)
        return DKV_OK;
    double *d = malloc(t->n * sizeof *d);
    if (!d)
        return dkv_err_set(err, DKV_ENOMEM, "%s: %s: out of host memory", where, label(id));
    for (size_t r = 0; r < t->n; r++)
        d[r] = t->raw[r * t->width + t->warm_col] - t->raw[r * t->width + t->stream_col];
    double med = dkv_percentile(d, t->n, 50);
    free(d);
    *out = med > 0 ? med : 0;
    return DKV_OK;
}

/* ------------------------------------------------------------------ index */

/* The GEMM tables are interpolated in (x, t), the others in (log x, log t).  A GEMM's time is a sum
 * of terms each linear in every dimension (launch, the operands' bytes m k, n k, m n, the FLOPs
 * m n k), which multilinear interpolation in (m, n, k) reproduces exactly; in log space it is exact
 * for a power law instead, and a GEMM's time is none: leave-one-out on the shipped H200 profile's
 * gemm grid and GEMM class rows (scripts/gemm_interp_loo.py) gives a lower error in (x, t) on every
 * axis.  docs/COST_MODEL.md "GEMM interpolation". */
static bool gemm_affine(dkv_prof_tab id)
{
    return id == DKV_PT_QKV || id == DKV_PT_O || id == DKV_PT_FFN || id == DKV_PT_GEMM || id == DKV_PT_LM_HEAD;
}

static const ptab *g_sort_tab;   /* qsort has no context argument; profiles are indexed one at a time */

static int cmp_rows(const void *a, const void *b)
{
    const ptab *t = g_sort_tab;
    const double *x = t->raw + *(const size_t *)a * t->width, *y = t->raw + *(const size_t *)b * t->width;
    for (uint32_t i = 0; i < t->nk; i++)
        if (x[t->key_col[i]] != y[t->key_col[i]])
            return x[t->key_col[i]] < y[t->key_col[i]] ? -1 : 1;
    for (int i = (int)t->na - 1; i >= 0; i--)
        if (x[t->axis_col[i]] != y[t->axis_col[i]])
            return x[t->axis_col[i]] < y[t->axis_col[i]] ? -1 : 1;
    return 0;
}

static dkv_status tab_index(ptab *t, dkv_prof_tab id, const char *where, dkv_err *err)
{
    const tspec *s = &specs[id];
    t->lin = s->lin;
    t->affine = gemm_affine(id);
    t->nk = t->na = 0;
    for (int i = 0; s->keys[i]; i++)
        t->key_col[t->nk++] = field_col(t, s->keys[i]);
    for (int i = 0; s->axes[i]; i++)
        t->axis_col[t->na++] = field_col(t, s->axes[i]);
    size_t n = t->n, *ord = malloc((n ? n : 1) * sizeof *ord);
    t->key = malloc((n * t->nk + 1) * sizeof *t->key);
    t->ax = malloc((n * t->na + 1) * sizeof *t->ax);
    t->lax = malloc((n * t->na + 1) * sizeof *t->lax);
    t->sec = malloc((n + 1) * sizeof *t->sec);
    t->lsec = malloc((n + 1) * sizeof *t->lsec);
    t->grp = malloc((n + 1) * sizeof *t->grp);
    if (!ord || !t->key || !t->ax || !t->lax || !t->sec || !t->lsec || !t->grp) {
        free(ord);
        return dkv_err_set(err, DKV_ENOMEM, "%s: %s: out of host memory", where, label(id));
    }
    dkv_status st = table_drain(t, s, where, id, &t->drain_s, err);
    if (st != DKV_OK) {
        free(ord);
        return st;
    }
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    g_sort_tab = t;
    qsort(ord, n, sizeof *ord, cmp_rows);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && cmp_rows(&ord[i - 1], &ord[i]) == 0) {
            size_t a = ord[i - 1] < ord[i] ? ord[i - 1] : ord[i], b = ord[i - 1] < ord[i] ? ord[i] : ord[i - 1];
            free(ord);
            return dkv_err_set(err, DKV_EINVAL, "%s: %s.rows[%zu] and rows[%zu]: the same shape measured twice",
                               where, label(id), a + 1, b + 1);
        }
        const double *row = t->raw + ord[i] * t->width;
        for (uint32_t k = 0; k < t->nk; k++)
            t->key[i * t->nk + k] = row[t->key_col[k]];
        for (uint32_t k = 0; k < t->na; k++) {
            double v = row[t->axis_col[k]];
            if (!(v > 0)) {
                free(ord);
                return dkv_err_set(err, DKV_EINVAL, "%s: %s.rows[%zu]: %s must be > 0 (got %.17g)", where, label(id),
                                   ord[i] + 1, s->axes[k], v);
            }
            t->ax[i * t->na + k] = v;
            t->lax[i * t->na + k] = log(v);
        }
        t->sec[i] = row_seconds(t, s, row);
        t->lsec[i] = log(t->sec[i]);
    }
    free(ord);
    t->ng = 0;   /* the key groups' bounds (the rows sort by the keys first) */
    for (size_t i = 0; i < n; i++) {
        bool same = i > 0;
        for (uint32_t k = 0; same && k < t->nk; k++)
            same = t->key[i * t->nk + k] == t->key[(i - 1) * t->nk + k];
        if (!same)
            t->grp[t->ng++] = i;
    }
    t->grp[t->ng] = n;
    return DKV_OK;
}

dkv_status dkv_profile_finish(dkv_profile *p, const char *where, dkv_err *err)
{
    for (int i = 0; i < DKV_PT_N; i++) {
        if (!p->t[i].present)
            continue;
        dkv_status st = tab_index(&p->t[i], (dkv_prof_tab)i, where, err);
        if (st != DKV_OK)
            return st;
    }
    const dkv_profile_info *in = &p->info;
    double h[8] = {in->first_gemm_s, in->first_attn_s, in->first_other_s, in->host_base_s, in->host_per_item_s,
                   in->host_per_launch_s, in->host_per_gemm_launch_s, in->first_compress_s};
    for (int i = 0; i < 8; i++)
        if (!(isfinite(h[i]) && h[i] >= 0))
            return dkv_err_set(err, DKV_EINVAL, "%s: first_use / host: seconds must be finite and >= 0 (got %.17g)",
                               where, h[i]);
    return DKV_OK;
}

/* ------------------------------------------------------------------ lookup */

/* First index in [lo, hi) whose axis j value is >= x (rows sorted by that axis in the range). */
static size_t lower(const ptab *t, size_t lo, size_t hi, uint32_t j, double x)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ax[mid * t->na + j] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t upper(const ptab *t, size_t lo, size_t hi, uint32_t j, double x)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ax[mid * t->na + j] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Seconds at axes x[] within rows [lo, hi) at axis level j (outermost remaining) and below, as log
 * seconds (t->affine: seconds), piecewise linear in (log x, log t) (t->affine: in (x, t)) along each
 * axis; *exact stays true while every level hit a measured value. */
static double interp(const ptab *t, size_t lo, size_t hi, int j, const double *x, bool *exact)
{
    if (j < 0)
        return hi - lo == 1 ? (t->affine ? t->sec[lo] : t->lsec[lo]) : NAN;
    size_t i = lower(t, lo, hi, (uint32_t)j, x[j]);
    if (i < hi && t->ax[i * t->na + j] == x[j])
        return interp(t, i, upper(t, i, hi, (uint32_t)j, x[j]), j - 1, x, exact);
    if (i == hi && j == 0 && t->lin && hi > lo) {   /* beyond the largest batch: in proportion */
        *exact = false;
        double y = interp(t, hi - 1, hi, -1, x, exact), v = t->ax[(hi - 1) * t->na];
        return t->affine ? y * x[0] / v : y + log(x[0]) - t->lax[(hi - 1) * t->na];
    }
    if (i == lo || i == hi)
        return NAN;   /* outside the measured range */
    *exact = false;
    double v0 = t->ax[(i - 1) * t->na + j], v1 = t->ax[i * t->na + j];
    size_t b0 = lower(t, lo, i, (uint32_t)j, v0), e1 = upper(t, i, hi, (uint32_t)j, v1);
    double y0 = interp(t, b0, i, j - 1, x, exact), y1 = interp(t, i, e1, j - 1, x, exact);
    double w = t->affine ? (x[j] - v0) / (v1 - v0)
                         : (log(x[j]) - t->lax[(i - 1) * t->na + j]) / (t->lax[i * t->na + j] - t->lax[(i - 1) * t->na + j]);
    return y0 + w * (y1 - y0);
}

static double nearest_width(const ptab *t, const double *k, const bool *same, double (*w)(const double *),
                            double want, double *best_keys);

/* The rows [*lo, *hi) of key group k[] (the index sorts by the keys, then the axes), narrowed one
 * key at a time; false when the group is not measured. */
bool dkv_prof_key_group(const ptab *t, const double *k, size_t *lo, size_t *hi)
{
    *lo = 0, *hi = t->n;
    for (uint32_t c = 0; c < t->nk; c++) {
        size_t a = *lo, b = *hi;
        while (a < b) {
            size_t mid = a + (b - a) / 2;
            if (t->key[mid * t->nk + c] < k[c])
                a = mid + 1;
            else
                b = mid;
        }
        if (a == *hi || t->key[a * t->nk + c] != k[c])
            return false;
        size_t e = *hi;   /* the group's end: the first row past a whose key exceeds k[c] (binary, not a walk) */
        for (size_t f = a + 1; f < e;) {
            size_t mid = f + (e - f) / 2;
            if (t->key[mid * t->nk + c] > k[c])
                e = mid;
            else
                f = mid + 1;
        }
        *lo = a, *hi = e;
    }
    return true;
}

/* Seconds at keys k[] (exact) and axes x[]; NAN when the group or the range is missing. */
static double lookup(const dkv_profile *p, dkv_prof_tab id, const double *k, const double *x)
{
    if (!dkv_profile_has(p, id))
        return NAN;
    const ptab *t = &p->t[id];
    size_t lo, hi;
    if (!dkv_prof_key_group(t, k, &lo, &hi))
        return NAN;
    for (uint32_t j = 0; j < t->na; j++)
        if (!(x[j] > 0))
            return NAN;
    bool exact = true;
    double ls = interp(t, lo, hi, (int)t->na - 1, x, &exact);   /* log seconds (affine: seconds) */
    if (isnan(ls))
        return NAN;
    if (exact) {   /* a measured point: its own value, not exp(log) */
        size_t i = lo;
        for (int j = (int)t->na - 1; j >= 0; j--)
            i = lower(t, i, hi, (uint32_t)j, x[j]), hi = upper(t, i, hi, (uint32_t)j, x[j]);
        return t->sec[i];
    }
    return t->affine ? ls : exp(ls);
}

static double nk_width(const double *k) { return k[0] * k[1]; }   /* n k: the weights a row multiplies */

double dkv_profile_gemm(const dkv_profile *p, dkv_prof_tab cls, double m, double n, double k)
{
    double key[2] = {n, k}, ax[1] = {m};
    double s = lookup(p, cls, key, ax);
    if (isnan(s) && cls != DKV_PT_LM_HEAD) {
        double g[3] = {m, k, n};
        s = lookup(p, DKV_PT_GEMM, NULL, g);
    }
    if (cls != DKV_PT_LM_HEAD)   /* the staircase between the table's rows, where measured (gemm_steps) */
        s *= dkv_profile_gemm_step(&p->info, m, n, k);
    if (isnan(s) && cls == DKV_PT_LM_HEAD && dkv_profile_has(p, DKV_PT_LM_HEAD)) {
        /* another vocabulary or width: the nearest measured (n, k) in proportion to n k (the chunk's
         * GEMM and argmax both scale with it) */
        bool same[2] = {false, false};
        double ref[2], want = n * k, w = nearest_width(&p->t[DKV_PT_LM_HEAD], key, same, nk_width, want, ref);
        if (!isnan(w))
            s = lookup(p, DKV_PT_LM_HEAD, ref, ax) * want / w;
    }
    return s;
}

/* Refresh-like attention (q_rows >= kv_tokens: q_rows / kv_tokens items attending their own rows)
 * between two measured key counts a0 < a < a1: each bracket's rows at the same item count q / a
 * (at a0: q a0 / a rows; its own Refresh rows, q >= a0), then log-linear in a.  The generic lookup
 * would interpolate at the same q_rows, which at a1 > q falls among a1's Reuse-like rows (items of
 * 32 queries reading a1 keys each: another kernel configuration) -- a single item of 3,104 tokens
 * came out 57 % above its measured time (docs/COST_MODEL.md "Refresh attention between key counts"). */
static double attn_refresh(const dkv_profile *p, const double *key, double q, double a)
{
    const ptab *t = &p->t[DKV_PT_ATTN];
    size_t lo, hi;
    if (!dkv_prof_key_group(t, key, &lo, &hi))
        return NAN;
    /* the nearest measured key counts with Refresh rows at or below / above a: the group's rows sort by
     * kv_tokens, then q_rows, so a key count has Refresh rows when its block's last q_rows reaches it */
    double a0 = -INFINITY, a1 = INFINITY;
    for (size_t e = upper(t, lo, hi, 1, a); e > lo && !isfinite(a0);) {
        double ab = t->ax[(e - 1) * t->na + 1];
        if (t->ax[(e - 1) * t->na] >= ab)
            a0 = ab;
        e = lower(t, lo, e, 1, ab);
    }
    for (size_t b = lower(t, lo, hi, 1, a); b < hi && !isfinite(a1);) {
        double ab = t->ax[b * t->na + 1];
        size_t e = upper(t, b, hi, 1, ab);
        if (t->ax[(e - 1) * t->na] >= ab)
            a1 = ab;
        b = e;
    }
    if (!isfinite(a0) || !isfinite(a1))
        return NAN;   /* outside the measured key counts */
    double r = q / a, x0[2] = {r * a0, a0}, t0 = lookup(p, DKV_PT_ATTN, key, x0);
    if (a1 == a0)
        return t0;
    double x1[2] = {r * a1, a1}, t1 = lookup(p, DKV_PT_ATTN, key, x1);
    if (!(t0 > 0 && t1 > 0))
        return NAN;
    return exp(log(t0) + log(a / a0) / log(a1 / a0) * (log(t1) - log(t0)));
}

double dkv_profile_attn(const dkv_profile *p, double q_rows, double kv_tokens, double heads, double kv_heads,
                        double head_dim, double mode)
{
    double key[4] = {heads, kv_heads, head_dim, mode}, ax[2] = {q_rows, kv_tokens};
    if (!dkv_profile_has(p, DKV_PT_ATTN))
        return NAN;
    if (q_rows >= kv_tokens && kv_tokens > 0)
        return attn_refresh(p, key, q_rows, kv_tokens);
    return lookup(p, DKV_PT_ATTN, key, ax);
}

double dkv_profile_attn_nearest(const dkv_profile *p, double q_rows, double kv_tokens, double heads, double kv_heads,
                                double head_dim, double mode, double *ref_heads, double *ref_kv_heads)
{
    if (!dkv_profile_has(p, DKV_PT_ATTN))
        return NAN;
    const ptab *t = &p->t[DKV_PT_ATTN];   /* keys: heads, kv_heads, head_dim, mode */
    double best = INFINITY, bh = 0, bk = 0;
    for (size_t g = 0; g < t->ng; g++) {   /* a key group at a time */
        const double *k = t->key + t->grp[g] * t->nk;
        if (k[2] != head_dim || k[3] != mode || !(k[0] > 0 && k[1] > 0))
            continue;
        double d = fabs(log(k[0] / heads)) + fabs(log(k[1] / kv_heads));
        if (d < best)
            best = d, bh = k[0], bk = k[1];
    }
    if (!isfinite(best))
        return NAN;
    *ref_heads = bh, *ref_kv_heads = bk;
    return dkv_profile_attn(p, q_rows, kv_tokens, bh, bk, head_dim, mode);
}

/* The key group of table id whose keys equal k[] where same[i] and whose width w(keys) is nearest
 * to want in log; returns that width (NAN: none). */
static double nearest_width(const ptab *t, const double *k, const bool *same, double (*w)(const double *),
                            double want, double *best_keys)
{
    double best = INFINITY, bw = NAN;
    for (size_t i = 0; i < t->n; i++) {
        const double *g = t->key + i * t->nk;
        bool ok = true;
        for (uint32_t c = 0; c < t->nk && ok; c++)
            ok = !same[c] || g[c] == k[c];
        double gw = ok ? w(g) : 0;
        if (!(gw > 0))
            continue;
        double d = fabs(log(gw / want));
        if (d < best) {
            best = d, bw = gw;
            for (uint32_t c = 0; c < t->nk; c++)
                best_keys[c] = g[c];
        }
    }
    return bw;
}

static double store_width(const double *k) { return (k[0] + 2 * k[1]) * k[2]; }   /* (H + 2 Hkv) D */
static double ew_width(const double *k) { return k[1]; }                         /* cols */

/* Memory-bound kernels of another model's width: the nearest measured width with the same bytes
 * (rows scaled by width / measured width). */
double dkv_profile_kv_store(const dkv_profile *p, double rows, double heads, double kv_heads, double head_dim)
{
    double key[3] = {heads, kv_heads, head_dim}, ax[1] = {rows};
    double t = lookup(p, DKV_PT_KV_STORE, key, ax);
    if (!isnan(t) || !dkv_profile_has(p, DKV_PT_KV_STORE))
        return t;
    bool same[3] = {false, false, true};
    double ref[3], want = store_width(key), w = nearest_width(&p->t[DKV_PT_KV_STORE], key, same, store_width, want, ref);
    if (isnan(w))
        return NAN;
    ax[0] = rows * want / w;
    return lookup(p, DKV_PT_KV_STORE, ref, ax);
}

double dkv_profile_elementwise(const dkv_profile *p, double kind, double rows, double cols)
{
    double key[2] = {kind, cols}, ax[1] = {rows};
    double t = lookup(p, DKV_PT_ELEMENTWISE, key, ax);
    if (!isnan(t) || !dkv_profile_has(p, DKV_PT_ELEMENTWISE))
        return t;
    bool same[2] = {true, false};
    double ref[2], w = nearest_width(&p->t[DKV_PT_ELEMENTWISE], key, same, ew_width, cols, ref);
    if (isnan(w))
        return NAN;
    ax[0] = rows * cols / w;
    return lookup(p, DKV_PT_ELEMENTWISE, ref, ax);
}

double dkv_profile_compress(const dkv_profile *p, double rows, double cols, double rank)
{
    double key[2] = {cols, rank}, ax[1] = {rows};
    return lookup(p, DKV_PT_COMPRESS, key, ax);
}

double dkv_profile_decompress(const dkv_profile *p, double rows, double cols, double rank)
{
    double key[2] = {cols, rank}, ax[1] = {rows};
    return lookup(p, DKV_PT_DECOMPRESS, key, ax);
}

double dkv_profile_copy(const dkv_profile *p, int dir, double bytes, bool contended)
{
    double key[1] = {dir}, ax[1] = {bytes};
    return lookup(p, contended ? DKV_PT_COPY_CONTENDED : DKV_PT_COPY_ALONE, key, ax);
}
