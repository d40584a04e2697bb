/* workload.c - the workload handle: building, options, accessors, closed loop, summary. */
#include "workload/workload_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "util/file.h"

void dkv_workload_opts_default(dkv_workload_opts *o)
{
    memset(o, 0, sizeof *o);
    o->time_scale = 1.0;
    o->rate_scale = 1.0;
    o->seed = 1;
}

dkv_status dkv_wl_opts_validate(const dkv_workload_opts *o, dkv_err *err)
{
    if (!(o->time_scale > 0) || !isfinite(o->time_scale))
        return dkv_err_set(err, DKV_EINVAL, "workload: option 'time_scale' must be > 0 (got %g)", o->time_scale);
    if (!(o->rate_scale > 0) || !isfinite(o->rate_scale))
        return dkv_err_set(err, DKV_EINVAL, "workload: option 'rate_scale' must be > 0 (got %g)", o->rate_scale);
    if (o->prompt_max && o->prompt_min > o->prompt_max)
        return dkv_err_set(err, DKV_EINVAL, "workload: option 'prompt_min' (%u) exceeds 'prompt_max' (%u)",
                           o->prompt_min, o->prompt_max);
    if (o->gen_max && o->gen_min > o->gen_max)
        return dkv_err_set(err, DKV_EINVAL, "workload: option 'gen_min' (%u) exceeds 'gen_max' (%u)", o->gen_min,
                           o->gen_max);
    if (o->steps_max > 0 && (o->steps_min == 0 || o->steps_min > o->steps_max))
        return dkv_err_set(err, DKV_EINVAL,
                           "workload: option 'steps_min' must be in [1, steps_max] (got %u, steps_max %u)",
                           o->steps_min, o->steps_max);
    return DKV_OK;
}

/* ------------------------------------------------------------------ building */

dkv_workload *dkv_wl_new(const char *source)
{
    dkv_workload *w = calloc(1, sizeof *w);
    if (w) snprintf(w->source, sizeof w->source, "%s", source ? source : "");
    return w;
}

dkv_request *dkv_wl_push(dkv_workload *w)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        dkv_request *r = realloc(w->req, cap * sizeof *r);
        if (!r) return NULL;
        w->req = r;
        size_t *h = realloc(w->hash_off, cap * sizeof *h);
        if (!h) return NULL;
        w->hash_off = h;
        size_t *t = realloc(w->tok_off, (cap + 1) * sizeof *t);
        if (!t) return NULL;
        w->tok_off = t;
        w->cap = cap;
    }
    dkv_request *r = &w->req[w->n];
    memset(r, 0, sizeof *r);
    r->user = DKV_NO_USER;
    r->next_of_user = DKV_NO_NEXT;
    w->hash_off[w->n] = w->n_hashes;
    w->tok_off[w->n] = w->n_toks;
    w->n++;
    w->tok_off[w->n] = w->n_toks;
    return r;
}

dkv_status dkv_wl_push_tokens(dkv_workload *w, const uint32_t *ids, size_t n, dkv_err *err)
{
    if (w->n_toks + n > w->cap_toks) {
        size_t cap = w->cap_toks ? w->cap_toks : 4096;
        while (cap < w->n_toks + n) cap *= 2;
        uint32_t *p = realloc(w->toks, cap * sizeof *p);
        if (!p) return dkv_err_set(err, DKV_ENOMEM, "workload: out of memory for prompt tokens");
        w->toks = p;
        w->cap_toks = cap;
    }
    memcpy(w->toks + w->n_toks, ids, n * sizeof *ids);
    w->n_toks += n;
    w->tok_off[w->n] = w->n_toks;
    return DKV_OK;
}

dkv_status dkv_wl_push_hash(dkv_workload *w, uint64_t h, dkv_err *err)
{
    if (w->n_hashes == w->cap_hashes) {
        size_t cap = w->cap_hashes ? w->cap_hashes * 2 : 1024;
        uint64_t *p = realloc(w->hashes, cap * sizeof *p);
        if (!p) return dkv_err_set(err, DKV_ENOMEM, "workload: out of memory for hash ids");
        w->hashes = p;
        w->cap_hashes = cap;
    }
    w->hashes[w->n_hashes++] = h;
    w->req[w->n - 1].n_hash_ids++;
    return DKV_OK;
}

void dkv_wl_pop(dkv_workload *w)
{
    if (w->n == 0) return;
    w->n--;
    w->n_hashes = w->hash_off[w->n];
    w->n_toks = w->tok_off[w->n];
}

void dkv_workload_free(dkv_workload *w)
{
    if (!w) return;
    free(w->req);
    free(w->hash_off);
    free(w->hashes);
    free(w->tok_off);
    free(w->toks);
    free(w->arrival0);
    free(w);
}

/* ------------------------------------------------------------------ finishing */

typedef struct sort_key {
    double arrival;
    size_t index;
} sort_key;

static int cmp_key(const void *a, const void *b)
{
    const sort_key *x = a, *y = b;
    if (x->arrival < y->arrival) return -1;
    if (x->arrival > y->arrival) return 1;
    return (x->index > y->index) - (x->index < y->index);
}

static dkv_status sort_by_arrival(dkv_workload *w, dkv_err *err)
{
    size_t n = w->n;
    size_t i;
    for (i = 1; i < n; i++)
        if (w->req[i].arrival_s < w->req[i - 1].arrival_s) break;
    if (i >= n) return DKV_OK;
    sort_key *k = malloc(n * sizeof *k);
    dkv_request *out = malloc(n * sizeof *out);
    if (!k || !out) {
        free(k);
        free(out);
        return dkv_err_set(err, DKV_ENOMEM, "workload: out of memory sorting %zu requests", n);
    }
    for (i = 0; i < n; i++) {
        k[i].arrival = w->req[i].arrival_s;
        k[i].index = i;
    }
    qsort(k, n, sizeof *k, cmp_key);
    for (i = 0; i < n; i++) out[i] = w->req[k[i].index];
    free(k);
    free(w->req);
    w->req = out;
    w->cap = n; /* hash_off is stale from here on: hash pointers are set, nothing is pushed after */
    return DKV_OK;
}

static uint32_t clamp_len(uint32_t v, uint32_t lo, uint32_t hi)
{
    if (lo && v < lo) v = lo;
    if (hi && v > hi) v = hi;
    return v;
}

dkv_status dkv_wl_finish(dkv_workload *w, const dkv_workload_opts *opts, bool rebase, dkv_err *err)
{
    dkv_workload_opts def;
    if (!opts) {
        dkv_workload_opts_default(&def);
        opts = &def;
    }
    dkv_status rc = dkv_wl_opts_validate(opts, err);
    if (rc != DKV_OK) return rc;
    if (opts->first_n && w->n > opts->first_n) {
        w->n_hashes = w->hash_off[opts->first_n];
        w->n_toks = w->tok_off[opts->first_n];
        w->n = opts->first_n;
    }
    for (size_t i = 0; i < w->n; i++) {
        dkv_request *r = &w->req[i];
        r->hash_ids = r->n_hash_ids ? w->hashes + w->hash_off[i] : NULL;
        size_t nt = w->tok_off[i + 1] - w->tok_off[i];
        r->tokens = nt ? w->toks + w->tok_off[i] : NULL;
        if (nt && nt != r->prompt_tokens)
            return dkv_err_set(err, DKV_EINVAL, "workload: request %llu: %zu prompt token ids for prompt_tokens %u",
                               (unsigned long long)r->id, nt, r->prompt_tokens);
        if (nt && opts->prompt_min > nt)
            return dkv_err_set(err, DKV_EINVAL, "workload: request %llu: option 'prompt_min' (%u) cannot lengthen a "
                               "prompt given by its %zu token ids", (unsigned long long)r->id, opts->prompt_min, nt);
    }

    if (rebase && w->n > 0) {
        double t0 = INFINITY;
        for (size_t i = 0; i < w->n; i++)
            if (w->req[i].arrival_s < t0) t0 = w->req[i].arrival_s;
        for (size_t i = 0; i < w->n; i++) w->req[i].arrival_s -= t0;
    }
    if (!w->closed) {
        rc = sort_by_arrival(w, err);
        if (rc != DKV_OK) return rc;
    }
    double f = opts->time_scale / opts->rate_scale;
    dkv_rng rng;
    dkv_rng_seed(&rng, opts->seed);
    for (size_t i = 0; i < w->n; i++) {
        dkv_request *r = &w->req[i];
        if (f != 1.0) {
            r->arrival_s *= f;
            r->think_s *= f;
        }
        r->prompt_tokens = clamp_len(r->prompt_tokens, opts->prompt_min, opts->prompt_max);
        r->gen_tokens = clamp_len(r->gen_tokens, opts->gen_min, opts->gen_max);
        uint32_t m = opts->gen_multiple_of;
        if (m > 1) {
            uint64_t g = ((uint64_t)r->gen_tokens + m - 1) / m * m;
            if (g == 0) g = m;
            if (g > UINT32_MAX) return dkv_err_set(err, DKV_ERANGE, "workload: request %llu: gen_tokens overflow",
                                                   (unsigned long long)r->id);
            r->gen_tokens = (uint32_t)g;
        }
        if (opts->steps_max > 0)
            r->steps_per_block =
                opts->steps_min + (uint32_t)dkv_rng_below(&rng, (uint64_t)opts->steps_max - opts->steps_min + 1);
    }
    if (w->closed) {
        /* chains in array order; every request but a user's first waits for its release */
        uint32_t *last = malloc((size_t)w->n_users * sizeof *last);
        w->arrival0 = malloc((w->n ? w->n : 1) * sizeof *w->arrival0);
        if (!last || !w->arrival0) {
            free(last);
            return dkv_err_set(err, DKV_ENOMEM, "workload: out of memory for closed-loop chains");
        }
        for (uint32_t u = 0; u < w->n_users; u++) last[u] = DKV_NO_NEXT;
        for (size_t i = 0; i < w->n; i++) {
            dkv_request *r = &w->req[i];
            if (r->user >= w->n_users) {
                free(last);
                return dkv_err_set(err, DKV_EINVAL, "workload: request %llu: user %u out of range (users %u)",
                                   (unsigned long long)r->id, r->user, w->n_users);
            }
            r->next_of_user = DKV_NO_NEXT;
            if (last[r->user] != DKV_NO_NEXT) {
                w->req[last[r->user]].next_of_user = (uint32_t)i;
                r->arrival_s = INFINITY;
            }
            last[r->user] = (uint32_t)i;
            w->arrival0[i] = r->arrival_s;
        }
        free(last);
    }
    return DKV_OK;
}

dkv_status dkv_workload_from_requests(const dkv_request *reqs, size_t n, const dkv_workload_opts *opts,
                                      dkv_workload **out, dkv_err *err)
{
    *out = NULL;
    dkv_workload *w = dkv_wl_new("requests");
    if (!w) return dkv_err_set(err, DKV_ENOMEM, "workload: out of memory");
    uint32_t users = 0;
    bool any_user = false;
    for (size_t i = 0; i < n; i++) {
        if (reqs[i].user != DKV_NO_USER) {
            any_user = true;
            if (reqs[i].user + 1 > users) users = reqs[i].user + 1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (any_user && reqs[i].user == DKV_NO_USER) {
            dkv_workload_free(w);
            return dkv_err_set(err, DKV_EINVAL,
                               "workload: request %zu (id %llu) has no user while others have one (closed loop)",
                               i, (unsigned long long)reqs[i].id);
        }
        if (!any_user && !isfinite(reqs[i].arrival_s)) {
            dkv_workload_free(w);
            return dkv_err_set(err, DKV_EINVAL, "workload: request %zu (id %llu): field 'arrival_s' is not finite",
                               i, (unsigned long long)reqs[i].id);
        }
        dkv_request *r = dkv_wl_push(w);
        if (!r) {
            dkv_workload_free(w);
            return dkv_err_set(err, DKV_ENOMEM, "workload: out of memory");
        }
        *r = reqs[i];
        r->n_hash_ids = 0;
        r->hash_ids = NULL;
        r->tokens = NULL;
        if (reqs[i].tokens) {
            dkv_status rc = dkv_wl_push_tokens(w, reqs[i].tokens, reqs[i].prompt_tokens, err);
            if (rc != DKV_OK) {
                dkv_workload_free(w);
                return rc;
            }
        }
        for (uint32_t j = 0; j < reqs[i].n_hash_ids; j++) {
            dkv_status rc = dkv_wl_push_hash(w, reqs[i].hash_ids[j], err);
            if (rc != DKV_OK) {
                dkv_workload_free(w);
                return rc;
            }
        }
    }
    w->closed = any_user;
    w->n_users = users;
    dkv_status rc = dkv_wl_finish(w, opts, false, err);
    if (rc != DKV_OK) {
        dkv_workload_free(w);
        return rc;
    }
    *out = w;
    return DKV_OK;
}

/* ------------------------------------------------------------------ accessors */

size_t dkv_workload_count(const dkv_workload *w) { return w ? w->n : 0; }
const dkv_request *dkv_workload_get(const dkv_workload *w, size_t i) { return w && i < w->n ? &w->req[i] : NULL; }
const dkv_request *dkv_workload_requests(const dkv_workload *w) { return w ? w->req : NULL; }
uint64_t dkv_workload_skipped(const dkv_workload *w) { return w ? w->skipped : 0; }

size_t dkv_workload_skipped_lines(const dkv_workload *w, uint64_t *out, size_t max)
{
    size_t n = 0;
    for (; w && n < max && n < w->skipped && n < DKV_WORKLOAD_SKIPPED_LINES; n++)
        out[n] = w->skipped_lines[n];
    return n;
}

void dkv_workload__skip(dkv_workload *w, unsigned long ln)
{
    if (w->skipped < DKV_WORKLOAD_SKIPPED_LINES)
        w->skipped_lines[w->skipped] = ln;
    w->skipped++;
}
const char *dkv_workload_source(const dkv_workload *w) { return w ? w->source : ""; }
bool dkv_workload_is_closed(const dkv_workload *w) { return w && w->closed; }
uint32_t dkv_workload_users(const dkv_workload *w) { return w && w->closed ? w->n_users : 0; }

bool dkv_workload_closed_release(dkv_workload *w, size_t finished, double finish_s, uint32_t *next)
{
    if (next) *next = DKV_NO_NEXT;
    if (!w || !w->closed || finished >= w->n) return false;
    uint32_t j = w->req[finished].next_of_user;
    if (j == DKV_NO_NEXT) return false;
    w->req[j].arrival_s = finish_s + w->req[j].think_s;
    if (next) *next = j;
    return true;
}

void dkv_workload_closed_reset(dkv_workload *w)
{
    if (!w || !w->closed || !w->arrival0) return;
    for (size_t i = 0; i < w->n; i++) w->req[i].arrival_s = w->arrival0[i];
}

/* ------------------------------------------------------------------ summary */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static double median_u32(uint32_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u32);
    return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

dkv_status dkv_workload_summarize(const dkv_workload *w, dkv_workload_summary *out, dkv_err *err)
{
    memset(out, 0, sizeof *out);
    if (!w) return DKV_OK;
    out->skipped = w->skipped;
    size_t n = w->n;
    out->count = n;
    if (n == 0) return DKV_OK;
    uint32_t *scratch = malloc(n * sizeof *scratch);
    if (!scratch) return dkv_err_set(err, DKV_ENOMEM, "workload: out of memory for the summary");
    out->prompt_min = out->gen_min = UINT32_MAX;
    double first = INFINITY, last = -INFINITY, prev = NAN, gsum = 0, gsum2 = 0;
    uint64_t ngaps = 0;
    for (size_t i = 0; i < n; i++) {
        const dkv_request *r = &w->req[i];
        out->prompt_total += r->prompt_tokens;
        out->gen_total += r->gen_tokens;
        if (r->prompt_tokens < out->prompt_min) out->prompt_min = r->prompt_tokens;
        if (r->prompt_tokens > out->prompt_max) out->prompt_max = r->prompt_tokens;
        if (r->gen_tokens < out->gen_min) out->gen_min = r->gen_tokens;
        if (r->gen_tokens > out->gen_max) out->gen_max = r->gen_tokens;
        double t = r->arrival_s;
        if (!isfinite(t)) continue;
        out->released++;
        if (t < first) first = t;
        if (t > last) last = t;
        if (!w->closed && out->released > 1) {
            double g = t - prev;
            gsum += g;
            gsum2 += g * g;
            ngaps++;
        }
        prev = t;
    }
    out->prompt_mean = (double)out->prompt_total / n;
    out->gen_mean = (double)out->gen_total / n;
    for (size_t i = 0; i < n; i++) scratch[i] = w->req[i].prompt_tokens;
    out->prompt_median = median_u32(scratch, n);
    for (size_t i = 0; i < n; i++) scratch[i] = w->req[i].gen_tokens;
    out->gen_median = median_u32(scratch, n);
    free(scratch);
    if (out->released > 1) {
        out->duration_s = last - first;
        if (out->duration_s > 0) out->rate = (double)(out->released - 1) / out->duration_s;
    }
    if (ngaps > 1) {
        double mean = gsum / ngaps, var = gsum2 / ngaps - mean * mean;
        if (var < 0) var = 0;
        if (mean > 0) out->interarrival_cv = sqrt(var) / mean;
    }
    return DKV_OK;
}

/* ------------------------------------------------------------------ file reading */

dkv_status dkv_wl_slurp(const char *path, uint64_t max_bytes, char **buf, size_t *len, dkv_err *err)
{
    *buf = NULL;
    *len = 0;
    if (max_bytes == 0)
        max_bytes = DKV_WORKLOAD_MAX_FILE_BYTES;
    FILE *f;
    dkv_status ost = dkv_fopen_input(path, &f, err);
    if (ost != DKV_OK) return ost;
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > max_bytes) {
        fclose(f);
        return dkv_err_set(err, DKV_EFORMAT, "%s: %llu bytes, more than the readers' limit of %llu bytes", path,
                           (unsigned long long)sb.st_size, (unsigned long long)max_bytes);
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    dkv_status st = DKV_OK;
    while (b) {
        if (n + 1 >= cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t want = cap - 1 - n;
        if (want > max_bytes + 1 - n)
            want = max_bytes + 1 - n;   /* one byte past the limit tells a stream without end */
        size_t got = fread(b + n, 1, want, f);
        const char *nul = memchr(b + n, '\0', got);
        if (nul) {   /* /dev/zero, a binary or UTF-16 file: stop at once instead of reading on */
            size_t at = (size_t)(nul - b), line = 1;
            for (size_t i = 0; i < at; i++)
                line += b[i] == '\n';
            st = dkv_err_set(err, DKV_EFORMAT, "%s:%zu: NUL byte at byte %zu: not a text file", path, line, at);
            break;
        }
        n += got;
        if (n > max_bytes) {
            st = dkv_err_set(err, DKV_EFORMAT, "%s: more than the readers' limit of %llu bytes (a stream without end?)",
                             path, (unsigned long long)max_bytes);
            break;
        }
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (!b) return dkv_err_set(err, DKV_ENOMEM, "%s: out of memory reading the file", path);
    if (st != DKV_OK || bad) {
        free(b);
        return st != DKV_OK ? st : dkv_err_set(err, DKV_EIO, "%s: read error", path);
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return DKV_OK;
}
