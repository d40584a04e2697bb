/* synth.c - synthetic request streams: Poisson, Gamma (bursty), fixed, closed loop. */
#include "workload/workload_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const arrival_names[] = {"poisson", "gamma", "fixed", "closed"};
const dkv_names dkv_arrival_names = DKV_NAMES("workload.kind", arrival_names);

void dkv_synth_cfg_default(dkv_synth_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->arrival = DKV_ARRIVAL_POISSON;
    c->n_requests = 100;
    c->rate = 1.0;
    c->cv = 1.0;
    c->n_users = 1;
    c->think_exponential = true;
    c->prompt = dkv_len_fixed(512);
    c->gen = dkv_len_fixed(256);
    c->seed = 1;
}

static dkv_status synth_validate(const dkv_synth_cfg *c, dkv_err *err)
{
    if (c->n_requests == 0) return dkv_err_set(err, DKV_EINVAL, "synth: field 'n_requests' must be > 0");
    switch (c->arrival) {
    case DKV_ARRIVAL_POISSON:
    case DKV_ARRIVAL_GAMMA:
        if (!(c->rate > 0) || !isfinite(c->rate))
            return dkv_err_set(err, DKV_EINVAL, "synth: field 'rate' must be > 0 (got %g)", c->rate);
        if (c->arrival == DKV_ARRIVAL_GAMMA && (!(c->cv > 0) || !isfinite(c->cv)))
            return dkv_err_set(err, DKV_EINVAL, "synth: field 'cv' must be > 0 (got %g)", c->cv);
        break;
    case DKV_ARRIVAL_FIXED:
        if (!(c->interval_s >= 0) || !isfinite(c->interval_s))
            return dkv_err_set(err, DKV_EINVAL, "synth: field 'interval_s' must be >= 0 (got %g)", c->interval_s);
        break;
    case DKV_ARRIVAL_CLOSED:
        if (c->n_users == 0) return dkv_err_set(err, DKV_EINVAL, "synth: field 'n_users' must be > 0");
        if (!(c->think_s >= 0) || !isfinite(c->think_s))
            return dkv_err_set(err, DKV_EINVAL, "synth: field 'think_s' must be >= 0 (got %g)", c->think_s);
        break;
    default:
        return dkv_err_set(err, DKV_EINVAL, "synth: field 'arrival' has no kind %d", (int)c->arrival);
    }
    dkv_status rc = dkv_len_dist_validate(&c->prompt, "synth prompt", err);
    if (rc == DKV_OK) rc = dkv_len_dist_validate(&c->gen, "synth gen", err);
    return rc;
}

static double think(const dkv_synth_cfg *c, dkv_rng *r)
{
    if (c->think_s <= 0) return 0;
    return c->think_exponential ? dkv_rng_exponential(r, 1.0 / c->think_s) : c->think_s;
}

dkv_status dkv_workload_synth(const dkv_synth_cfg *c, const dkv_workload_opts *opts, dkv_workload **out,
                              dkv_err *err)
{
    *out = NULL;
    dkv_status rc = synth_validate(c, err);
    if (rc != DKV_OK) return rc;
    char src[64];
    snprintf(src, sizeof src, "synth:%s", dkv_names_at(&dkv_arrival_names, (int)c->arrival));
    dkv_workload *w = dkv_wl_new(src);
    if (!w) return dkv_err_set(err, DKV_ENOMEM, "synth: out of memory");
    dkv_rng r;
    dkv_rng_seed(&r, c->seed);
    /* Gamma with mean 1/rate and CV cv: shape 1/cv^2, scale cv^2/rate. */
    double shape = 1.0 / (c->cv * c->cv), scale = c->cv * c->cv / c->rate;
    double t = 0;
    for (uint32_t i = 0; i < c->n_requests; i++) {
        dkv_request *q = dkv_wl_push(w);
        if (!q) {
            dkv_workload_free(w);
            return dkv_err_set(err, DKV_ENOMEM, "synth: out of memory for %u requests", c->n_requests);
        }
        q->id = i;
        switch (c->arrival) {
        case DKV_ARRIVAL_POISSON:
            if (i > 0) t += dkv_rng_exponential(&r, c->rate);
            q->arrival_s = t;
            break;
        case DKV_ARRIVAL_GAMMA:
            if (i > 0) t += dkv_rng_gamma(&r, shape, scale);
            q->arrival_s = t;
            break;
        case DKV_ARRIVAL_FIXED:
            q->arrival_s = (double)i * c->interval_s;
            break;
        case DKV_ARRIVAL_CLOSED:
            q->user = i % c->n_users;
            q->think_s = think(c, &r);
            if (i < c->n_users && !c->stagger_first) q->think_s = 0;
            q->arrival_s = i < c->n_users ? q->think_s : INFINITY;
            break;
        }
        q->prompt_tokens = dkv_len_draw(&c->prompt, &r);
        q->gen_tokens = dkv_len_draw(&c->gen, &r);
    }
    if (c->arrival == DKV_ARRIVAL_CLOSED) {
        w->closed = true;
        w->n_users = c->n_users;
    }
    rc = dkv_wl_finish(w, opts, false, err);
    if (rc != DKV_OK) {
        dkv_workload_free(w);
        return rc;
    }
    *out = w;
    return DKV_OK;
}
