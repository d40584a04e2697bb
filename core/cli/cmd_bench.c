/* cmd_bench.c - `dkv bench mem`: events per second of each memory manager on a generated
 * allocation stream (the same stream for every manager). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "mem/mem.h"
#include "mem/mem_replay.h"
#include "util/mono.h"
#include "util/rng.h"

static void bench_usage(FILE *out)
{
    fputs("usage: dkv bench mem [--events N] [--live N] [--seed S] [--mem KIND] [--stream S] [--stride N]\n"
          "\n"
          "Generates an allocation stream (at most --live allocations at once, random order of\n"
          "frees) and replays it through each memory manager on one core, printing events per\n"
          "second.  Streams:\n"
          "  mixed   sizes 512 B .. 64 MiB (50 % < 1 MiB, 40 % 1-16 MiB, 10 % 16-64 MiB)\n"
          "  kv      every allocation one 4 MiB KV block (256 tokens x 16 KiB), as the engine asks\n"
          "Paths:\n"
          "  api     straight calls to dkv_mem_acquire / dkv_mem_release\n"
          "  replay  through the stream-id map of `dkv replay` (mem/mem_replay.h), with a clock tick per event\n"
          "The first rows, manager \"empty\", run the same loops with calls to stubs that do\n"
          "nothing: the bench's own cost per event, included in every manager's time.  The stream\n"
          "is generated before the clock starts.\n"
          "\n"
          "  --events N   stream length (default 10000000)\n"
          "  --live N     most allocations live at once (default 2048)\n"
          "  --seed S     generator seed (default 1)\n"
          "  --mem KIND   only this manager: static, caching, blockpool (default all)\n"
          "  --stream S   mixed, kv or both (default both)\n"
          "  --stride N   sample the time series every N events (default 0 = off)\n"
          "Targets (issue 3; results in docs/MEMORY.md, Performance): blockpool >= 50 M events/s,\n"
          "caching >= 5 M events/s.\n",
          out);
}

typedef struct bev {
    uint32_t id;      /* stream id (dense: 0 .. live-1 slots reused) */
    uint32_t bytes;   /* 0: free */
} bev;

/* A bounded random stream: allocate while few are live, free when many are. */
static bev *generate(uint64_t n, uint32_t live_max, uint64_t seed, bool kv, uint64_t *n_alloc)
{
    bev *ev = malloc(n * sizeof *ev);
    uint32_t *live = malloc((size_t)live_max * sizeof *live), *free_ids = malloc((size_t)live_max * sizeof *free_ids);
    if (!ev || !live || !free_ids) {
        free(ev);
        free(live);
        free(free_ids);
        return NULL;
    }
    uint32_t n_live = 0, n_free = live_max;
    for (uint32_t i = 0; i < live_max; i++)
        free_ids[i] = live_max - 1 - i;
    dkv_rng r;
    dkv_rng_seed(&r, seed);
    *n_alloc = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t u = dkv_rng_below(&r, 1000);
        bool alloc = n_live == 0 || (n_live < live_max && u < (n_live < live_max / 2 ? 750u : 500u));
        if (alloc) {
            uint64_t k = dkv_rng_below(&r, 100), bytes;
            if (kv)
                bytes = 256u * 16384u;   /* one 256-token LLaDA-8B layer block */
            else if (k < 50)
                bytes = 512 + dkv_rng_below(&r, (1u << 20) - 512);
            else if (k < 90)
                bytes = (1u << 20) + dkv_rng_below(&r, 15u << 20);
            else
                bytes = (16u << 20) + dkv_rng_below(&r, 48u << 20);
            uint32_t id = free_ids[--n_free];
            live[n_live++] = id;
            ev[i] = (bev){id, (uint32_t)bytes};
            (*n_alloc)++;
        } else {
            uint32_t j = (uint32_t)dkv_rng_below(&r, n_live);
            uint32_t id = live[j];
            live[j] = live[--n_live];
            free_ids[n_free++] = id;
            ev[i] = (bev){id, 0};
        }
    }
    free(live);
    free(free_ids);
    return ev;
}

/* The loop without a manager: the same events, branches and calls (to stubs that do
 * nothing), so its rate is the bench's own ceiling; reported as manager "empty". */
static __attribute__((noinline)) dkv_status empty_acquire(void *ctx, uint64_t bytes, dkv_mem_id *id)
{
    __asm__ volatile("" : : "r"(ctx), "r"(bytes) : "memory");
    *id = bytes;
    return DKV_OK;
}
static __attribute__((noinline)) dkv_status empty_release(void *ctx, uint64_t id)
{
    __asm__ volatile("" : : "r"(ctx), "r"(id) : "memory");
    return DKV_OK;
}
static __attribute__((noinline)) dkv_status empty_time(void *ctx, double t)
{
    __asm__ volatile("" : : "r"(ctx), "x"(t) : "memory");
    return DKV_OK;
}

static double empty_loop(bool replay, const bev *ev, uint64_t n, dkv_mem_id *ids)
{
    uint64_t failures = 0;
    double t0 = dkv_mono_s();
    if (!replay) {
        for (uint64_t i = 0; i < n; i++) {
            if (ev[i].bytes) {
                failures += empty_acquire(ids, ev[i].bytes, &ids[ev[i].id]) != DKV_OK;
            } else if (ids[ev[i].id]) {
                empty_release(ids, ids[ev[i].id]);
                ids[ev[i].id] = 0;
            }
        }
    } else {
        for (uint64_t i = 0; i < n; i++) {
            empty_time(ids, (double)i * 1e-6);
            if (ev[i].bytes)
                failures += empty_acquire(ids, ev[i].bytes, &ids[ev[i].id]) != DKV_OK;
            else
                empty_release(ids, ev[i].id);
        }
    }
    double dt = dkv_mono_s() - t0;
    return failures ? 0 : (double)n / dt;
}

/* kind < 0: the empty loop */
static int run_one(int kind, bool replay, const bev *ev, uint64_t n, uint32_t live_max,
                   uint32_t stride, double *rate, dkv_mem_stats *st)
{
    memset(st, 0, sizeof *st);
    if (kind < 0) {
        dkv_mem_id *ids = calloc(live_max, sizeof *ids);
        if (!ids) {
            fprintf(stderr, "dkv bench: out of memory\n");
            return DKV_EXIT_ERROR;
        }
        *rate = empty_loop(replay, ev, n, ids);
        free(ids);
        return DKV_EXIT_OK;
    }
    dkv_mem_options o = dkv_mem_options_default((dkv_mem_kind)kind);
    o.sample_stride = stride;
    dkv_mem *m = NULL;
    dkv_err err = {0};
    if (dkv_mem_new(&o, &m, &err) != DKV_OK) {
        fprintf(stderr, "dkv bench: %s\n", err.msg);
        return DKV_EXIT_ERROR;
    }
    dkv_mem_id *ids = calloc(live_max, sizeof *ids);
    dkv_mem_replay *rp = NULL;
    if (!ids || (replay && dkv_mem_replay_new(m, &rp, &err) != DKV_OK)) {
        fprintf(stderr, "dkv bench: out of memory\n");
        free(ids);
        dkv_mem_free(m);
        return DKV_EXIT_ERROR;
    }
    dkv_mem_owner who = {.tag = DKV_MEM_TAG_KV};
    uint64_t failures = 0;
    double t0 = dkv_mono_s();
    if (!replay) {
        for (uint64_t i = 0; i < n; i++) {
            if (ev[i].bytes) {
                failures += dkv_mem_acquire(m, ev[i].bytes, &who, &ids[ev[i].id], NULL) != DKV_OK;
            } else if (ids[ev[i].id]) {
                dkv_mem_release(m, ids[ev[i].id], NULL);
                ids[ev[i].id] = 0;
            }
        }
    } else {
        for (uint64_t i = 0; i < n; i++) {
            dkv_mem_replay_time(rp, (double)i * 1e-6, NULL);
            if (ev[i].bytes)
                failures += dkv_mem_replay_alloc(rp, ev[i].id, ev[i].bytes, &who, NULL) != DKV_OK;
            else
                dkv_mem_replay_free(rp, ev[i].id, NULL);
        }
    }
    double dt = dkv_mono_s() - t0;
    *rate = (double)n / dt;
    dkv_mem_stats_get(m, st);
    dkv_mem_replay_free_handle(rp);
    free(ids);
    dkv_mem_free(m);
    if (failures) {
        fprintf(stderr, "dkv bench: %llu allocations failed (the stream should fit in 80 GiB)\n",
                (unsigned long long)failures);
        return DKV_EXIT_ERROR;
    }
    return DKV_EXIT_OK;
}

int dkv_cmd_bench(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        bench_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? DKV_EXIT_USAGE : DKV_EXIT_OK;
    }
    if (strcmp(argv[1], "mem") != 0) {
        fprintf(stderr, "dkv bench: unknown benchmark '%s' (available: mem)\n", argv[1]);
        return DKV_EXIT_USAGE;
    }
    uint64_t n = 10000000, seed = 1;
    uint32_t live_max = 2048, stride = 0;
    int only = -1, streams = 3;   /* bit 0 mixed, bit 1 kv */
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            bench_usage(stdout);
            return DKV_EXIT_OK;
        }
        if (!v) {
            fprintf(stderr, "dkv bench: %s needs a value (or unknown option; see dkv bench --help)\n", a);
            return DKV_EXIT_USAGE;
        }
        i++;
        unsigned long long x = strtoull(v, &end, 10);
        bool num_ok = *v >= '0' && *v <= '9' && end && *end == '\0';
        if (strcmp(a, "--events") == 0 && num_ok && x > 0)
            n = x;
        else if (strcmp(a, "--live") == 0 && num_ok && x > 0 && x <= (1u << 24))
            live_max = (uint32_t)x;
        else if (strcmp(a, "--seed") == 0 && num_ok)
            seed = x;
        else if (strcmp(a, "--stride") == 0 && num_ok && x <= UINT32_MAX)
            stride = (uint32_t)x;
        else if (strcmp(a, "--stream") == 0 && (!strcmp(v, "mixed") || !strcmp(v, "kv") || !strcmp(v, "both")))
            streams = !strcmp(v, "mixed") ? 1 : !strcmp(v, "kv") ? 2 : 3;
        else if (strcmp(a, "--mem") == 0) {
            int k;
            dkv_err err = {0};
            if (dkv_names_parse(&dkv_mem_kind_names, v, &k, &err) != DKV_OK) {
                fprintf(stderr, "dkv bench: --mem: %s\n", err.msg);
                return DKV_EXIT_USAGE;
            }
            only = k;
        } else {
            fprintf(stderr, "dkv bench: bad option or value: %s %s (see dkv bench --help)\n", a, v);
            return DKV_EXIT_USAGE;
        }
    }
    /* -1: the empty loop (the bench's own cost; always run) */
    static const int order[] = {-1, DKV_MEM_BLOCKPOOL, DKV_MEM_CACHING, DKV_MEM_STATIC};
    static const double target[] = {0, 50e6, 5e6, 0};
    int rc = DKV_EXIT_OK;
    bev *ev = NULL;
    for (int kv = 0; kv < 2 && rc == DKV_EXIT_OK; kv++) {
        if (!(streams & (1 << kv)))
            continue;
        uint64_t n_alloc;
        free(ev);
        ev = generate(n, live_max, seed, kv, &n_alloc);
        if (!ev) {
            fprintf(stderr, "dkv bench: out of host memory for %llu events\n", (unsigned long long)n);
            return DKV_EXIT_ERROR;
        }
        printf("dkv bench mem, stream %s: %llu events (%llu alloc, %llu free), at most %u live, seed %llu, time series %s\n",
               kv ? "kv" : "mixed", (unsigned long long)n, (unsigned long long)n_alloc,
               (unsigned long long)(n - n_alloc), live_max, (unsigned long long)seed, stride ? "on" : "off");
        printf("%-10s %-7s %12s %10s %14s %14s %8s %8s\n", "manager", "path", "events/s", "ns/event",
               "peak_alloc_B", "peak_resv_B", "ext_frag", "reuse");
        for (int k = 0; k < 4 && rc == DKV_EXIT_OK; k++) {
            if (only >= 0 && order[k] >= 0 && order[k] != only)
                continue;
            for (int replay = 0; replay < 2 && rc == DKV_EXIT_OK; replay++) {
                double rate;
                dkv_mem_stats s;
                rc = run_one(order[k], replay, ev, n, live_max, stride, &rate, &s);
                if (rc)
                    break;
                printf("%-10s %-7s %12.4g %10.1f %14llu %14llu %8.4f %8.4f",
                       order[k] < 0 ? "empty" : dkv_mem_kind_name((dkv_mem_kind)order[k]),
                       replay ? "replay" : "api", rate, 1e9 / rate, (unsigned long long)s.peak_allocated,
                       (unsigned long long)s.peak_reserved, s.mean_external_frag, s.reuse_rate);
                if (target[k] > 0)
                    printf("   target %.0f M/s: %s", target[k] / 1e6, rate >= target[k] ? "met" : "NOT met");
                printf("\n");
            }
        }
        if (streams == 3 && kv == 0)
            printf("\n");
    }
    free(ev);
    return rc;
}
