/* cmd_replay.c - `dkv replay TRACE --mem KIND [options] [-o FILE.h5]`: replays the allocation
 * events of a trace (docs/TRACE_FORMAT.md) through a memory manager and reports its statistics
 * (docs/MEMORY.md); with -o, writes them and the time series to HDF5 (io/mem_h5.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dkv_commit.h"
#include "cli/commands.h"
#include "io/h5.h"
#include "io/mem_h5.h"
#include "mem/mem.h"
#include "mem/mem_replay.h"
#include "trace/trace.h"
#include "util/interrupt.h"

_Static_assert((int)DKV_TRACE_TAG_KV == (int)DKV_MEM_TAG_KV && (int)DKV_TRACE_TAG_STAGING == (int)DKV_MEM_TAG_STAGING &&
               (int)DKV_TRACE_TAG_COUNT == (int)DKV_MEM_TAG_COUNT, "trace and mem tag numbering differ");

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
          "  -o FILE.h5            write statistics and time series (run --run NAME)\n"
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

int dkv_cmd_replay(int argc, char **argv)
{
    const char *trace = NULL, *out_path = NULL, *run_name = NULL;
    bool have_kind = false, strict = false, quiet = false;
    dkv_mem_kind kind = DKV_MEM_STATIC;
    dkv_mem_options o = dkv_mem_options_default(DKV_MEM_STATIC);
    o.sample_stride = 1;
    bool set_block_bytes = false;
    dkv_err err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            replay_usage(stdout);
            return DKV_EXIT_OK;
        }
        if (!strcmp(a, "--strict")) { strict = true; continue; }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) { quiet = true; continue; }
        if (!strcmp(a, "--no-grow")) { o.grow = false; continue; }
        if (!strcmp(a, "--shrink")) { o.shrink = true; continue; }
        if (a[0] != '-') {
            if (trace) {
                fprintf(stderr, "dkv replay: more than one trace given ('%s' and '%s')\n", trace, a);
                return DKV_EXIT_USAGE;
            }
            trace = a;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "dkv replay: option %s needs a value (see dkv replay --help)\n", a);
            return DKV_EXIT_USAGE;
        }
        const char *v = argv[++i];
        uint64_t x = 0;
        bool ok = true;
        if (!strcmp(a, "--mem")) {
            int k = 0;
            ok = dkv_names_parse(&dkv_mem_kind_names, v, &k, &err) == DKV_OK;
            kind = (dkv_mem_kind)k;
            have_kind = ok;
        } else if (!strcmp(a, "--capacity")) {
            ok = parse_bytes(v, &o.capacity_bytes) && o.capacity_bytes > 0;
        } else if (!strcmp(a, "--delay")) {
            char *end;
            o.release_delay_s = strtod(v, &end);
            ok = end != v && !*end && o.release_delay_s >= 0;
        } else if (!strcmp(a, "--stride")) {
            ok = parse_uint(v, UINT32_MAX, &x);
            o.sample_stride = (uint32_t)x;
        } else if (!strcmp(a, "--max-split")) {
            ok = parse_bytes(v, &o.max_split_size);
        } else if (!strcmp(a, "--block-tokens")) {
            ok = parse_uint(v, UINT32_MAX, &x) && x > 0;
            o.block_tokens = (uint32_t)x;
        } else if (!strcmp(a, "--token-bytes")) {
            ok = parse_bytes(v, &o.token_bytes) && o.token_bytes > 0;
        } else if (!strcmp(a, "--block-bytes")) {
            ok = parse_bytes(v, &o.block_bytes) && o.block_bytes > 0;
            set_block_bytes = true;
        } else if (!strcmp(a, "--chunk-blocks")) {
            ok = parse_uint(v, 1u << 20, &x) && x > 0;
            o.chunk_blocks = (uint32_t)x;
        } else if (!strcmp(a, "--initial")) {
            ok = parse_bytes(v, &o.initial_bytes);
        } else if (!strcmp(a, "-o")) {
            out_path = v;
        } else if (!strcmp(a, "--run")) {
            run_name = v;
        } else {
            fprintf(stderr, "dkv replay: unknown option '%s' (see dkv replay --help)\n", a);
            return DKV_EXIT_USAGE;
        }
        if (!ok) {
            fprintf(stderr, "dkv replay: %s: bad value '%s'%s%s\n", a, v, err.code ? ": " : "", err.code ? err.msg : "");
            return DKV_EXIT_USAGE;
        }
    }
    if (!trace || !have_kind) {
        fprintf(stderr, "dkv replay: %s (usage: dkv replay TRACE --mem static|caching|blockpool [options])\n",
                !trace ? "no trace given" : "--mem KIND is required");
        return DKV_EXIT_USAGE;
    }
    (void)set_block_bytes;
    o.kind = kind;

    dkv_mem *m = NULL;
    dkv_mem_replay *rp = NULL;
    dkv_trace_reader *rd = NULL;
    dkv_h5 *h5 = NULL;
    int rc = DKV_EXIT_ERROR;
    if (dkv_mem_new(&o, &m, &err) != DKV_OK || dkv_mem_replay_new(m, &rp, &err) != DKV_OK ||
        dkv_trace_reader_open(trace, &rd, &err) != DKV_OK) {
        fprintf(stderr, "dkv replay: %s\n", err.msg);
        goto done;
    }
    uint64_t n_events = 0, n_other = 0, anomalies = 0;
    dkv_trace_event ev;
    bool got;
    double last_t = 0;
    for (;;) {
        if (dkv_trace_reader_next(rd, &ev, &got, &err) != DKV_OK) {
            fprintf(stderr, "dkv replay: %s\n", err.msg);
            goto done;
        }
        if (!got)
            break;
        n_events++;
        if ((n_events & 0xffff) == 0 && dkv_interrupt_requested()) {
            fprintf(stderr, "dkv replay: interrupted after %llu events\n", (unsigned long long)n_events);
            goto done;
        }
        if (ev.time_s < last_t) {
            fprintf(stderr, "dkv replay: %s:%llu: field 'time_s': %.9g s is earlier than the event before (%.9g s); the trace must be in time order\n",
                    trace, (unsigned long long)dkv_trace_reader_line(rd), ev.time_s, last_t);
            goto done;
        }
        last_t = ev.time_s;
        dkv_mem_replay_time(rp, ev.time_s, NULL);
        dkv_mem_owner who = {.tag = ev.tag, .instance = ev.instance, .request = ev.request,
                             .layer = ev.layer, .step = ev.step};
        if (ev.instance >= (o.n_instances ? o.n_instances : 1))
            who.instance = 0;   /* one manager, no quotas: every instance shares it */
        dkv_status st = DKV_OK;
        switch (ev.kind) {
        case DKV_EV_ALLOC:
            st = dkv_mem_replay_alloc(rp, ev.id, ev.bytes, &who, &err);
            break;
        case DKV_EV_FREE:
            st = dkv_mem_replay_free(rp, ev.id, &err);
            break;
        case DKV_EV_REQUEST:
            if (ev.sub == DKV_REQ_ADMIT)
                st = dkv_mem_replay_admit(rp, ev.request, ev.bytes, &err);
            else if (ev.sub == DKV_REQ_FINISH)
                st = dkv_mem_replay_finish(rp, ev.request, &err);
            n_other++;
            break;
        default:
            n_other++;
        }
        if (st != DKV_OK && st != DKV_ENOMEM) {
            if (!quiet && anomalies < 5)
                fprintf(stderr, "dkv replay: %s:%llu: %s\n", trace, (unsigned long long)dkv_trace_reader_line(rd), err.msg);
            anomalies++;
        }
    }
    dkv_mem_stats s;
    dkv_mem_stats_get(m, &s);
    dkv_mem_replay_counts c;
    dkv_mem_replay_counts_get(rp, &c);
    printf("dkv replay %s --mem %s: %llu events (%llu alloc, %llu free, %llu other), %.6g s of trace\n",
           trace, dkv_mem_kind_name(kind), (unsigned long long)n_events,
           (unsigned long long)(c.n_alloc + c.n_alloc_failed), (unsigned long long)(c.n_free + c.n_free_of_failed),
           (unsigned long long)n_other, last_t);
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
    if (kind == DKV_MEM_CACHING)
        printf("  %-22s num_alloc_retries %llu, num_ooms %llu, inactive_split %llu B in %llu blocks\n",
               "pytorch counters", (unsigned long long)s.num_alloc_retries, (unsigned long long)s.num_ooms,
               (unsigned long long)s.inactive_split_bytes, (unsigned long long)s.inactive_split_blocks);
    if (kind == DKV_MEM_BLOCKPOOL)
        printf("  %-22s %llu B blocks, %llu total, %llu free\n", "blocks", (unsigned long long)dkv_mem_block_bytes(m),
               (unsigned long long)s.blocks_total, (unsigned long long)s.blocks_free);
    if (kind == DKV_MEM_STATIC)
        printf("  %-22s %llu reserved, %llu refused, %llu returned\n", "reservations", (unsigned long long)c.n_reserve,
               (unsigned long long)c.n_reserve_failed, (unsigned long long)c.n_unreserve);
    printf("  %-22s free of unknown id %llu, id allocated twice %llu, live at end %llu\n", "trace anomalies",
           (unsigned long long)c.n_free_unknown, (unsigned long long)c.n_dup_id, (unsigned long long)c.live);

    if (out_path) {
        char name[64];
        snprintf(name, sizeof name, "replay_%s", dkv_mem_kind_name(kind));
        dkv_h5_run *run = NULL;
        char when[32];
        time_t now = time(NULL);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        if (dkv_h5_create(out_path, &h5, &err) || dkv_h5_run_begin(h5, run_name ? run_name : name, &run, &err) ||
            dkv_h5_attr_str(run, NULL, "dkv_version", DKV_VERSION, &err) ||
            dkv_h5_attr_str(run, NULL, "git_commit", DKV_GIT_COMMIT, &err) ||
            dkv_h5_attr_str(run, NULL, "command", "replay", &err) ||
            dkv_h5_attr_str(run, NULL, "end_time", when, &err) ||
            dkv_h5_attr_str(run, "params", "trace", trace, &err) ||
            dkv_h5_attr_i64(run, "summary", "trace_events", (int64_t)n_events, &err) ||
            dkv_h5_attr_i64(run, "summary", "trace_free_unknown", (int64_t)c.n_free_unknown, &err) ||
            dkv_h5_attr_i64(run, "summary", "trace_dup_id", (int64_t)c.n_dup_id, &err) ||
            dkv_mem_h5_write(run, m, &err) || dkv_h5_attr_str(run, NULL, "status", "complete", &err) ||
            dkv_h5_run_end(run, &err)) {
            fprintf(stderr, "dkv replay: %s\n", err.msg);
            goto done;
        }
        dkv_status st = dkv_h5_close(h5, &err);
        h5 = NULL;
        if (st) {
            fprintf(stderr, "dkv replay: %s\n", err.msg);
            goto done;
        }
        if (!quiet)
            printf("wrote %s (run %s)\n", out_path, run_name ? run_name : name);
    }
    rc = strict && anomalies ? DKV_EXIT_ERROR : DKV_EXIT_OK;
    if (strict && anomalies)
        fprintf(stderr, "dkv replay: --strict: %llu trace anomalies\n", (unsigned long long)anomalies);
done:
    if (h5)
        dkv_h5_discard(h5);
    dkv_trace_reader_close(rd);
    dkv_mem_replay_free_handle(rp);
    dkv_mem_free(m);
    return rc;
}
