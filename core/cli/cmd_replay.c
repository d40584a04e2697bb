/* cmd_replay.c - `dkv replay TRACE --mem KIND [options] [-o FILE.h5]`: the options, then the
 * replay of the trace's allocation events (docs/TRACE_FORMAT.md) through a memory manager
 * (core/replay), its statistics printed (docs/MEMORY.md) and, with -o, written with the time
 * series to HDF5 (io/mem_h5.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dkv_commit.h"
#include "cli/commands.h"
#include "io/h5.h"
#include "io/mem_h5.h"
#include "mem/mem.h"
#include "replay/replay.h"

static void replay_usage(FILE *out)
{
    fputs("usage: dkv replay TRACE --mem static|caching|blockpool [options] [-o FILE.h5]\n"
          "\n"
          "Replays the alloc/free events of TRACE (CSV or binary, docs/TRACE_FORMAT.md) through a\n"
          "memory manager (docs/MEMORY.md) and prints requested/allocated/reserved bytes, both\n"
          "fragmentations, largest free extent, failures and block reuse.  Request events\n"
          "(sub=admit with bytes = the request's maximum) make the static manager reserve;\n"
          "sub=finish releases the reservation.  Other events only advance the clock.\n"
          "\n"
          "options (BYTES accept KiB, MiB, GiB, TiB, KB, MB, GB suffixes):\n"
          "  --capacity BYTES      device memory for the manager (default 80GiB)\n"
          "  --delay S             release delay in seconds after refcount zero (default 0)\n"
          "  --stride N            sample the time series every N events (default 1; 0 = off)\n"
          "  --max-split BYTES     caching: max_split_size (default unlimited; must be > 20MiB)\n"
          "  --block-tokens N      blockpool: tokens per block (default 256)\n"
          "  --token-bytes BYTES   blockpool: bytes per token (default 16384)\n"
          "  --block-bytes BYTES   blockpool: block size, overrides the two above\n"
          "  --chunk-blocks N      blockpool: blocks per growth chunk, a power of two (default 64)\n"
          "  --initial BYTES       blockpool: set up at creation (default 0)\n"
          "  --no-grow             blockpool: do not grow past --initial\n"
          "  --shrink              blockpool: give wholly free chunks back automatically\n"
          "  -o FILE.h5            write statistics and time series (run --run NAME) to a new file (an\n"
          "                        HDF5 file there is replaced, any other file refused)\n"
          "  --run NAME            run name in FILE.h5 (default replay_<kind>)\n"
          "  --strict              exit 1 when the trace has anomalies (free of an unknown id, ...)\n"
          "  -q, --quiet           print only the summary table\n",
          out);
}

/* "80GiB", "512MiB", "1.5GB", "4096" -> bytes; false when malformed. */
static bool parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return false;
    static const struct {
        const char *suf;
        double mul;
    } sfx[] = {{"", 1},          {"B", 1},          {"KiB", 1024.0},     {"MiB", 1048576.0},
               {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}, {"KB", 1e3}, {"MB", 1e6},
               {"GB", 1e9},      {"TB", 1e12}};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++)
        if (strcmp(end, sfx[i].suf) == 0) {
            double b = v * sfx[i].mul;
            if (b > 1.8e19 || b != (double)(uint64_t)b)
                return false;
            *out = (uint64_t)b;
            return true;
        }
    return false;
}

static bool parse_uint(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || v > max)
        return false;
    *out = v;
    return true;
}

static void print_bytes(const char *label, uint64_t now, uint64_t peak)
{
    printf("  %-22s %16llu B  %10.3f GiB   peak %16llu B  %10.3f GiB\n", label, (unsigned long long)now,
           (double)now / 1073741824.0, (unsigned long long)peak, (double)peak / 1073741824.0);
}

typedef struct replay_args {
    const char *trace, *out_path, *run_name;
    bool have_kind, strict, quiet;
    dkv_mem_kind kind;
    dkv_mem_options o;
    const char *given[24];   /* the options given, for the check that each takes effect with --mem's kind */
    int n_given;
} replay_args;

/* One option with its value; false (message printed) when the value is bad. */
static bool parse_option(replay_args *a, const char *opt, const char *v, bool *known)
{
    dkv_mem_options *o = &a->o;
    dkv_err err = {0};
    uint64_t x = 0;
    bool ok = true;
    *known = true;
    if (!strcmp(opt, "--mem")) {
        int k = 0;
        ok = dkv_names_parse(&dkv_mem_kind_names, v, &k, &err) == DKV_OK;
        a->kind = (dkv_mem_kind)k;
        a->have_kind = ok;
    } else if (!strcmp(opt, "--capacity")) {
        ok = parse_bytes(v, &o->capacity_bytes) && o->capacity_bytes > 0;
    } else if (!strcmp(opt, "--delay")) {
        char *end;
        errno = 0;
        o->release_delay_s = strtod(v, &end);
        ok = end != v && !*end && errno == 0 && isfinite(o->release_delay_s) && o->release_delay_s >= 0;
    } else if (!strcmp(opt, "--stride")) {
        ok = parse_uint(v, UINT32_MAX, &x);
        o->sample_stride = (uint32_t)x;
    } else if (!strcmp(opt, "--max-split")) {
        ok = parse_bytes(v, &o->max_split_size);
    } else if (!strcmp(opt, "--block-tokens")) {
        ok = parse_uint(v, UINT32_MAX, &x) && x > 0;
        o->block_tokens = (uint32_t)x;
    } else if (!strcmp(opt, "--token-bytes")) {
        ok = parse_bytes(v, &o->token_bytes) && o->token_bytes > 0;
    } else if (!strcmp(opt, "--block-bytes")) {
        ok = parse_bytes(v, &o->block_bytes) && o->block_bytes > 0;
    } else if (!strcmp(opt, "--chunk-blocks")) {
        ok = parse_uint(v, 1u << 20, &x) && x > 0;
        o->chunk_blocks = (uint32_t)x;
    } else if (!strcmp(opt, "--initial")) {
        ok = parse_bytes(v, &o->initial_bytes);
    } else if (!strcmp(opt, "-o")) {
        a->out_path = v;
    } else if (!strcmp(opt, "--run")) {
        a->run_name = v;
    } else {
        *known = false;
        return false;
    }
    if (!ok)
        fprintf(stderr, "dkv replay: %s: bad value '%s'%s%s\n", opt, v, err.code ? ": " : "", err.code ? err.msg : "");
    return ok;
}

/* An option of another kind of manager cannot take effect: a usage error naming it, not a silent default. */
static bool kind_options_ok(const replay_args *a)
{
    static const char *const caching[] = {"--max-split", NULL};
    static const char *const pool[] = {"--block-tokens", "--token-bytes", "--block-bytes", "--chunk-blocks", "--initial",
                                       "--no-grow", "--shrink", NULL};
    for (int i = 0; i < a->n_given; i++) {
        const char *const *only = a->kind != DKV_MEM_CACHING ? caching : NULL;
        for (int pass = 0; pass < 2; pass++, only = a->kind != DKV_MEM_BLOCKPOOL ? pool : NULL)
            for (const char *const *k = only; k && *k; k++)
                if (!strcmp(a->given[i], *k)) {
                    fprintf(stderr, "dkv replay: %s is for --mem %s (the %s manager does not read it)\n", *k,
                            pass ? "blockpool" : "caching", dkv_mem_kind_name(a->kind));
                    return false;
                }
    }
    return true;
}

/* The command line into *a: -1 to go on, else the exit code (help, usage error). */
static int parse_args(int argc, char **argv, replay_args *a)
{
    memset(a, 0, sizeof *a);
    a->kind = DKV_MEM_STATIC;
    a->o = dkv_mem_options_default(DKV_MEM_STATIC);
    a->o.sample_stride = 1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            replay_usage(stdout);
            return DKV_EXIT_OK;
        }
        if (!strcmp(s, "--strict")) { a->strict = true; continue; }
        if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) { a->quiet = true; continue; }
        if (a->n_given < 24)
            a->given[a->n_given++] = s;
        if (!strcmp(s, "--no-grow")) { a->o.grow = false; continue; }
        if (!strcmp(s, "--shrink")) { a->o.shrink = true; continue; }
        if (s[0] != '-') {
            if (a->trace) {
                fprintf(stderr, "dkv replay: more than one trace given ('%s' and '%s')\n", a->trace, s);
                return DKV_EXIT_USAGE;
            }
            a->trace = s;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "dkv replay: option %s needs a value (see dkv replay --help)\n", s);
            return DKV_EXIT_USAGE;
        }
        bool known;
        if (!parse_option(a, s, argv[++i], &known)) {
            if (!known)
                fprintf(stderr, "dkv replay: unknown option '%s' (see dkv replay --help)\n", s);
            return DKV_EXIT_USAGE;
        }
    }
    if (!a->trace || !a->have_kind) {
        fprintf(stderr, "dkv replay: %s (usage: dkv replay TRACE --mem static|caching|blockpool [options])\n",
                !a->trace ? "no trace given" : "--mem KIND is required");
        return DKV_EXIT_USAGE;
    }
    a->o.kind = a->kind;
    return kind_options_ok(a) ? -1 : DKV_EXIT_USAGE;
}

static void print_report(const replay_args *a, const dkv_mem *m, const dkv_replay_result *r)
{
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    const dkv_mem_replay_counts *c = &r->counts;
    printf("dkv replay %s --mem %s: %llu events (%llu alloc, %llu free, %llu other), %.6g s of trace\n",
           a->trace, dkv_mem_kind_name(a->kind), (unsigned long long)r->n_events,
           (unsigned long long)(c->n_alloc + c->n_alloc_failed), (unsigned long long)(c->n_free + c->n_free_of_failed),
           (unsigned long long)r->n_other, r->last_time_s);
    print_bytes("requested", s.requested, s.peak_requested);
    print_bytes("allocated", s.allocated, s.peak_allocated);
    print_bytes("reserved", s.reserved, s.peak_reserved);
    printf("  %-22s now %.4f  peak %.4f  mean %.4f  at peak reserved %.4f\n", "internal fragmentation",
           s.internal_frag, s.peak_internal_frag, s.mean_internal_frag, s.internal_frag_at_peak);
    printf("  %-22s now %.4f  peak %.4f  mean %.4f  at peak reserved %.4f\n", "external fragmentation",
           s.external_frag, s.peak_external_frag, s.mean_external_frag, s.external_frag_at_peak);
    printf("  %-22s %llu B\n", "largest free extent", (unsigned long long)s.largest_free);
    printf("  %-22s %llu (%llu although reserved - allocated was larger)\n", "failed requests",
           (unsigned long long)s.n_failed, (unsigned long long)s.n_failed_frag);
    printf("  %-22s %.4f (%llu of %llu)\n", "block reuse", s.reuse_rate, (unsigned long long)s.reuse_hits,
           (unsigned long long)s.reuse_total);
    printf("  %-22s %llu allocs, %llu frees, %llu B, %.6g s modelled\n", "device", (unsigned long long)s.device_allocs,
           (unsigned long long)s.device_frees, (unsigned long long)s.device_alloc_bytes, s.device_time_s);
    if (a->kind == DKV_MEM_CACHING)
        printf("  %-22s num_alloc_retries %llu, num_ooms %llu, inactive_split %llu B in %llu blocks\n",
               "pytorch counters", (unsigned long long)s.num_alloc_retries, (unsigned long long)s.num_ooms,
               (unsigned long long)s.inactive_split_bytes, (unsigned long long)s.inactive_split_blocks);
    if (a->kind == DKV_MEM_BLOCKPOOL)
        printf("  %-22s %llu B blocks, %llu total, %llu free\n", "blocks", (unsigned long long)dkv_mem_block_bytes(m),
               (unsigned long long)s.blocks_total, (unsigned long long)s.blocks_free);
    if (a->kind == DKV_MEM_STATIC)
        printf("  %-22s %llu reserved, %llu refused, %llu returned\n", "reservations", (unsigned long long)c->n_reserve,
               (unsigned long long)c->n_reserve_failed, (unsigned long long)c->n_unreserve);
    printf("  %-22s free of unknown id %llu, id allocated twice %llu, live at end %llu\n", "trace anomalies",
           (unsigned long long)c->n_free_unknown, (unsigned long long)c->n_dup_id, (unsigned long long)c->live);
}

/* The run into a new file at a->out_path (io/mem_h5.h layout plus the trace's counts). */
static dkv_status write_run(const replay_args *a, const dkv_mem *m, const dkv_replay_result *r, dkv_err *err)
{
    char name[64];
    snprintf(name, sizeof name, "replay_%s", dkv_mem_kind_name(a->kind));
    dkv_h5 *h5 = NULL;
    dkv_h5_run *run = NULL;
    char when[32];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const dkv_mem_replay_counts *c = &r->counts;
    if (dkv_h5_create(a->out_path, &h5, err) || dkv_h5_run_begin(h5, a->run_name ? a->run_name : name, &run, err) ||
        dkv_h5_attr_str(run, NULL, "dkv_version", DKV_VERSION, err) ||
        dkv_h5_attr_str(run, NULL, "git_commit", DKV_GIT_COMMIT, err) ||
        dkv_h5_attr_str(run, NULL, "command", "replay", err) ||
        dkv_h5_attr_str(run, NULL, "end_time", when, err) ||
        dkv_h5_attr_str(run, "params", "trace", a->trace, err) ||
        dkv_h5_attr_i64(run, "summary", "trace_events", (int64_t)r->n_events, err) ||
        dkv_h5_attr_i64(run, "summary", "trace_free_unknown", (int64_t)c->n_free_unknown, err) ||
        dkv_h5_attr_i64(run, "summary", "trace_dup_id", (int64_t)c->n_dup_id, err) ||
        dkv_mem_h5_write(run, m, err) || dkv_h5_attr_str(run, NULL, "status", "complete", err) ||
        dkv_h5_run_end(run, err)) {
        if (h5)
            dkv_h5_discard(h5);
        return err->code ? err->code : DKV_EIO;
    }
    DKV_TRY(dkv_h5_close(h5, err));
    if (!a->quiet)
        printf("wrote %s (run %s)\n", a->out_path, a->run_name ? a->run_name : name);
    return DKV_OK;
}

typedef struct anomaly_ctx {
    const replay_args *a;
} anomaly_ctx;

static void on_anomaly(void *user, uint64_t line, const char *msg, uint64_t n_before)
{
    const anomaly_ctx *x = user;
    if (!x->a->quiet && n_before < 5)
        fprintf(stderr, "dkv replay: %s:%llu: %s\n", x->a->trace, (unsigned long long)line, msg);
}

int dkv_cmd_replay(int argc, char **argv)
{
    replay_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    dkv_err err = {0};
    if (a.out_path && dkv_h5_output_ok(a.out_path, &err) != DKV_OK) {   /* before the replay's work */
        fprintf(stderr, "dkv replay: -o %s\n", err.msg);
        return DKV_EXIT_USAGE;
    }
    dkv_mem *m = NULL;
    dkv_replay_result r;
    anomaly_ctx ax = {&a};
    rc = DKV_EXIT_ERROR;
    if (dkv_mem_new(&a.o, &m, &err) != DKV_OK) {   /* options that do not go together: a usage error, as a bad value */
        fprintf(stderr, "dkv replay: %s\n", err.msg);
        rc = err.code == DKV_EINVAL || err.code == DKV_ERANGE ? DKV_EXIT_USAGE : DKV_EXIT_ERROR;
        goto done;
    }
    if (dkv_replay_trace(a.trace, m, on_anomaly, &ax, &r, &err) != DKV_OK) {
        fprintf(stderr, "dkv replay: %s\n", err.msg);
        goto done;
    }
    print_report(&a, m, &r);
    if (a.out_path && write_run(&a, m, &r, &err) != DKV_OK) {
        fprintf(stderr, "dkv replay: %s\n", err.msg);
        goto done;
    }
    rc = a.strict && r.anomalies ? DKV_EXIT_ERROR : DKV_EXIT_OK;
    if (a.strict && r.anomalies)
        fprintf(stderr, "dkv replay: --strict: %llu trace anomalies\n", (unsigned long long)r.anomalies);
done:
    dkv_mem_free(m);
    return rc;
}
