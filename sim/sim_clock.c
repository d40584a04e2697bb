/* sim_clock.c - the SM clock a step runs at and its classes' times at that clock (docs/COST_MODEL.md
 * "The step's clock"; the profile's clock block, PROFILE_FORMAT.md).
 *
 * The profile times each kernel class at the clock its own repeated calls settle to: the large GEMMs
 * power-capped (~1,500 MHz), the attention at the maximum.  A step mixes them, and the GPU's clock
 * follows the recent work with a lag.  So each step's work gets a settle clock, the time-weighted mean
 * of its classes' row clocks; the step runs at the mean settle clock over a window of the recent steps
 * (idle time at the maximum; the window form) or at the mean over the step of a clock that follows the
 * settle clocks as a first-order lag, quick to fall and slow to rise (the follow form); and a class
 * measured at clock f_row runs t x (f_row / f)^sens at f.  Since session 25 the clocks can be the SMs' own
 * (docs/COST_MODEL.md "The clock on the probe's scale"): the attention rows' clock apart from the maximum
 * (clock.attn_mhz), and settle clocks apart from the rows' (clock.settle: a row's few milliseconds do not reach
 * the clock a step's work settles at; fitted to whole steps, not the clock of seconds of one kind of work, which
 * `dkv profile --sustain` measures: docs/COST_MODEL.md "Settle clocks measured"). */
#include "sim/sim_internal.h"

#include <math.h>

#include "cost/profile.h"

/* A clock by rows: log-linear between the n points (r, f), the end points' beyond them; top without points. */
static double by_rows(uint32_t n, const double *r, const double *f, double m, double top)
{
    if (n == 0)
        return top;
    if (m <= r[0])
        return f[0];
    for (uint32_t i = 1; i < n; i++)
        if (m <= r[i])
            return f[i - 1] + (f[i] - f[i - 1]) * log(m / r[i - 1]) / log(r[i] / r[i - 1]);
    return f[n - 1];
}

/* The clock the rows of GEMM class k (0 qkv, 1 o, 2 ffn, 3 lm_head) ran at, at m rows. */
static double row_mhz(const dkv_profile_info *in, int k, double m)
{
    return by_rows(in->clock_n[k], in->clock_rows[k], in->clock_mhz[k], m, in->clock_max_mhz);
}

/* The GEMMs' sensitivity at m rows: 0 up to lo_rows, sens from hi_rows, log-linear between. */
static double gemm_sens(const dkv_profile_info *in, double m)
{
    if (m <= in->clock_gemm_lo_rows)
        return 0;
    if (m >= in->clock_gemm_hi_rows)
        return in->clock_gemm_sens;
    return in->clock_gemm_sens * log(m / in->clock_gemm_lo_rows) / log(in->clock_gemm_hi_rows / in->clock_gemm_lo_rows);
}

/* The follow form: a clock at x moving toward u for dt seconds (time constant down_s while falling,
 * up_s while rising): where it ends, and (*mean) its mean over the dt. */
static double follow(const dkv_profile_info *in, double x, double u, double dt, double *mean)
{
    double tau = u < x ? in->clock_down_s : in->clock_up_s;
    if (!(dt > 0)) {
        if (mean)
            *mean = x;
        return x;
    }
    double e = exp(-dt / tau);
    if (mean)
        *mean = u + (x - u) * tau / dt * (1 - e);
    return u + (x - u) * e;
}

/* The follow form's clock at time t: the clock at the last step's end, idle (toward the maximum) since. */
static double follow_at(const sim_clock *c, const dkv_profile_info *in, double t)
{
    if (c->n == 0)
        return in->clock_max_mhz;
    return follow(in, c->x_mhz, in->clock_max_mhz, t - c->at_s, NULL);
}

void sim_clock_push(sim_clock *c, const dkv_profile_info *in, double start_s, double len_s, double settle_mhz)
{
    if (!(settle_mhz > 0))
        return;
    if (in->clock_down_s > 0) {   /* the follow form keeps only where the clock is: no ring */
        c->x_mhz = follow(in, follow_at(c, in, start_s), settle_mhz, len_s, NULL);
        c->at_s = start_s + len_s;
        c->n++;
        return;
    }
    uint32_t i = c->n % SIM_CLOCK_STEPS;
    c->start[i] = start_s, c->len[i] = len_s, c->mhz[i] = settle_mhz;
    c->n++;
}

/* The mean settle clock over [a, b]: the recorded steps' overlap with it, the step being costed
 * (from `start`, `len` long, settling to `own`), idle time at the maximum. */
static double window_mhz(const sim_clock *c, double top, double a, double b, double start, double len, double own)
{
    double num = 0, cov = 0;
    uint32_t k = c->n < SIM_CLOCK_STEPS ? c->n : SIM_CLOCK_STEPS;
    for (uint32_t j = 0; j <= k; j++) {
        double s, l, f;
        if (j == k)
            s = start, l = len, f = own;
        else {
            uint32_t i = (c->n - 1 - j) % SIM_CLOCK_STEPS;   /* newest first */
            s = c->start[i], l = c->len[i], f = c->mhz[i];
        }
        double lo = fmax(a, s), hi = fmin(b, s + l);
        if (hi > lo)
            num += (hi - lo) * f, cov += hi - lo;
    }
    double w = b - a;
    return w > 0 ? (num + (w - (cov < w ? cov : w)) * top) / (cov > w ? cov : w) : own;
}

void sim_clock_apply(const sim_clock *c, const dkv_profile_info *in, const dkv_step_plan *plan, const dkv_cost_step *cs,
                     double t_layer[DKV_KCLASS_N], double t_once[DKV_KCLASS_N], double *settle_mhz, double *run_mhz)
{
    *settle_mhz = *run_mhz = 0;
    if (!in || !(in->clock_max_mhz > 0) || !c)
        return;
    const double L = cs->n_layers, top = in->clock_max_mhz;
    double q = 0;
    bool refresh = false;
    for (uint32_t i = 0; i < plan->n_items; i++)
        q += plan->items[i].q_tokens, refresh |= plan->items[i].phase == DKV_STEP_REFRESH;
    double rows = cs->logit_rows;
    /* each class's row clock and sensitivity (the rest: the maximum, insensitive) */
    double f[DKV_KCLASS_N], s[DKV_KCLASS_N];
    for (int k = 0; k < DKV_KCLASS_N; k++)
        f[k] = top, s[k] = 0;
    f[DKV_KCLASS_QKV] = row_mhz(in, 0, q), f[DKV_KCLASS_O] = row_mhz(in, 1, q), f[DKV_KCLASS_FFN] = row_mhz(in, 2, q);
    f[DKV_KCLASS_LM_HEAD] = row_mhz(in, 3, rows);
    s[DKV_KCLASS_QKV] = s[DKV_KCLASS_O] = s[DKV_KCLASS_FFN] = gemm_sens(in, q);
    s[DKV_KCLASS_LM_HEAD] = gemm_sens(in, rows);
    s[DKV_KCLASS_ATTN] = refresh ? in->clock_refresh_sens : in->clock_reuse_sens;
    if (in->clock_attn_mhz > 0)   /* the attention rows' own clock (clock.attn_mhz), else the maximum */
        f[DKV_KCLASS_ATTN] = in->clock_attn_mhz;
    /* the step's settle clock: its classes' settle clocks weighted by their time (without a settle block the
     * row clocks; with one, the GEMM classes' by rows and every other class's one value) */
    double u[DKV_KCLASS_N];
    for (int k = 0; k < DKV_KCLASS_N; k++)
        u[k] = in->clock_settle_n ? in->clock_settle_other_mhz : f[k];
    if (in->clock_settle_n) {
        const uint32_t n = in->clock_settle_n;
        const double *sr = in->clock_settle_rows, *sf = in->clock_settle_mhz;
        u[DKV_KCLASS_QKV] = u[DKV_KCLASS_O] = u[DKV_KCLASS_FFN] = by_rows(n, sr, sf, q, top);
        u[DKV_KCLASS_LM_HEAD] = by_rows(n, sr, sf, rows, top);
    }
    double num = 0, den = 0;
    for (int k = 0; k < DKV_KCLASS_N; k++) {
        double t = (isnan(t_layer[k]) ? 0 : L * t_layer[k]) + (isnan(t_once[k]) ? 0 : t_once[k]);
        num += t * u[k], den += t;
    }
    if (!(den > 0))
        return;
    double own = num / den, start = plan->start_s, run;
    if (in->clock_down_s > 0)
        follow(in, follow_at(c, in, start), own, den, &run);
    else
        run = window_mhz(c, top, start - in->clock_lag_s - in->clock_window_s, start + den - in->clock_lag_s, start,
                         den, own);
    for (int k = 0; k < DKV_KCLASS_N; k++) {
        if (s[k] == 0)
            continue;
        double x = pow(f[k] / run, s[k]);
        if (!isnan(t_layer[k]))
            t_layer[k] *= x;
        if (!isnan(t_once[k]))
            t_once[k] *= x;
    }
    *settle_mhz = own, *run_mhz = run;
}
