/* profile.c - `dkv profile`'s timing harness and driver (profile.h): the estimate, the device
 * set-up, the deadline, and pr_measure (first call, warm calls, event-timed repeats). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublas_v2.h>

#include "cuda/profile_internal.h"
#include "util/mono.h"

static const char *const sec_names[DKV_PROF_S_N] = {"gemm", "lm_head", "attn", "kv_store", "elementwise",
                                                     "select", "gemm_grid", "compress", "copy", "host",
                                                     "memory", "sustained"};

const char *dkv_prof_section_name(int s)
{
    return s >= 0 && s < DKV_PROF_S_N ? sec_names[s] : "?";
}

dkv_prof_opts dkv_prof_opts_default(void)
{
    dkv_prof_opts o;
    memset(&o, 0, sizeof o);
    o.deadline_s = 480;
    o.repeats = 20;
    o.warmup = 2;
    o.seed = 1;
    o.sustain_lead_s = 0.3;
    return o;
}

double pr_now(void)
{
    return dkv_mono_s();
}

void pr_say(prof_ctx *P, const char *fmt, ...)
{
    if (!P->o->progress || P->dry)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    P->o->progress(P->o->user, line);
}

double pr_est(double flops, double bytes, uint32_t launches)
{
    double a = flops / PR_PEAK_FLOPS, b = bytes / PR_PEAK_BW;
    return (a > b ? a : b) + PR_LAUNCH_S * launches;
}

static double spin_s(const prof_ctx *P, uint32_t launches)
{
    double s = 1e-5 * P->o->repeats * (launches + 2);
    return s > 2e-3 ? 2e-3 : s;
}

static bool go_on(prof_ctx *P);

bool pr_want(prof_ctx *P, double call_s)
{
    const dkv_prof_opts *o = P->o;
    if (P->dry) {
        /* + the host's share: 4 synchronisations, the spin, a first call's plan (about 2 ms assumed) */
        double rep = o->l2_warm ? o->repeats : 3.0 * o->repeats;   /* flushed, warm, back to back */
        double fl = o->l2_warm ? 0 : o->repeats * (PR_FLUSH_MIN / PR_PEAK_BW + PR_LAUNCH_S);
        P->est[P->sec] += (1 + PR_FIRST_REPS + o->warmup + rep) * call_s + fl + 2.5e-3 + spin_s(P, 1);
        if (o->states)   /* the idle gaps, the heaters and 2 x PR_STATE_REPS calls */
            P->est[P->sec] += PR_COOL_LEAD_S + PR_STATE_REPS * PR_COOL_GAP_S + (PR_HEAT_FIRST + PR_STATE_REPS) *
                              PR_HEATER_S + 2 * PR_STATE_REPS * (call_s + PR_FLUSH_MIN / PR_PEAK_BW + 1e-4);
        P->sec_cases++;
        return false;
    }
    return go_on(P);
}

/* Run: false once the deadline has passed (the profile marked incomplete), true otherwise. */
static bool go_on(prof_ctx *P)
{
    const dkv_prof_opts *o = P->o;
    double t = pr_now() - P->t0;
    if (o->deadline_s > 0 && t >= o->deadline_s) {
        if (!P->stopped) {
            P->stopped = true;
            P->p->complete = false;
            snprintf(P->p->incomplete, sizeof P->p->incomplete,
                     "deadline %.0f s reached in section %s after %zu of its shapes; later sections skipped",
                     o->deadline_s, dkv_prof_section_name(P->sec), P->sec_rows);
            pr_say(P, "profile: %s", P->p->incomplete);
        }
        return false;
    }
    if (t - P->last_progress >= 5.0) {
        P->last_progress = t;
        pr_say(P, "profile: %s: %zu shapes, %.0f s", dkv_prof_section_name(P->sec), P->sec_rows, t);
    }
    return true;
}

dkv_prof_table *pr_table(prof_ctx *P, const char *name, const char *const *fields, uint32_t n_fields,
                         const char *note)
{
    dkv_prof *p = P->p;
    for (uint32_t i = 0; i < p->n_tables; i++)
        if (strcmp(p->tables[i].name, name) == 0)
            return &p->tables[i];
    if (p->n_tables == DKV_PROF_MAX_TABLES || n_fields > DKV_PROF_MAX_FIELDS)
        return NULL;
    dkv_prof_table *t = &p->tables[p->n_tables++];
    memset(t, 0, sizeof *t);
    t->name = name, t->note = note, t->n_fields = n_fields;
    for (uint32_t i = 0; i < n_fields; i++)
        t->fields[i] = fields[i];
    return t;
}

void *pr_in(prof_ctx *P, size_t bytes, uint32_t rep, uint32_t slot)
{
    size_t a = (bytes + 255) & ~(size_t)255;
    size_t n = a < P->slab_bytes ? P->slab_bytes / a : 1;
    return P->slab + ((size_t)rep * 3 + (size_t)slot * 5) % n * a;
}

dkv_status pr_alloc(void **p, size_t bytes, dkv_err *err)
{
    PR_CU(cudaMalloc(p, bytes ? bytes : 256));
    return DKV_OK;
}

dkv_status pr_case(prof_ctx *P, dkv_status st, dkv_err *err)
{
    if (st != DKV_EINVAL && st != DKV_ENOMEM)
        return st;
    cudaError_t e = cudaGetLastError();   /* a refused launch leaves no sticky error; clear a soft one */
    (void)e;
    if (P->p->n_skipped++ == 0)
        snprintf(P->p->skipped, sizeof P->p->skipped, "%s: %.200s", dkv_prof_section_name(P->sec), err ? err->msg : "?");
    pr_say(P, "profile: %s: shape skipped: %s", dkv_prof_section_name(P->sec), err ? err->msg : "?");
    if (err)
        dkv_err_clear(err);
    return DKV_OK;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, uint32_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

dkv_status pr_events(prof_ctx *P, uint32_t n, dkv_err *err)
{
    if (n <= P->n_ev)
        return DKV_OK;
    cudaEvent_t *e = realloc(P->ev, n * sizeof *e);
    if (!e)
        return dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
    P->ev = e;
    for (uint32_t i = P->n_ev; i < n; i++, P->n_ev++)
        PR_CU(cudaEventCreate(&P->ev[i]));
    return DKV_OK;
}

static dkv_status add_row(dkv_prof_table *t, const dkv_prof_row *r, dkv_err *err)
{
    if (t->n == t->cap) {
        size_t c = t->cap ? 2 * t->cap : 64;
        dkv_prof_row *n = realloc(t->rows, c * sizeof *n);
        if (!n)
            return dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
        t->rows = n, t->cap = c;
    }
    t->rows[t->n++] = *r;
    return DKV_OK;
}

/* Polls P->st until its work is done, sampling the SM clock about every 0.2 ms: the median into *mhz
 * (NAN when no sample). */
static dkv_status poll_clock(prof_ctx *P, double *mhz, dkv_err *err)
{
    double c[1024];
    uint32_t n = 0;
    cudaError_t q;
    while ((q = cudaStreamQuery(P->st)) == cudaErrorNotReady) {
        double v = dkv_cuda_clock_mhz(P->clock);
        if (n < 1024 && !isnan(v))
            c[n++] = v;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    PR_CU(q);
    *mhz = n ? median(c, n) : NAN;
    return DKV_OK;
}

/* Seconds between the event pairs P->ev[2 r], P->ev[2 r + 1] of n calls, into s (the stream is done). */
static dkv_status elapsed(prof_ctx *P, const char *table, uint32_t n, double *s, dkv_err *err)
{
    for (uint32_t r = 0; r < n; r++) {
        float ms = 0;
        cudaError_t e = cudaEventElapsedTime(&ms, P->ev[2 * r], P->ev[2 * r + 1]);
        if (e != cudaSuccess)
            return dkv_err_set(err, DKV_EIO, "dkv profile: table %s: cudaEventElapsedTime: %s", table,
                               cudaGetErrorString(e));
        s[r] = 1e-3 * ms;
    }
    return DKV_OK;
}

/* R calls of fn, each between two events (after an L2 flush outside them when flush), enqueued
 * behind a spin kernel; their seconds into s (sorted).  With mhz: the median SM clock sampled while the calls run
 * (NAN: none sampled).  With P->probe: the SMs' mean clock from the first call (its flush) to the last into *probe
 * (NAN without). */
static dkv_status timed(prof_ctx *P, const char *table, prof_call fn, void *arg, uint32_t *rep, bool flush,
                        uint32_t launches, double *s, double *mhz, double *probe, dkv_err *err)
{
    uint32_t R = P->o->repeats;
    PR_TRY(pr_events(P, 2 * R, err));
    PR_TRY(dkv_prof_spin(P->st, spin_s(P, launches + (flush ? 4 : 0)), err));
    if (P->probe)
        PR_TRY(dkv_sm_probe_mark(P->probe, false, P->st, err));
    for (uint32_t r = 0; r < R; r++) {
        if (flush)
            PR_TRY(dkv_cuda_l2_flush(P->st, P->flush, P->flush_bytes, P->flush + P->flush_bytes, err));
        PR_CU(cudaEventRecord(P->ev[2 * r], P->st));
        PR_TRY(fn(P, arg, (*rep)++, err));
        PR_CU(cudaEventRecord(P->ev[2 * r + 1], P->st));
    }
    if (P->probe)
        PR_TRY(dkv_sm_probe_mark(P->probe, true, P->st, err));
    if (mhz)
        PR_TRY(poll_clock(P, mhz, err));
    PR_CU(cudaStreamSynchronize(P->st));
    double pm = P->probe ? dkv_sm_probe_mhz(P->probe) : 0;
    *probe = pm > 0 ? pm : NAN;
    PR_TRY(elapsed(P, table, R, s, err));
    qsort(s, R, sizeof *s, cmp_d);
    return DKV_OK;
}

/* R calls of fn back to back between ONE pair of events, enqueued behind a spin kernel: the seconds per
 * call as a step runs them (no event between calls, so a call's launch and ramp-up overlap the previous
 * call's tail); into *out. */
static dkv_status timed_stream(prof_ctx *P, const char *table, prof_call fn, void *arg, uint32_t *rep,
                               uint32_t launches, double *out, dkv_err *err)
{
    uint32_t R = P->o->repeats;
    PR_TRY(pr_events(P, 2, err));
    PR_TRY(dkv_prof_spin(P->st, spin_s(P, launches), err));
    PR_CU(cudaEventRecord(P->ev[0], P->st));
    for (uint32_t r = 0; r < R; r++)
        PR_TRY(fn(P, arg, (*rep)++, err));
    PR_CU(cudaEventRecord(P->ev[1], P->st));
    PR_CU(cudaStreamSynchronize(P->st));
    float ms = 0;
    cudaError_t e = cudaEventElapsedTime(&ms, P->ev[0], P->ev[1]);
    if (e != cudaSuccess)
        return dkv_err_set(err, DKV_EIO, "dkv profile: table %s: cudaEventElapsedTime: %s", table,
                           cudaGetErrorString(e));
    *out = 1e-3 * ms / R;
    return DKV_OK;
}

/* A heater: the GEMM of 8,192 rows of LLaDA-8B's q|k|v projection (~1.4 ms power-capped) on the slab. */
static dkv_status heater(prof_ctx *P, dkv_err *err)
{
    const dkv_bf16 *x = (const dkv_bf16 *)P->slab, *w = (const dkv_bf16 *)(P->slab + ((size_t)64 << 20));
    return dkv_cuda_gemm(P->ctx, (dkv_bf16 *)P->out, x, w, NULL, 8192, 4096, 12288, 0.0f, err);
}

/* The row's calls in two power states (opts.states; docs/COST_MODEL.md "Clock sensitivity"), each a
 * steady stream of work on the GPU: cool, each call after a one-thread spin of PR_COOL_GAP_S (the GPU
 * awake but drawing little: the clock at its maximum; PR_COOL_LEAD_S of spin before the first); hot,
 * each call right after a heater GEMM (PR_HEAT_FIRST of them before the first: the clock power-capped).
 * Each call is flushed as the row's own and timed between two events; the clock is sampled about every
 * 0.2 ms while the state's work runs (after the GPU goes idle NVML reads the maximum at once, and an
 * idle GPU wakes slowly: neither is a state a step runs in).  Medians into row. */
static dkv_status states(prof_ctx *P, const char *table, prof_call fn, void *arg, uint32_t *rep, dkv_prof_row *row,
                         dkv_err *err)
{
    double t[2][PR_STATE_REPS], mhz[2];
    PR_TRY(pr_events(P, 2 * PR_STATE_REPS, err));
    for (int hot = 0; hot < 2; hot++) {
        if (hot)
            for (int i = 0; i < PR_HEAT_FIRST; i++)
                PR_TRY(heater(P, err));
        else
            PR_TRY(dkv_prof_spin(P->st, PR_COOL_LEAD_S, err));
        for (int r = 0; r < PR_STATE_REPS; r++) {
            PR_TRY(hot ? heater(P, err) : dkv_prof_spin(P->st, PR_COOL_GAP_S, err));
            if (P->flush)
                PR_TRY(dkv_cuda_l2_flush(P->st, P->flush, P->flush_bytes, P->flush + P->flush_bytes, err));
            PR_CU(cudaEventRecord(P->ev[2 * r], P->st));
            PR_TRY(fn(P, arg, (*rep)++, err));
            PR_CU(cudaEventRecord(P->ev[2 * r + 1], P->st));
        }
        PR_TRY(poll_clock(P, &mhz[hot], err));
        PR_TRY(elapsed(P, table, PR_STATE_REPS, t[hot], err));
    }
    row->cool_s = median(t[0], PR_STATE_REPS), row->cool_mhz = mhz[0];
    row->hot_s = median(t[1], PR_STATE_REPS), row->hot_mhz = mhz[1];
    return DKV_OK;
}

dkv_status pr_measure(prof_ctx *P, dkv_prof_table *t, const double *f, uint32_t launches, double call_s,
                      prof_call fn, void *arg, dkv_err *err)
{
    (void)call_s;
    if (!t)
        return dkv_err_set(err, DKV_EINVAL, "dkv profile: too many tables");
    const dkv_prof_opts *o = P->o;
    uint32_t R = o->repeats, rep = 0;
    double a = pr_now(), warm[PR_FIRST_REPS];
    PR_TRY(fn(P, arg, rep++, err));
    PR_CU(cudaStreamSynchronize(P->st));
    double first = pr_now() - a;
    for (uint32_t i = 0; i < PR_FIRST_REPS; i++) {
        a = pr_now();
        PR_TRY(fn(P, arg, rep++, err));
        PR_CU(cudaStreamSynchronize(P->st));
        warm[i] = pr_now() - a;
    }
    for (uint32_t i = 0; i < o->warmup; i++)
        PR_TRY(fn(P, arg, rep++, err));
    double *s = malloc(2 * R * sizeof *s);
    if (!s)
        return dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
    bool flush = P->flush != NULL;
    double mhz = NAN, probe = NAN, warm_probe = NAN;
    dkv_status st = timed(P, t->name, fn, arg, &rep, flush, launches, s, P->clock ? &mhz : NULL, &probe, err);
    if (st == DKV_OK && flush)
        st = timed(P, t->name, fn, arg, &rep, false, launches, s + R, NULL, &warm_probe, err);
    double stream = NAN;
    if (st == DKV_OK && flush)
        st = timed_stream(P, t->name, fn, arg, &rep, launches, &stream, err);
    if (st != DKV_OK) {
        free(s);
        return st;
    }
    dkv_prof_row row;
    memset(&row, 0, sizeof row);
    row.cool_s = row.cool_mhz = row.hot_s = row.hot_mhz = NAN;
    if (P->o->states && P->clock && (st = states(P, t->name, fn, arg, &rep, &row, err)) != DKV_OK) {
        free(s);
        return st;
    }
    for (uint32_t i = 0; i < t->n_fields; i++)
        row.f[i] = f[i];
    row.median_s = median(s, R);
    row.p10_s = s[(uint32_t)floor(0.1 * (R - 1))];
    row.p90_s = s[(uint32_t)ceil(0.9 * (R - 1))];
    row.warm_s = flush ? median(s + R, R) : NAN;
    row.stream_s = stream;
    row.first_s = first - median(warm, PR_FIRST_REPS);
    row.launches = launches;
    row.sm_mhz = mhz;
    row.probe_mhz = probe, row.warm_probe_mhz = warm_probe;
    free(s);
    P->sec_rows++;
    return add_row(t, &row, err);
}

/* A sustained run's lead (opts.sustain_lead_s): a one-thread spin (the GPU awake, drawing little: its clock back at
 * the maximum after the shape before) that also lets the host enqueue the run ahead of the GPU. */
static uint32_t sustain_windows(const dkv_prof_opts *o)
{
    return o->sustain_windows ? o->sustain_windows : DKV_PROF_SUSTAIN_WIN;
}

/* The duty runs' steps (kind duty): each step's calls between two probe marks and two events, synchronised, the
 * host idle gap_s after it; the windows' clocks are the means of their steps' own (the idle left out). */
static dkv_status duty_steps(prof_ctx *P, uint32_t W, uint32_t cycles, uint32_t step_calls, double gap_s,
                             prof_call fn, void *arg, uint32_t *rep, dkv_prof_sustained *r, dkv_err *err)
{
    PR_CU(cudaStreamSynchronize(P->st));   /* the lead spin done: not in the first cycle (it was, up to device call 89) */
    double sum[DKV_PROF_SUSTAIN_MAX_WIN] = {0}, busy = 0, t0 = pr_now();
    uint32_t n[DKV_PROF_SUSTAIN_MAX_WIN] = {0};
    for (uint32_t c = 0; c < cycles; c++) {
        uint32_t w = (uint32_t)((uint64_t)c * W / cycles);
        PR_TRY(dkv_sm_probe_mark(P->sprobe[0], false, P->st, err));
        PR_CU(cudaEventRecord(P->ev[0], P->st));
        for (uint32_t i = 0; i < step_calls; i++)
            PR_TRY(fn(P, arg, (*rep)++, err));
        PR_CU(cudaEventRecord(P->ev[1], P->st));
        PR_TRY(dkv_sm_probe_mark(P->sprobe[0], true, P->st, err));
        PR_CU(cudaStreamSynchronize(P->st));
        double s = 0, f = dkv_sm_probe_mhz(P->sprobe[0]);
        PR_TRY(elapsed(P, "sustained", 1, &s, err));
        busy += s;
        if (f > 0)
            sum[w] += f, n[w]++;
        if (gap_s > 0) {
            struct timespec ts = {(time_t)gap_s, (long)((gap_s - floor(gap_s)) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    r->cycle_s = (pr_now() - t0) / cycles;
    r->call_s = busy / ((double)cycles * step_calls);
    r->calls = cycles * step_calls;
    for (uint32_t w = 0; w < W; w++)
        r->mhz[w] = n[w] ? sum[w] / n[w] : 0;
    return DKV_OK;
}

dkv_status pr_sustain(prof_ctx *P, uint32_t model, uint32_t kind, double rows, double keys, double gap_s,
                      uint32_t step_calls, prof_call fn, void *arg, dkv_err *err)
{
    dkv_prof *p = P->p;
    const double S = P->o->sustain_s;
    if (P->dry) {   /* a duty run takes at least a step a window, each with its gap */
        P->est[P->sec] += P->o->sustain_lead_s + fmax(S, step_calls ? sustain_windows(P->o) * gap_s : 0) + 0.01;
        P->sec_cases++;
        return DKV_OK;
    }
    if (!go_on(P))
        return DKV_OK;
    if (p->n_sustained == DKV_PROF_SUSTAIN_MAX)
        return dkv_err_set(err, DKV_EINVAL, "dkv profile: more than %d sustained shapes", DKV_PROF_SUSTAIN_MAX);
    enum { CAL = 8 };
    const uint32_t W = sustain_windows(P->o);
    if (W > DKV_PROF_SUSTAIN_MAX_WIN)
        return dkv_err_set(err, DKV_EINVAL, "dkv profile: %u sustained windows (at most %d)", W, DKV_PROF_SUSTAIN_MAX_WIN);
    for (uint32_t w = 0; w < (step_calls ? 1 : W); w++)   /* a duty run reads one probe a step */
        if (!P->sprobe[w])
            PR_TRY(dkv_sm_probe_open(P->o->device, &P->sprobe[w], err));
    uint32_t rep = 0;
    for (int i = 0; i < 3; i++)   /* the first call's plan and module load, out of the way */
        PR_TRY(fn(P, arg, rep++, err));
    PR_TRY(pr_events(P, 2, err));
    PR_CU(cudaEventRecord(P->ev[0], P->st));
    for (int i = 0; i < CAL; i++)
        PR_TRY(fn(P, arg, rep++, err));
    PR_CU(cudaEventRecord(P->ev[1], P->st));
    PR_CU(cudaStreamSynchronize(P->st));
    double c = 0;
    PR_TRY(elapsed(P, "sustained", 1, &c, err));
    c /= CAL;
    dkv_prof_sustained *r = &p->sustained[p->n_sustained];
    *r = (dkv_prof_sustained){.model = model, .kind = kind, .rows = rows, .keys = keys, .gap_s = gap_s,
                              .step_calls = step_calls};
    if (P->o->sustain_lead_s > 0)
        PR_TRY(dkv_prof_spin(P->st, P->o->sustain_lead_s, err));
    if (step_calls) {   /* kind duty: steps of step_calls calls, gap_s idle after each, for about S seconds */
        double cyc = c * step_calls + gap_s;
        double n_d = cyc > 0 ? ceil(S / cyc) : W;
        uint32_t cycles = n_d < W ? W : n_d > 1e6 ? 1000000 : (uint32_t)n_d;
        PR_TRY(duty_steps(P, W, cycles, step_calls, gap_s, fn, arg, &rep, r, err));
    } else {
        double per_d = c > 0 ? ceil(S / W / c) : 1;
        uint32_t per = per_d < 1 ? 1 : per_d > 1e6 ? 1000000 : (uint32_t)per_d;
        PR_CU(cudaEventRecord(P->ev[0], P->st));
        for (uint32_t w = 0; w < W; w++) {
            PR_TRY(dkv_sm_probe_mark(P->sprobe[w], false, P->st, err));
            for (uint32_t i = 0; i < per; i++)
                PR_TRY(fn(P, arg, rep++, err));
            PR_TRY(dkv_sm_probe_mark(P->sprobe[w], true, P->st, err));
        }
        PR_CU(cudaEventRecord(P->ev[1], P->st));
        double nvml = NAN;
        if (P->clock)
            PR_TRY(poll_clock(P, &nvml, err));
        PR_CU(cudaStreamSynchronize(P->st));
        double tot = 0;
        PR_TRY(elapsed(P, "sustained", 1, &tot, err));
        r->calls = W * per, r->call_s = tot / (W * per), r->nvml_mhz = isfinite(nvml) ? nvml : 0;
        for (uint32_t w = 0; w < W; w++)
            r->mhz[w] = dkv_sm_probe_mhz(P->sprobe[w]);
    }
    p->n_sustained++;
    P->sec_rows++;
    char ws[DKV_PROF_SUSTAIN_MAX_WIN * 6 + 1] = "";
    for (uint32_t w = 0, n = 0; w < W && n < sizeof ws - 1; w++)   /* stops where a value would not fit */
        n += (uint32_t)snprintf(ws + n, sizeof ws - n, " %.0f", r->mhz[w]);
    char gs[64] = "";
    if (step_calls)
        snprintf(gs, sizeof gs, " gap %.3g ms (cycle %.3g ms)", 1e3 * gap_s, 1e3 * r->cycle_s);
    pr_say(P, "profile: sustained %s %s rows %.0f keys %.0f%s: %u calls of %.3g ms, SM clock%s MHz (NVML %.0f)",
           P->o->models[model].name, dkv_prof_sustain_kind(kind), rows, keys, gs, r->calls,
           1e3 * r->call_s, ws, r->nvml_mhz);
    return DKV_OK;
}

dkv_status pr_pool(prof_ctx *P, dkv_err *err)
{
    if (P->pool)
        return DKV_OK;
    PR_TRY(pr_alloc((void **)&P->pool, PR_POOL_BYTES, err));
    PR_TRY(pr_alloc((void **)&P->aux, PR_AUX_BYTES, err));
    PR_TRY(dkv_cuda_fill_random((dkv_bf16 *)P->pool, PR_POOL_BYTES / 2, P->o->seed + 1, 0.5f, 0.0f, P->st, err));
    PR_CU(cudaMemsetAsync(P->aux, 0, PR_AUX_BYTES, P->st));
    PR_CU(cudaStreamSynchronize(P->st));
    return DKV_OK;
}

uint32_t pr_rows(const prof_ctx *P, const uint32_t **rows)
{
    static const uint32_t full[] = {16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096,
                                    6144, 8192};
    static const uint32_t quick[] = {32, 512, 4096};
    *rows = P->o->quick ? quick : full;
    return P->o->quick ? 3 : (uint32_t)(sizeof full / sizeof full[0]);
}

typedef dkv_status (*sec_fn)(prof_ctx *, dkv_err *);
static const sec_fn sections[DKV_PROF_S_N] = {pr_sec_gemm,        pr_sec_lm_head, pr_sec_attn,      pr_sec_kv_store,
                                              pr_sec_elementwise, pr_sec_select,  pr_sec_gemm_grid, pr_sec_compress,
                                              pr_sec_copy,        pr_sec_host,    pr_sec_memory,
                                              pr_sec_sustained};

static bool sec_on(const dkv_prof_opts *o, int s)
{
    if (s == DKV_PROF_S_SUSTAINED && !(o->sustain_s > 0))
        return false;
    return o->sections == 0 || (o->sections >> s) & 1u;
}

double dkv_prof_estimate(const dkv_prof_opts *o, double est_s[DKV_PROF_S_N], size_t *shapes)
{
    dkv_prof p;
    memset(&p, 0, sizeof p);
    prof_ctx P;
    memset(&P, 0, sizeof P);
    P.o = o, P.p = &p, P.dry = true;
    P.slab_bytes = PR_SLAB_BYTES, P.out_bytes = PR_OUT_BYTES;
    double total = 0;
    for (int s = 0; s < DKV_PROF_S_N; s++) {
        P.sec = s;
        if (sec_on(o, s))
            (void)sections[s](&P, NULL);
        if (est_s)
            est_s[s] = P.est[s];
        total += P.est[s];
    }
    if (shapes)
        *shapes = P.sec_cases;
    return total + 2.0;   /* device set-up: context, cuBLASLt, the slab's fill */
}

static dkv_status setup(prof_ctx *P, dkv_err *err)
{
    dkv_prof *p = P->p;
    struct cudaDeviceProp d;
    PR_CU(cudaSetDevice(P->o->device));
    PR_TRY(pr_mem_context(P, err));   /* first: the context alone (profile_mem.c) */
    PR_CU(cudaGetDeviceProperties(&d, P->o->device));
    snprintf(p->gpu, sizeof p->gpu, "%.127s", d.name);
    snprintf(p->sm, sizeof p->sm, "%d.%d", d.major, d.minor);
    p->l2_bytes = d.l2CacheSize, p->hbm_bytes = (double)d.totalGlobalMem;
    PR_CU(cudaDriverGetVersion(&p->driver));
    PR_CU(cudaRuntimeGetVersion(&p->runtime));
    PR_TRY(dkv_cuda_ctx_new(P->o->device, &P->ctx, err));
    P->st = dkv_cuda_ctx_stream(P->ctx);
    PR_TRY(pr_mem_setup(P, err));
    if ((P->clock = dkv_cuda_clock_open(P->o->device)) != NULL)
        pr_say(P, "profile: SM clock sampled beside the timed calls (NVML)");
    if (P->o->probe) {
        PR_TRY(dkv_sm_probe_open(P->o->device, &P->probe, err));
        pr_say(P, "profile: the SMs' own clock over each row's timed calls (--probe)");
    }
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(h, P->st) != CUBLAS_STATUS_SUCCESS)
        return dkv_err_set(err, DKV_EIO, "dkv profile: cublasCreate failed");
    P->blas = h;
    size_t fr = 0, tot = 0;
    PR_CU(cudaMemGetInfo(&fr, &tot));
    P->slab_bytes = PR_SLAB_BYTES, P->out_bytes = PR_OUT_BYTES;
    if (P->slab_bytes + P->out_bytes + PR_POOL_BYTES + PR_AUX_BYTES > fr * 0.8)
        return dkv_err_set(err, DKV_ENOMEM, "dkv profile: %.1f GiB free on the device; the profile needs 11 GiB "
                           "(5.5 for inputs and outputs, the rest for attention pools)", fr / 1073741824.0);
    PR_TRY(pr_alloc((void **)&P->slab, P->slab_bytes, err));
    PR_TRY(pr_alloc((void **)&P->out, P->out_bytes, err));
    if (!P->o->l2_warm) {
        P->flush_bytes = dkv_cuda_l2_flush_bytes((size_t)d.l2CacheSize);
        PR_TRY(pr_alloc((void **)&P->flush, P->flush_bytes + DKV_CUDA_L2_FLUSH_SINK, err));
        PR_TRY(dkv_cuda_fill_random((dkv_bf16 *)P->flush, P->flush_bytes / 2, P->o->seed + 7, 0.5f, 0.0f, P->st, err));
        p->flush_bytes = (double)P->flush_bytes;
    }
    PR_TRY(dkv_cuda_fill_random((dkv_bf16 *)P->slab, P->slab_bytes / 2, P->o->seed, 0.5f, 0.0f, P->st, err));
    PR_CU(cudaMemsetAsync(P->out, 0, P->out_bytes, P->st));
    PR_CU(cudaStreamSynchronize(P->st));
    return DKV_OK;
}

static void teardown(prof_ctx *P)
{
    dkv_cuda_clock_close(P->clock);
    P->clock = NULL;
    dkv_sm_probe_close(P->probe);
    P->probe = NULL;
    for (int w = 0; w < DKV_PROF_SUSTAIN_MAX_WIN; w++)
        dkv_sm_probe_close(P->sprobe[w]), P->sprobe[w] = NULL;
    for (uint32_t i = 0; i < P->n_ev; i++)
        cudaEventDestroy(P->ev[i]);
    free(P->ev);
    cudaFree(P->slab);
    cudaFree(P->pool);
    cudaFree(P->aux);
    dkv_cuda_host_free(P->pinned);
    cudaFree(P->out);
    cudaFree(P->flush);
    if (P->blas)
        cublasDestroy((cublasHandle_t)P->blas);
    dkv_cuda_ctx_free(P->ctx);
}

dkv_status dkv_prof_run(const dkv_prof_opts *o, dkv_prof **out, dkv_err *err)
{
    *out = NULL;
    if (!o->models || o->n_models == 0 || o->repeats < 3)
        return dkv_err_set(err, DKV_EINVAL, "dkv profile: needs at least one model and 3 repeats");
    if (o->n_sustain_gaps > DKV_PROF_SUSTAIN_MAX_GAPS)
        return dkv_err_set(err, DKV_EINVAL, "dkv profile: %u sustained gaps (at most %d)", o->n_sustain_gaps,
                           DKV_PROF_SUSTAIN_MAX_GAPS);
    for (uint32_t g = 0; g < o->n_sustain_gaps; g++)
        if (!(o->sustain_gaps_s[g] >= 0 && o->sustain_gaps_s[g] <= 1))
            return dkv_err_set(err, DKV_EINVAL, "dkv profile: sustained gap %u is %g s (0 to 1)", g + 1,
                               o->sustain_gaps_s[g]);
    char desc[256];
    PR_TRY(dkv_cuda_probe(desc, sizeof desc, err));
    dkv_prof *p = calloc(1, sizeof *p);
    if (!p)
        return dkv_err_set(err, DKV_ENOMEM, "dkv profile: out of host memory");
    *out = p;
    prof_ctx P;
    memset(&P, 0, sizeof P);
    P.o = o, P.p = p;
    p->est_s = dkv_prof_estimate(o, P.est, NULL);
    p->repeats = o->repeats, p->warmup = o->warmup, p->complete = true;
    p->sustain_s = sec_on(o, DKV_PROF_S_SUSTAINED) ? o->sustain_s : 0;
    p->sustain_windows = sustain_windows(o), p->sustain_lead_s = o->sustain_lead_s;
    P.t0 = pr_now();
    dkv_status st = setup(&P, err);
    for (int s = 0; st == DKV_OK && s < DKV_PROF_S_N && !P.stopped; s++) {
        if (!sec_on(o, s))
            continue;
        P.sec = s, P.sec_rows = 0, P.sec_cases = 0;
        double t = pr_now();
        pr_say(&P, "profile: section %s (estimated %.1f s), at %.1f s", sec_names[s], P.est[s], t - P.t0);
        st = sections[s](&P, err);
        pr_say(&P, "profile: section %s: %zu shapes in %.1f s", sec_names[s], P.sec_rows, pr_now() - t);
        p->wall_s = pr_now() - P.t0;
        if (o->on_section)
            o->on_section(o->user, p);
    }
    if (st == DKV_OK)
        st = cudaDeviceSynchronize() == cudaSuccess ? DKV_OK
                                                     : dkv_err_set(err, DKV_EIO, "dkv profile: a kernel failed: %s",
                                                                   cudaGetErrorString(cudaGetLastError()));
    p->wall_s = pr_now() - P.t0;
    if (st != DKV_OK && p->complete) {
        p->complete = false;
        snprintf(p->incomplete, sizeof p->incomplete, "stopped by an error in section %s: %.200s", sec_names[P.sec],
                 err ? err->msg : "?");
    }
    teardown(&P);
    return st;
}

void dkv_prof_free(dkv_prof *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; i < p->n_tables; i++)
        free(p->tables[i].rows);
    free(p);
}
