/* workload.h - request streams: synthetic generators and trace readers.
 *
 * A workload is an array of requests owned by an opaque dkv_workload handle.  It comes from
 *   - a synthetic generator (dkv_workload_synth): Poisson, bursty (Gamma inter-arrivals with a
 *     given CV), fixed (all at t = 0 or a fixed interval), or closed-loop N users with think time;
 *   - a trace reader (dkv_workload_read): Azure LLM CSV, Mooncake FAST'25 JSONL, Vidur CSV,
 *     BurstGPT CSV (docs/WORKLOADS.md shows an example line of each);
 *   - a prompts file (dkv_workload_prompts): JSONL with the text or the token ids of each prompt,
 *     so requests carry real prompt tokens (dkv_request.tokens; text via workload/tokenizer.h);
 *   - an array the caller already has (dkv_workload_from_requests).
 *
 *     dkv_workload_opts o;  dkv_workload_opts_default(&o);
 *     o.first_n = 1000;  o.gen_multiple_of = 32;
 *     dkv_workload *w = NULL;  dkv_err err = {0};
 *     if (dkv_workload_read("azure.csv", DKV_FMT_AUTO, &o, &w, &err) != DKV_OK)
 *         fprintf(stderr, "dkv: %s\n", err.msg);          // "azure.csv:17: bad integer (field ContextTokens)"
 *     for (size_t i = 0; i < dkv_workload_count(w); i++) use(dkv_workload_get(w, i));
 *     dkv_workload_free(w);
 *
 * Requests are ordered by arrival (ties keep file order).  Closed-loop workloads are ordered by
 * user round (request i belongs to user i % n_users) and only each user's first request has a
 * finite arrival; the rest arrive when the engine releases them (see "Closed loop" below).
 * Pure computation except the readers, which read files.  Random draws come from opts/cfg seeds.
 */
#ifndef DKV_WORKLOAD_WORKLOAD_H
#define DKV_WORKLOAD_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/names.h"
#include "util/status.h"

#define DKV_NO_USER UINT32_MAX   /* dkv_request.user of an open-loop request */
#define DKV_NO_NEXT UINT32_MAX   /* "no further request" index */

/* One request.  Pointers inside are borrowed from the workload that holds the request. */
typedef struct dkv_request {
    uint64_t id;               /* unique within the workload; 0..n-1 for generators, row order for traces */
    double   arrival_s;        /* seconds from the start of the stream; INFINITY = not yet released (closed loop) */
    uint32_t prompt_tokens;    /* P */
    uint32_t gen_tokens;       /* G */
    uint32_t steps_per_block;  /* 0: take the decode config's steps; else this request's own count */
    uint32_t n_hash_ids;       /* Mooncake: number of 512-token prefix blocks hashed */
    const uint64_t *hash_ids;  /* Mooncake hash_ids (prefix sharing); NULL when n_hash_ids == 0 */
    const uint32_t *tokens;    /* the prompt's token ids (prompt_tokens of them), from a prompts file;
                                * NULL: the workload gives lengths only and a backend makes its own */
    uint32_t user;             /* closed loop: the user issuing it; DKV_NO_USER otherwise */
    uint32_t next_of_user;     /* closed loop: index of this user's next request; DKV_NO_NEXT otherwise */
    double   think_s;          /* closed loop: think time before this request, after the previous one
                                * finishes (drawn when generated, so runs are reproducible) */
} dkv_request;

typedef struct dkv_workload dkv_workload;

/* ------------------------------------------------------------------ options */

/* Applied to every generator and reader, in this order: lenient parsing, first_n, time/rate
 * scaling, clamps and rounding of lengths, per-request step draws. */
typedef struct dkv_workload_opts {
    uint32_t first_n;          /* keep only the first N requests (0 = all).  Readers stop reading there. */
    double   time_scale;       /* multiply every arrival (hence every inter-arrival gap) by this; 1 = as is */
    double   rate_scale;       /* multiply the arrival rate: arrivals are divided by this; 1 = as is */
    bool     lenient;          /* readers: skip malformed lines and count them instead of failing */
    uint32_t prompt_min, prompt_max;  /* clamp prompt lengths (0 = no bound) */
    uint32_t gen_min, gen_max;        /* clamp generation lengths (0 = no bound); applied before rounding */
    uint32_t gen_multiple_of;  /* round G up to a multiple of this (e.g. block_len), at least one
                                * multiple: G' = max(1, ceil(G/m))*m.  0 or 1 = leave as is */
    uint32_t steps_min, steps_max;    /* if steps_max > 0: draw each request's steps_per_block
                                       * uniformly in [steps_min, steps_max] (seeded by `seed`) */
    uint64_t seed;             /* for step draws (and nothing else in readers) */
    uint64_t max_file_bytes;   /* readers: a larger file (or a stream without end, /dev/zero) is an
                                * error; 0 = DKV_WORKLOAD_MAX_FILE_BYTES */
} dkv_workload_opts;

/* The largest trace or lengths file a reader takes by default (2 GiB: the published traces are a
 * few hundred MB).  The readers also refuse a NUL byte (not a text file) where they meet it. */
#define DKV_WORKLOAD_MAX_FILE_BYTES (2ull << 30)

/* first_n 0, scales 1, not lenient, no clamps, no rounding, no step draws, seed 1. */
void dkv_workload_opts_default(dkv_workload_opts *o);

/* ------------------------------------------------------------------ length distributions */

typedef enum dkv_len_kind {
    DKV_LEN_FIXED = 0,     /* always `value` */
    DKV_LEN_UNIFORM,       /* integer uniform in [lo, hi] inclusive */
    DKV_LEN_LOGNORMAL,     /* round(exp(mu + sigma*N(0,1))): median exp(mu), mean exp(mu + sigma^2/2) */
    DKV_LEN_EMPIRICAL      /* a value drawn uniformly from `table` (with replacement) */
} dkv_len_kind;

/* A table of lengths for DKV_LEN_EMPIRICAL: loaded from a file or taken from a workload. */
typedef struct dkv_lengths dkv_lengths;

typedef struct dkv_len_dist {
    dkv_len_kind kind;
    uint32_t value;               /* FIXED */
    uint32_t lo, hi;              /* UNIFORM */
    double   mu, sigma;           /* LOGNORMAL, of ln(length); see dkv_len_lognormal_mean_median */
    const dkv_lengths *table;     /* EMPIRICAL; borrowed, must outlive the generator call */
    uint32_t min, max;            /* clamp after drawing (0 = no bound; lengths are always >= 1) */
} dkv_len_dist;

dkv_len_dist dkv_len_fixed(uint32_t value);
dkv_len_dist dkv_len_uniform(uint32_t lo, uint32_t hi);
dkv_len_dist dkv_len_lognormal(double mu, double sigma);
/* Lognormal with the given median and mean (mean >= median > 0):
 * mu = ln(median), sigma = sqrt(2 ln(mean/median)).  DKV_EINVAL when mean < median. */
dkv_status dkv_len_lognormal_mean_median(double mean, double median, dkv_len_dist *out, dkv_err *err);
dkv_len_dist dkv_len_empirical(const dkv_lengths *table);

/* Checks a distribution's parameters; `what` names it in messages ("prompt", "gen"). */
dkv_status dkv_len_dist_validate(const dkv_len_dist *d, const char *what, dkv_err *err);

/* Loads one positive integer length per line ('#' comments and blank lines ignored).
 * A bad line fails with "file:line: reason (field length)".  Caller frees with dkv_lengths_free. */
dkv_status dkv_lengths_load(const char *path, dkv_lengths **out, dkv_err *err);
typedef enum dkv_len_column { DKV_COL_PROMPT = 0, DKV_COL_GEN } dkv_len_column;
/* Copies the prompt or generation lengths of a workload (e.g. a trace) into a table. */
dkv_status dkv_lengths_from_workload(const dkv_workload *w, dkv_len_column col, dkv_lengths **out,
                                     dkv_err *err);
/* Builds a table from an array (copied). n must be > 0. */
dkv_status dkv_lengths_from_array(const uint32_t *v, size_t n, dkv_lengths **out, dkv_err *err);
size_t   dkv_lengths_count(const dkv_lengths *t);
uint32_t dkv_lengths_at(const dkv_lengths *t, size_t i);
void     dkv_lengths_free(dkv_lengths *t);   /* NULL is a no-op */

/* ------------------------------------------------------------------ synthetic generators */

typedef enum dkv_arrival_kind {
    DKV_ARRIVAL_POISSON = 0,  /* exponential inter-arrivals, mean 1/rate (CV 1) */
    DKV_ARRIVAL_GAMMA,        /* Gamma inter-arrivals, mean 1/rate, coefficient of variation `cv`
                               * (shape 1/cv^2, scale cv^2/rate): cv > 1 is bursty */
    DKV_ARRIVAL_FIXED,        /* request i arrives at i*interval_s (interval 0: all at t = 0) */
    DKV_ARRIVAL_CLOSED        /* n_users users; each sends its next request think_s after its
                               * previous one finished (released by the engine) */
} dkv_arrival_kind;
extern const dkv_names dkv_arrival_names;   /* "poisson", "gamma", "fixed", "closed" (util/names.h) */

typedef struct dkv_synth_cfg {
    dkv_arrival_kind arrival;
    uint32_t n_requests;       /* total requests (> 0) */
    double   rate;             /* POISSON, GAMMA: requests per second (> 0) */
    double   cv;               /* GAMMA: coefficient of variation of inter-arrivals (> 0) */
    double   interval_s;       /* FIXED: gap between arrivals (>= 0) */
    uint32_t n_users;          /* CLOSED: number of users (> 0) */
    double   think_s;          /* CLOSED: mean think time (>= 0) */
    bool     think_exponential;/* CLOSED: think times exponential with mean think_s (else fixed) */
    bool     stagger_first;    /* CLOSED: first requests also wait a think time (else all at t = 0) */
    dkv_len_dist prompt;       /* prompt length P */
    dkv_len_dist gen;          /* generation length G */
    uint64_t seed;             /* every draw (arrivals, lengths, think times) comes from it */
} dkv_synth_cfg;

/* Poisson at 1 req/s, 100 requests, fixed P = 512, G = 256, seed 1. */
void dkv_synth_cfg_default(dkv_synth_cfg *c);

/* Generates a workload.  opts may be NULL (defaults).  Caller frees *out with dkv_workload_free.
 * Errors (DKV_EINVAL) name the field: "synth: field 'rate' must be > 0 (got -1)". */
dkv_status dkv_workload_synth(const dkv_synth_cfg *cfg, const dkv_workload_opts *opts, dkv_workload **out,
                              dkv_err *err);

/* ------------------------------------------------------------------ trace readers */

typedef enum dkv_trace_format {
    DKV_FMT_AUTO = 0,   /* from the extension (.jsonl -> Mooncake) and, for .csv, the header line */
    DKV_FMT_AZURE,      /* TIMESTAMP,ContextTokens,GeneratedTokens ("2023-11-16 18:17:03.9799600") */
    DKV_FMT_MOONCAKE,   /* {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]} */
    DKV_FMT_VIDUR,      /* arrived_at,num_prefill_tokens,num_decode_tokens (seconds) */
    DKV_FMT_BURSTGPT    /* Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type (seconds) */
} dkv_trace_format;

extern const dkv_names dkv_trace_format_names;   /* "auto", "azure", ... (readers.c's reader table; names.h,
                                                   parsed without regard to case) */
const char *dkv_trace_format_name(dkv_trace_format f);

/* Reads a trace file.  Arrivals are seconds relative to the earliest row (the first row of a
 * sorted trace); rows out of order are sorted by arrival, ties in file order.  A malformed line
 * fails with DKV_EFORMAT and "path:line: reason (field NAME)" unless opts->lenient, which skips
 * it and counts it (dkv_workload_skipped).  opts may be NULL.  Caller frees *out. */
dkv_status dkv_workload_read(const char *path, dkv_trace_format fmt, const dkv_workload_opts *opts,
                             dkv_workload **out, dkv_err *err);

/* ------------------------------------------------------------------ prompts files */

struct dkv_tokenizer;

/* A prompts file (docs/WORKLOADS.md, "Prompts files"): JSONL, one object per non-blank line,
 *     {"text": "Once upon a time"}          encoded by cfg->tok (a model with a known tokenizer)
 *     {"tokens": [101, 2023, 2003], "gen": 64}   token ids, each < cfg->vocab
 * exactly one of "text" and "tokens" (non-empty); "gen" (optional, >= 1) overrides cfg->gen.
 * Any other key is an error.  Request i (file order) arrives at i * interval_s. */
typedef struct dkv_prompts_cfg {
    const struct dkv_tokenizer *tok;  /* encodes "text"; NULL or kind none: "text" is an error */
    uint32_t vocab;                   /* token ids must be < vocab (> 0) */
    uint32_t gen;                     /* G of a line without "gen" (> 0) */
    double   interval_s;              /* >= 0 */
} dkv_prompts_cfg;

/* Reads a prompts file.  A bad line fails with DKV_EFORMAT and "path:line: reason (field NAME)";
 * opts->lenient is not accepted (a prompt is not skipped silently), nor prompt_min (it cannot
 * add tokens); prompt_max keeps the first tokens.  opts may be NULL.  Caller frees *out. */
dkv_status dkv_workload_prompts(const char *path, const dkv_prompts_cfg *cfg, const dkv_workload_opts *opts,
                                dkv_workload **out, dkv_err *err);

/* ------------------------------------------------------------------ handle */

/* Copies n requests (hash_ids and tokens copied too) into a new workload, sorted by arrival unless
 * requests carry users (closed loop, kept as given).  opts may be NULL.  Caller frees *out. */
dkv_status dkv_workload_from_requests(const dkv_request *reqs, size_t n, const dkv_workload_opts *opts,
                                      dkv_workload **out, dkv_err *err);

void               dkv_workload_free(dkv_workload *w);                   /* NULL is a no-op */
size_t             dkv_workload_count(const dkv_workload *w);
const dkv_request *dkv_workload_get(const dkv_workload *w, size_t i);     /* borrowed; NULL if out of range */
const dkv_request *dkv_workload_requests(const dkv_workload *w);          /* the array, borrowed */
uint64_t           dkv_workload_skipped(const dkv_workload *w);           /* lines skipped (lenient) */
/* The line numbers of the first skipped lines (at most DKV_WORKLOAD_SKIPPED_LINES, and max), in
 * file order; returns how many were written. */
#define DKV_WORKLOAD_SKIPPED_LINES 5
size_t dkv_workload_skipped_lines(const dkv_workload *w, uint64_t *out, size_t max);
/* Readers: counts a malformed line skipped under opts.lenient (line number ln). */
void dkv_workload__skip(dkv_workload *w, unsigned long ln);
const char        *dkv_workload_source(const dkv_workload *w);            /* "synth:poisson", file path, ... */

/* ------------------------------------------------------------------ closed loop
 *
 * In a closed-loop workload each user has a chain of requests (next_of_user).  The engine either
 * computes arrivals itself (next arrival = finish time + next->think_s) without touching the
 * workload, or calls dkv_workload_closed_release, which writes that arrival into the workload.
 * dkv_workload_closed_reset restores the initial state so one workload can drive several runs. */
bool     dkv_workload_is_closed(const dkv_workload *w);
uint32_t dkv_workload_users(const dkv_workload *w);                      /* 0 for open loop */

/* Request `finished` (an index) finished at finish_s: releases the same user's next request,
 * setting its arrival_s = finish_s + its think_s, and stores its index in *next.  Returns false
 * (and *next = DKV_NO_NEXT) when the user has no further request or the workload is open loop. */
bool dkv_workload_closed_release(dkv_workload *w, size_t finished, double finish_s, uint32_t *next);
void dkv_workload_closed_reset(dkv_workload *w);

/* ------------------------------------------------------------------ summary */

typedef struct dkv_workload_summary {
    uint64_t count;            /* requests */
    uint64_t skipped;          /* malformed lines skipped (lenient reading) */
    uint64_t released;         /* requests with a finite arrival (all of them for open loop) */
    double   duration_s;       /* last finite arrival - first finite arrival */
    double   rate;             /* (released - 1) / duration_s; 0 when undefined */
    double   interarrival_cv;  /* std/mean of gaps between finite arrivals; 0 when undefined */
    double   prompt_mean, prompt_median;
    uint32_t prompt_min, prompt_max;
    double   gen_mean, gen_median;
    uint32_t gen_min, gen_max;
    uint64_t prompt_total, gen_total;
} dkv_workload_summary;

/* Fills *out (all zero for an empty workload).  DKV_ENOMEM only if the median's scratch fails. */
dkv_status dkv_workload_summarize(const dkv_workload *w, dkv_workload_summary *out, dkv_err *err);

#endif
