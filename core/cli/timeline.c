/* timeline.c - a run as Chrome trace-event JSON (see timeline.h).
 *
 * Tracks (pid 1): one thread per engine instance ("instance i"; "merged steps" for spatial steps)
 * with a slice per step and, nested in it, one slice per recorded kernel class laid end to end
 * from the step's start (their order and durations are recorded, their start times are not);
 * a "PCIe copies" thread with each step's copy time; one counter track per memory tag (MiB); an
 * async track per request (arrival to finish, split into "queued" and "running").
 * Times are whole nanoseconds (printed as microseconds with 3 decimals), so slices nest exactly:
 * a step starts no earlier than its track's previous step ended, kernel slices are clamped into
 * their step (scaled down when they add up to more than it), and every track's timestamps are
 * non-decreasing in file order. */
#include "cli/timeline.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"

typedef struct tstep {
    uint64_t index;
    uint32_t instance, n_items, n_refresh, n_reuse;
    double start_s, time_s, compute_s, pcie_s, stall_s, alloc_s;
    uint64_t q_tokens, h2d, d2h;
} tstep;

typedef struct tkern {
    uint64_t step_index;
    uint32_t kind, layer, n_launches;
    double time_s;
    uint64_t read_bytes, write_bytes;
} tkern;

typedef struct tmem {
    double time_s;
    uint64_t tag[6];
} tmem;

typedef struct treq {
    uint64_t id;
    uint32_t instance, prompt_tokens, gen_tokens;
    uint8_t status;
    double arrival_s, start_s, finish_s;
} treq;

#define FLD(T, f, ty) {#f, ty, offsetof(T, f), NULL, NULL}
static const dkv_h5_field STEP_F[] = {
    FLD(tstep, index, DKV_H5_U64),       FLD(tstep, instance, DKV_H5_U32),  FLD(tstep, n_items, DKV_H5_U32),
    FLD(tstep, n_refresh, DKV_H5_U32),   FLD(tstep, n_reuse, DKV_H5_U32),   FLD(tstep, start_s, DKV_H5_F64),
    FLD(tstep, time_s, DKV_H5_F64),      FLD(tstep, compute_s, DKV_H5_F64), FLD(tstep, pcie_s, DKV_H5_F64),
    FLD(tstep, stall_s, DKV_H5_F64),     FLD(tstep, alloc_s, DKV_H5_F64),   FLD(tstep, q_tokens, DKV_H5_U64),
    {"pcie_h2d_bytes", DKV_H5_U64, offsetof(tstep, h2d), NULL, NULL},
    {"pcie_d2h_bytes", DKV_H5_U64, offsetof(tstep, d2h), NULL, NULL},
};
static const dkv_h5_field KERN_F[] = {
    FLD(tkern, step_index, DKV_H5_U64), FLD(tkern, kind, DKV_H5_U32),       FLD(tkern, layer, DKV_H5_U32),
    FLD(tkern, n_launches, DKV_H5_U32), FLD(tkern, time_s, DKV_H5_F64),     FLD(tkern, read_bytes, DKV_H5_U64),
    FLD(tkern, write_bytes, DKV_H5_U64),
};
static const char *const TAGS[6] = {"weights", "kv", "activation", "logits", "staging", "host"};
static const dkv_h5_field MEM_F[] = {
    FLD(tmem, time_s, DKV_H5_F64),
    {"weights", DKV_H5_U64, offsetof(tmem, tag[0]), NULL, NULL},
    {"kv", DKV_H5_U64, offsetof(tmem, tag[1]), NULL, NULL},
    {"activation", DKV_H5_U64, offsetof(tmem, tag[2]), NULL, NULL},
    {"logits", DKV_H5_U64, offsetof(tmem, tag[3]), NULL, NULL},
    {"staging", DKV_H5_U64, offsetof(tmem, tag[4]), NULL, NULL},
    {"host", DKV_H5_U64, offsetof(tmem, tag[5]), NULL, NULL},
};
static const dkv_h5_field REQ_F[] = {
    FLD(treq, id, DKV_H5_U64),           FLD(treq, instance, DKV_H5_U32),   FLD(treq, prompt_tokens, DKV_H5_U32),
    FLD(treq, gen_tokens, DKV_H5_U32),   FLD(treq, status, DKV_H5_U8),      FLD(treq, arrival_s, DKV_H5_F64),
    FLD(treq, start_s, DKV_H5_F64),      FLD(treq, finish_s, DKV_H5_F64),
};
#undef FLD
#define NF(a) (sizeof(a) / sizeof((a)[0]))

#define MERGED 4294967295u
#define TID_PCIE 1000
#define PID 1

/* Reads table `name` (missing: *out = NULL, *n = 0) into a malloc'ed array. */
static dkv_status read_table(dkv_h5_run *run, const char *name, size_t size, const dkv_h5_field *f, size_t nf,
                             void **out, size_t *n, dkv_err *err)
{
    *out = NULL;
    *n = 0;
    if (!dkv_h5_run_has(run, name))
        return DKV_OK;
    dkv_h5_table *t;
    dkv_status st = dkv_h5_table_open(run, name, &t, err);
    if (st != DKV_OK)
        return st;
    uint64_t nr = dkv_h5_table_nrecords(t);
    void *buf = calloc(nr ? nr : 1, size);
    if (!buf)
        st = dkv_err_set(err, DKV_ENOMEM, "table %s: out of memory for %" PRIu64 " records", name, nr);
    else if (nr)
        st = dkv_h5_table_read(t, size, f, nf, 0, nr, buf, err);
    dkv_h5_table_close(t);
    if (st != DKV_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    *n = (size_t)nr;
    return DKV_OK;
}

static int64_t ns_of(double s)
{
    return isfinite(s) && s > 0 ? (int64_t)llround(s * 1e9) : 0;
}

static void put_ts(FILE *o, const char *key, int64_t ns)
{
    fprintf(o, ", \"%s\": %" PRId64 ".%03" PRId64, key, ns / 1000, ns % 1000);
}

/* A number as JSON: %.9g, or null for NaN and infinities (JSON has neither). */
static const char *jnum(char *buf, size_t n, double v)
{
    if (isfinite(v))
        snprintf(buf, n, "%.9g", v);
    else
        snprintf(buf, n, "null");
    return buf;
}

/* A string as JSON (quotes, backslashes and control characters escaped). */
static void jstr(FILE *o, const char *s)
{
    fputc('"', o);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(o, "\\%c", *p);
        else if (*p < 32)
            fprintf(o, "\\u%04x", *p);
        else
            fputc(*p, o);
    }
    fputc('"', o);
}

/* writer state: the separator between events and the last end of each instance track */
typedef struct tw {
    FILE *o;
    int first;
    uint32_t inst[65];
    int64_t inst_end[65];
    size_t ninst;
    int64_t pcie_end;
} tw;

static void ev_begin(tw *w, const char *ph, const char *name, int tid, int64_t ts)
{
    fprintf(w->o, "%s{\"ph\": \"%s\", \"pid\": %d, \"tid\": %d, \"name\": \"%s\"", w->first ? "\n" : ",\n", ph, PID,
            tid, name);
    w->first = 0;
    put_ts(w->o, "ts", ts);
}

static int tid_of(tw *w, uint32_t instance, int64_t **end)
{
    size_t i = 0;
    while (i < w->ninst && w->inst[i] != instance)
        i++;
    if (i == w->ninst && w->ninst < 65) {
        w->inst[w->ninst] = instance;
        w->inst_end[w->ninst++] = 0;
    }
    if (i == 65)
        i = 64;
    *end = &w->inst_end[i];
    return instance == MERGED ? 0 : (int)instance + 1;
}

static void meta(tw *w, const char *what, int tid, const char *name, int sort)
{
    fprintf(w->o, "%s{\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"name\": \"%s\", \"args\": {\"name\": ",
            w->first ? "\n" : ",\n", PID, tid, what);
    jstr(w->o, name);
    fputs("}}", w->o);
    w->first = 0;
    if (sort >= 0)
        fprintf(w->o, ",\n{\"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"name\": \"thread_sort_index\", "
                      "\"args\": {\"sort_index\": %d}}", PID, tid, sort);
}

static int cmp_kern(const void *pa, const void *pb)
{
    const tkern *const *a = pa, *const *b = pb;
    if ((*a)->step_index != (*b)->step_index)
        return (*a)->step_index < (*b)->step_index ? -1 : 1;
    return *a < *b ? -1 : *a > *b;   /* stable: file order */
}

/* The kernel records of step `index`: [*lo, *hi) of the sorted pointer array. */
static void kern_range(tkern *const *ks, size_t nk, uint64_t index, size_t *lo, size_t *hi)
{
    size_t a = 0, b = nk;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (ks[m]->step_index < index)
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    while (a < nk && ks[a]->step_index == index)
        a++;
    *hi = a;
}

/* One step slice, its kernel-class slices and its PCIe slice. */
static void write_step(tw *w, const tstep *s, tkern *const *ks, size_t nk, dkv_timeline_counts *c)
{
    int64_t *end;
    int tid = tid_of(w, s->instance, &end);
    int64_t t0 = ns_of(s->start_s), t1 = ns_of(s->start_s + s->time_s);
    if (t0 < *end)
        t0 = *end;
    if (t1 < t0)
        t1 = t0;
    *end = t1;
    ev_begin(w, "X", "step", tid, t0);
    put_ts(w->o, "dur", t1 - t0);
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(w->o, ", \"cat\": \"step\", \"args\": {\"index\": %" PRIu64 ", \"items\": %u, \"refresh\": %u, "
                  "\"reuse\": %u, \"q_tokens\": %" PRIu64 ", \"compute_s\": %s, \"pcie_s\": %s, "
                  "\"stall_s\": %s, \"alloc_s\": %s}}",
            s->index, s->n_items, s->n_refresh, s->n_reuse, s->q_tokens, jnum(b1, 32, s->compute_s),
            jnum(b2, 32, s->pcie_s), jnum(b3, 32, s->stall_s), jnum(b4, 32, s->alloc_s));
    c->steps++;
    size_t lo, hi;
    kern_range(ks, nk, s->index, &lo, &hi);
    double sum = 0;
    for (size_t k = lo; k < hi; k++)
        sum += isfinite(ks[k]->time_s) && ks[k]->time_s > 0 ? ks[k]->time_s : 0;
    double scale = sum * 1e9 > (double)(t1 - t0) && sum > 0 ? (double)(t1 - t0) / (sum * 1e9) : 1.0;
    int64_t cur = t0;
    for (size_t k = lo; k < hi; k++) {
        const tkern *r = ks[k];
        double ts = isfinite(r->time_s) && r->time_s > 0 ? r->time_s : 0;
        int64_t d = (int64_t)llround(ts * 1e9 * scale);
        if (cur + d > t1)
            d = t1 - cur;
        ev_begin(w, "X", dkv_kernel_class_name((dkv_kernel_class)r->kind), tid, cur);
        put_ts(w->o, "dur", d);
        fprintf(w->o, ", \"cat\": \"kernel\", \"args\": {\"time_s\": %s, \"launches\": %u, \"layer\": %d, "
                      "\"read_bytes\": %" PRIu64 ", \"write_bytes\": %" PRIu64 ", \"scale\": %s}}",
                jnum(b1, 32, r->time_s), r->n_launches, r->layer == MERGED ? -1 : (int)r->layer, r->read_bytes,
                r->write_bytes, jnum(b2, 32, scale));
        cur += d;
        c->kernels++;
    }
    if (s->pcie_s > 0 && isfinite(s->pcie_s)) {
        int64_t p0 = ns_of(s->start_s) > w->pcie_end ? ns_of(s->start_s) : w->pcie_end;
        int64_t p1 = p0 + ns_of(s->pcie_s);
        w->pcie_end = p1;
        ev_begin(w, "X", "copies", TID_PCIE, p0);
        put_ts(w->o, "dur", p1 - p0);
        fprintf(w->o, ", \"cat\": \"pcie\", \"args\": {\"step\": %" PRIu64 ", \"h2d_bytes\": %" PRIu64
                      ", \"d2h_bytes\": %" PRIu64 ", \"pcie_s\": %s, \"stall_s\": %s}}",
                s->index, s->h2d, s->d2h, jnum(b1, 32, s->pcie_s), jnum(b2, 32, s->stall_s));
        c->copies++;
    }
}

static void write_memory(tw *w, const tmem *m, size_t nm, dkv_timeline_counts *c)
{
    int64_t last = 0;
    for (size_t i = 0; i < nm; i++) {
        int64_t ts = ns_of(m[i].time_s);
        if (ts < last)
            ts = last;
        last = ts;
        for (int t = 0; t < 6; t++) {
            char name[40];
            snprintf(name, sizeof name, "memory.%s", TAGS[t]);
            ev_begin(w, "C", name, 0, ts);
            fprintf(w->o, ", \"args\": {\"MiB\": %.6f}}", (double)m[i].tag[t] / 1048576.0);
            c->counters++;
        }
    }
}

static void async_ev(tw *w, const char *ph, const char *name, uint64_t id, int64_t ts)
{
    ev_begin(w, ph, name, 0, ts);
    fprintf(w->o, ", \"cat\": \"request\", \"id\": \"%" PRIu64 "\"", id);
}

static void write_requests(tw *w, const treq *q, size_t nq, int64_t run_end, dkv_timeline_counts *c)
{
    static const char *const status[] = {"done", "oom", "too_long", "unfinished"};
    for (size_t i = 0; i < nq; i++) {
        const treq *r = &q[i];
        int64_t a = ns_of(r->arrival_s);
        int started = isfinite(r->start_s), finished = isfinite(r->finish_s);
        int64_t s = started ? ns_of(r->start_s) : run_end, f = finished ? ns_of(r->finish_s) : run_end;
        if (s < a)
            s = a;
        if (f < s)
            f = s;
        char name[48];
        snprintf(name, sizeof name, "request %" PRIu64, r->id);
        async_ev(w, "b", name, r->id, a);
        fprintf(w->o, ", \"args\": {\"status\": \"%s\", \"instance\": %u, \"prompt_tokens\": %u, "
                      "\"gen_tokens\": %u}}",
                r->status < 4 ? status[r->status] : "?", r->instance, r->prompt_tokens, r->gen_tokens);
        async_ev(w, "b", "queued", r->id, a);
        fputs("}", w->o);
        async_ev(w, "e", "queued", r->id, s);
        fputs("}", w->o);
        if (started) {
            async_ev(w, "b", "running", r->id, s);
            fputs("}", w->o);
            async_ev(w, "e", "running", r->id, f);
            fputs("}", w->o);
        }
        async_ev(w, "e", name, r->id, f);
        fputs("}", w->o);
        c->requests++;
    }
}

static void write_meta(tw *w, const char *label, const tstep *st, size_t ns)
{
    char name[64];
    meta(w, "process_name", 0, label, -1);
    for (size_t i = 0; i < ns; i++) {
        int64_t *end;
        size_t before = w->ninst;
        int tid = tid_of(w, st[i].instance, &end);
        if (w->ninst == before)
            continue;
        if (st[i].instance == MERGED)
            snprintf(name, sizeof name, "merged steps");
        else
            snprintf(name, sizeof name, "instance %u", st[i].instance);
        meta(w, "thread_name", tid, name, tid);
    }
    w->ninst = 0;   /* the step pass fills it again, in the same order */
    meta(w, "thread_name", TID_PCIE, "PCIe copies", TID_PCIE);
}

dkv_status dkv_timeline_write(dkv_h5_run *run, const char *label, FILE *out, dkv_timeline_counts *counts,
                              dkv_err *err)
{
    memset(counts, 0, sizeof *counts);
    tstep *st = NULL;
    tkern *kr = NULL, **ks = NULL;
    tmem *mm = NULL;
    treq *rq = NULL;
    size_t ns = 0, nk = 0, nm = 0, nq = 0;
    dkv_status rc = read_table(run, "steps", sizeof *st, STEP_F, NF(STEP_F), (void **)&st, &ns, err);
    if (rc == DKV_OK)
        rc = read_table(run, "kernels", sizeof *kr, KERN_F, NF(KERN_F), (void **)&kr, &nk, err);
    if (rc == DKV_OK)
        rc = read_table(run, "memory", sizeof *mm, MEM_F, NF(MEM_F), (void **)&mm, &nm, err);
    if (rc == DKV_OK)
        rc = read_table(run, "requests", sizeof *rq, REQ_F, NF(REQ_F), (void **)&rq, &nq, err);
    if (rc == DKV_OK && !dkv_h5_run_has(run, "steps") && !dkv_h5_run_has(run, "requests"))
        rc = dkv_err_set(err, DKV_ENOENT, "run '%s' has neither a steps nor a requests table (not a dkv.save run?)",
                         dkv_h5_run_name(run));
    if (rc == DKV_OK && nk && !(ks = malloc(nk * sizeof *ks)))
        rc = dkv_err_set(err, DKV_ENOMEM, "out of memory");
    if (rc == DKV_OK) {
        for (size_t i = 0; i < nk; i++)
            ks[i] = &kr[i];
        if (nk)
            qsort(ks, nk, sizeof *ks, cmp_kern);
        tw w = {.o = out, .first = 1};
        fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [", out);
        write_meta(&w, label, st, ns);
        int64_t run_end = 0;
        for (size_t i = 0; i < ns; i++) {
            write_step(&w, &st[i], ks, nk, counts);
            for (size_t k = 0; k < w.ninst; k++)
                run_end = w.inst_end[k] > run_end ? w.inst_end[k] : run_end;
        }
        write_memory(&w, mm, nm, counts);
        for (size_t i = 0; i < nq; i++) {
            int64_t t = ns_of(isfinite(rq[i].finish_s) ? rq[i].finish_s : rq[i].arrival_s);
            run_end = t > run_end ? t : run_end;
        }
        write_requests(&w, rq, nq, run_end, counts);
        fputs("\n]}\n", out);
        if (ferror(out))
            rc = dkv_err_set(err, DKV_EIO, "writing the trace failed");
    }
    free(st);
    free(kr);
    free(ks);
    free(mm);
    free(rq);
    return rc;
}
