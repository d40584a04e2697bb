/* retention.c - sparse retention: k per head, dynamic rho, and the read cost of the kept set. */
#include "policy/retention.h"

#include <math.h>
#include <string.h>

static const char *const set_names[] = {"per_head", "shared"};
static const char *const rho_names[] = {"fixed", "entropy", "callback"};
const dkv_names dkv_retain_set_names = DKV_NAMES("retention.set", set_names);
const dkv_names dkv_rho_mode_names = DKV_NAMES("retention.mode", rho_names);

const char *dkv_retain_set_name(dkv_retain_set s) { return dkv_names_at(&dkv_retain_set_names, (int)s); }
const char *dkv_rho_mode_name(dkv_rho_mode m) { return dkv_names_at(&dkv_rho_mode_names, (int)m); }

void dkv_retention_config_default(dkv_retention_config *c)
{
    *c = (dkv_retention_config){0};
    c->rho = 0.5;
    c->set = DKV_RETAIN_PER_HEAD;
    c->mode = DKV_RHO_FIXED;
    c->rho_min = 0.1;
    c->rho_max = 0.9;
    c->ent_a = 2.0;
    c->ent_b = 2.0;
    c->seed = 1;
}

dkv_status dkv_retention_config_validate(const dkv_retention_config *c, dkv_err *err)
{
    if (!(c->rho > 0 && c->rho <= 1))
        return dkv_err_set(err, DKV_ERANGE, "retention.rho = %g: must be in (0, 1]", c->rho);
    if (c->set != DKV_RETAIN_PER_HEAD && c->set != DKV_RETAIN_SHARED)
        return dkv_err_set(err, DKV_EINVAL, "retention.set = %d: expected per_head or shared", (int)c->set);
    if ((unsigned)c->mode > DKV_RHO_CALLBACK)
        return dkv_err_set(err, DKV_EINVAL, "retention.mode = %d: expected fixed, entropy or callback", (int)c->mode);
    if (c->measured && c->mode != DKV_RHO_ENTROPY)
        return dkv_err_set(err, DKV_EINVAL, "retention.measured applies to mode 'entropy' (mode is '%s')",
                           dkv_rho_mode_name(c->mode));
    if (c->mode == DKV_RHO_FIXED)
        return DKV_OK;
    if (!(c->rho_min > 0 && c->rho_min <= 1))
        return dkv_err_set(err, DKV_ERANGE, "retention.rho_min = %g: must be in (0, 1]", c->rho_min);
    if (!(c->rho_max >= c->rho_min && c->rho_max <= 1))
        return dkv_err_set(err, DKV_ERANGE, "retention.rho_max = %g: must be in [rho_min = %g, 1]", c->rho_max,
                           c->rho_min);
    if (c->mode == DKV_RHO_ENTROPY && !c->measured) {
        if (c->n_ent_samples > 0) {
            if (!c->ent_samples)
                return dkv_err_set(err, DKV_EINVAL, "retention.ent_samples is NULL with %zu samples",
                                   c->n_ent_samples);
            for (size_t i = 0; i < c->n_ent_samples; i++)
                if (!(c->ent_samples[i] >= 0 && c->ent_samples[i] <= 1))
                    return dkv_err_set(err, DKV_ERANGE, "retention.ent_samples[%zu] = %g: must be in [0, 1]", i + 1,
                                       c->ent_samples[i]);
        } else {
            if (!(c->ent_a > 0) || !isfinite(c->ent_a))
                return dkv_err_set(err, DKV_ERANGE, "retention.ent_a = %g: must be > 0", c->ent_a);
            if (!(c->ent_b > 0) || !isfinite(c->ent_b))
                return dkv_err_set(err, DKV_ERANGE, "retention.ent_b = %g: must be > 0", c->ent_b);
        }
    }
    if (c->mode == DKV_RHO_CALLBACK && !c->callback)
        return dkv_err_set(err, DKV_EINVAL, "retention.callback: mode 'callback' needs a function");
    return DKV_OK;
}

dkv_status dkv_retention_init(dkv_retention *r, const dkv_retention_config *c, dkv_err *err)
{
    dkv_status st = dkv_retention_config_validate(c, err);
    if (st != DKV_OK)
        return st;
    *r = (dkv_retention){.cfg = *c};
    dkv_rng_seed(&r->rng, c->seed);
    return DKV_OK;
}

static double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

static double beta_draw(dkv_rng *g, double a, double b)
{
    double x = dkv_rng_gamma(g, a, 1.0), y = dkv_rng_gamma(g, b, 1.0);
    return x + y > 0 ? x / (x + y) : 0.5;
}

dkv_status dkv_retention_next_rho(dkv_retention *r, uint64_t request, uint32_t block, double *rho, dkv_err *err)
{
    const dkv_retention_config *c = &r->cfg;
    double v = c->rho;
    switch (c->mode) {
    case DKV_RHO_FIXED:
        break;
    case DKV_RHO_ENTROPY: {
        double e;
        if (c->measured)
            return dkv_err_set(err, DKV_ESTATE, "retention.measured: request %llu block %u has no measured attention "
                               "entropy (the engine passes measured values to dkv_retention_rho_of_entropy)",
                               (unsigned long long)request, block);
        if (c->n_ent_samples > 0) {
            e = c->ent_samples[r->next_sample];
            r->next_sample = (r->next_sample + 1) % c->n_ent_samples;
        } else {
            e = beta_draw(&r->rng, c->ent_a, c->ent_b);
        }
        v = clampd(c->rho_min + (c->rho_max - c->rho_min) * e, c->rho_min, c->rho_max);
        break;
    }
    case DKV_RHO_CALLBACK: {
        double x = c->callback(c->callback_ud, request, block, c->rho);
        if (!isfinite(x))
            return dkv_err_set(err, DKV_EINVAL,
                               "retention.callback returned %s for request %llu block %u: need a finite number in "
                               "[rho_min, rho_max] = [%g, %g]",
                               isnan(x) ? "nan" : x > 0 ? "inf" : "-inf", (unsigned long long)request, block, c->rho_min, c->rho_max);
        if ((x < c->rho_min || x > c->rho_max) && !c->clamp)
            return dkv_err_set(err, DKV_ERANGE,
                               "retention.callback returned %g for request %llu block %u: outside [rho_min, rho_max] "
                               "= [%g, %g] (retention.clamp = true clamps such values and counts them)",
                               x, (unsigned long long)request, block, c->rho_min, c->rho_max);
        v = clampd(x, c->rho_min, c->rho_max);
        if (v != x)
            r->n_clamped++;
        break;
    }
    }
    r->n_blocks++;
    r->rho_sum += v;
    *rho = v;
    return DKV_OK;
}

double dkv_retention_rho_of_entropy(dkv_retention *r, double e)
{
    const dkv_retention_config *c = &r->cfg;
    e = clampd(isfinite(e) ? e : 1.0, 0.0, 1.0);
    double v = clampd(c->rho_min + (c->rho_max - c->rho_min) * e, c->rho_min, c->rho_max);
    r->n_blocks++;
    r->rho_sum += v;
    return v;
}

double dkv_retention_rho_fn(void *ctx, uint64_t request, uint32_t block, double rho)
{
    (void)rho;
    dkv_retention *r = ctx;
    double v;
    dkv_err e = {0};
    if (dkv_retention_next_rho(r, request, block, &v, &e) != DKV_OK) {
        if (r->err.code == DKV_OK)
            r->err = e;
        return r->cfg.rho;
    }
    return v;
}

uint64_t dkv_retention_k(double rho, uint64_t canvas, uint32_t block_len)
{
    if (canvas <= block_len)
        return 0;
    uint64_t ctx = canvas - block_len;
    double k = ceil(rho * (double)ctx - 1e-9);
    if (k < 0)
        k = 0;
    return (uint64_t)k > ctx ? ctx : (uint64_t)k;
}

dkv_status dkv_retention_plan_block(dkv_retain_set set, const dkv_model *m, const dkv_gpu *g, double rho,
                                    uint64_t canvas, uint32_t block_len, dkv_retention_plan *out, dkv_err *err)
{
    if (!(rho > 0 && rho <= 1))
        return dkv_err_set(err, DKV_ERANGE, "retention: rho = %g must be in (0, 1]", rho);
    if (block_len == 0 || canvas <= block_len)
        return dkv_err_set(err, DKV_EINVAL, "retention: need 0 < block_len (%u) < canvas (%llu)", block_len,
                           (unsigned long long)canvas);
    if (set != DKV_RETAIN_PER_HEAD && set != DKV_RETAIN_SHARED)
        return dkv_err_set(err, DKV_EINVAL, "retention.set = %d: expected per_head or shared", (int)set);
    *out = (dkv_retention_plan){0};
    uint64_t per_tok = dkv_model_kv_bytes_per_token(m);
    double b = dkv_dtype_bytes(m->kv_dtype), hd = m->head_dim, hkv = m->n_kv_heads;
    uint64_t streams = 2ULL * m->n_layers * m->n_kv_heads; /* (layer, head, K|V) */
    out->rho = rho;
    out->context_tokens = canvas - block_len;
    out->k = dkv_retention_k(rho, canvas, block_len);
    out->retained_bytes = out->k * per_tok;
    out->read_bytes = (out->k + block_len) * per_tok;

    /* retained part */
    uint64_t ret_runs = 0;
    if (out->k > 0) {
        if (set == DKV_RETAIN_PER_HEAD) {
            ret_runs = streams;
            out->retained_run_bytes = (double)out->k * hd * b;
        } else {
            double adj = rho < 1 ? 1.0 / (1.0 - rho) : (double)out->k;
            if (adj > (double)out->k)
                adj = (double)out->k;
            out->retained_run_bytes = adj * hkv * hd * b;
            ret_runs = (uint64_t)ceil((double)out->retained_bytes / out->retained_run_bytes - 1e-9);
        }
    }
    /* current block: one run per (layer, head, K|V) */
    double blk_run = (double)block_len * hd * b;
    uint64_t blk_bytes = (uint64_t)block_len * per_tok;
    out->n_runs = ret_runs + streams;
    out->run_bytes = (double)out->read_bytes / (double)out->n_runs;
    if (g) {
        double e_ret = out->k > 0 ? dkv_gpu_bw_efficiency(g, out->retained_run_bytes) : 1.0;
        double e_blk = dkv_gpu_bw_efficiency(g, blk_run);
        double t = (double)out->retained_bytes / (g->hbm_bw * e_ret) + (double)blk_bytes / (g->hbm_bw * e_blk);
        out->time_s = t;
        out->efficiency = (double)out->read_bytes / (g->hbm_bw * t);
    } else {
        out->efficiency = 1.0;
    }
    return DKV_OK;
}

DKV_POLICY_DEFINE(dkv_retention_policy, "retention", dkv_retention, dkv_retention_config, NULL);
