/* offload.c - progressive offload phases and the plain CPU-offload baseline. */
#include "policy/offload.h"

#include <math.h>
#include <string.h>

static const char *const mode_names[] = {"none", "progressive", "plain"};
const dkv_names dkv_offload_mode_names = DKV_NAMES("offload.mode", mode_names);

const char *dkv_offload_mode_name(dkv_offload_mode m) { return dkv_names_at(&dkv_offload_mode_names, (int)m); }

void dkv_offload_config_default(dkv_offload_config *c)
{
    c->mode = DKV_OFFLOAD_NONE;
    c->t1 = 1.0 / 3.0;
    c->t2 = 2.0 / 3.0;
    c->lowrank_ratio = 0.3;
    c->pinned = true;
}

dkv_status dkv_offload_config_validate(const dkv_offload_config *c, dkv_err *err)
{
    if ((int)c->mode < 0 || (int)c->mode >= dkv_offload_mode_names.n)
        return dkv_err_set(err, DKV_EINVAL, "offload.mode = %d: not a mode", (int)c->mode);
    if (!(c->t1 >= 0 && c->t1 <= 1))
        return dkv_err_set(err, DKV_ERANGE, "offload.t1 = %g: must be in [0, 1]", c->t1);
    if (!(c->t2 >= 0 && c->t2 <= 1))
        return dkv_err_set(err, DKV_ERANGE, "offload.t2 = %g: must be in [0, 1]", c->t2);
    if (c->t2 < c->t1)
        return dkv_err_set(err, DKV_ERANGE, "offload.t2 = %g: must be >= offload.t1 = %g", c->t2, c->t1);
    if (!(c->lowrank_ratio > 0 && c->lowrank_ratio <= 1))
        return dkv_err_set(err, DKV_ERANGE, "offload.lowrank_ratio = %g: must be in (0, 1]", c->lowrank_ratio);
    return DKV_OK;
}

/* First step index whose fraction step/n reaches t (tolerance for 1/3-style fractions). */
static uint64_t first_step_at(double t, uint32_t n)
{
    double x = ceil(t * (double)n - 1e-9);
    return x <= 0 ? 0 : (uint64_t)x;
}

uint8_t dkv_offload_phase(const dkv_offload_config *c, uint32_t step, uint32_t n_steps)
{
    if (step >= first_step_at(c->t2, n_steps))
        return 3;
    if (step >= first_step_at(c->t1, n_steps))
        return 2;
    return 1;
}

uint32_t dkv_offload_rank(const dkv_offload_config *c, uint32_t head_dim)
{
    double r = floor(c->lowrank_ratio * head_dim + 0.5);
    return r < 1 ? 1 : (uint32_t)r;
}

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t lowrank_phys(const dkv_offload_config *c, uint64_t raw)
{
    return (uint64_t)ceil(c->lowrank_ratio * (double)raw - 1e-9);
}

dkv_status dkv_offload_decide(const dkv_offload_config *c, const dkv_model *m, const dkv_offload_step *s,
                              dkv_offload_state *st, dkv_offload_orders *out, dkv_err *err)
{
    dkv_status rc = dkv_offload_config_validate(c, err);
    if (rc != DKV_OK)
        return rc;
    if (s->n_steps == 0 || s->step >= s->n_steps)
        return dkv_err_set(err, DKV_EINVAL, "offload: step %u out of range (n_steps %u)", s->step, s->n_steps);
    if (s->working_bytes > s->total_bytes)
        return dkv_err_set(err, DKV_EINVAL, "offload: working_bytes %llu > total_bytes %llu",
                           (unsigned long long)s->working_bytes, (unsigned long long)s->total_bytes);
    if (st->gpu_raw + st->host_raw + st->host_lowrank != st->total)
        return dkv_err_set(err, DKV_ESTATE, "offload: state parts (gpu_raw + host_raw + host_lowrank) != total (%llu)",
                           (unsigned long long)st->total);
    if (s->total_bytes < st->total)
        return dkv_err_set(err, DKV_ESTATE, "offload: total_bytes shrank from %llu to %llu within a request",
                           (unsigned long long)st->total, (unsigned long long)s->total_bytes);

    *out = (dkv_offload_orders){.pinned = c->pinned};
    uint64_t total = s->total_bytes, working = s->working_bytes;
    /* new KV produced this step is written on the GPU */
    st->gpu_raw += total - st->total;
    st->total = total;

    if (c->mode == DKV_OFFLOAD_NONE) {
        /* everything comes back / stays on the GPU */
        st->gpu_raw = total;
        st->host_raw = st->host_lowrank = 0;
        out->resident_bytes = total;
        return DKV_OK;
    }

    uint64_t host = st->host_raw + st->host_lowrank;
    uint64_t write = min64(s->write_bytes, total);
    uint64_t read = min64(s->read_bytes, total);

    /* 1. fetch what the step reads, does not compute itself, and is on the host */
    if (c->mode == DKV_OFFLOAD_PLAIN) {
        /* all of the request's KV is on the host between steps */
        uint64_t need = read > write ? read - write : 0;
        need = min64(need, host);
        if (host > 0) {
            double f = (double)need / (double)host;
            out->h2d_bytes = (uint64_t)llround(f * (double)st->host_raw) +
                             lowrank_phys(c, (uint64_t)llround(f * (double)st->host_lowrank));
        }
    } else {
        uint64_t cold = total - working;
        uint64_t covered = write > working ? write : working;
        uint64_t cold_read = read > covered ? read - covered : 0;
        cold_read = min64(cold_read, cold);
        if (cold > 0 && host > 0 && cold_read > 0) {
            double f = (double)cold_read / (double)cold;
            out->h2d_bytes = (uint64_t)llround(f * (double)st->host_raw) +
                             lowrank_phys(c, (uint64_t)llround(f * (double)st->host_lowrank));
        }
    }
    out->staging_bytes = out->h2d_bytes;

    /* 2. the step's writes put KV back on the GPU, raw (low-rank copies are replaced first) */
    uint64_t beyond = write > st->gpu_raw ? write - st->gpu_raw : 0;
    if (beyond > 0 && host > 0) {
        /* writes cover GPU-resident KV first; the rest was on the host and is recomputed */
        uint64_t back = min64(beyond, host);
        uint64_t from_lr = min64(back, st->host_lowrank);
        st->host_lowrank -= from_lr;
        st->host_raw -= back - from_lr;
        st->gpu_raw += back;
    }

    /* 3. offload after the step */
    uint8_t phase = c->mode == DKV_OFFLOAD_PROGRESSIVE ? dkv_offload_phase(c, s->step, s->n_steps) : 0;
    out->phase = phase;
    uint64_t keep = c->mode == DKV_OFFLOAD_PLAIN ? 0 : working;
    if (keep > st->gpu_raw)
        keep = st->gpu_raw;
    uint64_t off = (phase == 1) ? 0 : st->gpu_raw - keep;
    if (off > 0) {
        if (phase == 2) {
            uint32_t r = dkv_offload_rank(c, m->head_dim);
            double elems = (double)off / dkv_dtype_bytes(m->kv_dtype);
            out->compress_bytes = off;
            out->compress_flops = 2.0 * r * elems;
            out->d2h_bytes = lowrank_phys(c, off);
            st->host_lowrank += off;
        } else {
            out->d2h_bytes = off;
            st->host_raw += off;
        }
        st->gpu_raw -= off;
        out->freed_bytes = off;
    }
    out->resident_bytes = st->gpu_raw;
    out->offloaded_bytes = st->host_raw + st->host_lowrank;
    return DKV_OK;
}

DKV_POLICY_DEFINE(dkv_offload_policy, "offload", dkv_offload, dkv_offload_config, NULL);
