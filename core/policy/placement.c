/* placement.c - quotas for several instances over one KV pool. */
#include "policy/placement.h"

#include <math.h>
#include <string.h>

static const char *const place_names[] = {"shared", "partitioned"};
const dkv_names dkv_placement_names = DKV_NAMES("placement.mode", place_names);

const char *dkv_placement_name(dkv_placement p) { return dkv_names_at(&dkv_placement_names, (int)p); }

void dkv_placement_config_default(dkv_placement_config *c)
{
    c->mode = DKV_PLACE_SHARED;
    c->n_instances = 1;
    c->guaranteed_frac = 0.5;
    c->burst_frac = 1.0;
    c->weights = NULL;
}

dkv_status dkv_placement_config_validate(const dkv_placement_config *c, dkv_err *err)
{
    if (c->mode != DKV_PLACE_SHARED && c->mode != DKV_PLACE_PARTITIONED)
        return dkv_err_set(err, DKV_EINVAL, "placement.mode = %d: expected shared or partitioned", (int)c->mode);
    if (c->n_instances == 0 || c->n_instances > DKV_PLACEMENT_MAX_INSTANCES)
        return dkv_err_set(err, DKV_ERANGE, "placement.n_instances = %u: must be in 1..%d", c->n_instances,
                           DKV_PLACEMENT_MAX_INSTANCES);
    if (!(c->guaranteed_frac >= 0 && c->guaranteed_frac <= 1))
        return dkv_err_set(err, DKV_ERANGE, "placement.guaranteed_frac = %g: must be in [0, 1]", c->guaranteed_frac);
    if (!(c->burst_frac > 0 && c->burst_frac <= 1))
        return dkv_err_set(err, DKV_ERANGE, "placement.burst_frac = %g: must be in (0, 1]", c->burst_frac);
    if (c->weights)
        for (uint32_t i = 0; i < c->n_instances; i++)
            if (!(c->weights[i] > 0) || !isfinite(c->weights[i]))
                return dkv_err_set(err, DKV_ERANGE, "placement.weights[%u] = %g: must be > 0", i + 1, c->weights[i]);
    return DKV_OK;
}

dkv_status dkv_placement_quotas(const dkv_placement_config *c, uint64_t pool_bytes, uint64_t block_bytes,
                                dkv_quota *out, dkv_err *err)
{
    dkv_status st = dkv_placement_config_validate(c, err);
    if (st != DKV_OK)
        return st;
    if (block_bytes == 0)
        return dkv_err_set(err, DKV_EINVAL, "placement: block_bytes must be > 0");
    uint32_t n = c->n_instances;
    uint64_t total = pool_bytes / block_bytes;
    double wsum = 0;
    for (uint32_t i = 0; i < n; i++)
        wsum += c->weights ? c->weights[i] : 1.0;
    uint64_t gsum = 0;
    for (uint32_t i = 0; i < n; i++) {
        double share = (c->weights ? c->weights[i] : 1.0) / wsum;
        double frac = c->mode == DKV_PLACE_PARTITIONED ? 1.0 : c->guaranteed_frac;
        uint64_t g = (uint64_t)floor(frac * share * (double)total + 1e-9);
        out[i] = (dkv_quota){.guaranteed_blocks = g};
        gsum += g;
    }
    uint64_t cap = (uint64_t)floor(c->burst_frac * (double)total + 1e-9);
    for (uint32_t i = 0; i < n; i++) {
        dkv_quota *q = &out[i];
        if (c->mode == DKV_PLACE_PARTITIONED) {
            q->max_blocks = q->guaranteed_blocks;
        } else {
            uint64_t mx = total - (gsum - q->guaranteed_blocks);
            if (mx > cap)
                mx = cap;
            if (mx < q->guaranteed_blocks)
                mx = q->guaranteed_blocks;
            q->max_blocks = mx;
        }
        q->guaranteed_bytes = q->guaranteed_blocks * block_bytes;
        q->max_bytes = q->max_blocks * block_bytes;
    }
    return DKV_OK;
}
