/* lifecycle.c - immediate vs deferred release, and a replay of refcount streams. */
#include "policy/lifecycle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const rule_names[] = {"immediate", "deferred"};
const dkv_names dkv_release_rule_names = DKV_NAMES("lifecycle.rule", rule_names);

const char *dkv_release_rule_name(dkv_release_rule r) { return dkv_names_at(&dkv_release_rule_names, (int)r); }

void dkv_lifecycle_config_default(dkv_lifecycle_config *c)
{
    c->rule = DKV_RELEASE_IMMEDIATE;
    c->delay_steps = 4;
    c->delay_s = 0.0;
}

dkv_status dkv_lifecycle_config_validate(const dkv_lifecycle_config *c, dkv_err *err)
{
    if (c->rule != DKV_RELEASE_IMMEDIATE && c->rule != DKV_RELEASE_DEFERRED)
        return dkv_err_set(err, DKV_EINVAL, "lifecycle.rule = %d: expected immediate or deferred", (int)c->rule);
    if (!(c->delay_s >= 0) || !isfinite(c->delay_s))
        return dkv_err_set(err, DKV_ERANGE, "lifecycle.delay_s = %g: must be finite and >= 0", c->delay_s);
    if (c->rule == DKV_RELEASE_DEFERRED && c->delay_steps == 0 && c->delay_s == 0)
        return dkv_err_set(err, DKV_EINVAL,
                           "lifecycle.delay_steps and lifecycle.delay_s are both 0: a deferred rule needs a delay");
    return DKV_OK;
}

bool dkv_lifecycle_due(const dkv_lifecycle_config *c, uint64_t zero_step, double zero_s, uint64_t now_step,
                       double now_s)
{
    if (c->rule == DKV_RELEASE_IMMEDIATE)
        return true;
    return now_step >= zero_step + c->delay_steps && now_s >= zero_s + c->delay_s;
}

typedef struct pending {
    uint32_t block;
    uint64_t zero_step;
    double   zero_s;
} pending;

static void emit(dkv_block_free *out, size_t cap, dkv_lifecycle_summary *sum, const pending *p, uint64_t step,
                 double t)
{
    if (sum->n_frees < cap)
        out[sum->n_frees] = (dkv_block_free){p->block, p->zero_step, p->zero_s, step, t};
    sum->n_frees++;
    sum->dead_block_steps += step - p->zero_step;
    sum->dead_block_s += t - p->zero_s;
}

dkv_status dkv_lifecycle_free_times(const dkv_lifecycle_config *c, const dkv_ref_event *ev, size_t n,
                                    uint32_t n_blocks, dkv_block_free *out, size_t cap,
                                    dkv_lifecycle_summary *sum, dkv_err *err)
{
    dkv_status st = dkv_lifecycle_config_validate(c, err);
    if (st != DKV_OK)
        return st;
    if (cap > 0 && out == NULL)
        return dkv_err_set(err, DKV_EINVAL, "lifecycle: out is NULL with cap %zu", cap);
    *sum = (dkv_lifecycle_summary){0};
    if (n == 0)
        return DKV_OK;
    int64_t *count = calloc(n_blocks ? n_blocks : 1, sizeof *count);
    int64_t *slot = malloc((n_blocks ? n_blocks : 1) * sizeof *slot); /* index into pend, -1 none */
    pending *pend = malloc((n_blocks ? n_blocks : 1) * sizeof *pend);
    if (!count || !slot || !pend) {
        free(count), free(slot), free(pend);
        return dkv_err_set(err, DKV_ENOMEM, "lifecycle: out of host memory for %u blocks", n_blocks);
    }
    for (uint32_t b = 0; b < n_blocks; b++)
        slot[b] = -1;
    size_t n_pend = 0; /* pending frees, in order of zero time */
    for (size_t i = 0; i < n; i++) {
        const dkv_ref_event *e = &ev[i];
        if (e->block >= n_blocks) {
            st = dkv_err_set(err, DKV_EINVAL, "lifecycle: event %zu: block %u out of range (n_blocks %u)", i,
                             e->block, n_blocks);
            goto done;
        }
        if (i > 0 && (e->step < ev[i - 1].step || e->t_s < ev[i - 1].t_s)) {
            st = dkv_err_set(err, DKV_EINVAL, "lifecycle: event %zu: step/t_s goes backwards", i);
            goto done;
        }
        /* frees that are due at this moment land first (compact the pending list in order) */
        size_t k = 0;
        for (size_t j = 0; j < n_pend; j++) {
            if (dkv_lifecycle_due(c, pend[j].zero_step, pend[j].zero_s, e->step, e->t_s)) {
                emit(out, cap, sum, &pend[j], e->step, e->t_s);
                slot[pend[j].block] = -1;
            } else {
                pend[k] = pend[j];
                slot[pend[k].block] = (int64_t)k;
                k++;
            }
        }
        n_pend = k;
        int64_t before = count[e->block];
        int64_t after = before + e->delta;
        if (after < 0) {
            st = dkv_err_set(err, DKV_ESTATE, "lifecycle: event %zu: block %u count goes negative (%lld%+d)", i,
                             e->block, (long long)before, e->delta);
            goto done;
        }
        count[e->block] = after;
        if (after > 0 && slot[e->block] >= 0) { /* retained again before the deferred free */
            size_t j = (size_t)slot[e->block];
            memmove(&pend[j], &pend[j + 1], (n_pend - j - 1) * sizeof *pend);
            n_pend--;
            slot[e->block] = -1;
            for (size_t q = j; q < n_pend; q++)
                slot[pend[q].block] = (int64_t)q;
            sum->n_resurrected++;
        }
        if (before > 0 && after == 0) {
            pending p = {e->block, e->step, e->t_s};
            if (dkv_lifecycle_due(c, p.zero_step, p.zero_s, e->step, e->t_s)) {
                emit(out, cap, sum, &p, e->step, e->t_s);
            } else {
                pend[n_pend] = p;
                slot[e->block] = (int64_t)n_pend;
                n_pend++;
            }
        }
    }
    sum->n_pending = n_pend;
    for (size_t j = 0; j < n_pend; j++) {
        sum->dead_block_steps += ev[n - 1].step - pend[j].zero_step;
        sum->dead_block_s += ev[n - 1].t_s - pend[j].zero_s;
    }
done:
    free(count);
    free(slot);
    free(pend);
    return st;
}

/* Lua keys (policies.lifecycle), parsed by core/lua from this list: the delays take effect only
 * under the deferred rule */
static const dkv_policy_key lifecycle_keys[] = {
    {.name = "rule", .type = DKV_POLICY_KEY_ENUM, .offset = offsetof(dkv_lifecycle_config, rule),
     .names = &dkv_release_rule_names},
    {.name = "delay_steps", .type = DKV_POLICY_KEY_UINT, .offset = offsetof(dkv_lifecycle_config, delay_steps),
     .lo = 0, .hi = UINT32_MAX, .used_if = "rule", .used_mask = 1u << DKV_RELEASE_DEFERRED},
    {.name = "delay_s", .type = DKV_POLICY_KEY_NUM, .offset = offsetof(dkv_lifecycle_config, delay_s),
     .lo = 0, .hi = INFINITY, .used_if = "rule", .used_mask = 1u << DKV_RELEASE_DEFERRED},
    {0},
};
_Static_assert(sizeof(dkv_release_rule) == sizeof(int), "an int-sized enum");

DKV_POLICY_DEFINE(dkv_lifecycle_policy, "lifecycle", dkv_lifecycle, dkv_lifecycle_config, lifecycle_keys);
