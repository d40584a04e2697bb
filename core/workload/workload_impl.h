/* workload_impl.h - internals shared by the workload sources (not a public header). */
#ifndef DKV_WORKLOAD_IMPL_H
#define DKV_WORKLOAD_IMPL_H

#include "util/rng.h"
#include "workload/workload.h"

struct dkv_workload {
    dkv_request *req;          /* [n], capacity cap */
    size_t      *hash_off;     /* [cap]: start of each request's hash ids in `hashes` while building */
    size_t       n, cap;
    uint64_t    *hashes;       /* every request's hash ids, back to back */
    size_t       n_hashes, cap_hashes;
    size_t      *tok_off;      /* [cap]: start of each request's prompt tokens in `toks` while building */
    uint32_t    *toks;         /* every request's prompt token ids (prompts files), back to back */
    size_t       n_toks, cap_toks;
    double      *arrival0;     /* closed loop: initial arrivals, for dkv_workload_closed_reset */
    uint64_t     skipped;
    uint64_t     skipped_lines[DKV_WORKLOAD_SKIPPED_LINES];   /* the first ones (lenient) */
    bool         closed;
    uint32_t     n_users;
    char         source[256];
};

/* A new empty workload; NULL when out of memory. */
dkv_workload *dkv_wl_new(const char *source);
/* Appends a zeroed request (user DKV_NO_USER, next DKV_NO_NEXT); NULL when out of memory. */
dkv_request *dkv_wl_push(dkv_workload *w);
/* Appends one hash id to the last pushed request. */
dkv_status dkv_wl_push_hash(dkv_workload *w, uint64_t h, dkv_err *err);
/* Appends n prompt token ids to the last pushed request (which then carries tokens; its
 * prompt_tokens must equal the total appended). */
dkv_status dkv_wl_push_tokens(dkv_workload *w, const uint32_t *ids, size_t n, dkv_err *err);
/* Removes the last pushed request and its hash ids (a line that turned out malformed). */
void dkv_wl_pop(dkv_workload *w);

/* Finishes a workload: first_n, hash pointers, optional rebase of arrivals to the earliest,
 * sort by arrival (open loop), time/rate scaling, clamps and rounding, step draws, and the
 * closed-loop chains.  Validates opts. */
dkv_status dkv_wl_finish(dkv_workload *w, const dkv_workload_opts *opts, bool rebase, dkv_err *err);

/* Checks the options alone (scales > 0, ranges ordered). */
dkv_status dkv_wl_opts_validate(const dkv_workload_opts *o, dkv_err *err);

/* One draw from a length distribution (validated beforehand), clamped, >= 1. */
uint32_t dkv_len_draw(const dkv_len_dist *d, dkv_rng *r);

/* Trace readers over a whole file held in memory (buf NUL-terminated, len bytes). */
dkv_status dkv_wl_read_csv(dkv_workload *w, dkv_trace_format fmt, const char *path, char *buf, size_t len,
                           const dkv_workload_opts *o, dkv_err *err);
dkv_status dkv_wl_read_mooncake(dkv_workload *w, const char *path, char *buf, size_t len,
                                const dkv_workload_opts *o, dkv_err *err);

/* Cuts the next line out of *p (NUL-terminates it, strips a trailing '\r'); NULL at the end. */
char *dkv_wl_next_line(char **p);

/* Reads a whole file into a NUL-terminated buffer (caller frees). */
dkv_status dkv_wl_slurp(const char *path, uint64_t max_bytes, char **buf, size_t *len, dkv_err *err);

#endif
