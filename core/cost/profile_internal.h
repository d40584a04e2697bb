/* profile_internal.h - the indexed profile tables, shared by core/cost/profile.c (loading, checks,
 * the generic lookups) and core/cost/profile_select.c (the sparse selection's lookup).  Not part of
 * the cost module's interface (profile.h). */
#ifndef DKV_COST_PROFILE_INTERNAL_H
#define DKV_COST_PROFILE_INTERNAL_H

#include "cost/profile.h"

#define MAX_KEYS 4
#define MAX_AXES 3

/* A table, indexed: rows sorted by (keys, outermost axis .. innermost axis). */
typedef struct ptab {
    bool     present;
    bool     lin;            /* specs[].lin */
    bool     affine;         /* interpolated in (x, t), not (log x, log t): gemm_affine() */
    int      warm_col;       /* the warm_s column (absolute), -1: none; used when specs[].warm */
    int      stream_col;     /* the stream_s column (absolute), -1: none (needs warm_col) */
    double   drain_s;        /* specs[].drain: added to stream_s (tab_index), else 0 */
    uint32_t n_fields, n_extra, width;
    char     fields[DKV_PROF_FIELDS][24];
    double  *raw;            /* n x width as given */
    size_t   n;
    uint32_t nk, na;
    int      key_col[MAX_KEYS], axis_col[MAX_AXES];
    double  *key;            /* n x nk, sorted */
    double  *ax;             /* n x na: the axis values (not logs), sorted */
    double  *lax;            /* their logs */
    double  *sec, *lsec;     /* seconds per call and its log */
    size_t  *grp, ng;        /* the key groups: group g is rows [grp[g], grp[g + 1]) (ng groups, ng + 1 bounds) */
} ptab;

struct dkv_profile {
    dkv_profile_info info;
    ptab t[DKV_PT_N];
};

/* The rows [*lo, *hi) of key group k[] (the index sorts by the keys, then the axes), narrowed one
 * key at a time; false when the group is not measured. */
bool dkv_prof_key_group(const ptab *t, const double *k, size_t *lo, size_t *hi);

#endif
